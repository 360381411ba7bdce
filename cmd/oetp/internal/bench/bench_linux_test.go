//go:build linux

package bench

import "testing"

func BenchmarkVeth(b *testing.B) {
	if why := vethUnavailable(); why != "" {
		b.Skip(why)
	}
	e, err := newVethEnv(benchBlocks[len(benchBlocks)-1], *linkIO, 0)
	if err != nil {
		b.Fatal(err)
	}
	e.anyCPU = *engineAnyCPU
	benchEnv(b, e)
}

// BenchmarkVethBusy is BenchmarkVeth with busy-polling links and the
// engine free on any CPU, like oetp bench's veth-busy rows.
func BenchmarkVethBusy(b *testing.B) {
	if why := vethUnavailable(); why != "" {
		b.Skip(why)
	}
	if *busyPoll <= 0 {
		b.Skip("-busypoll 0: no busy-polling links")
	}
	e, err := newVethEnv(benchBlocks[len(benchBlocks)-1], *linkIO, *busyPoll)
	if err != nil {
		b.Fatal(err)
	}
	benchEnv(b, e)
}
