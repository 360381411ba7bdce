package demo

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/wire"
)

func TestOptionsDefaultsAndLimits(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil || o.Slaves != 3 || o.Size != 256<<10 || o.Timeout != 250*time.Millisecond || o.Loss != 0 {
		t.Errorf("defaults = %+v, %v", o, err)
	}
	for _, c := range []struct {
		o    Options
		flag string
	}{
		{Options{Slaves: -1}, "--slaves"},
		{Options{Slaves: MaxSlaves + 1}, "--slaves"},
		{Options{Size: -1}, "--size"},
		{Options{Size: MaxSize + 1}, "--size"},
		{Options{Loss: 1}, "--loss"},
		{Options{Loss: -0.5}, "--loss"},
		{Options{Timeout: -time.Second}, "--timeout"},
	} {
		_, err := Run(context.Background(), c.o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Flag != c.flag {
			t.Errorf("Run(%+v) = %v, want an OptionError for %s", c.o, err, c.flag)
		}
	}
}

// TestRunReport checks a whole run on the in-memory switch: every step as
// expected, the log describing the phases, and the report printed.
func TestRunReport(t *testing.T) {
	var log bytes.Buffer
	rep, err := Run(context.Background(), Options{Slaves: 2, Size: 20000, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Network != "the in-memory switch (link/mem)" || rep.Master != "02:0e:0c:00:00:01" || rep.Group != "03:0e:0c:00:00:01" {
		t.Fatalf("report: %+v", rep)
	}
	if got := strings.Join(rep.Slaves, ","); got != "02:0e:0c:00:00:02,02:0e:0c:00:00:03" {
		t.Errorf("slaves %s", got)
	}
	for _, s := range rep.Steps {
		if !s.OK {
			t.Errorf("step %q: %s", s.Name, s.Detail)
		}
	}
	for _, want := range []string{
		"phase 1: registers: RMEM, mode 1 at both ends\n",
		"  slaves' entry for the master: slave1 -> mode 3, slave2 -> mode 2; window 0x00100000+0x4e20\n",
		"phase 5: failures, recorded on both sides\n",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	var table bytes.Buffer
	if err := rep.WriteText(&table); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(table.String(), "  equal\n"); n != 2 || !strings.Contains(table.String(), "demo: OK: all 9 steps") {
		t.Errorf("table (%d equal digests):\n%s", n, table.String())
	}
}

// TestRunReportsLoss checks that a lossy network makes the report fail
// rather than hiding the loss.
func TestRunReportsLoss(t *testing.T) {
	rep, err := Run(context.Background(), Options{Slaves: 1, Size: 4096, Loss: 0.99, Timeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK {
		t.Fatalf("a 99%% lossy network gave an OK report: %+v", rep)
	}
	var table bytes.Buffer
	rep.WriteText(&table)
	if !strings.Contains(table.String(), "FAILED") || !strings.Contains(table.String(), "demo: FAILED: ") {
		t.Errorf("table does not show the failures:\n%s", table.String())
	}
}

// TestGroupWritePaced runs the replication step on switch ports whose
// receive queues hold 4 frames: sent back to back, 65 fragments overflow
// them; paced from the slaves' probes, every slave applies every fragment
// and the digests are equal. Two slaves: boards have a CPU each, and more
// slaves than this machine's CPUs would be slower together than their
// probes said.
func TestGroupWritePaced(t *testing.T) {
	defer func(n int) { memQueueLen = n }(memQueueLen)
	memQueueLen = 4
	rep, err := Run(context.Background(), Options{Slaves: 2, Size: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	rep.WriteText(&table)
	if !rep.OK {
		t.Fatalf("the demo failed with short receive queues:\n%s", table.String())
	}
	if !strings.Contains(table.String(), "2/2 slaves applied all 65 fragments") {
		t.Errorf("the group write step does not say every slave applied every fragment:\n%s", table.String())
	}
}

// TestLossyWire checks the choice of the frames lost on network
// namespaces: the next frame to an address dropNextTo names, once; and,
// with a loss probability of nearly 1, every frame.
func TestLossyWire(t *testing.T) {
	src := nodeMAC(0)
	frame := func(dst wire.MAC) []byte {
		return append(append(append([]byte{}, dst[:]...), src[:]...), 0x88, 0xb5)
	}
	w := newLossyWire(src, 0, 1)
	w.dropNextTo(nodeMAC(1))
	var got []bool
	for _, dst := range []wire.MAC{nodeMAC(2), nodeMAC(1), nodeMAC(1), nodeMAC(2)} {
		got = append(got, w.lose(frame(dst)))
	}
	if want := []bool{false, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("lost %v, want %v (the first frame to slave1 only)", got, want)
	}
	w = newLossyWire(src, 0.999999, 1)
	for i := range 100 {
		if !w.lose(frame(nodeMAC(2))) {
			t.Fatalf("frame %d kept with a loss of 0.999999", i)
		}
	}
}
