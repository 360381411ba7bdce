package hub_test

import (
	"testing"

	"github.com/openenoc/oetp/internal/testutil"
)

// TestAllocsPerOp: a single read, a single write through the hub
// allocate nothing in steady state, in the Go client, the hub's
// connection, the device's endpoint and the board's endpoint together (all
// in this process, on the in-memory switch).
func TestAllocsPerOp(t *testing.T) {
	if testutil.Race {
		t.Skip("the race detector allocates and makes sync.Pool drop items")
	}
	th := newTestHub(t)
	c := dial(t, th.path)
	defer c.Close()
	dev, err := c.Device("board1")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		fn   func() error
	}{
		{"read", func() error { _, err := dev.Read(0x10); return err }},
		{"write", func() error { return dev.Write(0x10, 0xC0FFEE, 0xFFFFFFFF) }},
	} {
		for range 100 { // warm up: buffers, pools, the endpoints' slots
			if err := op.fn(); err != nil {
				t.Fatalf("%s: %v", op.name, err)
			}
		}
		var opErr error
		if n := testing.AllocsPerRun(200, func() {
			if err := op.fn(); err != nil {
				opErr = err
			}
		}); n != 0 {
			t.Errorf("%s: %.1f allocations per operation, want 0", op.name, n)
		}
		if opErr != nil {
			t.Fatalf("%s: %v", op.name, opErr)
		}
	}
}
