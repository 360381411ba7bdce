//go:build linux

package afpacket

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/placement"
)

// Following the traffic (Config.FollowCPU).
//
// An AF_PACKET socket cannot say on which CPU a frame was received
// (SO_INCOMING_CPU is -1 for packet sockets: only TCP and UDP set it), but
// a socket filter can: the classic BPF ancillary load SKF_AD_CPU is the CPU
// the filter runs on, the one whose softirq received the frame. The link
// opens a second socket on the interface, the probe, with the link's own
// filter (the same frames) ending in "return 1 + CPU" instead of "accept
// the frame": the probe keeps a copy of 1 + CPU bytes of each such frame,
// so its length is the CPU. The probe has a PACKET_MMAP receive ring
// (TPACKET_V2), so the receive loop reads those lengths from shared memory
// after each batch, without a system call. Once the process has been
// placed, the probe's filter also drops the frames received on the CPU the
// process runs on: in the steady state the probe receives nothing.
//
// Over veth a frame is received on the CPU that sent it, so following the
// traffic puts serve's receive loop on the CPU of its client's sending
// thread: a wake-up of a thread on the same CPU, where a wake-up across
// CPUs costs tens of µs on a VM (an idle vCPU is halted).

// SKF_AD_CPU, the ancillary load of the CPU (linux/filter.h).
const skfAdCPU = 36

// follower is a link's probe and placement state, used by ReadBatch under
// the link's rmu.
type follower struct {
	fd        int
	ring      []byte
	frameSize int
	frames    int
	next      int // the ring slot to look at next

	home  int                 // the CPU the probe's filter drops (the Follower's Home)
	place *placement.Follower // decides the moves

	seen atomic.Uint64 // probe entries read (frames received on another CPU than home)
}

// TPACKET_V2 frame header offsets (struct tpacket2_hdr).
const (
	tp2Status  = 0
	tp2Snaplen = 8
)

// openFollower opens the probe on the link's interface. It fails if the
// process may run on one CPU only (nothing to follow) or the kernel
// refuses the ring.
func (l *Link) openFollower() (*follower, error) {
	allowed, err := placement.Allowed()
	if err != nil {
		return nil, err
	}
	maxCPU := -1
	for c := range len(allowed) * 64 {
		if allowed.IsSet(c) {
			maxCPU = c
		}
	}
	// The frame's data starts at offset 66 of a TPACKET_V2 slot
	// (TPACKET2_HDRLEN 52, aligned with room for the MAC header); the
	// slot must hold 1 + maxCPU bytes of it.
	frameSize := (66 + 2 + maxCPU + 15) &^ 15
	frameSize = max(frameSize, 128)
	const frames = 32
	block := (frameSize*frames + os.Getpagesize() - 1) &^ (os.Getpagesize() - 1)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	f := &follower{fd: fd, frameSize: frameSize, frames: block / frameSize, home: -1, place: placement.NewFollower(allowed, nil)}
	fail := func(what string, err error) (*follower, error) {
		if f.ring != nil {
			unix.Munmap(f.ring)
		}
		unix.Close(fd)
		return nil, fmt.Errorf("afpacket: %s: CPU probe: %w", l.ifname, os.NewSyscallError(what, err))
	}
	if !l.outgoingFilter {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			return fail("setsockopt PACKET_IGNORE_OUTGOING", err)
		}
	}
	if err := f.attach(l); err != nil {
		return fail("setsockopt SO_ATTACH_FILTER", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fail("setsockopt PACKET_VERSION", err)
	}
	req := unix.TpacketReq{Block_size: uint32(block), Block_nr: 1, Frame_size: uint32(frameSize), Frame_nr: uint32(f.frames)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fail("setsockopt PACKET_RX_RING", err)
	}
	ring, err := unix.Mmap(fd, 0, block, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	f.ring = ring
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.ifindex}); err != nil {
		return fail("bind", err)
	}
	return f, nil
}

// probeProgram is the link's filter program with every "accept the frame"
// replaced by "return 1 + the CPU", after a first test that drops at once
// a frame received on home: in the steady state the probe costs the kernel
// three instructions per frame.
func probeProgram(p []unix.SockFilter, home int) []unix.SockFilter {
	k := uint32(home)
	if home < 0 {
		k = 0xffffffff // no CPU is that
	}
	q := make([]unix.SockFilter, 0, len(p)+6)
	q = append(q,
		bpfStmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, skfAdOff+skfAdCPU),
		bpfJump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, k, 0, 1),
		bpfStmt(unix.BPF_RET|unix.BPF_K, 0))
	head := len(q)
	q = append(q, p...)
	tail := uint32(len(q))
	for i := head; i < len(q); i++ {
		if ins := q[i]; ins.Code == unix.BPF_RET|unix.BPF_K && ins.K == bpfAccept {
			q[i] = bpfStmt(unix.BPF_JMP|unix.BPF_JA, tail-uint32(i+1))
		}
	}
	return append(q,
		bpfStmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, skfAdOff+skfAdCPU),
		bpfStmt(unix.BPF_ALU|unix.BPF_ADD|unix.BPF_K, 1),
		bpfStmt(unix.BPF_RET|unix.BPF_A, 0))
}

// attach installs the probe's filter for the link's current filter and
// f.home. Call with the link's cmu held, or before the link is shared.
func (f *follower) attach(l *Link) error {
	p := probeProgram(l.filter(), f.home)
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	return unix.SetsockoptSockFprog(f.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
}

func (f *follower) status(i int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&f.ring[i*f.frameSize+tp2Status]))
}

// check runs after each batch the link received: it reads the CPUs of the
// frames the probe saw since the last check and hands them to the
// placement.Follower, which moves the process when the last batches all
// came from one other CPU it may use; after a move the probe drops the
// frames received on the new CPU.
func (f *follower) check(l *Link) {
	k, cpu, mixed := 0, -1, false
	for {
		st := f.status(f.next)
		if st.Load()&unix.TP_STATUS_USER == 0 {
			break
		}
		c := int(*(*uint32)(unsafe.Pointer(&f.ring[f.next*f.frameSize+tp2Snaplen]))) - 1
		st.Store(unix.TP_STATUS_KERNEL)
		f.next = (f.next + 1) % f.frames
		k++
		f.seen.Add(1)
		if cpu < 0 {
			cpu = c
		} else if c != cpu {
			mixed = true
		}
	}
	if k == 0 || mixed {
		cpu = -1
	}
	if !f.place.Observe(cpu) {
		return
	}
	l.cmu.Lock()
	f.home = f.place.Home()
	f.attach(l)
	l.cmu.Unlock()
}

// cpuMoves returns Stats.CPUMoves.
func (l *Link) cpuMoves() uint64 {
	if l.follow == nil {
		return 0
	}
	return l.follow.place.Moves()
}

func (f *follower) close() {
	unix.Munmap(f.ring)
	unix.Close(f.fd)
}
