//go:build linux

package bench

import (
	"strings"
	"testing"

	"github.com/openenoc/oetp/internal/testutil"
)

func TestRunProcWithoutBinary(t *testing.T) {
	rep, err := Run(shortOptions(ScenarioProc))
	if err != nil || len(rep.Skipped) != 1 || rep.Skipped[0].Scenario != ScenarioProc || len(rep.Results) != 0 {
		t.Fatalf("Run without a binary: %v, results %d, skipped %+v; want one skip", err, len(rep.Results), rep.Skipped)
	}
}

// TestRunProc runs `oetp serve` and the one-shot commands as processes over
// a veth pair and checks every row (the DMA rows are verified against the
// server's memory by the scenario itself).
func TestRunProc(t *testing.T) {
	if why := vethUnavailable(); why != "" {
		t.Skip(why)
	}
	o := shortOptions(ScenarioProc)
	o.Rounds = 1
	o.Blocks = []int64{64 << 10, 1 << 20}
	o.FloorWays = true
	o.Binary = testutil.BuildCommand(t, "../..")
	rep, err := Run(o)
	if err != nil {
		t.Fatalf("%v; skipped %+v", err, rep.Skipped)
	}
	checkResults(t, rep, ScenarioProc)
	for _, name := range []string{"oetp rmem read", "oetp dma write", "oetp dma read"} {
		for _, b := range o.Blocks {
			if name == "oetp rmem read" {
				b = 0
			}
			r := rep.Find(ScenarioProc, name, b)
			if r == nil {
				t.Errorf("no %s %d row", name, b)
				continue
			}
			if r.Ops < procMinOps || r.AllocsPerFrame != -1 || !strings.Contains(r.Note, "the whole process") {
				t.Errorf("%s %d: %d ops, allocs %v, note %q; want at least %d processes, allocations not measured, a note", name, b, r.Ops, r.AllocsPerFrame, r.Note, procMinOps)
			}
		}
	}
	if r := rep.Find(ScenarioProc, "oetp dma write", 64<<10); r != nil && r.Target != "" {
		t.Errorf("64 KiB row has target %q; targets start at 1 MiB", r.Target)
	}
	// The library rows: an endpoint of this process against the server.
	for _, name := range []string{"engine→serve rmem-read", "engine→serve dma-write", "engine→serve dma-read"} {
		b := int64(1 << 20)
		if name == "engine→serve rmem-read" {
			b = 0
		}
		if r := rep.Find(ScenarioProc, name, b); r == nil || r.Ops == 0 || r.Versus == "" {
			t.Errorf("%s %d: %+v; want a row compared with the raw ping-pong", name, b, r)
		}
	}
	// The informational baselines: the raw ping-pong with its echo a
	// process of its own, compared with the limit but without a target,
	// and the RMEM read after idle, which the one-shot RMEM row is
	// compared with in its note.
	for _, name := range []string{"raw 24↔24 echo process one CPU", "raw 24↔24 echo process any CPU", "raw 24↔24 after idle",
		"raw 8192↔20 echo process one CPU", "raw 8192↔20 echo process any CPU", "raw 28↔8184 echo process one CPU", "raw 28↔8184 echo process any CPU"} {
		r := rep.Find(ScenarioProc, name, 0)
		if r == nil || r.Ops < procMinOps || !r.Baseline || !r.Info || r.Versus == "" || r.Ratio <= 0 || r.Target != "" || r.Met != nil || r.Note == "" {
			t.Errorf("%s: %+v; want an informational baseline compared with the limit, without a target, with a note", name, r)
		}
	}
	if r := rep.Find(ScenarioProc, "oetp rmem read", 0); r != nil && !strings.Contains(r.Note, "× the raw 24↔24 after idle") {
		t.Errorf("oetp rmem read note %q; want its ratio to the raw round trip after idle", r.Note)
	}
	if r := rep.Find(ScenarioProc, "oetp dma write", 1<<20); r != nil && !strings.Contains(r.Note, "× the MB/s of the raw 8192↔20 echo process") {
		t.Errorf("oetp dma write note %q; want its ratio to the raw ping-pong with an echo process", r.Note)
	}
	// The floors: from 1 MiB up, on one CPU and free, each checked by the
	// scenario (the echo's region after writes, the output after reads),
	// printed beside the command rows.
	for _, op := range []string{opDMAWrite, opDMARead} {
		for _, where := range []string{"one CPU", "any CPU"} {
			name := "floor " + op + " " + where
			r := rep.Find(ScenarioProc, name, 1<<20)
			if r == nil || r.Ops < procMinOps || !r.Baseline || !r.Info || r.Versus == "" || r.Ratio <= 0 || r.Target != "" || r.Met != nil || !strings.HasPrefix(r.Note, "floor: the least any ") {
				t.Errorf("%s 1MiB: %+v; want an informational row compared with the limit, without a target, with its note", name, r)
			}
			if r := rep.Find(ScenarioProc, name, 64<<10); r != nil {
				t.Errorf("%s 64KiB: a floor row below 1 MiB", name)
			}
		}
		for _, name := range []string{procName(op), procName(op) + " (tty)"} {
			if r := rep.Find(ScenarioProc, name, 1<<20); r == nil || !strings.Contains(r.Note, "× the MB/s of the floor "+op) {
				t.Errorf("%s 1MiB: %+v; want its ratio to the floor in its note", name, r)
			}
		}
		// Every other way of the copies, on one CPU, checked as the
		// floor is.
		for _, w := range floorWays(op) {
			if w == floorCopies[op] {
				continue
			}
			name := "floor " + op + " one CPU " + w.String()
			if r := rep.Find(ScenarioProc, name, 1<<20); r == nil || r.Ops < procMinOps || !r.Info || !strings.HasPrefix(r.Note, "floor: the least any ") {
				t.Errorf("%s 1MiB: %+v; want a checked row of that way", name, r)
			}
		}
		// The library rows move memory, not files: no floor.
		if r := rep.Find(ScenarioProc, "engine→serve "+op, 1<<20); r == nil || strings.Contains(r.Note, "floor") {
			t.Errorf("engine→serve %s 1MiB: %+v; want no floor in its note", op, r)
		}
	}
	for _, r := range rep.Results {
		if r.Scenario == ScenarioProc && !r.Info && r.Versus != "" && (strings.Contains(r.Versus, "echo process") || strings.HasPrefix(r.Versus, "floor")) {
			t.Errorf("%s is compared with %s: an informational baseline must never be the limit", r.Name, r.Versus)
		}
	}
	// The rows with a terminal (a progress bar; the scenario fails if the
	// command draws none), from 1 MiB up only.
	for _, name := range []string{"oetp dma write (tty)", "oetp dma read (tty)"} {
		if r := rep.Find(ScenarioProc, name, 1<<20); r == nil || r.Ops < procMinOps || r.Target != "≥0.90" {
			t.Errorf("%s 1MiB: %+v; want a row with its target", name, r)
		}
		if r := rep.Find(ScenarioProc, name, 64<<10); r != nil {
			t.Errorf("%s 64KiB: a terminal row below 1 MiB", name)
		}
	}
}
