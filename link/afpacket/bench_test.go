//go:build linux

package afpacket_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
)

func TestNoAllocs(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		testNoAllocs(t, afpacket.Config{IO: mode})
	})
	t.Run("blocking-holdp", func(t *testing.T) {
		testNoAllocs(t, afpacket.Config{IO: afpacket.IOBlocking, HoldP: true})
	})
}

func testNoAllocs(t *testing.T, cfg afpacket.Config) {
	tn := netns.NewPair(t)
	a, b := open(t, tn.Host(0), cfg), open(t, tn.Host(1), cfg)
	f := frame(b.Addr(), a.Addr(), afpacket.EtherType, 1000, 1)
	one := [][]byte{make([]byte, 8192)}
	bufs := make([][]byte, 32)
	for i := range bufs {
		bufs[i] = make([]byte, 8192)
	}
	sizes := make([]int, 32)
	var err error
	allocs := testing.AllocsPerRun(500, func() {
		if err == nil {
			err = a.Write(f)
		}
		if err == nil {
			_, err = b.ReadBatch(one, sizes)
		}
	})
	if err != nil || allocs != 0 {
		t.Errorf("Write + ReadBatch(1): %v allocations per frame, err %v; want 0", allocs, err)
	}
	frames := make([][]byte, 16)
	for i := range frames {
		frames[i] = frame(b.Addr(), a.Addr(), afpacket.EtherType, 60+i, byte(i))
	}
	allocs = testing.AllocsPerRun(200, func() {
		if err == nil {
			_, err = a.WriteBatch(frames)
		}
		for got := 0; got < len(frames) && err == nil; {
			var n int
			n, err = b.ReadBatch(bufs, sizes)
			got += n
		}
	})
	if err != nil || allocs != 0 {
		t.Errorf("WriteBatch(16) + ReadBatch(32): %v allocations per batch, err %v; want 0", allocs, err)
	}
}

// BenchmarkPingPong measures the round trip of one frame between two
// namespaces over veth: h1 writes, h2 echoes, h1 reads. ns/op is the
// round-trip time; cpu-ns/op the CPU time (user + system, both ends) spent
// per round trip.
func BenchmarkPingPong(b *testing.B) {
	for _, v := range []struct {
		mode afpacket.IOMode
		lock bool
	}{{afpacket.IOBlocking, true}, {afpacket.IOBlocking, false}, {afpacket.IOPoll, false}} {
		name := v.mode.String()
		if v.lock {
			name += "-locked"
		}
		for _, size := range []int{24, 8192} {
			b.Run(fmt.Sprintf("%s/%d", name, size), func(b *testing.B) { pingPong(b, v.mode, v.lock, size) })
		}
	}
}

func pingPong(b *testing.B, mode afpacket.IOMode, lock bool, size int) {
	tn := netns.NewPair(b)
	x := open(b, tn.Host(0), afpacket.Config{IO: mode})
	y := open(b, tn.Host(1), afpacket.Config{IO: mode})
	req := frame(y.Addr(), x.Addr(), afpacket.EtherType, size, 1)
	rsp := frame(x.Addr(), y.Addr(), afpacket.EtherType, size, 2)
	done := make(chan error, 1)
	go func() {
		if lock {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		buf, sizes := [][]byte{make([]byte, 8192)}, []int{0}
		for {
			if _, err := y.ReadBatch(buf, sizes); err != nil {
				done <- nil
				return
			}
			if err := y.Write(rsp); err != nil {
				done <- err
				return
			}
		}
	}()
	if lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	buf, sizes := [][]byte{make([]byte, 8192)}, []int{0}
	cpu0 := cpuTime()
	for b.Loop() {
		if err := x.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := x.ReadBatch(buf, sizes); err != nil || sizes[0] != size {
			b.Fatalf("ReadBatch: %v, %d bytes", err, sizes[0])
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	y.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// cpuTime returns the user and system CPU time of the process (the kernel's
// share of the veth delivery included).
func cpuTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkThroughput measures one-way frames per second from h1 to h2 with
// WriteBatch/ReadBatch batches of the given size.
func BenchmarkThroughput(b *testing.B) {
	for _, mode := range modes {
		for _, batch := range []int{1, 32} {
			b.Run(fmt.Sprintf("%v/batch-%d", mode, batch), func(b *testing.B) {
				tn := netns.NewPair(b)
				x := open(b, tn.Host(0), afpacket.Config{IO: mode})
				y := open(b, tn.Host(1), afpacket.Config{IO: mode})
				frames := make([][]byte, batch)
				for i := range frames {
					frames[i] = frame(y.Addr(), x.Addr(), afpacket.EtherType, 1024, byte(i))
				}
				bufs := make([][]byte, batch)
				for i := range bufs {
					bufs[i] = make([]byte, 8192)
				}
				sizes := make([]int, batch)
				b.SetBytes(int64(1024 * batch))
				for b.Loop() {
					if _, err := x.WriteBatch(frames); err != nil {
						b.Fatal(err)
					}
					for got := 0; got < batch; {
						n, err := y.ReadBatch(bufs, sizes)
						if err != nil {
							b.Fatal(err)
						}
						got += n
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/frame")
			})
		}
	}
}

// BenchmarkModes compares the I/O modes fairly on a shared machine: it
// builds a ping-pong pair per mode and alternates chunks of 100 round trips
// between them, so that load from other processes hits both alike. It
// reports each mode's median and 90th-percentile round trip over the chunks.
func BenchmarkModes(b *testing.B) {
	for _, size := range []int{24, 8192} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			type pair struct {
				mode afpacket.IOMode
				x    *afpacket.Link
				req  []byte
				rtts []float64
			}
			var pairs []*pair
			for _, mode := range modes {
				tn := netns.NewPair(b)
				x := open(b, tn.Host(0), afpacket.Config{IO: mode})
				y := open(b, tn.Host(1), afpacket.Config{IO: mode})
				rsp := frame(x.Addr(), y.Addr(), afpacket.EtherType, size, 2)
				go func() {
					buf, sizes := [][]byte{make([]byte, 8192)}, []int{0}
					for {
						if _, err := y.ReadBatch(buf, sizes); err != nil {
							return
						}
						if y.Write(rsp) != nil {
							return
						}
					}
				}()
				pairs = append(pairs, &pair{mode: mode, x: x, req: frame(y.Addr(), x.Addr(), afpacket.EtherType, size, 1)})
			}
			buf, sizes := [][]byte{make([]byte, 8192)}, []int{0}
			const chunk = 100
			for b.Loop() {
				for _, p := range pairs {
					start := time.Now()
					for range chunk {
						if err := p.x.Write(p.req); err != nil {
							b.Fatal(err)
						}
						if _, err := p.x.ReadBatch(buf, sizes); err != nil || sizes[0] != size {
							b.Fatalf("ReadBatch: %v, %d bytes", err, sizes[0])
						}
					}
					p.rtts = append(p.rtts, float64(time.Since(start).Nanoseconds())/chunk)
				}
			}
			for _, p := range pairs {
				slices.Sort(p.rtts)
				b.ReportMetric(p.rtts[len(p.rtts)/2], p.mode.String()+"-p50-ns/rtt")
				b.ReportMetric(p.rtts[len(p.rtts)*9/10], p.mode.String()+"-p90-ns/rtt")
			}
		})
	}
}
