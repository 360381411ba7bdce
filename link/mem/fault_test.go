package mem

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/wire"
)

func addRule(t *testing.T, sw *Switch, r Rule) {
	t.Helper()
	if err := sw.AddRule(r); err != nil {
		t.Fatalf("AddRule(%v): %v", r.Action, err)
	}
}

// seqs returns the sequence numbers of frames.
func seqs(frames [][]byte) []uint32 {
	var s []uint32
	for _, f := range frames {
		s = append(s, seqOf(f))
	}
	return s
}

func equalSeqs(a []uint32, b ...uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFaultDrop(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	addRule(t, sw, Rule{Action: Drop, Count: 2})
	for i := range 4 {
		write(t, a, seqFrame(macB, macA, uint32(i), 60))
	}
	if got := seqs(readN(t, b, 2)); !equalSeqs(got, 2, 3) || queued(b) != 0 {
		t.Errorf("received %v, want [2 3] (the first 2 dropped)", got)
	}
	if s := a.Stats(); s.DropFault != 2 || s.TxFrames != 4 {
		t.Errorf("a.Stats() = %+v, want 4 sent, 2 fault drops", s)
	}
}

func TestFaultTruncate(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	addRule(t, sw, Rule{Action: Truncate, Len: 20})
	f := seqFrame(macB, macA, 1, 60)
	write(t, a, f)
	write(t, a, seqFrame(macB, macA, 2, 18)) // shorter than Len: whole
	got := readN(t, b, 2)
	if !bytes.Equal(got[0], f[:20]) {
		t.Errorf("truncated frame = % x (%d bytes), want the first 20 bytes % x", got[0], len(got[0]), f[:20])
	}
	if len(got[1]) != 18 || seqOf(got[1]) != 2 {
		t.Errorf("short frame arrived as %d bytes, want 18", len(got[1]))
	}
	if s := b.Stats(); s.RxBytes != 38 {
		t.Errorf("RxBytes = %d, want 38 (bytes as delivered)", s.RxBytes)
	}
}

func TestFaultCorrupt(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	addRule(t, sw, Rule{Action: Corrupt, Offset: 20, XOR: 0x81, Count: 1})
	f := seqFrame(macB, macA, 1, 60)
	f[20] = 0x0f
	orig := bytes.Clone(f)
	write(t, a, f)
	if !bytes.Equal(f, orig) {
		t.Fatal("Corrupt modified the caller's buffer")
	}
	write(t, a, f) // Count 1: unchanged
	got := readN(t, b, 2)
	want := bytes.Clone(orig)
	want[20] = 0x8e
	if !bytes.Equal(got[0], want) {
		t.Errorf("corrupted frame = % x, want % x", got[0], want)
	}
	if !bytes.Equal(got[1], orig) {
		t.Errorf("second frame = % x, want it unchanged", got[1])
	}

	// An offset past the end delivers the frame unchanged.
	sw.ClearRules()
	addRule(t, sw, Rule{Action: Corrupt, Offset: 60, XOR: 0xff})
	write(t, a, orig)
	if g := read1(t, b); !bytes.Equal(g, orig) {
		t.Errorf("offset past the end changed the frame to % x", g)
	}
}

func TestFaultDuplicate(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b, c := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC)
	addRule(t, sw, Rule{Action: Duplicate, Count: 1})
	f := seqFrame(wire.Broadcast, macA, 1, 60)
	write(t, a, f)
	write(t, a, seqFrame(wire.Broadcast, macA, 2, 60))
	for _, p := range []*Port{b, c} {
		if got := seqs(readN(t, p, 3)); !equalSeqs(got, 1, 1, 2) || queued(p) != 0 {
			t.Errorf("%v received %v, want [1 1 2]", p.Addr(), got)
		}
	}
	if s := sw.Stats(); s.TxFrames != 2 || s.RxFrames != 6 {
		t.Errorf("sw.Stats() = %+v, want 2 sent, 6 received", s)
	}
}

func TestFaultDelay(t *testing.T) {
	const by = 40 * time.Millisecond
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	addRule(t, sw, Rule{Action: Delay, By: by, Count: 1})
	start := time.Now()
	write(t, a, seqFrame(macB, macA, 1, 60))
	write(t, a, seqFrame(macB, macA, 2, 60))
	if f := read1(t, b); seqOf(f) != 2 {
		t.Fatalf("first frame read has seq %d, want 2 (overtaking the delayed frame)", seqOf(f))
	}
	f := read1(t, b)
	if d := time.Since(start); seqOf(f) != 1 || d < by {
		t.Errorf("delayed frame seq %d arrived after %v, want seq 1 no sooner than %v", seqOf(f), d, by)
	}
}

func TestFaultReorder(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b, c := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC)
	addRule(t, sw, Rule{Action: Reorder, Count: 1})
	write(t, a, seqFrame(macB, macA, 1, 60)) // held
	write(t, a, seqFrame(macC, macA, 2, 60)) // other direction: does not release
	write(t, c, seqFrame(macB, macC, 3, 60)) // other sender: does not release
	if queued(b) != 1 || queued(c) != 1 {
		t.Fatalf("queued b=%d c=%d, want 1 and 1 while frame 1 is held", queued(b), queued(c))
	}
	write(t, a, seqFrame(macB, macA, 4, 60)) // same direction: 4 then 1
	write(t, a, seqFrame(macB, macA, 5, 60))
	if got := seqs(readN(t, b, 4)); !equalSeqs(got, 3, 4, 1, 5) {
		t.Errorf("b received %v, want [3 4 1 5]", got)
	}

	// ClearRules releases held frames.
	addRule(t, sw, Rule{Action: Reorder, Count: 1})
	write(t, a, seqFrame(macB, macA, 6, 60))
	if queued(b) != 0 {
		t.Fatal("frame 6 was not held")
	}
	sw.ClearRules()
	if got := seqs(readN(t, b, 1)); !equalSeqs(got, 6) {
		t.Errorf("after ClearRules b received %v, want [6]", got)
	}
	if sw.faulty.Load() {
		t.Error("switch still takes the fault path with no rules, loss or held frames")
	}
}

func TestRuleSelection(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b, c := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC)
	// Only frames from c to b whose payload starts with 0x00000007 are
	// dropped; the Truncate rule after it acts on everything else to b.
	addRule(t, sw, Rule{
		Action: Drop, From: macC, To: macB,
		Match: func(f []byte) bool { return seqOf(f) == 7 },
	})
	addRule(t, sw, Rule{Action: Truncate, Len: 18, To: macB})
	write(t, c, seqFrame(macB, macC, 7, 60)) // dropped by rule 1
	write(t, a, seqFrame(macB, macA, 7, 60)) // From mismatch: truncated by rule 2
	write(t, c, seqFrame(macB, macC, 8, 60)) // Match false: truncated
	write(t, b, seqFrame(macC, macB, 7, 60)) // To mismatch for both: whole
	got := readN(t, b, 2)
	if len(got[0]) != 18 || seqOf(got[0]) != 7 || len(got[1]) != 18 || seqOf(got[1]) != 8 || queued(b) != 0 {
		t.Errorf("b received %v of lengths %d, %d; want seqs [7 8] truncated to 18", seqs(got), len(got[0]), len(got[1]))
	}
	if f := read1(t, c); len(f) != 60 || seqOf(f) != 7 {
		t.Errorf("c received %d bytes seq %d, want the whole 60-byte frame 7", len(f), seqOf(f))
	}
	if c.Stats().DropFault != 1 || a.Stats().DropFault != 0 {
		t.Errorf("DropFault: c %d, a %d; want 1, 0", c.Stats().DropFault, a.Stats().DropFault)
	}
}

// lossPattern sends n frames through a switch with the given seed and
// per-frame drop probability and returns which ones arrived.
func lossPattern(t *testing.T, seed int64, p float64, n int, useRule bool) []bool {
	sw := newSwitch(t, Config{Seed: seed, QueueLen: n})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	if useRule {
		addRule(t, sw, Rule{Action: Drop, Prob: p})
	} else if err := sw.SetLoss(p); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		write(t, a, seqFrame(macB, macA, uint32(i), 60))
	}
	arrived := make([]bool, n)
	got := readN(t, b, queued(b))
	for _, f := range got {
		arrived[seqOf(f)] = true
	}
	if s := a.Stats(); s.DropFault != uint64(n-len(got)) {
		t.Errorf("DropFault = %d, want %d (frames missing)", s.DropFault, n-len(got))
	}
	return arrived
}

func TestProbabilisticLossReproducible(t *testing.T) {
	const n = 2000
	for _, useRule := range []bool{false, true} {
		name := "SetLoss"
		if useRule {
			name = "Rule.Prob"
		}
		t.Run(name, func(t *testing.T) {
			p1 := lossPattern(t, 42, 0.25, n, useRule)
			p2 := lossPattern(t, 42, 0.25, n, useRule)
			p3 := lossPattern(t, 43, 0.25, n, useRule)
			lost, same13 := 0, true
			for i := range n {
				if p1[i] != p2[i] {
					t.Fatalf("seed 42 runs differ at frame %d", i)
				}
				if !p1[i] {
					lost++
				}
				if p1[i] != p3[i] {
					same13 = false
				}
			}
			// 25% of 2000 is 500 with a standard deviation of about 19.
			if math.Abs(float64(lost)-500) > 100 {
				t.Errorf("lost %d of %d frames at p=0.25, want about 500", lost, n)
			}
			if same13 {
				t.Error("seeds 42 and 43 lost the same frames")
			}
		})
	}
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	if err := sw.SetLoss(1); err != nil {
		t.Fatal(err)
	}
	write(t, a, seqFrame(macB, macA, 1, 60))
	if queued(b) != 0 {
		t.Error("SetLoss(1) delivered a frame")
	}
	if err := sw.SetLoss(0); err != nil {
		t.Fatal(err)
	}
	write(t, a, seqFrame(macB, macA, 2, 60))
	if f := read1(t, b); seqOf(f) != 2 {
		t.Errorf("after SetLoss(0) received seq %d, want 2", seqOf(f))
	}
	if sw.faulty.Load() {
		t.Error("switch still takes the fault path after SetLoss(0)")
	}
}

func TestRuleErrors(t *testing.T) {
	sw := newSwitch(t, Config{})
	for _, tc := range []struct {
		r    Rule
		want string
	}{
		{Rule{}, "Rule.Action is unset"},
		{Rule{Action: 99}, "Rule.Action is Action(99)"},
		{Rule{Action: Truncate}, "Rule.Len is 0"},
		{Rule{Action: Corrupt, Offset: -1, XOR: 1}, "Rule.Offset is -1"},
		{Rule{Action: Corrupt, Offset: 3}, "Rule.XOR is 0"},
		{Rule{Action: Delay}, "Rule.By is 0s"},
		{Rule{Action: Drop, Prob: 1.5}, "Rule.Prob is 1.5"},
		{Rule{Action: Drop, Prob: math.NaN()}, "Rule.Prob is NaN"},
		{Rule{Action: Drop, Count: -1}, "Rule.Count is -1"},
	} {
		if err := sw.AddRule(tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddRule(%+v) = %v, want an error containing %q", tc.r, err, tc.want)
		}
	}
	if sw.faulty.Load() {
		t.Error("a refused rule was added")
	}
	for _, p := range []float64{-0.1, 1.1, math.NaN()} {
		if err := sw.SetLoss(p); err == nil || !strings.Contains(err.Error(), "loss probability") {
			t.Errorf("SetLoss(%v) = %v, want an error naming the loss probability", p, err)
		}
	}
	if got := Reorder.String(); got != "Reorder" {
		t.Errorf("Reorder.String() = %q", got)
	}
}
