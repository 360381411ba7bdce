package memory_test

import (
	"testing"

	"github.com/openenoc/oetp/memory"
)

// slow is a Space that does not declare itself immediate.
type slow struct{ memory.Space }

func TestImmediate(t *testing.T) {
	ram, _ := memory.NewRAM(0, 64)
	fault, _ := memory.NewFault(0x100, 64, memory.SLVERR)
	m := memory.NewMap()
	if !memory.IsImmediate(m) {
		t.Error("an empty Map is not immediate")
	}
	if err := m.Add(0, 64, ram); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(0x100, 64, fault); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]memory.Space{"RAM": ram, "Fault": fault, "Map of RAM and Fault": m} {
		if !memory.IsImmediate(s) {
			t.Errorf("%s is not immediate", name)
		}
	}
	if memory.IsImmediate(slow{ram}) {
		t.Error("a wrapper that does not declare itself is immediate")
	}
	if err := m.Add(0x200, 64, slow{ram}); err != nil {
		t.Fatal(err)
	}
	if memory.IsImmediate(m) {
		t.Error("a Map with a non-immediate region is immediate")
	}
}
