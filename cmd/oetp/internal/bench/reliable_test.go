package bench

import (
	"strings"
	"testing"

	"github.com/openenoc/oetp/internal/testutil"
)

func TestRunReliable(t *testing.T) {
	if why := vethUnavailable(); why != "" {
		t.Skip(why)
	}
	o := shortOptions(ScenarioReliable)
	o.Blocks = []int64{64 << 10}
	// The windowed raw exchange's echo is a process of this binary.
	o.Binary = testutil.BuildCommand(t, "../..")
	rep, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	// The fan-in rows are totals over whole rounds (no per-operation
	// latencies): checked apart.
	rows := *rep
	rows.Results = nil
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "parallel") {
			if r.Ops <= 0 || (!r.Baseline && r.Ratio <= 0) {
				t.Errorf("%s: %+v", r.Name, r)
			}
			continue
		}
		if strings.HasPrefix(r.Name, "raw stream") {
			// One-way: frames, not round trips, and no latencies.
			if r.MBps <= 0 || r.Ops <= 0 || r.FrameCount != r.Ops || !r.Baseline || !strings.Contains(r.Note, "arrived") {
				t.Errorf("%s: %+v", r.Name, r)
			}
			continue
		}
		if strings.HasPrefix(r.Name, windowRowPrefix) {
			// Exchanges in a window: no per-exchange latencies.
			if r.MBps <= 0 || r.Ops <= 0 || r.FrameCount != 2*r.Ops || !r.Baseline || !strings.Contains(r.Note, "CPU per exchange, both sides") {
				t.Errorf("%s: %+v", r.Name, r)
			}
			continue
		}
		if strings.HasPrefix(r.Name, "dma-") && strings.HasSuffix(r.Name, " reliable") {
			if !strings.HasPrefix(r.Versus, "tcp bulk") || r.Target != "≥1.00" || !strings.Contains(r.Note, "× the raw one-way stream (target ≥ 0.60)") {
				t.Errorf("%s: compared with %q, target %q, note %q; want TCP bulk, ≥1.00 and the raw stream's ratio", r.Name, r.Versus, r.Target, r.Note)
			}
		}
		if strings.HasPrefix(r.Name, "oetp dma write") {
			// Processes timed as the command reports it: no latencies.
			if r.MBps <= 0 || r.Ops < 3 || r.Block != 64<<10 || r.AllocsPerFrame != -1 {
				t.Errorf("%s: %+v", r.Name, r)
			}
			if strings.Contains(r.Name, "via hub") && (r.Versus != "oetp dma write reliable" || r.Target != "≥0.80" || r.Ratio <= 0 || r.Met == nil) {
				t.Errorf("%s: compared with %q, target %q, ratio %v; want the command's own reliable rate, ≥0.80", r.Name, r.Versus, r.Target, r.Ratio)
			}
			continue
		}
		if strings.HasPrefix(r.Name, "process dma-") {
			// One oetp process per block against oetp serve.
			if r.MBps <= 0 || r.Ops < 3 || r.Block != 64<<10 || r.AllocsPerFrame != -1 || !strings.Contains(r.Note, "× the windowed raw exchange measured in turns with it on the same veth pair") {
				t.Errorf("%s: %+v", r.Name, r)
			}
			continue
		}
		if strings.HasPrefix(r.Name, windowFloorRowPrefix) {
			// The windowed floor taken in turns with an engine→serve row
			// and the windowed raw exchange.
			if r.MBps <= 0 || r.Ops <= 0 || r.FrameCount != 2*r.Ops || !r.Baseline || !r.Info || r.Block != 64<<10 ||
				!strings.Contains(r.Note, "× the windowed raw exchange measured in turns with it and with engine→serve dma-") || !strings.Contains(r.Note, "CRC32C checked") {
				t.Errorf("%s: %+v", r.Name, r)
			}
			continue
		}
		if strings.HasPrefix(r.Name, "engine→serve dma-") {
			// An endpoint of the bench process against oetp serve.
			if r.MBps <= 0 || r.Ops <= 0 || r.Block != 64<<10 || r.Failed != 0 || !strings.Contains(r.Note, "× the windowed raw exchange measured in turns with it on the same veth pair") ||
				!strings.Contains(r.Note, "× the windowed floor measured in turns with it") ||
				!strings.Contains(r.Note, "CPU per fragment, both processes") || !strings.Contains(r.Note, "fragments resent") {
				t.Errorf("%s: %+v", r.Name, r)
			}
			continue
		}
		if strings.HasPrefix(r.Name, "engine→serve rmem-read") {
			// Reads from 32 goroutines of the bench process against
			// oetp serve, each checked, beside the raw pipelined exchange.
			if r.Ops <= 0 || r.FrameCount != 2*r.Ops || r.Failed != 0 || r.Versus != rawParallelName || r.Ratio <= 0 ||
				!strings.Contains(r.Note, "CPU per read, both processes") || !strings.Contains(r.Note, "× the raw pipelined exchange measured in turns with it") {
				t.Errorf("%s: %+v", r.Name, r)
			}
			if tuned := strings.Contains(r.Name, "callers, "); tuned != (r.Target == "") || !tuned && r.Met == nil {
				t.Errorf("%s: target %q, met %v; want the goal on the default row only", r.Name, r.Target, r.Met)
			}
			continue
		}
		if strings.HasPrefix(r.Name, "fan-in") {
			if r.MBps <= 0 || r.Ops <= 0 || (!r.Baseline && r.Ratio <= 0) {
				t.Errorf("%s: %+v", r.Name, r)
			}
			continue
		}
		rows.Results = append(rows.Results, r)
	}
	checkResults(t, &rows, ScenarioReliable)
	names := map[string]bool{}
	for _, r := range rep.Results {
		names[r.Name] = true
	}
	for _, op := range []string{"dma-write", "dma-read"} {
		want := op + " reliable 64KiB: "
		found := false
		for _, n := range rep.Notes {
			if strings.Contains(n, want) && strings.Contains(n, "× the windowed raw exchange") && strings.Contains(n, "CPU per fragment") {
				found = true
			}
		}
		if !found {
			t.Errorf("no note of %s against the windowed raw exchange in %q", op, rep.Notes)
		}
	}
	for _, want := range []string{"raw window 8192↔20 ×32 in flight", "raw window 28↔8192 ×32 in flight", "rmem-read reliable", "rmem-read v1", "dma-write reliable", "dma-write v1", "dma-read reliable", "dma-read v1", "tcp bulk 64KiB", "raw stream near→far ×64", "raw stream far→near ×64", "fan-in 1 sender", "fan-in 3 senders", "oetp dma write reliable", "oetp dma write via hub reliable",
		"process dma-write reliable", "process dma-read reliable", "engine→serve dma-write reliable", "engine→serve dma-read reliable",
		"floor window 8192↔20 ×32 in flight", "floor window 28↔8192 ×32 in flight",
		"engine→serve rmem-read reliable 32 callers", "engine→serve rmem-read reliable 32 callers, GOMAXPROCS 1"} {
		if !names[want] {
			t.Errorf("no %q row in %v", want, names)
		}
	}
}
