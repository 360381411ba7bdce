//go:build linux

package afpacket_test

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/placement"
)

// threadMasks returns the affinity of every thread of the process.
func threadMasks(t *testing.T) map[int]placement.Set {
	t.Helper()
	names, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]placement.Set{}
	for _, d := range names {
		tid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		var s placement.Set
		if unix.SchedGetaffinity(tid, &s) == nil {
			out[tid] = s
		}
	}
	return out
}

// TestFollowCPU: with Config.FollowCPU, traffic received on one CPU moves
// every thread of the process to that CPU, then traffic from another CPU
// moves it there; frames received on two CPUs in turn (two clients) do not
// move it; without FollowCPU, the same traffic leaves every thread's
// affinity as it was. Needs two CPUs.
func TestFollowCPU(t *testing.T) {
	allowed, err := placement.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if allowed.Count() < 2 {
		t.Skipf("the process may run on %d CPU: nothing to follow", allowed.Count())
	}
	t.Cleanup(func() {
		if err := placement.Restore(allowed); err != nil {
			t.Error(err)
		}
	})
	var cpus []int
	for c := 0; len(cpus) < 2; c++ {
		if allowed.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	for _, mode := range []string{"off", "on", "interleaved"} {
		follow := mode != "off"
		t.Run(mode, func(t *testing.T) {
			tn := netns.NewPair(t)
			tx := open(t, tn.Host(0), afpacket.Config{IO: afpacket.IOBlocking})
			rx := open(t, tn.Host(1), afpacket.Config{IO: afpacket.IOBlocking, HoldP: true, FollowCPU: follow})
			f := frame(rx.Addr(), tx.Addr(), afpacket.EtherType, 64, 1)
			send := make(chan int)
			sent := make(chan error, 1)
			sender := make(chan int)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
				sender <- unix.Gettid()
				for cpu := range send {
					var one placement.Set
					one.Set(cpu)
					if err := unix.SchedSetaffinity(0, &one); err != nil {
						sent <- err
						continue
					}
					sent <- tx.Write(f)
				}
			}()
			defer close(send)
			senderTID := <-sender
			bufs, sizes := [][]byte{make([]byte, 2048), make([]byte, 2048)}, make([]int, 2)
			// exchange sends one frame from cpu and reads it.
			exchange := func(cpu int) {
				t.Helper()
				send <- cpu
				if err := <-sent; err != nil {
					t.Fatal(err)
				}
				if n, err := rx.ReadBatch(bufs, sizes); err != nil || n != 1 || sizes[0] != len(f) {
					t.Fatalf("ReadBatch: %d frames (%v), %v", n, sizes[:n], err)
				}
			}
			placed := func(cpu int) bool {
				for _, s := range threadMasks(t) {
					if s.Count() != 1 || !s.IsSet(cpu) {
						return false
					}
				}
				return true
			}
			if mode == "interleaved" {
				// Two clients on two CPUs whose frames take turns: the
				// process never moves.
				for n := range 200 {
					exchange(cpus[n%2])
				}
				if moves := rx.Stats().CPUMoves; moves != 0 {
					t.Errorf("frames received on CPUs %d and %d in turn: CPUMoves %d, want 0", cpus[0], cpus[1], moves)
				}
				for tid, s := range threadMasks(t) {
					if tid != senderTID && s != allowed {
						t.Errorf("frames received on two CPUs in turn: thread %d has %d CPUs, want %d", tid, s.Count(), allowed.Count())
					}
				}
				return
			}
			for _, cpu := range cpus {
				// Generous: the dwell between moves is 10 ms.
				deadline := time.Now().Add(10 * time.Second)
				for n := 0; ; n++ {
					exchange(cpu)
					if !follow {
						if n == 50 {
							break
						}
						continue
					}
					if placed(cpu) {
						// Placed: the probe's filter now drops the
						// frames received on cpu.
						seen := rx.ProbeSeen()
						for range 20 {
							exchange(cpu)
						}
						if got := rx.ProbeSeen(); got != seen {
							t.Errorf("placed on CPU %d: the probe saw %d of 20 frames received there, want 0", cpu, got-seen)
						}
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("after %d frames received on CPU %d for 10s the threads are not all on it: %v", n+1, cpu, threadMasks(t))
					}
				}
				if !follow {
					for tid, s := range threadMasks(t) {
						if tid != senderTID && s != allowed {
							t.Fatalf("FollowCPU off: thread %d has %d CPUs after traffic from CPU %d", tid, s.Count(), cpu)
						}
					}
				}
			}
			moves := rx.Stats().CPUMoves
			if follow && moves < 2 {
				t.Errorf("CPUMoves %d after traffic from CPUs %v, want at least 2", moves, cpus)
			}
			if !follow && moves != 0 {
				t.Errorf("FollowCPU off: CPUMoves %d, want 0", moves)
			}
			if err := placement.Restore(allowed); err != nil {
				t.Fatal(err)
			}
		})
	}
}
