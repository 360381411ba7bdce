package bench

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// The Go benchmarks behind `oetp bench`: the same codec cases, baselines
// and engine paths, one sub-benchmark each. Engine and baseline
// sub-benchmarks report the median and 99th percentile operation time and
// the process's allocations per frame next to the usual figures:
//
//	go test -run '^$' -bench . ./cmd/oetp/internal/bench/
//	sudo go test -run '^$' -bench 'Veth/(raw-24|rmem)' ./cmd/oetp/internal/bench/ -args -linkio poll

// linkIO selects the I/O mode of the engine's AF_PACKET links in
// BenchmarkVeth, like oetp bench --link-io.
var linkIO = flag.String("linkio", "", "I/O mode of the engine's AF_PACKET links in BenchmarkVeth: blocking or poll (default: the link's own)")

// engineAnyCPU frees the engine's threads in BenchmarkVeth, like oetp bench
// --engine-any-cpu; by default they run on the one-CPU baseline's CPU.
var engineAnyCPU = flag.Bool("engineanycpu", false, "run BenchmarkVeth's engine paths with the threads free to run on any CPU")

// busyPoll is the spin window of BenchmarkVethBusy's links, like oetp
// bench --busy-poll.
var busyPoll = flag.Duration("busypoll", DefaultBusyPoll, "spin window of BenchmarkVethBusy's links (afpacket Config.BusyPoll); 0 skips it")

// benchBlocks are the DMA block sizes of the Go benchmarks.
var benchBlocks = []int{64 << 10, 1 << 20}

func BenchmarkCodec(b *testing.B) {
	for _, c := range codecCases() {
		b.Run(strings.ReplaceAll(c.name, " ", "-"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(c.bytes)
			c.fn(&codecLoop{n: b.N})
		})
	}
}

func BenchmarkMem(b *testing.B) {
	e, err := newMemEnv(benchBlocks[len(benchBlocks)-1])
	if err != nil {
		b.Fatal(err)
	}
	benchEnv(b, e)
}

// benchEnv runs every baseline and engine path of e as a sub-benchmark and
// closes e.
func benchEnv(b *testing.B, e env) {
	b.Cleanup(func() {
		if err := e.close(); err != nil {
			b.Error(err)
		}
	})
	for _, op := range engineOps {
		steps := e.bases(op)
		if op == opRMEMRead {
			steps = append(steps, e.engine(op, 4))
		} else {
			for _, n := range benchBlocks {
				steps = append(steps, e.engine(op, n))
			}
		}
		for _, s := range steps {
			b.Run(benchName(s.res), func(b *testing.B) { benchStep(b, s) })
		}
	}
}

// benchName turns a result's name into an ASCII sub-benchmark name, e.g.
// raw-24-24-one-CPU or dma-write-64KiB.
func benchName(r Result) string {
	n := strings.NewReplacer("↔", "-", " ", "-").Replace(r.Name)
	if r.Block > 0 {
		n += "-" + SizeString(r.Block)
	}
	return n
}

// benchStep runs b.N operations of s.
func benchStep(b *testing.B, s *step) {
	s.m = newMeter(true)
	b.ResetTimer()
	if err := s.round(time.Hour, int64(b.N)); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	s.res.fromMeter(s.m)
	if s.m.ops > 0 {
		b.SetBytes(s.m.bytes / s.m.ops)
	}
	b.ReportMetric(float64(s.res.P50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(s.res.P99.Nanoseconds()), "p99-ns")
	b.ReportMetric(max(s.res.AllocsPerFrame, 0), "allocs/frame")
}
