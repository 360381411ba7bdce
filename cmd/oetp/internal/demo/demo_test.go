package demo

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/mem"
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
// receive queues hold 4 frames: sent back to back, 64 fragments to 8
// slaves overflow them; paced from the slaves' probes, every slave applies
// every fragment and the digests are equal.
func TestGroupWritePaced(t *testing.T) {
	defer func(n int) { memQueueLen = n }(memQueueLen)
	memQueueLen = 4
	rep, err := Run(context.Background(), Options{Slaves: 8, Size: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	rep.WriteText(&table)
	if !rep.OK {
		t.Fatalf("the demo failed with short receive queues:\n%s", table.String())
	}
	if !strings.Contains(table.String(), "8/8 slaves applied all 65 fragments") {
		t.Errorf("the group write step does not say every slave applied every fragment:\n%s", table.String())
	}
}

// TestLossyLink checks the transmit-side loss used on network namespaces.
func TestLossyLink(t *testing.T) {
	sw, err := mem.NewSwitch(mem.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := sw.Attach(nodeMAC(0))
	b, _ := sw.Attach(nodeMAC(1))
	c, _ := sw.Attach(nodeMAC(2))
	defer a.Close()
	defer b.Close()
	defer c.Close()
	l := newLossyLink(a, 0, 1)
	if _, ok := l.Link.(link.Filter); !ok {
		t.Fatal("lossyLink does not pass link.Filter through")
	}
	src := nodeMAC(0)
	frame := func(dst wire.MAC) []byte {
		return append(append(append([]byte{}, dst[:]...), src[:]...), 0x88, 0xb5)
	}
	l.dropNextTo(nodeMAC(1))
	for _, f := range [][]byte{frame(nodeMAC(1)), frame(nodeMAC(2)), frame(nodeMAC(1))} {
		if err := l.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Stats().TxFrames; got != 2 {
		t.Errorf("a sent %d frames, want 2 (the first to b lost)", got)
	}
	if got := queued(t, b); got != 1 {
		t.Errorf("b received %d frames, want 1", got)
	}
	if got := queued(t, c); got != 1 {
		t.Errorf("c received %d frames, want 1", got)
	}
	// With a loss probability of nearly 1 everything is lost, and still
	// accepted, as on a wire.
	l = newLossyLink(a, 0.999999, 1)
	n, err := l.WriteBatch([][]byte{frame(nodeMAC(2)), frame(nodeMAC(2))})
	if n != 2 || err != nil {
		t.Errorf("WriteBatch = %d, %v, want 2, nil", n, err)
	}
	if got := a.Stats().TxFrames; got != 2 {
		t.Errorf("after total loss a has sent %d frames, want still 2", got)
	}
}

// queued reads the frames waiting at p without blocking for long.
func queued(t *testing.T, p *mem.Port) int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		bufs := [][]byte{make([]byte, 64), make([]byte, 64), make([]byte, 64)}
		n, _ := p.ReadBatch(bufs, make([]int, 3))
		done <- n
	}()
	select {
	case n := <-done:
		return n
	case <-time.After(200 * time.Millisecond):
		p.Close()
		<-done
		return 0
	}
}
