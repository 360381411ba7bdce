//go:build linux

package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/placement"
	"github.com/openenoc/oetp/wire"
)

var (
	_ link.Link    = (*Link)(nil)
	_ link.Filter  = (*Link)(nil)
	_ link.Looper  = (*Link)(nil)
	_ link.Spinner = (*Link)(nil)
)

// blockTimeout bounds each blocking system call in IOBlocking mode (and
// the send socket's in IOPoll mode). Close does not wait for it: it
// interrupts a blocked call (wakeBlocked). Tests lengthen it.
var blockTimeout = 50 * time.Millisecond

// initialBatch is the number of iovec/mmsghdr slots preallocated per
// direction; larger batches grow the arrays once.
const initialBatch = 64

// forceOutgoingFilter makes Open drop the link's own outgoing frames with the
// BPF filter, as on kernels without PACKET_IGNORE_OUTGOING (tests set it).
var forceOutgoingFilter bool

// Link is an AF_PACKET socket bound to one interface. It implements
// link.Link and link.Filter. It is safe for one reader and several writers
// at a time (concurrent ReadBatch calls take turns, as do writers).
type Link struct {
	ifname   string
	ifindex  int
	mtu      int
	addr     wire.MAC
	maxFrame int
	mode     IOMode
	busyPoll time.Duration // IOPoll's ReadLoop spin window; 0 never spins
	holdP    bool          // IOBlocking receives keep their P (Config.HoldP)
	follow   *follower     // Config.FollowCPU; nil: off

	fd     int
	file   *os.File        // IOPoll only
	rc     syscall.RawConn // IOPoll only
	closed atomic.Bool
	fdmu   sync.RWMutex // read-held around each blocking use of fd or txfd, write-held by Close

	// txfd is IOPoll's send socket: a second, blocking AF_PACKET socket on
	// the interface that receives nothing (bound to protocol 0). Sending
	// on fd itself would wake the network poller after every frame: the
	// kernel signals write space (EPOLLOUT) when a sent frame is freed,
	// and the runtime registers fd for both directions, so each frame
	// would cost a spurious poller wake-up, a few µs on a round trip. A
	// send on an AF_PACKET socket blocks only while its send buffer is
	// full. -1 in IOBlocking mode, where fd sends.
	txfd int

	// Reader state, guarded by rmu; readFn is l.pollRead bound once.
	rmu    sync.Mutex
	rmsgs  []unix.Mmsghdr
	riov   []unix.Iovec
	rctl   []byte // the control buffers of rmsgs: ctlSpace bytes each (PACKET_AUXDATA)
	rbuf   []byte // the buffer of a one-frame read
	rk     int    // frames asked for
	rn     int    // frames received
	rerr   error
	readFn func(fd uintptr) bool
	// ReadLoop's state, guarded by rmu; loopFn is l.loopRead bound once.
	loopBufs  [][]byte
	loopSizes []int
	loopBatch func(n int) bool
	loopFn    func(fd uintptr) bool
	loopLast  time.Time // when loopRead last received a frame (busy polling)

	// Writer state, guarded by wmu.
	wmu    sync.Mutex
	wmsgs  []unix.Mmsghdr
	wiov   []unix.Iovec
	wframe []byte // the frame of a one-frame write
	wk     int    // frames to send
	wdone  int    // frames sent

	// Receive filter state, guarded by cmu.
	cmu            sync.Mutex
	groups         []wire.MAC
	extra          []wire.MAC // Config.ExtraAddrs
	promisc        bool
	outgoingFilter bool // the BPF filter drops PACKET_OUTGOING frames
	oetpOnly       bool // the BPF filter keeps EtherType 0x88B5 only (not Config.AllEtherTypes)
	drops          uint64

	txFrames, txBytes, rxFrames, rxBytes atomic.Uint64
	spins                                atomic.Uint64
	sendWaits                            atomic.Uint64 // sends that found the buffer full and waited (see send)
	rxTagged                             atomic.Uint64
}

// Open opens an AF_PACKET socket on the interface ifname of the calling
// thread's network namespace. The interface must be up, be Ethernet and carry
// MaxFrame: MTU + 14 >= MaxFrame.
func Open(ifname string, cfg Config) (*Link, error) {
	maxFrame, err := cfg.maxFrame()
	if err != nil {
		return nil, err
	}
	busyPoll, err := cfg.busyPoll()
	if err != nil {
		return nil, err
	}
	mode := cfg.IO
	switch mode {
	case IODefault:
		mode = IOPoll
	case IOBlocking, IOPoll:
	default:
		return nil, fmt.Errorf("afpacket: Config.IO is %v: use IODefault, IOBlocking or IOPoll", mode)
	}
	if busyPoll > 0 && mode != IOPoll {
		return nil, fmt.Errorf("afpacket: Config.BusyPoll is %v with Config.IO %v: busy polling needs IOPoll (or IODefault); set BusyPoll to 0 for IOBlocking", busyPoll, mode)
	}
	if cfg.Addr.IsGroup() {
		return nil, fmt.Errorf("afpacket: Config.Addr %v is a group address: the link's own address must be unicast (bit 0 of the first octet clear)", cfg.Addr)
	}
	if len(cfg.ExtraAddrs) > MaxGroups {
		return nil, fmt.Errorf("afpacket: Config.ExtraAddrs has %d addresses: at most %d", len(cfg.ExtraAddrs), MaxGroups)
	}
	for _, m := range cfg.ExtraAddrs {
		if m.IsGroup() || m.IsZero() {
			return nil, fmt.Errorf("afpacket: Config.ExtraAddrs holds %v: extra addresses must be unicast and non-zero (join groups with JoinGroup)", m)
		}
	}
	bufSize := cfg.SocketBuffer
	if bufSize == 0 {
		bufSize = DefaultSocketBuffer
	}
	if bufSize < 0 {
		return nil, fmt.Errorf("afpacket: Config.SocketBuffer is %d: use a positive size in bytes, or 0 for %d", bufSize, DefaultSocketBuffer)
	}
	if ifname == "" || len(ifname) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("afpacket: interface name %q: use 1 through %d bytes", ifname, unix.IFNAMSIZ-1)
	}

	typ := unix.SOCK_RAW | unix.SOCK_CLOEXEC
	if mode == IOPoll {
		typ |= unix.SOCK_NONBLOCK
	}
	// Protocol 0: the socket receives nothing until bind, after the filter.
	fd, err := unix.Socket(unix.AF_PACKET, typ, 0)
	if err != nil {
		err = os.NewSyscallError("socket", err)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("afpacket: open %s needs CAP_NET_RAW: run as root or grant it (setcap cap_net_raw,cap_net_admin+ep PROGRAM): %w", ifname, err)
		}
		return nil, fmt.Errorf("afpacket: open %s: %w", ifname, err)
	}
	l := &Link{ifname: ifname, maxFrame: maxFrame, mode: mode, busyPoll: busyPoll, holdP: cfg.HoldP && mode == IOBlocking, fd: fd, txfd: -1}
	if err := l.setup(cfg, bufSize); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if mode == IOPoll {
		if err := l.openSender(bufSize); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	if cfg.FollowCPU && mode == IOBlocking {
		if allowed, err := placement.Allowed(); err == nil && allowed.Count() > 1 {
			if l.follow, err = l.openFollower(); err != nil {
				unix.Close(fd)
				return nil, err
			}
		}
	}
	l.rmsgs, l.riov = makeBatch(initialBatch)
	l.wmsgs, l.wiov = makeBatch(initialBatch)
	l.readFn = l.pollRead
	l.loopFn = l.loopRead
	if mode == IOPoll {
		l.file = os.NewFile(uintptr(fd), "afpacket:"+ifname)
		rc, err := l.file.SyscallConn()
		if err != nil {
			l.file.Close()
			unix.Close(l.txfd)
			return nil, fmt.Errorf("afpacket: %s: %w", ifname, err)
		}
		l.rc = rc
	}
	return l, nil
}

// ifreq is struct ifreq: a name and a 24-byte union.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data [24]byte
}

func (l *Link) ioctl(req uint, name string, r *ifreq) error {
	*r = ifreq{}
	copy(r.name[:], name)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(l.fd), uintptr(req), uintptr(unsafe.Pointer(r)))
	if e != 0 {
		return e
	}
	return nil
}

// setup checks the interface and configures and binds the socket.
func (l *Link) setup(cfg Config, bufSize int) error {
	name := l.ifname
	var r ifreq
	if err := l.ioctl(unix.SIOCGIFINDEX, name, &r); err != nil {
		if err == unix.ENODEV {
			return fmt.Errorf("afpacket: no interface %s in this network namespace: list them with `ip link`: %w", name, os.NewSyscallError("ioctl SIOCGIFINDEX", err))
		}
		return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("ioctl SIOCGIFINDEX", err))
	}
	l.ifindex = int(binary.NativeEndian.Uint32(r.data[:]))
	if err := l.ioctl(unix.SIOCGIFFLAGS, name, &r); err != nil {
		return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("ioctl SIOCGIFFLAGS", err))
	}
	if binary.NativeEndian.Uint16(r.data[:])&unix.IFF_UP == 0 {
		return fmt.Errorf("afpacket: %s is down: bring it up (ip link set %s up)", name, name)
	}
	if err := l.ioctl(unix.SIOCGIFHWADDR, name, &r); err != nil {
		return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("ioctl SIOCGIFHWADDR", err))
	}
	if family := binary.NativeEndian.Uint16(r.data[:]); family != unix.ARPHRD_ETHER {
		return fmt.Errorf("afpacket: %s is not an Ethernet interface (ARPHRD type %d, want %d)", name, family, unix.ARPHRD_ETHER)
	}
	var hw wire.MAC
	copy(hw[:], r.data[2:8])
	if err := l.ioctl(unix.SIOCGIFMTU, name, &r); err != nil {
		return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("ioctl SIOCGIFMTU", err))
	}
	l.mtu = int(binary.NativeEndian.Uint32(r.data[:]))
	if l.mtu+14 < l.maxFrame {
		return fmt.Errorf("afpacket: %s MTU %d carries frames up to %d bytes; raise the MTU to %d (ip link set %s mtu %d) or run with a max frame size of %d",
			name, l.mtu, l.mtu+14, l.maxFrame-14, name, l.maxFrame-14, l.mtu+14)
	}
	l.addr = hw
	if !cfg.Addr.IsZero() {
		l.addr = cfg.Addr
	}
	l.extra = slices.Clone(cfg.ExtraAddrs)

	if forceOutgoingFilter {
		l.outgoingFilter = true
	} else if err := unix.SetsockoptInt(l.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		if err != unix.ENOPROTOOPT {
			return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("setsockopt PACKET_IGNORE_OUTGOING", err))
		}
		l.outgoingFilter = true // kernel before 4.20
	}
	for _, o := range []struct {
		force, plain int
		what         string
	}{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, "SO_RCVBUF"}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, "SO_SNDBUF"}} {
		if err := unix.SetsockoptInt(l.fd, unix.SOL_SOCKET, o.force, bufSize); err != nil {
			if err := unix.SetsockoptInt(l.fd, unix.SOL_SOCKET, o.plain, bufSize); err != nil {
				return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("setsockopt "+o.what, err))
			}
		}
	}
	if l.mode == IOBlocking {
		tv := unix.NsecToTimeval(blockTimeout.Nanoseconds())
		for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
			if err := unix.SetsockoptTimeval(l.fd, unix.SOL_SOCKET, opt, &tv); err != nil {
				return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("setsockopt SO_RCVTIMEO/SO_SNDTIMEO", err))
			}
		}
	}
	// VLAN tags: the kernel moves a received frame's outermost 802.1Q or
	// 802.1ad tag out of the frame into the packet's metadata before any
	// packet socket sees it, and a socket bound to one EtherType gets the
	// frame after the tag has been dropped altogether. The link binds to
	// every EtherType and asks for the metadata (PACKET_AUXDATA) so that
	// it can put the tag back (see restoreTag); the filter keeps the
	// EtherTypes the link was asked for.
	if err := unix.SetsockoptInt(l.fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("setsockopt PACKET_AUXDATA", err))
	}
	l.oetpOnly = !cfg.AllEtherTypes
	if err := l.attachFilter(l.fd); err != nil {
		return err
	}
	if l.addr != hw {
		if err := l.membership(l.fd, unix.PACKET_ADD_MEMBERSHIP, unix.PACKET_MR_UNICAST, l.addr); err != nil {
			return err
		}
	}
	for _, m := range l.extra {
		if m == hw || m == l.addr {
			continue
		}
		if err := l.membership(l.fd, unix.PACKET_ADD_MEMBERSHIP, unix.PACKET_MR_UNICAST, m); err != nil {
			return err
		}
	}
	if err := unix.Bind(l.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.ifindex}); err != nil {
		return fmt.Errorf("afpacket: %s: %w", name, os.NewSyscallError("bind", err))
	}
	return nil
}

// openSender opens txfd, IOPoll's send socket (see Link.txfd).
func (l *Link) openSender(bufSize int) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("afpacket: %s: send socket: %w", l.ifname, os.NewSyscallError("socket", err))
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, bufSize); err != nil {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, bufSize); err != nil {
			unix.Close(fd)
			return fmt.Errorf("afpacket: %s: send socket: %w", l.ifname, os.NewSyscallError("setsockopt SO_SNDBUF", err))
		}
	}
	tv := unix.NsecToTimeval(blockTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		unix.Close(fd)
		return fmt.Errorf("afpacket: %s: send socket: %w", l.ifname, os.NewSyscallError("setsockopt SO_SNDTIMEO", err))
	}
	// Protocol 0: bound to the interface for sending, receiving nothing.
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: l.ifindex}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("afpacket: %s: send socket: %w", l.ifname, os.NewSyscallError("bind", err))
	}
	l.txfd = fd
	return nil
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

func makeBatch(n int) ([]unix.Mmsghdr, []unix.Iovec) {
	msgs := make([]unix.Mmsghdr, n)
	iov := make([]unix.Iovec, n)
	for i := range msgs {
		msgs[i].Hdr.Iov = &iov[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	return msgs, iov
}

// setBatch points the first len(bufs) iovecs at bufs, growing the arrays if
// needed (once: they are kept).
func setBatch(msgs *[]unix.Mmsghdr, iov *[]unix.Iovec, bufs [][]byte) {
	if len(bufs) > len(*msgs) {
		*msgs, *iov = makeBatch(len(bufs))
	}
	v := *iov
	for i, b := range bufs {
		if len(b) == 0 {
			v[i].Base = nil
		} else {
			v[i].Base = &b[0]
		}
		v[i].SetLen(len(b))
	}
}

// clearBatch drops the references to the caller's buffers.
func clearBatch(iov []unix.Iovec, n int) {
	for i := range n {
		iov[i].Base = nil
	}
}

// Addr returns the link's own unicast address: the interface's MAC or
// Config.Addr.
func (l *Link) Addr() wire.MAC { return l.addr }

// MaxFrame returns the configured frame ceiling (Config.MaxFrame or 8192).
func (l *Link) MaxFrame() int { return l.maxFrame }

// IfName returns the interface name.
func (l *Link) IfName() string { return l.ifname }

// MTU returns the interface's MTU when the link was opened.
func (l *Link) MTU() int { return l.mtu }

// BusyPoll returns ReadLoop's spin window (Config.BusyPoll); 0 never spins.
func (l *Link) BusyPoll() time.Duration { return l.busyPoll }

// HoldP reports whether the link's blocking receives keep their P
// (Config.HoldP in IOBlocking mode).
func (l *Link) HoldP() bool { return l.holdP }

// FollowCPU reports whether the link moves its process to the CPU its
// frames arrive on (Config.FollowCPU, in IOBlocking mode, with more than
// one CPU to use).
func (l *Link) FollowCPU() bool { return l.follow != nil }

// Mode returns the I/O mode in use (never IODefault).
func (l *Link) Mode() IOMode { return l.mode }

// ctlSpace is the room for one control message carrying a
// tpacket_auxdata, per received frame.
var ctlSpace = unix.CmsgSpace(int(unsafe.Sizeof(unix.TpacketAuxdata{})))

// armControl points the control buffers of the first k messages at l.rctl,
// growing it once, and resets their lengths, which each receive overwrites.
func (l *Link) armControl(k int) {
	if len(l.rctl) < k*ctlSpace {
		l.rctl = make([]byte, max(k, initialBatch)*ctlSpace)
	}
	for i := range k {
		h := &l.rmsgs[i].Hdr
		h.Control = &l.rctl[i*ctlSpace]
		h.SetControllen(ctlSpace)
	}
}

// recv makes one receive attempt into the prepared buffers, as a system
// call the Go runtime knows may block.
func (l *Link) recv(fd int) (int, error) { return l.recvCall(fd, false) }

// heldPs counts the receives of the process that hold their P (HoldP).
var heldPs atomic.Int32

// holdP reports whether one more receive may hold its P: at least one P
// then stays for the other goroutines. A true answer has been counted in
// heldPs; the caller releases it with heldPs.Add(-1).
func holdP() bool {
	if int(heldPs.Add(1)) < runtime.GOMAXPROCS(0) {
		return true
	}
	heldPs.Add(-1)
	return false
}

// recvBlocking is recv for IOBlocking mode: with HoldP, a raw system call
// that keeps the goroutine's P while it waits, when holdP allows it (see
// "A receive that keeps its P").
func (l *Link) recvBlocking(fd int) (int, error) {
	if l.holdP && holdP() {
		n, err := l.recvCall(fd, true)
		heldPs.Add(-1)
		return n, err
	}
	return l.recvCall(fd, false)
}

// recvCall makes one receive attempt, as a raw system call if raw.
func (l *Link) recvCall(fd int, raw bool) (int, error) {
	l.armControl(l.rk)
	if l.rk == 1 {
		v := &l.riov[0]
		v.Base = nil
		if len(l.rbuf) > 0 {
			v.Base = &l.rbuf[0]
		}
		v.SetLen(len(l.rbuf))
		var r uintptr
		var e unix.Errno
		if raw {
			r, _, e = unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&l.rmsgs[0].Hdr)), 0)
		} else {
			r, _, e = unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&l.rmsgs[0].Hdr)), 0)
		}
		if e != 0 {
			return 0, e
		}
		l.rmsgs[0].Len = uint32(r)
		return 1, nil
	}
	var r uintptr
	var e unix.Errno
	if raw {
		r, _, e = unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&l.rmsgs[0])), uintptr(l.rk), unix.MSG_WAITFORONE, 0, 0)
	} else {
		r, _, e = unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&l.rmsgs[0])), uintptr(l.rk), unix.MSG_WAITFORONE, 0, 0)
	}
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// restoreTag puts back the VLAN tag the kernel took out of received frame i
// (n bytes in b), reported in its PACKET_AUXDATA, and returns the frame's
// length: n, or n+4 with the tag (TPID, then TCI) at offset 12, cut to
// len(b). A tagged frame is not a v1 oETP frame ("VLAN tags ... are
// outside this version"): restored, it reaches a raw receive policy as it
// was on the wire, and the engine never takes it for an untagged request.
func (l *Link) restoreTag(b []byte, n, i int) int {
	h := &l.rmsgs[i].Hdr
	if uint64(h.Controllen) < uint64(unix.SizeofCmsghdr) || n < 12 {
		return n
	}
	cm := (*unix.Cmsghdr)(unsafe.Pointer(h.Control))
	if cm.Level != unix.SOL_PACKET || cm.Type != unix.PACKET_AUXDATA || uint64(cm.Len) < uint64(unix.CmsgLen(int(unsafe.Sizeof(unix.TpacketAuxdata{})))) {
		return n
	}
	aux := (*unix.TpacketAuxdata)(unsafe.Pointer(uintptr(unsafe.Pointer(h.Control)) + uintptr(unix.CmsgLen(0))))
	if aux.Status&unix.TP_STATUS_VLAN_VALID == 0 {
		return n
	}
	tpid := uint16(0x8100)
	if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 && aux.Vlan_tpid != 0 {
		tpid = aux.Vlan_tpid
	}
	end := min(n+4, len(b))
	l.rxTagged.Add(1)
	if end < 16 { // a buffer shorter than the addresses and the tag
		var t [4]byte
		binary.BigEndian.PutUint16(t[0:], tpid)
		binary.BigEndian.PutUint16(t[2:], aux.Vlan_tci)
		copy(b[12:end], t[:])
		return end
	}
	copy(b[16:end], b[12:end-4])
	binary.BigEndian.PutUint16(b[12:], tpid)
	binary.BigEndian.PutUint16(b[14:], aux.Vlan_tci)
	return end
}

// pollRead is the RawConn.Read callback of IOPoll mode.
func (l *Link) pollRead(fd uintptr) bool {
	for {
		n, err := l.recv(int(fd))
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		l.rn, l.rerr = n, err
		return true
	}
}

// ReadBatch blocks until at least one frame has arrived, then fills up to
// len(bufs) frames without waiting for more: bufs[i][:sizes[i]] is frame i.
// A frame longer than its buffer is truncated to it. sizes must be at least
// as long as bufs. It returns link.ErrClosed once the link is closed.
func (l *Link) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	if len(bufs) == 0 {
		return 0, errors.New("afpacket: ReadBatch needs at least one buffer in bufs")
	}
	if len(sizes) < len(bufs) {
		return 0, fmt.Errorf("afpacket: ReadBatch got %d sizes for %d bufs; make sizes at least as long as bufs", len(sizes), len(bufs))
	}
	l.rmu.Lock()
	defer l.rmu.Unlock()
	if l.closed.Load() {
		return 0, link.ErrClosed
	}
	l.rk = len(bufs)
	if l.rk == 1 {
		l.rbuf = bufs[0]
	} else {
		setBatch(&l.rmsgs, &l.riov, bufs)
	}
	var n int
	var err error
	if l.mode == IOPoll {
		l.rn, l.rerr = 0, nil
		err = l.rc.Read(l.readFn)
		if err == nil {
			n, err = l.rn, l.rerr
		}
	} else {
		for {
			l.fdmu.RLock()
			if l.closed.Load() {
				l.fdmu.RUnlock()
				err = link.ErrClosed
				break
			}
			n, err = l.recvBlocking(l.fd)
			l.fdmu.RUnlock()
			if err != unix.EAGAIN && err != unix.EINTR {
				break
			}
		}
	}
	l.rbuf = nil
	if l.rk > 1 {
		clearBatch(l.riov, l.rk)
	}
	if err != nil {
		if l.closed.Load() {
			return 0, link.ErrClosed
		}
		call := "recvmmsg"
		if l.rk == 1 {
			call = "read"
		}
		return 0, fmt.Errorf("afpacket: read %s: %w", l.ifname, os.NewSyscallError(call, err))
	}
	var total uint64
	for i := range n {
		sizes[i] = l.restoreTag(bufs[i], int(l.rmsgs[i].Len), i)
		total += uint64(sizes[i])
	}
	l.rxFrames.Add(uint64(n))
	l.rxBytes.Add(total)
	if l.follow != nil {
		l.follow.check(l)
	}
	return n, nil
}

// checkFrame reports a frame the link must not send.
func (l *Link) checkFrame(f []byte) error {
	switch {
	case len(f) > l.maxFrame:
		return fmt.Errorf("%w: %d bytes; %s carries at most %d (MTU %d + 14, max frame %d)",
			ErrFrameTooLong, len(f), l.ifname, min(l.maxFrame, l.mtu+14), l.mtu, l.maxFrame)
	case len(f) < 14:
		return fmt.Errorf("%w: %d bytes", ErrFrameTooShort, len(f))
	}
	return nil
}

// send makes one send attempt of the prepared frames not yet sent.
//
// It first sends with MSG_DONTWAIT as a raw system call, which the Go
// runtime does not see: a send that cannot block need not tell the
// scheduler it might (entersyscall and exitsyscall, and a thread left in a
// system call that the runtime's monitor may take the processor from).
// Only when the send buffer is full (EAGAIN) does it send again as an
// ordinary, blocking system call, which waits for room as before. What goes
// on the wire is the same: MSG_DONTWAIT only changes whether a full buffer
// waits. Two processes over veth, 64 MiB `oetp dma write` against
// `oetp serve`: see docs/design/afpacket.md ("A receive that keeps its P").
func (l *Link) send(fd int) error {
	if l.wk == 1 {
		f := l.wframe
		if len(f) == 0 {
			return unix.EINVAL // checkFrame refuses these before
		}
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&f[0])), uintptr(len(f)), unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EAGAIN {
			l.sendWaits.Add(1)
			_, _, e = unix.Syscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&f[0])), uintptr(len(f)))
		}
		if e != 0 {
			return e
		}
		l.wdone = 1
		return nil
	}
	for l.wdone < l.wk {
		r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&l.wmsgs[l.wdone])), uintptr(l.wk-l.wdone), unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EAGAIN {
			l.sendWaits.Add(1)
			r, _, e = unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&l.wmsgs[l.wdone])), uintptr(l.wk-l.wdone), 0, 0, 0)
		}
		if e != 0 {
			return e
		}
		l.wdone += int(r)
	}
	return nil
}

// transmit sends the prepared frames and returns how many were sent.
func (l *Link) transmit() (int, error) {
	l.wdone = 0
	var err error
	for {
		l.fdmu.RLock()
		if l.closed.Load() {
			l.fdmu.RUnlock()
			err = link.ErrClosed
			break
		}
		fd := l.fd
		if l.txfd >= 0 {
			fd = l.txfd
		}
		err = l.send(fd)
		l.fdmu.RUnlock()
		if err != unix.EAGAIN && err != unix.EINTR {
			break
		}
	}
	n := l.wdone
	if err != nil {
		if l.closed.Load() {
			return n, link.ErrClosed
		}
		call := "sendmmsg"
		if l.wk == 1 {
			call = "write"
		}
		err = fmt.Errorf("afpacket: write %s: %w", l.ifname, os.NewSyscallError(call, err))
	}
	return n, err
}

// Write sends one frame, as given (no padding), and returns when the kernel
// has accepted it. It refuses frames longer than MaxFrame (ErrFrameTooLong)
// or shorter than an Ethernet header (ErrFrameTooShort), and returns
// link.ErrClosed after Close.
func (l *Link) Write(frame []byte) error {
	if err := l.checkFrame(frame); err != nil {
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed.Load() {
		return link.ErrClosed
	}
	l.wk, l.wframe = 1, frame
	n, err := l.transmit()
	l.wframe = nil
	if n == 1 {
		l.txFrames.Add(1)
		l.txBytes.Add(uint64(len(frame)))
	}
	return err
}

// WriteBatch sends frames in order with sendmmsg(2) and returns when the
// kernel has accepted all of them, or the number sent and the error that
// stopped it. A frame Write would refuse stops the batch before it.
func (l *Link) WriteBatch(frames [][]byte) (int, error) {
	good := len(frames)
	var bad error
	for i, f := range frames {
		if err := l.checkFrame(f); err != nil {
			good, bad = i, fmt.Errorf("afpacket: WriteBatch frame %d: %w", i, err)
			break
		}
	}
	if good == 0 {
		return 0, bad
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed.Load() {
		return 0, link.ErrClosed
	}
	l.wk = good
	if good == 1 {
		l.wframe = frames[0]
	} else {
		setBatch(&l.wmsgs, &l.wiov, frames[:good])
	}
	n, err := l.transmit()
	l.wframe = nil
	if good > 1 {
		clearBatch(l.wiov, good)
	}
	var total uint64
	for _, f := range frames[:n] {
		total += uint64(len(f))
	}
	l.txFrames.Add(uint64(n))
	l.txBytes.Add(total)
	if err == nil {
		err = bad
	}
	return n, err
}

// control runs fn with the socket, unless the link is closed.
func (l *Link) control(fn func(fd int) error) error {
	if l.mode == IOPoll {
		var ferr error
		if err := l.rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
			if l.closed.Load() {
				return link.ErrClosed
			}
			return fmt.Errorf("afpacket: %s: %w", l.ifname, err)
		}
		return ferr
	}
	l.fdmu.RLock()
	defer l.fdmu.RUnlock()
	if l.closed.Load() {
		return link.ErrClosed
	}
	return fn(l.fd)
}

func (l *Link) membership(fd, op, typ int, mac wire.MAC) error {
	mreq := unix.PacketMreq{Ifindex: int32(l.ifindex), Type: uint16(typ)}
	if typ != unix.PACKET_MR_PROMISC {
		mreq.Alen = 6
		copy(mreq.Address[:], mac[:])
	}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, op, &mreq); err != nil {
		what := "setsockopt PACKET_ADD_MEMBERSHIP"
		if op == unix.PACKET_DROP_MEMBERSHIP {
			what = "setsockopt PACKET_DROP_MEMBERSHIP"
		}
		return fmt.Errorf("afpacket: %s: %w", l.ifname, os.NewSyscallError(what, err))
	}
	return nil
}

// JoinGroup makes the link receive frames addressed to the group MAC mac.
// Joining twice is the same as joining once; broadcast is always received.
// It refuses an individual address and returns link.ErrClosed after Close.
func (l *Link) JoinGroup(mac wire.MAC) error {
	if !mac.IsGroup() {
		return fmt.Errorf("afpacket: JoinGroup %v: not a group address (I/G bit clear); a group MAC has bit 0 of the first octet set, such as 01:00:5e:00:00:01", mac)
	}
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if mac.IsBroadcast() || slices.Contains(l.groups, mac) {
		return l.control(func(int) error { return nil })
	}
	if len(l.groups) == MaxGroups {
		return fmt.Errorf("afpacket: JoinGroup %v: %s already joined %d groups, the most a link can; leave one first", mac, l.ifname, MaxGroups)
	}
	return l.control(func(fd int) error {
		if err := l.membership(fd, unix.PACKET_ADD_MEMBERSHIP, unix.PACKET_MR_MULTICAST, mac); err != nil {
			return err
		}
		l.groups = append(l.groups, mac)
		if err := l.attachFilter(fd); err != nil {
			l.groups = l.groups[:len(l.groups)-1]
			l.membership(fd, unix.PACKET_DROP_MEMBERSHIP, unix.PACKET_MR_MULTICAST, mac)
			return err
		}
		return nil
	})
}

// LeaveGroup stops the link receiving frames addressed to the group MAC mac
// (broadcast is always received). Leaving a group not joined does nothing.
// It refuses an individual address and returns link.ErrClosed after Close.
func (l *Link) LeaveGroup(mac wire.MAC) error {
	if !mac.IsGroup() {
		return fmt.Errorf("afpacket: LeaveGroup %v: not a group address (I/G bit clear)", mac)
	}
	l.cmu.Lock()
	defer l.cmu.Unlock()
	i := slices.Index(l.groups, mac)
	if i < 0 {
		return l.control(func(int) error { return nil })
	}
	return l.control(func(fd int) error {
		l.groups = slices.Delete(l.groups, i, i+1)
		if err := l.attachFilter(fd); err != nil {
			l.groups = slices.Insert(l.groups, i, mac)
			return err
		}
		return l.membership(fd, unix.PACKET_DROP_MEMBERSHIP, unix.PACKET_MR_MULTICAST, mac)
	})
}

// SetPromiscuous turns promiscuous mode on or off: when on, the link
// receives every frame the interface sees (of its EtherType, unless
// Config.AllEtherTypes), and the interface is put in promiscuous mode until
// it is turned off or the link is closed. It returns link.ErrClosed after
// Close.
func (l *Link) SetPromiscuous(on bool) error {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if on == l.promisc {
		return l.control(func(int) error { return nil })
	}
	return l.control(func(fd int) error {
		op := unix.PACKET_DROP_MEMBERSHIP
		if on {
			op = unix.PACKET_ADD_MEMBERSHIP
		}
		if err := l.membership(fd, op, unix.PACKET_MR_PROMISC, wire.MAC{}); err != nil {
			return err
		}
		l.promisc = on
		return l.attachFilter(fd)
	})
}

// pollDrops adds the kernel's drop count, which reading resets, to l.drops.
// Call with cmu held.
func (l *Link) pollDrops() {
	l.control(func(fd int) error {
		st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
		if err == nil {
			l.drops += uint64(st.Drops)
		}
		return nil
	})
}

// Stats returns the link's counters. It reads the kernel's drop counter
// with one getsockopt(2); after Close it returns the final counts.
func (l *Link) Stats() Stats {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	l.pollDrops()
	return Stats{
		TxFrames:      l.txFrames.Load(),
		TxBytes:       l.txBytes.Load(),
		RxFrames:      l.rxFrames.Load(),
		RxBytes:       l.rxBytes.Load(),
		DropQueueFull: l.drops,
		BusyPolls:     l.spins.Load(),
		RxTagged:      l.rxTagged.Load(),
		CPUMoves:      l.cpuMoves(),
	}
}

// Close closes the socket, which ends its group memberships and promiscuous
// mode, and unblocks ReadBatch and WriteBatch, which return link.ErrClosed.
// In IOBlocking mode it interrupts a call blocked in the kernel (see
// wakeBlocked) and waits for it to return. Closing a closed link does
// nothing.
func (l *Link) Close() error {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if l.closed.Load() {
		return nil
	}
	l.pollDrops()
	l.closed.Store(true)
	var err error
	if l.mode == IOPoll {
		l.lockFD()
		unix.Close(l.txfd)
		l.txfd = -1
		l.fdmu.Unlock()
		err = l.file.Close()
	} else {
		l.lockFD()
		err = unix.Close(l.fd)
		l.fd = -1
		if l.follow != nil {
			l.follow.close()
		}
		l.fdmu.Unlock()
		if err != nil {
			err = os.NewSyscallError("close", err)
		}
	}
	if err != nil {
		return fmt.Errorf("afpacket: close %s: %w", l.ifname, err)
	}
	return nil
}

// HandOff returns duplicates of the link's sockets (one, or two in IOPoll
// mode) for another process to inherit, after making them receive nothing
// (a filter that drops every frame). The last close of an AF_PACKET socket
// waits in the kernel for an RCU grace period (synchronize_net in
// packet_release): about 15 ms on a 2-vCPU VM, most of the time a
// one-shot command takes. A process about to exit can give the sockets to
// a child it does not wait for (exec.Cmd.ExtraFiles), close the returned
// files once the child has started, and Close the link: its close is then
// not the last, and returns at once; the child's exit pays the wait.
// Call it once the link's work is done, right before Close: the link
// receives nothing afterwards. It returns link.ErrClosed after Close.
func (l *Link) HandOff() ([]*os.File, error) {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	if l.closed.Load() {
		return nil, link.ErrClosed
	}
	var files []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, fmt.Errorf("afpacket: %s: hand off: %w", l.ifname, err)
	}
	drop := []unix.SockFilter{bpfStmt(unix.BPF_RET|unix.BPF_K, 0)}
	err := l.control(func(fd int) error {
		prog := unix.SockFprog{Len: 1, Filter: &drop[0]}
		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
			return os.NewSyscallError("setsockopt SO_ATTACH_FILTER", err)
		}
		socks := []int{fd, l.txfd}
		if l.follow != nil {
			// The probe too: its last close would wait as long.
			if err := unix.SetsockoptSockFprog(l.follow.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
				return os.NewSyscallError("setsockopt SO_ATTACH_FILTER", err)
			}
			socks = append(socks, l.follow.fd)
		}
		for _, s := range socks {
			if s < 0 {
				continue
			}
			d, err := unix.FcntlInt(uintptr(s), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				return os.NewSyscallError("fcntl F_DUPFD_CLOEXEC", err)
			}
			files = append(files, os.NewFile(uintptr(d), "afpacket:"+l.ifname))
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return files, nil
}

// lockFD write-locks fdmu once no call uses the sockets any more. A call
// blocked in the kernel (a receive waiting for a frame, a send waiting for
// room) holds fdmu's read lock until its timeout; lockFD interrupts it
// instead of waiting (blockTimeout, 50 ms: a one-shot command, whose
// receive loop is nearly always blocked when it closes its endpoint,
// would otherwise take up to 50 ms longer to exit). Call with closed set, so that
// the interrupted call returns link.ErrClosed instead of trying again.
func (l *Link) lockFD() {
	for i := 0; !l.fdmu.TryLock(); i++ {
		if i%64 == 0 {
			wakeBlocked()
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// wakeBlocked interrupts the system calls the process's threads are
// blocked in: it sends each thread SIGURG, the signal the Go runtime
// itself sends threads to preempt goroutines, and which it ignores
// otherwise. A receive or send on a socket with SO_RCVTIMEO or
// SO_SNDTIMEO set returns EINTR when a signal arrives, whatever the
// handler's SA_RESTART (signal(7)), which the link's calls treat as a
// reason to look at closed again. Other blocking calls see the EINTR that
// Go code must handle anyway since the runtime preempts with SIGURG (Go
// 1.14), and the os and net packages retry. Finding no thread to signal
// is not an error: the caller then waits for the timeout.
func wakeBlocked() {
	pid := unix.Getpid()
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	self := unix.Gettid()
	for _, n := range names {
		var tid int
		if _, err := fmt.Sscan(n, &tid); err != nil || tid == self {
			continue
		}
		_ = unix.Tgkill(pid, tid, unix.SIGURG)
	}
}

// ReadLoop implements link.Looper. In IOPoll mode it stays inside one wait
// of the network poller: after a batch that emptied the socket
// (recvmmsg(2) with MSG_WAITFORONE returned fewer frames than asked for)
// it parks until the poller reports new frames, instead of returning and
// having the next ReadBatch read the empty socket once more before it may
// park (the poller forgets readiness at the start of each wait). That saves
// one system call per wake-up. In IOBlocking mode it is a loop of
// ReadBatch.
func (l *Link) ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error {
	if l.mode != IOPoll {
		return link.ReadBatches(l, bufs, sizes, batch)
	}
	if len(bufs) == 0 {
		return errors.New("afpacket: ReadLoop needs at least one buffer in bufs")
	}
	if len(sizes) < len(bufs) {
		return fmt.Errorf("afpacket: ReadLoop got %d sizes for %d bufs; make sizes at least as long as bufs", len(sizes), len(bufs))
	}
	l.rmu.Lock()
	defer l.rmu.Unlock()
	if l.closed.Load() {
		return link.ErrClosed
	}
	l.rk = len(bufs)
	l.loopBufs, l.loopSizes, l.loopBatch, l.rerr = bufs, sizes, batch, nil
	err := l.rc.Read(l.loopFn)
	if err == nil {
		err = l.rerr
	}
	l.loopBufs, l.loopSizes, l.loopBatch, l.rbuf = nil, nil, nil, nil
	if l.rk > 1 {
		clearBatch(l.riov, l.rk)
	}
	if err != nil {
		if l.closed.Load() {
			return link.ErrClosed
		}
		call := "recvmmsg"
		if l.rk == 1 {
			call = "read"
		}
		return fmt.Errorf("afpacket: read %s: %w", l.ifname, os.NewSyscallError(call, err))
	}
	return nil
}

// loopRead is the RawConn.Read callback of ReadLoop: true ends the wait.
func (l *Link) loopRead(fd uintptr) bool {
	fresh := true // the callback has run since the buffers were set up
	for {
		if fresh {
			if l.rk == 1 {
				l.rbuf = l.loopBufs[0]
			} else {
				setBatch(&l.rmsgs, &l.riov, l.loopBufs) // the caller may have swapped buffers
			}
			fresh = false
		}
		n, err := l.recv(int(fd))
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if l.spin() {
				continue
			}
			return false
		default:
			l.rerr = err
			return true
		}
		var total uint64
		for i := range n {
			l.loopSizes[i] = l.restoreTag(l.loopBufs[i], int(l.rmsgs[i].Len), i)
			total += uint64(l.loopSizes[i])
		}
		l.rxFrames.Add(uint64(n))
		l.rxBytes.Add(total)
		if l.busyPoll > 0 {
			l.loopLast = time.Now()
		}
		fresh = true
		if !l.loopBatch(n) {
			return true
		}
		if l.rk > 1 && n < l.rk && !l.spin() {
			// MSG_WAITFORONE stopped at an empty socket: every frame that
			// arrives from now on raises a new readiness event.
			return false
		}
	}
}

// spin reports whether loopRead should read the empty socket again instead
// of parking: busy polling is on, the last frame came less than busyPoll
// ago, and the link is open.
//
// It yields the processor (runtime.Gosched) only every spinYield empty
// reads, so that other goroutines get it now and then. Yielding before
// every read costs more than the read saves: Gosched puts the goroutine on
// the runtime's global run queue (two loops spinning on two Ps may then
// swap Ps and caches) and wakes an idle P if there is one. The goroutine
// a batch readies (an initiator waiting for its response) does not need
// the yield here: the endpoint's callback yields after waking it.
func (l *Link) spin() bool {
	if l.busyPoll == 0 || l.closed.Load() || time.Since(l.loopLast) >= l.busyPoll {
		return false
	}
	if l.spins.Add(1)%spinYield == 0 {
		runtime.Gosched()
	}
	return true
}

// spinYield is how many empty reads a busy-polling ReadLoop makes between
// yields of its processor.
const spinYield = 256
