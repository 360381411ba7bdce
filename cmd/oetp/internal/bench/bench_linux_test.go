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

// TestReliableZeroAllocs: the reliable rows' stacks, opened through package
// node over a veth pair with the transport to the peer, allocate nothing
// per operation once warm.
func TestReliableZeroAllocs(t *testing.T) {
	if why := vethUnavailable(); why != "" {
		t.Skip(why)
	}
	e, err := newReliableEnv(64<<10, *linkIO)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	pairZeroAllocs(t, e.rel)
	if st, _ := e.na.Transport(); st.Sent == 0 {
		t.Fatal("the operations did not go through the reliable transport")
	}
}
