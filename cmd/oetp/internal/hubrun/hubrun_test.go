package hubrun

import "testing"

func TestHubProcs(t *testing.T) {
	for _, c := range []struct {
		devices, cpus int
		env           bool
		want          int
	}{
		{1, 2, false, 1},
		{0, 2, false, 1},
		{3, 2, false, 2},
		{3, 8, false, 3},
		{1, 8, true, 8}, // GOMAXPROCS set: the runtime's figure stands
		{1, 1, false, 1},
	} {
		if got := Procs(c.devices, c.cpus, c.env); got != c.want {
			t.Errorf("Procs(%d devices, %d CPUs, env %v) = %d, want %d", c.devices, c.cpus, c.env, got, c.want)
		}
	}
}
