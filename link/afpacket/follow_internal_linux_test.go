//go:build linux

package afpacket

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/internal/affinity"
)

// fakeFollower is a follower over a ring in ordinary memory, which the test
// fills as the kernel would, and a pin that records the moves.
func fakeFollower(allowed ...int) (*follower, *[]int) {
	var set affinity.Set
	for _, c := range allowed {
		set.Set(c)
	}
	moves := new([]int)
	f := &follower{fd: -1, frameSize: 128, frames: 8, allowed: set, home: -1, cand: -1}
	f.ring = make([]byte, f.frameSize*f.frames)
	f.pin = func(cpu int, allowed affinity.Set) error {
		if !allowed.IsSet(cpu) {
			panic("pin outside the allowed CPUs")
		}
		*moves = append(*moves, cpu)
		return nil
	}
	return f, moves
}

// receive puts one probe entry per CPU in cpus into the ring (the kernel's
// side) and runs the check of one received batch.
func (f *follower) receive(l *Link, cpus ...int) {
	w := f.next
	for _, c := range cpus {
		b := f.ring[w*f.frameSize:]
		binary.NativeEndian.PutUint32(b[tp2Snaplen:], uint32(c+1))
		binary.NativeEndian.PutUint32(b[tp2Status:], unix.TP_STATUS_USER)
		w = (w + 1) % f.frames
	}
	f.check(l)
}

// TestFollowerRules: the process moves after two batches in a row from one
// other CPU it may use, never to a CPU outside its mask, not for batches
// from several CPUs or taking turns, and not again within followDwell; the
// ring's slots are given back to the kernel.
func TestFollowerRules(t *testing.T) {
	l := &Link{}
	f, moves := fakeFollower(0, 1, 2)
	want := func(step string, w ...int) {
		t.Helper()
		if len(*moves) != len(w) {
			t.Fatalf("%s: moves %v, want %v", step, *moves, w)
		}
		for i := range w {
			if (*moves)[i] != w[i] {
				t.Fatalf("%s: moves %v, want %v", step, *moves, w)
			}
		}
	}
	f.receive(l, 1)
	want("one batch from CPU 1")
	f.receive(l, 2)
	want("then one from CPU 2")
	f.receive(l, 1, 2)
	want("a batch from CPUs 1 and 2")
	f.receive(l, 1)
	f.receive(l)
	want("CPU 1, then a batch received on the CPU the process runs on (the probe saw nothing)")
	f.receive(l, 1)
	f.receive(l, 1, 1)
	want("two batches from CPU 1", 1)
	if f.home != 1 {
		t.Fatalf("home %d after the move, want 1", f.home)
	}
	for range followSettle - 1 {
		f.receive(l)
	}
	want("batches received on CPU 1 after the move", 1)
	f.receive(l)
	want("followSettle batches after the move: placed once more", 1, 1)
	f.last = time.Now()
	f.receive(l, 2)
	f.receive(l, 2)
	want("two batches from CPU 2 within followDwell of the move", 1, 1)
	f.last = time.Now().Add(-followDwell)
	f.receive(l, 2)
	want("a third batch from CPU 2, followDwell after the move", 1, 1, 2)
	f.last = time.Now().Add(-followDwell)
	f.receive(l, 5)
	f.receive(l, 5)
	f.receive(l, 5)
	want("batches from CPU 5, which the process may not use", 1, 1, 2)
	for i := range f.frames {
		if st := f.status(i).Load(); st != unix.TP_STATUS_KERNEL {
			t.Fatalf("ring slot %d has status %#x after the checks, want TP_STATUS_KERNEL", i, st)
		}
	}
}

// TestProbeProgram: the probe's filter drops a frame received on home
// first, then is the link's with each accept replaced by a jump to "return
// 1 + CPU".
func TestProbeProgram(t *testing.T) {
	p := filterProgram(false, true, false, [6]byte{2, 0, 0, 0, 0, 1})
	for _, home := range []int{-1, 3} {
		q := probeProgram(p, home)
		if len(q) != len(p)+6 {
			t.Fatalf("home %d: %d instructions, want %d", home, len(q), len(p)+6)
		}
		k := uint32(home)
		if home < 0 {
			k = 0xffffffff
		}
		if q[0].K != skfAdOff+skfAdCPU || q[1].K != k || q[1].Jt != 0 || q[1].Jf != 1 || q[2] != bpfStmt(unix.BPF_RET|unix.BPF_K, 0) {
			t.Fatalf("home %d: head %+v", home, q[:3])
		}
		tail := 3 + len(p)
		for i, ins := range p {
			j := 3 + i
			if ins.Code == unix.BPF_RET|unix.BPF_K && ins.K == bpfAccept {
				if q[j].Code != unix.BPF_JMP|unix.BPF_JA || j+1+int(q[j].K) != tail {
					t.Fatalf("home %d: instruction %d is %+v, want a jump to %d", home, j, q[j], tail)
				}
			} else if q[j] != ins {
				t.Fatalf("home %d: instruction %d changed: %+v, want %+v", home, j, q[j], ins)
			}
		}
		if q[tail].K != skfAdOff+skfAdCPU || q[tail+1] != bpfStmt(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_K, 1) || q[tail+2] != bpfStmt(unix.BPF_RET|unix.BPF_A, 0) {
			t.Fatalf("home %d: tail %+v", home, q[tail:])
		}
	}
}
