//go:build linux

package bench

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/placement"
	"github.com/openenoc/oetp/wire"
)

// rawSock is the baseline's medium access: a blocking AF_PACKET socket bound
// to one interface and the oETP EtherType, used with plain read(2) and
// write(2) on a locked OS thread. No netpoller, no protocol work, no copy
// beyond the kernel's own.
type rawSock struct {
	fd int
}

// rawTimeout bounds every blocking read of the baseline, so that a lost
// frame costs a timeout instead of a hang.
const rawTimeout = 500 * time.Millisecond

// errRawTimeout is returned by a baseline round trip whose reply did not
// arrive within rawTimeout.
var errRawTimeout = errors.New("raw ping-pong: no reply within the timeout")

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// rawEtherType is the EtherType of the baseline's frames: IEEE 802 local
// experimental EtherType 2, next to oETP's 0x88B5. The baseline's sockets
// and the engine's links then never see each other's frames, while the
// frames cross the same veth with the same sizes.
const rawEtherType = 0x88B6

// retype returns a copy of frame f with the baseline's EtherType.
func retype(f []byte) []byte {
	g := append([]byte(nil), f...)
	g[12], g[13] = rawEtherType>>8, rawEtherType&0xff
	return g
}

// openEchoSock opens the raw socket of an echo (what names it in messages)
// on the interface ifname, and returns it with the interface's MAC.
func openEchoSock(what, ifname string) (*rawSock, wire.MAC, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, wire.MAC{}, fmt.Errorf("%s on %s: %w: list the interfaces with `ip link`", what, ifname, err)
	}
	var mac wire.MAC
	copy(mac[:], ifi.HardwareAddr)
	s, err := openRaw(ifi.Index)
	return s, mac, err
}

// openRaw opens the baseline socket on interface ifindex of the calling
// thread's network namespace, bound to rawEtherType.
func openRaw(ifindex int) (*rawSock, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(rawEtherType)))
	if err != nil {
		return nil, fmt.Errorf("raw AF_PACKET socket: %w", os.NewSyscallError("socket", err))
	}
	s := &rawSock{fd: fd}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(rawEtherType), Ifindex: ifindex}); err != nil {
		s.close()
		return nil, fmt.Errorf("bind raw socket to ifindex %d: %w", ifindex, os.NewSyscallError("bind", err))
	}
	// Skip the qdisc layer on transmit, as the fastest sender would.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)
	// Room for bursts of 8 KiB frames (multicast blast); root may force it.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	}
	tv := unix.NsecToTimeval(int64(rawTimeout))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		s.close()
		return nil, fmt.Errorf("raw socket receive timeout: %w", os.NewSyscallError("setsockopt", err))
	}
	return s, nil
}

func (s *rawSock) close() {
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// read is one blocking read(2); it reports a timeout as errRawTimeout.
func (s *rawSock) read(b []byte) (int, error) {
	for {
		n, err := unix.Read(s.fd, b)
		switch err {
		case nil:
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, errRawTimeout
		}
		return 0, os.NewSyscallError("read", err)
	}
}

// write is one blocking write(2) of a whole frame.
func (s *rawSock) write(b []byte) error {
	for {
		_, err := unix.Write(s.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("write", err)
		}
		return nil
	}
}

// stopCmd is the Cmd octet of the frame that ends an echo or sink loop (a
// reserved code, never sent by the engine).
const stopCmd = 0x00

// stopFrame returns the frame that ends the loops of rawEcho and rawSink.
func stopFrame(dst, src wire.MAC) []byte {
	f := retype(wire.AppendRMEMReadReq(nil, dst, src, 0, 0))
	f[15] = stopCmd
	return f
}

// rawEcho is the far side of the baseline: a ready loop on a locked OS
// thread that answers each request frame with a prepared reply chosen by the
// request's Cmd octet, and does nothing else.
type rawEcho struct {
	s       *rawSock
	replies [256][]byte
	stop    atomic.Bool
	done    chan error
	echoed  atomic.Int64
	// toSource: address each reply to its request's source (the
	// replies were prepared without the near side's MAC).
	toSource bool
}

// startEcho starts the echo loop on s, on its own OS thread, pinned to cpu
// unless cpu is negative. replies maps a request Cmd to the frame sent back;
// with toSource, each reply is addressed to its request's source.
func startEcho(s *rawSock, replies map[wire.Cmd][]byte, cpu int, toSource bool) *rawEcho {
	e := &rawEcho{s: s, done: make(chan error, 1), toSource: toSource}
	for c, f := range replies {
		e.replies[c] = f
	}
	// Requests another echo (of another process) has answered meanwhile
	// would otherwise be answered again, late.
	s.drain()
	go e.loop(cpu)
	return e
}

// lockThread locks the calling goroutine to its OS thread for good and
// pins the thread to cpu unless cpu is negative. The goroutine must never
// unlock: the runtime then ends the thread with the goroutine, so a pinned
// thread never returns to the pool.
func lockThread(cpu int) error {
	runtime.LockOSThread()
	set := startCPUs
	if cpu >= 0 {
		set.Zero()
		set.Set(cpu)
	}
	// Free (cpu < 0) means the process's CPUs, set explicitly: a new
	// thread inherits the affinity of the thread that created it, which
	// may be pinned.
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread to CPU %d: %w", cpu, os.NewSyscallError("sched_setaffinity", err))
	}
	return nil
}

// onThread runs fn on a fresh goroutine locked to its OS thread and pinned
// to cpu (-1: free on the process's CPUs), and returns fn's error. The
// thread is never unlocked, so a pinned thread ends with the goroutine; a
// child process that fn starts inherits its affinity.
func onThread(cpu int, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		if err := lockThread(cpu); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// startCPUs are the CPUs the process may run on, as it started (before any
// pinning of the benchmark): what "any CPU" means, and what pinProcess
// restores. Taken from the thread that initializes the package, which
// nothing has pinned yet.
var startCPUs = func() unix.CPUSet {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() == 0 {
		for c := range runtime.NumCPU() {
			set.Set(c)
		}
	}
	return set
}()

// lastCPU returns the highest-numbered CPU this process may run on, where
// the one-CPU baseline places both of its threads.
func lastCPU() int {
	set := startCPUs
	for c := 1023; c >= 0; c-- {
		if set.IsSet(c) {
			return c
		}
	}
	return 0
}

func (e *rawEcho) loop(cpu int) {
	if err := lockThread(cpu); err != nil {
		e.done <- err
		return
	}
	e.done <- e.s.readUntil(&e.stop, func(f []byte) error {
		if len(f) < wire.ParamOffset {
			return nil
		}
		if rsp := e.replies[f[15]]; rsp != nil {
			if e.toSource {
				copy(rsp[:6], f[6:12])
			}
			if err := e.s.write(rsp); err != nil {
				return err
			}
			e.echoed.Add(1)
		}
		return nil
	})
}

// readUntil reads frames from s on the calling thread and gives each one
// to frame until a stop frame, a read timeout with stop set, or an error of
// a read or of frame, which it returns.
func (s *rawSock) readUntil(stop *atomic.Bool, frame func(f []byte) error) error {
	buf := make([]byte, 9216)
	for {
		n, err := s.read(buf)
		if err == errRawTimeout {
			if stop.Load() {
				return nil
			}
			continue
		}
		if err != nil {
			return err
		}
		if n >= wire.ParamOffset && buf[15] == stopCmd {
			return nil
		}
		if err := frame(buf[:n]); err != nil {
			return err
		}
	}
}

// halt ends the echo loop: stop is the frame sent to it by from, which
// makes it return at once; the stop flag makes it return at its next read
// timeout should that frame be lost.
func (e *rawEcho) halt(from *rawSock, stop []byte) error {
	e.stop.Store(true)
	_ = from.write(stop)
	return <-e.done
}

// rawPinger is the near side of the baseline: one request frame out, one
// reply frame of the expected length back, with blocking system calls.
type rawPinger struct {
	s      *rawSock
	req    []byte
	rspLen int
	buf    []byte
}

// roundTrip sends the request and waits for a reply of the expected length;
// frames of another length (late replies of an earlier exchange) are
// skipped.
func (p *rawPinger) roundTrip() error {
	if err := p.s.write(p.req); err != nil {
		return err
	}
	for {
		n, err := p.s.read(p.buf)
		if err != nil {
			return err
		}
		if n == p.rspLen {
			return nil
		}
	}
}

// rawSink counts the frames that arrive at s until a stop frame or the stop
// flag, on a locked OS thread: the receiving side of the multicast baseline.
type rawSink struct {
	s      *rawSock
	frames atomic.Int64
	stop   atomic.Bool
	done   chan error
}

func startSink(s *rawSock) *rawSink {
	k := &rawSink{s: s, done: make(chan error, 1)}
	go func() {
		_ = lockThread(-1)
		k.done <- k.s.readUntil(&k.stop, func([]byte) error { k.frames.Add(1); return nil })
	}()
	return k
}

// pinProcess moves every thread of the process to cpu (threads created
// meanwhile inherit it from their creator) and sets GOMAXPROCS to 1, and
// returns the function that gives each thread back the CPUs the process
// started with and GOMAXPROCS its value. With cpu negative it does
// nothing. The veth scenario runs its engine rounds this way, under the
// same placement as the one-CPU baseline (both of its threads on cpu).
// Call it inside holdGOMAXPROCS, as Run does: the runtime's automatic
// GOMAXPROCS updates would otherwise race with the value it restores.
func pinProcess(cpu int) (restore func(), err error) {
	if cpu < 0 {
		return func() {}, nil
	}
	all := startCPUs // not the calling thread's: it may be pinned
	var one unix.CPUSet
	one.Set(cpu)
	// Every thread, as serve's placement moves them (placement:
	// passes until no thread was created with the old mask meanwhile).
	set := func(s *unix.CPUSet) error {
		if err := placement.Restore(*s); err != nil {
			return fmt.Errorf("placing the process's threads: %w", err)
		}
		return nil
	}
	// One P, as the runtime itself would choose for a process whose
	// affinity is one CPU (Go 1.25+), without its delay of about a second.
	// Set before the threads are pinned: the first explicit GOMAXPROCS
	// turns the runtime's own updates off, and one made between the
	// pinning and this call would already have lowered it to 1, which
	// restore would then keep (TestPinProcessRestores, once in a full run).
	procs := runtime.GOMAXPROCS(1)
	if err := set(&one); err != nil {
		runtime.GOMAXPROCS(procs)
		return nil, err
	}
	return func() {
		_ = set(&all)
		runtime.GOMAXPROCS(procs)
	}, nil
}
