//go:build linux

package afpacket

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/placement"
)

// fakeFollower is a follower over a ring in ordinary memory, which the test
// fills as the kernel would, and a pin that records the moves.
func fakeFollower(allowed ...int) (*follower, *[]int) {
	var set placement.Set
	for _, c := range allowed {
		set.Set(c)
	}
	moves := new([]int)
	f := &follower{fd: -1, frameSize: 128, frames: 8, home: -1}
	f.ring = make([]byte, f.frameSize*f.frames)
	f.place = placement.NewFollower(set, func(cpu int, allowed placement.Set) error {
		*moves = append(*moves, cpu)
		return nil
	})
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

// TestFollowerReadsProbe: check hands the Follower the one CPU of a batch
// (none for a batch from several CPUs or an empty probe), the probe's home
// becomes the CPU moved to, and the ring's slots are given back to the
// kernel. The rules of a move are placement's (TestFollowerRules there).
func TestFollowerReadsProbe(t *testing.T) {
	l := &Link{follow: nil}
	f, moves := fakeFollower(0, 1, 2)
	f.receive(l, 1, 2)
	f.receive(l, 1, 2)
	f.receive(l)
	f.receive(l)
	if len(*moves) != 0 {
		t.Fatalf("moves %v after batches from several CPUs and empty probes, want none", *moves)
	}
	f.receive(l, 1)
	f.receive(l, 1, 1)
	if !slices.Equal(*moves, []int{1}) || f.home != 1 {
		t.Fatalf("moves %v, probe home %d after two batches from CPU 1, want [1] and 1", *moves, f.home)
	}
	if got := f.seen.Load(); got != 7 {
		t.Fatalf("%d probe entries read, want 7", got)
	}
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
