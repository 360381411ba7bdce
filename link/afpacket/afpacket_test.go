//go:build linux

package afpacket_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/linktest"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

var modes = []afpacket.IOMode{afpacket.IOBlocking, afpacket.IOPoll}

// open opens a link on h's interface inside h's namespace and closes it at
// the end of the test.
func open(t testing.TB, h *netns.Host, cfg afpacket.Config) *afpacket.Link {
	t.Helper()
	var l *afpacket.Link
	if err := h.Do(func() (err error) { l, err = afpacket.Open(h.IfName(), cfg); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// openErr returns the error of opening ifname in h's namespace.
func openErr(h *netns.Host, ifname string, cfg afpacket.Config) error {
	return h.Do(func() error {
		l, err := afpacket.Open(ifname, cfg)
		if err == nil {
			l.Close()
		}
		return err
	})
}

// frame builds a frame of size bytes (at least 14) from src to dst with
// EtherType et and a payload that depends on seed.
func frame(dst, src wire.MAC, et uint16, size int, seed byte) []byte {
	f := make([]byte, size)
	copy(f, dst[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], et)
	for i := 14; i < size; i++ {
		f[i] = seed + byte(i*7)
	}
	return f
}

// read reads n frames from l, failing the test (and closing l) if they do
// not arrive within five seconds.
func read(t testing.TB, l link.Link, n int) [][]byte {
	t.Helper()
	return linktest.ReadN(t, l, n)
}

// expect reads one frame from l and checks that it is want.
func expect(t testing.TB, l link.Link, want []byte, what string) {
	t.Helper()
	got := read(t, l, 1)[0]
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes % x..., want %d bytes % x...", what, len(got), got[:min(len(got), 20)], len(want), want[:min(len(want), 20)])
	}
}

func write(t testing.TB, l link.Link, f []byte) {
	t.Helper()
	if err := l.Write(f); err != nil {
		t.Fatal(err)
	}
}

func forModes(t *testing.T, fn func(t *testing.T, mode afpacket.IOMode)) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) { fn(t, m) })
	}
}

func TestFrameSizes(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		h1, h2 := tn.Host(0), tn.Host(1)
		cfg := afpacket.Config{MaxFrame: 9014, IO: mode}
		a, b := open(t, h1, cfg), open(t, h2, cfg)
		if a.Addr() != h1.MAC() || b.Addr() != h2.MAC() || a.MaxFrame() != 9014 || a.MTU() != 9000 || a.Mode() != mode || a.IfName() != "eth0" {
			t.Fatalf("a: Addr %s MaxFrame %d MTU %d Mode %v IfName %s", a.Addr(), a.MaxFrame(), a.MTU(), a.Mode(), a.IfName())
		}
		for _, size := range []int{14, 15, 16, 59, 60, 61, 64, 100, 1514, 1515, 4096, 8192, 9013, 9014} {
			for _, dir := range []struct {
				from, to *afpacket.Link
			}{{a, b}, {b, a}} {
				f := frame(dir.to.Addr(), dir.from.Addr(), afpacket.EtherType, size, byte(size))
				write(t, dir.from, f)
				expect(t, dir.to, f, fmt.Sprintf("%d-byte frame %s -> %s", size, dir.from.Addr(), dir.to.Addr()))
			}
		}
		st := a.Stats()
		if st.TxFrames != 14 || st.RxFrames != 14 || st.TxBytes != st.RxBytes || st.TxBytes != 14+15+16+59+60+61+64+100+1514+1515+4096+8192+9013+9014 || st.DropQueueFull != 0 {
			t.Errorf("a.Stats() = %+v", st)
		}
	})
}

func TestBatch(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		a, b := open(t, tn.Host(0), afpacket.Config{IO: mode}), open(t, tn.Host(1), afpacket.Config{IO: mode})
		for round := range 3 {
			var frames [][]byte
			var total uint64
			for i := range 32 {
				f := frame(b.Addr(), a.Addr(), afpacket.EtherType, 60+i*97, byte(round*32+i))
				frames = append(frames, f)
				total += uint64(len(f))
			}
			n, err := a.WriteBatch(frames)
			if n != 32 || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want 32, nil", n, err)
			}
			got := read(t, b, 32)
			for i := range frames {
				if !bytes.Equal(got[i], frames[i]) {
					t.Fatalf("round %d frame %d: got %d bytes, want %d (frames out of order or changed)", round, i, len(got[i]), len(frames[i]))
				}
			}
			if st := a.Stats(); st.TxFrames != uint64(32*(round+1)) {
				t.Fatalf("TxFrames = %d, want %d", st.TxFrames, 32*(round+1))
			}
		}
		// A batch larger than the preallocated arrays grows them.
		var frames [][]byte
		for i := range 100 {
			frames = append(frames, frame(b.Addr(), a.Addr(), afpacket.EtherType, 64, byte(i)))
		}
		if n, err := a.WriteBatch(frames); n != 100 || err != nil {
			t.Fatalf("WriteBatch(100) = %d, %v", n, err)
		}
		bufs := make([][]byte, 100)
		for i := range bufs {
			bufs[i] = make([]byte, 100)
		}
		sizes := make([]int, 100)
		for got := 0; got < 100; {
			n, err := b.ReadBatch(bufs, sizes)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if !bytes.Equal(bufs[i][:sizes[i]], frames[got+i]) {
					t.Fatalf("frame %d differs", got+i)
				}
			}
			got += n
		}
	})
}

func TestSingleFrameDoesNotWaitForBatch(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		a, b := open(t, tn.Host(0), afpacket.Config{IO: mode}), open(t, tn.Host(1), afpacket.Config{IO: mode})
		bufs := make([][]byte, 32)
		for i := range bufs {
			bufs[i] = make([]byte, 8192)
		}
		sizes := make([]int, 32)
		type result struct {
			n   int
			err error
		}
		c := make(chan result)
		go func() {
			n, err := b.ReadBatch(bufs, sizes)
			c <- result{n, err}
		}()
		time.Sleep(20 * time.Millisecond)
		f := frame(b.Addr(), a.Addr(), afpacket.EtherType, 100, 1)
		write(t, a, f)
		select {
		case r := <-c:
			if r.n != 1 || r.err != nil || !bytes.Equal(bufs[0][:sizes[0]], f) {
				t.Fatalf("ReadBatch = %d, %v; want the one frame", r.n, r.err)
			}
		case <-time.After(5 * time.Second):
			b.Close()
			t.Fatal("ReadBatch with 32 buffers did not return one frame within 5s")
		}
	})
}

func TestShortFrames(t *testing.T) {
	tn := netns.NewPair(t)
	a, b := open(t, tn.Host(0), afpacket.Config{}), open(t, tn.Host(1), afpacket.Config{})
	if a.Mode() != afpacket.IOPoll {
		t.Errorf("default Mode() = %v, want poll", a.Mode())
	}
	// veth does not pad: a 20-byte frame arrives as 20 bytes.
	short := frame(b.Addr(), a.Addr(), afpacket.EtherType, 20, 3)
	write(t, a, short)
	expect(t, b, short, "20-byte frame")
	// A frame padded to the 60-byte minimum (as a NIC delivers it) arrives
	// as exactly 60 bytes, padding included.
	padded := make([]byte, 60)
	copy(padded, short)
	write(t, a, padded)
	expect(t, b, padded, "60-byte padded frame")
	// A buffer shorter than the frame truncates it to the buffer.
	write(t, a, frame(b.Addr(), a.Addr(), afpacket.EtherType, 200, 4))
	buf := make([]byte, 50)
	sizes := make([]int, 1)
	if n, err := b.ReadBatch([][]byte{buf}, sizes); n != 1 || err != nil || sizes[0] != 50 {
		t.Fatalf("truncated read = %d, %v, size %d; want 1, nil, 50", n, err, sizes[0])
	}
}

func TestWriteRefusesBadFrames(t *testing.T) {
	tn := netns.NewPair(t)
	a, b := open(t, tn.Host(0), afpacket.Config{}), open(t, tn.Host(1), afpacket.Config{})
	err := a.Write(make([]byte, 8193))
	if !errors.Is(err, afpacket.ErrFrameTooLong) || err.Error() != "afpacket: frame longer than MaxFrame: 8193 bytes; eth0 carries at most 8192 (MTU 9000 + 14, max frame 8192)" {
		t.Errorf("Write(8193 bytes) = %v", err)
	}
	err = a.Write(make([]byte, 13))
	if !errors.Is(err, afpacket.ErrFrameTooShort) || err.Error() != "afpacket: frame shorter than the 14-byte Ethernet header: 13 bytes" {
		t.Errorf("Write(13 bytes) = %v", err)
	}
	frames := [][]byte{
		frame(b.Addr(), a.Addr(), afpacket.EtherType, 100, 1),
		frame(b.Addr(), a.Addr(), afpacket.EtherType, 101, 2),
		make([]byte, 9000),
		frame(b.Addr(), a.Addr(), afpacket.EtherType, 103, 3),
	}
	n, err := a.WriteBatch(frames)
	if n != 2 || !errors.Is(err, afpacket.ErrFrameTooLong) || !strings.HasPrefix(err.Error(), "afpacket: WriteBatch frame 2: afpacket: frame longer than MaxFrame: 9000 bytes") {
		t.Errorf("WriteBatch with a long third frame = %d, %v", n, err)
	}
	got := read(t, b, 2)
	if !bytes.Equal(got[0], frames[0]) || !bytes.Equal(got[1], frames[1]) {
		t.Error("the two good frames before the bad one did not arrive")
	}
	if n, err := a.WriteBatch([][]byte{make([]byte, 3)}); n != 0 || !errors.Is(err, afpacket.ErrFrameTooShort) {
		t.Errorf("WriteBatch of a 3-byte frame = %d, %v", n, err)
	}
	if n, err := a.WriteBatch(nil); n != 0 || err != nil {
		t.Errorf("WriteBatch(nil) = %d, %v; want 0, nil", n, err)
	}
}

func TestMTU(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	if err := h1.SetMTU(1500); err != nil {
		t.Fatal(err)
	}
	err := openErr(h1, "eth0", afpacket.Config{})
	want := "afpacket: eth0 MTU 1500 carries frames up to 1514 bytes; raise the MTU to 8178 (ip link set eth0 mtu 8178) or run with a max frame size of 1514"
	if err == nil || err.Error() != want {
		t.Fatalf("Open on MTU 1500 = %v\nwant %s", err, want)
	}
	a := open(t, h1, afpacket.Config{MaxFrame: 1514})
	b := open(t, h2, afpacket.Config{})
	f := frame(b.Addr(), a.Addr(), afpacket.EtherType, 1514, 5)
	write(t, a, f)
	expect(t, b, f, "1514-byte frame over MTU 1500")
	err = a.Write(frame(b.Addr(), a.Addr(), afpacket.EtherType, 1515, 5))
	if !errors.Is(err, afpacket.ErrFrameTooLong) || err.Error() != "afpacket: frame longer than MaxFrame: 1515 bytes; eth0 carries at most 1514 (MTU 1500 + 14, max frame 1514)" {
		t.Errorf("Write(1515 bytes) over MTU 1500 = %v", err)
	}
	// If the MTU shrinks under an open link, the kernel refuses the frame and
	// the error carries its errno.
	if err := h2.SetMTU(1000); err != nil {
		t.Fatal(err)
	}
	err = b.Write(frame(a.Addr(), b.Addr(), afpacket.EtherType, 2000, 6))
	if !errors.Is(err, unix.EMSGSIZE) || err.Error() != "afpacket: write eth0: write: message too long" {
		t.Errorf("Write(2000 bytes) after MTU 1000 = %v, want EMSGSIZE", err)
	}
	n, err := b.WriteBatch([][]byte{frame(a.Addr(), b.Addr(), afpacket.EtherType, 100, 6), frame(a.Addr(), b.Addr(), afpacket.EtherType, 2000, 6)})
	if n != 1 || !errors.Is(err, unix.EMSGSIZE) || err.Error() != "afpacket: write eth0: sendmmsg: message too long" {
		t.Errorf("WriteBatch(100, 2000 bytes) after MTU 1000 = %d, %v, want 1, EMSGSIZE", n, err)
	}
}

func TestOpenErrors(t *testing.T) {
	tn := netns.NewPair(t)
	h := tn.Host(0)
	err := openErr(h, "nope0", afpacket.Config{})
	if !errors.Is(err, unix.ENODEV) || err.Error() != "afpacket: no interface nope0 in this network namespace: list them with `ip link`: ioctl SIOCGIFINDEX: no such device" {
		t.Errorf("Open(nope0) = %v", err)
	}
	err = openErr(h, "lo", afpacket.Config{})
	if err == nil || err.Error() != "afpacket: lo is not an Ethernet interface (ARPHRD type 772, want 1)" {
		t.Errorf("Open(lo) = %v", err)
	}
	for _, tc := range []struct {
		ifname string
		cfg    afpacket.Config
		want   string
	}{
		{"eth0", afpacket.Config{MaxFrame: 13}, "afpacket: Config.MaxFrame is 13: use 14 through 65549 bytes, or 0 for 8192"},
		{"eth0", afpacket.Config{MaxFrame: 65550}, "afpacket: Config.MaxFrame is 65550: use 14 through 65549 bytes, or 0 for 8192"},
		{"eth0", afpacket.Config{IO: 7}, "afpacket: Config.IO is IOMode(7): use IODefault, IOBlocking or IOPoll"},
		{"eth0", afpacket.Config{Addr: wire.MAC{0x03, 0, 0, 0, 0, 1}}, "afpacket: Config.Addr 03:00:00:00:00:01 is a group address: the link's own address must be unicast (bit 0 of the first octet clear)"},
		{"eth0", afpacket.Config{BusyPoll: -time.Microsecond}, "afpacket: Config.BusyPoll is -1µs: use 0 (off) through 10ms"},
		{"eth0", afpacket.Config{BusyPoll: 11 * time.Millisecond}, "afpacket: Config.BusyPoll is 11ms: use 0 (off) through 10ms"},
		{"eth0", afpacket.Config{BusyPoll: time.Millisecond, IO: afpacket.IOBlocking}, "afpacket: Config.BusyPoll is 1ms with Config.IO blocking: busy polling needs IOPoll (or IODefault); set BusyPoll to 0 for IOBlocking"},
		{"eth0", afpacket.Config{SocketBuffer: -1}, "afpacket: Config.SocketBuffer is -1: use a positive size in bytes, or 0 for 4194304"},
		{"", afpacket.Config{}, `afpacket: interface name "": use 1 through 15 bytes`},
		{"sixteen-bytes-xx", afpacket.Config{}, `afpacket: interface name "sixteen-bytes-xx": use 1 through 15 bytes`},
	} {
		if err := openErr(h, tc.ifname, tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("Open(%q, %+v) = %v\nwant %s", tc.ifname, tc.cfg, err, tc.want)
		}
	}
	// Without CAP_NET_RAW. Do's thread is discarded afterwards, so dropping
	// the capability from it does not affect the rest of the test binary.
	err = h.Do(func() error {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return err
		}
		data[0].Effective &^= 1 << unix.CAP_NET_RAW
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return err
		}
		l, err := afpacket.Open("eth0", afpacket.Config{})
		if err == nil {
			l.Close()
		}
		return err
	})
	if !errors.Is(err, unix.EPERM) || err.Error() != "afpacket: open eth0 needs CAP_NET_RAW: run as root or grant it (setcap cap_net_raw,cap_net_admin+ep PROGRAM): socket: operation not permitted" {
		t.Errorf("Open without CAP_NET_RAW = %v", err)
	}
	if err := h.SetLinkUp(false); err != nil {
		t.Fatal(err)
	}
	err = openErr(h, "eth0", afpacket.Config{})
	if err == nil || err.Error() != "afpacket: eth0 is down: bring it up (ip link set eth0 up)" {
		t.Errorf("Open of a down interface = %v", err)
	}
}

func TestGroups(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewBridge(t, 3)
		cfg := afpacket.Config{IO: mode}
		h1, h2, h3 := open(t, tn.Host(0), cfg), open(t, tn.Host(1), cfg), open(t, tn.Host(2), cfg)
		group := wire.MAC{0x03, 0x0e, 0x0c, 0x00, 0x00, 0x01}
		other := wire.MAC{0x03, 0x0e, 0x0c, 0x00, 0x00, 0x02}
		if err := h2.JoinGroup(group); err != nil {
			t.Fatal(err)
		}
		if err := h2.JoinGroup(group); err != nil { // twice is once
			t.Fatal(err)
		}
		var seq byte
		send := func(dst wire.MAC) []byte {
			seq++
			f := frame(dst, h1.Addr(), afpacket.EtherType, 64, seq)
			write(t, h1, f)
			return f
		}
		g := send(group)
		send(other)                 // joined by nobody
		u := send(tn.Host(2).MAC()) // unicast to h3, flooded by the bridge
		marker := send(wire.Broadcast)
		expect(t, h2, g, "h2 joined the group")
		expect(t, h2, marker, "h2 after the group frame: not the other group, not h3's unicast")
		expect(t, h3, u, "h3 did not join: its own unicast comes first")
		expect(t, h3, marker, "h3 after its unicast")

		// Promiscuous h3 receives everything of its EtherType.
		if err := h3.SetPromiscuous(true); err != nil {
			t.Fatal(err)
		}
		g = send(group)
		o := send(other)
		u2 := send(tn.Host(1).MAC())
		marker = send(wire.Broadcast)
		expect(t, h3, g, "promiscuous h3, group frame")
		expect(t, h3, o, "promiscuous h3, other group")
		expect(t, h3, u2, "promiscuous h3, h2's unicast")
		expect(t, h3, marker, "promiscuous h3, broadcast")
		expect(t, h2, g, "h2 group frame")
		expect(t, h2, u2, "h2 unicast")
		expect(t, h2, marker, "h2 broadcast")

		// Promiscuous off and the group left (once, after joining twice).
		if err := h3.SetPromiscuous(false); err != nil {
			t.Fatal(err)
		}
		if err := h2.LeaveGroup(group); err != nil {
			t.Fatal(err)
		}
		if err := h2.LeaveGroup(other); err != nil { // not joined: nothing
			t.Fatal(err)
		}
		send(group)
		send(other)
		marker = send(wire.Broadcast)
		expect(t, h2, marker, "h2 left the group")
		expect(t, h3, marker, "h3 no longer promiscuous")

		unicast := tn.Host(0).MAC()
		if err := h2.JoinGroup(unicast); err == nil || err.Error() != "afpacket: JoinGroup 02:0e:0c:00:00:01: not a group address (I/G bit clear); a group MAC has bit 0 of the first octet set, such as 01:00:5e:00:00:01" {
			t.Errorf("JoinGroup(unicast) = %v", err)
		}
		if err := h2.LeaveGroup(unicast); err == nil || err.Error() != "afpacket: LeaveGroup 02:0e:0c:00:00:01: not a group address (I/G bit clear)" {
			t.Errorf("LeaveGroup(unicast) = %v", err)
		}
		if err := h2.JoinGroup(wire.Broadcast); err != nil {
			t.Errorf("JoinGroup(broadcast) = %v", err)
		}
		h2.Close()
		for _, err := range []error{h2.JoinGroup(group), h2.LeaveGroup(group), h2.SetPromiscuous(true)} {
			if err != link.ErrClosed {
				t.Errorf("after Close: %v, want link.ErrClosed", err)
			}
		}
	})
}

func TestAllEtherTypes(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		a := open(t, tn.Host(0), afpacket.Config{IO: mode})
		oetp := open(t, tn.Host(1), afpacket.Config{IO: mode})
		all := open(t, tn.Host(1), afpacket.Config{IO: mode, AllEtherTypes: true})
		ipish := frame(oetp.Addr(), a.Addr(), 0x0800, 60, 1)
		arpish := frame(wire.Broadcast, a.Addr(), 0x0806, 42, 2)
		marker := frame(oetp.Addr(), a.Addr(), afpacket.EtherType, 60, 3)
		for _, f := range [][]byte{ipish, arpish, marker} {
			write(t, a, f)
		}
		expect(t, oetp, marker, "0x88B5 link skips other EtherTypes")
		got := read(t, all, 3)
		for i, want := range [][]byte{ipish, arpish, marker} {
			if !bytes.Equal(got[i], want) {
				t.Errorf("ETH_P_ALL link frame %d = % x, want % x", i, got[i][:14], want[:14])
			}
		}
	})
}

// TestOwnFramesNotReadBack checks that a link does not read the frames its
// host transmits. The kernel never shows a socket its own transmissions, but
// an ETH_P_ALL socket sees every other transmission on the interface as
// PACKET_OUTGOING: another link of the same program, another process, the
// kernel itself.
func TestOwnFramesNotReadBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		force  bool
		cfg    afpacket.Config
		promis bool
	}{
		{"ignore-outgoing/all-ethertypes", false, afpacket.Config{AllEtherTypes: true}, false},
		{"ignore-outgoing/promiscuous", false, afpacket.Config{AllEtherTypes: true}, true},
		{"bpf/all-ethertypes", true, afpacket.Config{AllEtherTypes: true}, false},
		{"bpf/promiscuous", true, afpacket.Config{AllEtherTypes: true}, true},
		{"bpf/poll-promiscuous", true, afpacket.Config{AllEtherTypes: true, IO: afpacket.IOPoll}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.force {
				defer afpacket.SetForceOutgoingFilter()()
			}
			tn := netns.NewPair(t)
			mon := open(t, tn.Host(0), tc.cfg)
			a := open(t, tn.Host(0), afpacket.Config{})
			b := open(t, tn.Host(1), afpacket.Config{})
			if tc.promis {
				if err := mon.SetPromiscuous(true); err != nil {
					t.Fatal(err)
				}
			}
			// Frames h1 sends to h2, to broadcast and to itself: they pass
			// the destination filter of a promiscuous link, and the last two
			// that of any link on h1.
			for i, dst := range []wire.MAC{b.Addr(), wire.Broadcast, a.Addr()} {
				write(t, a, frame(dst, a.Addr(), afpacket.EtherType, 64, byte(i)))
			}
			read(t, b, 2) // the frame to h1 is not b's
			marker := frame(mon.Addr(), b.Addr(), afpacket.EtherType, 64, 9)
			write(t, b, marker)
			expect(t, mon, marker, "the first frame on h1 is h2's, none of h1's own")
		})
	}
}

func TestAddrOverride(t *testing.T) {
	tn := netns.NewPair(t)
	alias := wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0x99}
	a := open(t, tn.Host(0), afpacket.Config{})
	b := open(t, tn.Host(1), afpacket.Config{Addr: alias})
	if b.Addr() != alias {
		t.Fatalf("Addr() = %s, want %s", b.Addr(), alias)
	}
	toIf := frame(tn.Host(1).MAC(), a.Addr(), afpacket.EtherType, 64, 1)
	toAlias := frame(alias, a.Addr(), afpacket.EtherType, 64, 2)
	write(t, a, toIf)
	write(t, a, toAlias)
	expect(t, b, toAlias, "the link receives its configured address, not the interface's")
}

func TestCloseUnblocks(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		l := open(t, tn.Host(0), afpacket.Config{IO: mode})
		for _, k := range []int{1, 8} {
			t.Run(fmt.Sprint(k, "-buffers"), func(t *testing.T) {
				l := open(t, tn.Host(0), afpacket.Config{IO: mode})
				bufs := make([][]byte, k)
				for i := range bufs {
					bufs[i] = make([]byte, 100)
				}
				c := make(chan error)
				go func() {
					_, err := l.ReadBatch(bufs, make([]int, k))
					c <- err
				}()
				time.Sleep(30 * time.Millisecond)
				closeUnblocks(t, l, c, "blocked ReadBatch")
			})
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close = %v, want nil", err)
		}
		buf := [][]byte{make([]byte, 100)}
		if _, err := l.ReadBatch(buf, []int{0}); err != link.ErrClosed {
			t.Errorf("ReadBatch after Close = %v", err)
		}
		f := frame(wire.Broadcast, l.Addr(), afpacket.EtherType, 60, 0)
		if err := l.Write(f); err != link.ErrClosed {
			t.Errorf("Write after Close = %v", err)
		}
		if _, err := l.WriteBatch([][]byte{f, f}); err != link.ErrClosed {
			t.Errorf("WriteBatch after Close = %v", err)
		}
	})
}

func TestReadBatchArguments(t *testing.T) {
	tn := netns.NewPair(t)
	l := open(t, tn.Host(0), afpacket.Config{})
	if _, err := l.ReadBatch(nil, nil); err == nil || err.Error() != "afpacket: ReadBatch needs at least one buffer in bufs" {
		t.Errorf("ReadBatch(nil) = %v", err)
	}
	if _, err := l.ReadBatch(make([][]byte, 3), make([]int, 2)); err == nil || err.Error() != "afpacket: ReadBatch got 2 sizes for 3 bufs; make sizes at least as long as bufs" {
		t.Errorf("ReadBatch(3 bufs, 2 sizes) = %v", err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		a, b := open(t, tn.Host(0), afpacket.Config{IO: mode}), open(t, tn.Host(1), afpacket.Config{IO: mode})
		const writers, each = 4, 200
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					f := frame(b.Addr(), a.Addr(), afpacket.EtherType, 64, 0)
					f[14], f[15] = byte(w), byte(i)
					if i%2 == 0 {
						if err := a.Write(f); err != nil {
							t.Error(err)
							return
						}
					} else if n, err := a.WriteBatch([][]byte{f}); n != 1 || err != nil {
						t.Error(n, err)
						return
					}
				}
			})
		}
		got := read(t, b, writers*each)
		wg.Wait()
		next := make([]int, writers)
		for _, f := range got {
			w, i := int(f[14]), int(f[15])
			if i != next[w]%256 {
				t.Fatalf("writer %d: frame %d arrived when %d was due", w, i, next[w])
			}
			next[w]++
		}
		if st := a.Stats(); st.TxFrames != writers*each || st.TxBytes != writers*each*64 {
			t.Errorf("Stats = %+v", st)
		}
	})
}

// TestStatsDrops runs in both modes: the commands receive in IOBlocking
// mode, the engine's other users in IOPoll.
func TestStatsDrops(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		a := open(t, tn.Host(0), afpacket.Config{IO: mode})
		b := open(t, tn.Host(1), afpacket.Config{IO: mode, SocketBuffer: 64 << 10})
		const sent = 300
		f := frame(b.Addr(), a.Addr(), afpacket.EtherType, 8192, 1)
		for range sent {
			write(t, a, f)
		}
		time.Sleep(50 * time.Millisecond) // let any deferred softirq finish delivering
		drops := b.Stats().DropQueueFull
		if drops == 0 || drops >= sent {
			t.Fatalf("DropQueueFull = %d after %d frames into a 64 KiB buffer, want 1..%d", drops, sent, sent-1)
		}
		// Every frame was either queued or counted as dropped: exactly
		// sent-drops frames are readable, then the marker.
		read(t, b, sent-int(drops))
		marker := frame(b.Addr(), a.Addr(), afpacket.EtherType, 60, 2)
		write(t, a, marker)
		expect(t, b, marker, "the frame after the queued ones")
		st := b.Stats()
		want := afpacket.Stats{RxFrames: sent - drops + 1, RxBytes: (sent-drops)*8192 + 60, DropQueueFull: drops}
		if st != want {
			t.Errorf("b.Stats() = %+v, want %+v (drops accumulate across reads of the kernel counter)", st, want)
		}
		if st := a.Stats(); st.TxFrames != sent+1 || st.TxBytes != sent*8192+60 {
			t.Errorf("a.Stats() = %+v", st)
		}
		b.Close()
		if got := b.Stats(); got != want {
			t.Errorf("Stats after Close = %+v, want %+v", got, want)
		}
	})
}

// TestInterfaceDown: a link whose interface goes down reports ENETDOWN from
// ReadBatch, wrapped so errors.Is sees the errno.
func TestInterfaceDown(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		l := open(t, tn.Host(0), afpacket.Config{IO: mode})
		if err := tn.Host(0).SetLinkUp(false); err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{1, 4} {
			bufs := make([][]byte, k)
			for i := range bufs {
				bufs[i] = make([]byte, 100)
			}
			if err := tn.Host(0).SetLinkUp(true); err != nil {
				t.Fatal(err)
			}
			if err := tn.Host(0).SetLinkUp(false); err != nil {
				t.Fatal(err)
			}
			call := map[int]string{1: "read", 4: "recvmmsg"}[k]
			_, err := l.ReadBatch(bufs, make([]int, k))
			if want := "afpacket: read eth0: " + call + ": network is down"; !errors.Is(err, unix.ENETDOWN) || err.Error() != want {
				t.Errorf("ReadBatch(%d) on a down interface = %v, want %s", k, err, want)
			}
		}
	})
}

// TestReadLoop: ReadLoop hands every frame to its callback in order, in
// batches, reads into the buffers as the callback left them (it may swap
// them), keeps waiting between batches, returns nil when the callback says
// stop, and returns link.ErrClosed promptly when the link is closed.
func TestReadLoop(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		a, b := open(t, tn.Host(0), afpacket.Config{IO: mode}), open(t, tn.Host(1), afpacket.Config{IO: mode})
		var sent [][]byte
		for i := range 70 {
			sent = append(sent, frame(b.Addr(), a.Addr(), afpacket.EtherType, 60+i*13, byte(i)))
		}
		bufs := make([][]byte, 8)
		for i := range bufs {
			bufs[i] = make([]byte, 2000)
		}
		sizes := make([]int, len(bufs))
		var got [][]byte
		done := make(chan error, 1)
		go func() {
			done <- b.ReadLoop(bufs, sizes, func(n int) bool {
				for i := range n {
					got = append(got, bufs[i][:sizes[i]])
					bufs[i] = make([]byte, 2000) // the frame's buffer is kept: swap in another
				}
				return len(got) < len(sent)
			})
		}()
		for i, f := range sent {
			write(t, a, f)
			if i%10 == 0 {
				time.Sleep(2 * time.Millisecond) // let the loop wait between batches
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("ReadLoop = %v, want nil after the callback stopped it", err)
			}
		case <-time.After(5 * time.Second):
			b.Close()
			t.Fatalf("ReadLoop got %d of %d frames in 5s", len(got), len(sent))
		}
		for i := range sent {
			if !bytes.Equal(got[i], sent[i]) {
				t.Fatalf("frame %d: got %d bytes, want %d (frames out of order or changed)", i, len(got[i]), len(sent[i]))
			}
		}
		go func() {
			done <- b.ReadLoop(bufs, sizes, func(int) bool { return true })
		}()
		time.Sleep(30 * time.Millisecond)
		closeUnblocks(t, b, done, "ReadLoop")
	})
}

// TestBusyPoll: with Config.BusyPoll, ReadLoop keeps reading the empty
// socket after a frame for the spin window (Stats.BusyPolls grows), parks
// once the window has passed (BusyPolls stops growing) and is woken by the
// poller for the next frame; it does not spin before the first frame, a
// link without BusyPoll never spins, and Close ends a spinning ReadLoop
// promptly.
func TestBusyPoll(t *testing.T) {
	const window = afpacket.MaxBusyPoll
	tn := netns.NewPair(t)
	a := open(t, tn.Host(0), afpacket.Config{BusyPoll: window})
	b := open(t, tn.Host(1), afpacket.Config{BusyPoll: window})
	if got := b.BusyPoll(); got != window {
		t.Fatalf("BusyPoll() = %v, want %v", got, window)
	}
	bufs := [][]byte{make([]byte, 2000), make([]byte, 2000)}
	sizes := make([]int, len(bufs))
	frames := make(chan []byte, 16)
	done := make(chan error, 1)
	go func() {
		done <- b.ReadLoop(bufs, sizes, func(n int) bool {
			for i := range n {
				frames <- bytes.Clone(bufs[i][:sizes[i]])
			}
			return true
		})
	}()
	recv := func(want []byte) time.Time {
		t.Helper()
		select {
		case got := <-frames:
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes % x..., want %d bytes % x...", len(got), got[:min(len(got), 16)], len(want), want[:16])
			}
			return time.Now()
		case <-time.After(5 * time.Second):
			t.Fatal("no frame in 5s")
		}
		return time.Time{}
	}
	time.Sleep(20 * time.Millisecond)
	if n := b.Stats().BusyPolls; n != 0 {
		t.Fatalf("BusyPolls = %d before any frame, want 0: the loop spins only after a frame", n)
	}
	f1 := frame(b.Addr(), a.Addr(), afpacket.EtherType, 60, 1)
	write(t, a, f1)
	got1 := recv(f1)
	// A frame sent inside the window is read by the spinning loop.
	time.Sleep(window / 4)
	f2 := frame(b.Addr(), a.Addr(), afpacket.EtherType, 100, 2)
	write(t, a, f2)
	got2 := recv(f2)
	spun := b.Stats().BusyPolls
	if spun == 0 {
		t.Fatalf("BusyPolls = 0 %v after a frame, want the loop spinning", time.Since(got1))
	}
	// Past the window the loop parks: the count stops.
	time.Sleep(time.Until(got2.Add(window + 20*time.Millisecond)))
	parked := b.Stats().BusyPolls
	if parked < 20 {
		t.Fatalf("BusyPolls = %d over a %v window, want the loop to have read the socket again and again", parked, window)
	}
	time.Sleep(50 * time.Millisecond)
	if n := b.Stats().BusyPolls; n != parked {
		t.Fatalf("BusyPolls grew from %d to %d more than %v after the last frame: the loop did not park", parked, n, window)
	}
	// The parked loop is woken by the poller for the next frame.
	f3 := frame(b.Addr(), a.Addr(), afpacket.EtherType, 1500, 3)
	write(t, a, f3)
	recv(f3)
	if st := b.Stats(); st.RxFrames != 3 || a.Stats().BusyPolls != 0 {
		t.Fatalf("b received %d frames, a (which only sent) polled %d times; want 3 and 0", st.RxFrames, a.Stats().BusyPolls)
	}
	// Close ends a spinning loop: one that missed Close would run into
	// closeUnblocks's bound.
	closeUnblocks(t, b, done, "spinning ReadLoop")

	// Without BusyPoll the loop never spins.
	c, d := open(t, tn.Host(0), afpacket.Config{}), open(t, tn.Host(1), afpacket.Config{})
	go func() {
		done <- d.ReadLoop(bufs, sizes, func(n int) bool {
			for i := range n {
				frames <- bytes.Clone(bufs[i][:sizes[i]])
			}
			return true
		})
	}()
	for i := range 5 {
		f := frame(d.Addr(), c.Addr(), afpacket.EtherType, 60+i, byte(i))
		write(t, c, f)
		recv(f)
	}
	time.Sleep(10 * time.Millisecond)
	if n := d.Stats().BusyPolls; n != 0 {
		t.Errorf("BusyPolls = %d without Config.BusyPoll, want 0", n)
	}
	d.Close()
	<-done
}

// TestBusyPollNoAllocs: a ReadLoop that spins between frames allocates
// nothing per frame.
func TestBusyPollNoAllocs(t *testing.T) {
	tn := netns.NewPair(t)
	a := open(t, tn.Host(0), afpacket.Config{})
	b := open(t, tn.Host(1), afpacket.Config{BusyPoll: afpacket.MaxBusyPoll})
	bufs := [][]byte{make([]byte, 2000), make([]byte, 2000)}
	sizes := make([]int, len(bufs))
	got := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		done <- b.ReadLoop(bufs, sizes, func(n int) bool { got <- n; return true })
	}()
	f := frame(b.Addr(), a.Addr(), afpacket.EtherType, 60, 9)
	var err error
	n := 0
	allocs := testing.AllocsPerRun(300, func() {
		if err == nil {
			err = a.Write(f)
		}
		if err == nil {
			n += <-got
		}
	})
	if err != nil || allocs != 0 {
		t.Errorf("Write + spinning ReadLoop: %v allocations per frame, err %v; want 0", allocs, err)
	}
	if b.Stats().BusyPolls == 0 {
		t.Error("the loop never spun")
	}
	b.Close()
	<-done
}

// tag inserts a VLAN tag (tpid, tci) after the MACs of f.
func tag(f []byte, tpid, tci uint16) []byte {
	out := append([]byte{}, f[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, tci)
	return append(out, f[12:]...)
}

// TestVLANTagsRestored: tagged frames sent over veth by a raw socket arrive
// exactly as sent, tag included, although the kernel takes the tag out of
// the frame before a packet socket sees it: 802.1Q with a VLAN ID, a
// priority tag (VID 0), 802.1ad, and 802.1ad over 802.1Q (the inner tag
// stays in the frame). An oETP-only link receives the tagged frames whose
// inner EtherType is 0x88B5, also with the tag restored, and none of the
// others. Untagged frames are unchanged. Stats.RxTagged counts them.
func TestVLANTagsRestored(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		sender := open(t, tn.Host(0), afpacket.Config{IO: mode, AllEtherTypes: true})
		all := open(t, tn.Host(1), afpacket.Config{IO: mode, AllEtherTypes: true})
		oetp := open(t, tn.Host(1), afpacket.Config{IO: mode})
		dst, src := all.Addr(), sender.Addr()
		req := wire.AppendRMEMReadReq(nil, dst, src, 7, 0x1000)
		ip := frame(dst, src, 0x0800, 60, 9)
		frames := []struct {
			f      []byte
			oetpOK bool
		}{
			{tag(req, 0x8100, 5), true},
			{tag(req, 0x8100, 3<<13), true}, // priority tag: VID 0, PCP 3
			{tag(req, 0x88A8, 0x1007), true},
			{tag(tag(req, 0x8100, 5), 0x88A8, 7), false}, // inner tag: the socket sees 0x8100
			{tag(ip, 0x8100, 5), false},
			{req, true},
			{ip, false},
		}
		for _, f := range frames {
			write(t, sender, f.f)
		}
		got := read(t, all, len(frames))
		for i, f := range frames {
			if !bytes.Equal(got[i], f.f) {
				t.Errorf("frame %d: the all-EtherTypes link got % x, want % x", i, got[i], f.f)
			}
		}
		var want [][]byte
		for _, f := range frames {
			if f.oetpOK {
				want = append(want, f.f)
			}
		}
		got = read(t, oetp, len(want))
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("oETP-only link frame %d: got % x, want % x", i, got[i], want[i])
			}
		}
		if s := all.Stats(); s.RxTagged != 5 {
			t.Errorf("all-EtherTypes link RxTagged %d, want 5", s.RxTagged)
		}
		// A buffer shorter than the addresses and the tag: the frame's
		// first bytes, tag included as far as it fits.
		tagged := tag(req, 0x8100, 5)
		for _, size := range []int{14, 15} {
			write(t, sender, tagged)
			buf, sizes := [][]byte{make([]byte, size)}, make([]int, 1)
			if n, err := all.ReadBatch(buf, sizes); err != nil || n != 1 || !bytes.Equal(buf[0][:sizes[0]], tagged[:size]) {
				t.Errorf("a tagged frame read into %d bytes: %d frames, %v, got % x, want % x", size, n, err, buf[0][:sizes[0]], tagged[:size])
			}
		}
		if s := oetp.Stats(); s.RxTagged != 3 || s.RxFrames != 4 {
			t.Errorf("oETP-only link RxTagged %d, RxFrames %d; want 3, 4", s.RxTagged, s.RxFrames)
		}
		// A buffer with no room for the tag: the frame is cut to it.
		write(t, sender, tag(req, 0x8100, 5))
		buf := make([]byte, len(req))
		n, err := oetp.ReadBatch([][]byte{buf}, []int{0})
		_ = n
		if err != nil {
			t.Fatal(err)
		}
		if want := tag(req, 0x8100, 5)[:len(req)]; !bytes.Equal(buf, want) {
			t.Errorf("cut frame % x, want % x", buf, want)
		}
	})
}

// TestExtraAddrs: a link receives the frames to its extra unicast
// addresses as well as its own, and no other unicast, without promiscuous
// mode; Addr stays its own. Group or zero extra addresses are refused.
func TestExtraAddrs(t *testing.T) {
	tn := netns.NewPair(t)
	x1 := wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0xa0}
	x2 := wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0xa1}
	other := wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0xa2}
	a := open(t, tn.Host(0), afpacket.Config{})
	b := open(t, tn.Host(1), afpacket.Config{ExtraAddrs: []wire.MAC{x1, x2}})
	if b.Addr() != tn.Host(1).MAC() {
		t.Fatalf("Addr() = %v, want the interface's %v", b.Addr(), tn.Host(1).MAC())
	}
	var want [][]byte
	for i, dst := range []wire.MAC{other, x1, x2, other, b.Addr()} {
		f := frame(dst, a.Addr(), afpacket.EtherType, 60, byte(i))
		write(t, a, f)
		if dst != other {
			want = append(want, f)
		}
	}
	got := read(t, b, len(want))
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d: got % x, want % x", i, got[i][:6], want[i][:6])
		}
	}
	for _, bad := range []wire.MAC{{0x03, 0, 0, 0, 0, 1}, {}} {
		if err := openErr(tn.Host(1), "eth0", afpacket.Config{ExtraAddrs: []wire.MAC{bad}}); err == nil || !strings.Contains(err.Error(), "ExtraAddrs") {
			t.Errorf("ExtraAddrs %v: %v", bad, err)
		}
	}
}

// TestCloseInterruptsBlocked: in IOBlocking mode Close interrupts a
// ReadBatch blocked in the kernel instead of waiting for its timeout. The
// timeout is 10 s here, so that a Close that waited would fail the test
// (a one-shot command's exit took up to 50 ms longer, the timeout then).
func TestCloseInterruptsBlocked(t *testing.T) {
	defer afpacket.SetBlockTimeout(10 * time.Second)()
	tn := netns.NewPair(t)
	for _, k := range []int{1, 8} {
		l := open(t, tn.Host(0), afpacket.Config{IO: afpacket.IOBlocking})
		bufs := make([][]byte, k)
		for i := range bufs {
			bufs[i] = make([]byte, 100)
		}
		c := make(chan error, 1)
		go func() {
			_, err := l.ReadBatch(bufs, make([]int, k))
			c <- err
		}()
		time.Sleep(30 * time.Millisecond) // let it block in the kernel
		closeUnblocks(t, l, c, fmt.Sprintf("%d buffers: blocked ReadBatch", k))
	}
}

// closeUnblocks closes l, whose read (what) blocks and reports to c, and
// checks that Close returns at once (not after a blocking read's 10 s
// timeout) and the read with link.ErrClosed, each within 5 s: a machine
// under load may take a while, a read that missed Close never ends.
func closeUnblocks(t *testing.T, l *afpacket.Link, c <-chan error, what string) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: Close waited for its 10 s timeout", what)
	}
	select {
	case err := <-c:
		if err != link.ErrClosed {
			t.Fatalf("%s returned %v, want link.ErrClosed", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still blocked after Close", what)
	}
}

// TestHandOff: HandOff returns open duplicates of the link's sockets that
// outlive Close and receive nothing; the link works until Close and
// HandOff after Close is refused.
func TestHandOff(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		a := open(t, tn.Host(0), afpacket.Config{})
		b := open(t, tn.Host(1), afpacket.Config{IO: mode})
		f := frame(b.Addr(), a.Addr(), afpacket.EtherType, 64, 1)
		write(t, a, f)
		expect(t, b, f, "before HandOff")
		files, err := b.HandOff()
		if err != nil {
			t.Fatal(err)
		}
		want := map[afpacket.IOMode]int{afpacket.IOBlocking: 1, afpacket.IOPoll: 2}[mode]
		if len(files) != want {
			t.Fatalf("HandOff returned %d files, want %d", len(files), want)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		write(t, a, frame(b.Addr(), a.Addr(), afpacket.EtherType, 64, 2))
		for i, file := range files {
			fd := int(file.Fd())
			if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_RAW {
				t.Errorf("file %d after Close: SO_TYPE %d, %v; want an open raw socket", i, typ, err)
			}
			if i == 0 {
				// The receiving socket: nothing arrives (the drop filter).
				buf := make([]byte, 100)
				time.Sleep(50 * time.Millisecond)
				if n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT); err != unix.EAGAIN {
					t.Errorf("the handed-off socket received %d bytes (%v); want nothing", n, err)
				}
			}
			file.Close()
		}
		if _, err := b.HandOff(); err != link.ErrClosed {
			t.Errorf("HandOff after Close = %v, want link.ErrClosed", err)
		}
	})
}
