package bench

import (
	"strings"
	"testing"
)

func TestRunReliable(t *testing.T) {
	if why := vethUnavailable(); why != "" {
		t.Skip(why)
	}
	o := shortOptions(ScenarioReliable)
	o.Blocks = []int64{64 << 10}
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
	for _, want := range []string{"rmem-read reliable", "rmem-read v1", "dma-write reliable", "dma-write v1", "dma-read reliable", "dma-read v1", "tcp bulk 64KiB", "fan-in 1 sender", "fan-in 3 senders"} {
		if !names[want] {
			t.Errorf("no %q row in %v", want, names)
		}
	}
}
