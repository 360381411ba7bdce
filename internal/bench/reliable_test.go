package bench

import "testing"

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
	checkResults(t, rep, ScenarioReliable)
	names := map[string]bool{}
	for _, r := range rep.Results {
		names[r.Name] = true
	}
	for _, want := range []string{"rmem-read reliable", "rmem-read v1", "dma-write reliable", "dma-write v1", "dma-read reliable", "dma-read v1", "tcp bulk 64KiB"} {
		if !names[want] {
			t.Errorf("no %q row in %v", want, names)
		}
	}
}
