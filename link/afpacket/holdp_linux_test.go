//go:build linux

package afpacket_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
)

// blockedRead starts a one-frame ReadBatch on l and returns the channel
// that receives its frame (or its error).
func blockedRead(l *afpacket.Link) <-chan []byte {
	c := make(chan []byte, 1)
	go func() {
		bufs := [][]byte{make([]byte, 2000), make([]byte, 2000)}
		sizes := make([]int, 2)
		n, err := l.ReadBatch(bufs, sizes)
		if err != nil || n != 1 {
			c <- nil
			return
		}
		c <- bytes.Clone(bufs[0][:sizes[0]])
	}()
	return c
}

// waitHeld waits for HeldPs to reach want.
func waitHeld(t *testing.T, want int) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("HeldPs to reach %d", want), func() bool { return afpacket.HeldPs() == want })
}

// TestHoldP: blocking receives with Config.HoldP keep their P, but never
// the last one: with GOMAXPROCS 2 and three links waiting, exactly one
// holds its P and the other two wait as ordinary system calls; each gets
// its own frame, byte for byte; with GOMAXPROCS 1 none holds.
func TestHoldP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	tn := netns.NewPair(t)
	h0, h1 := tn.Host(0), tn.Host(1)
	tx := open(t, h0, afpacket.Config{IO: afpacket.IOBlocking, HoldP: true})
	var rx []*afpacket.Link
	var got []<-chan []byte
	for i := range 3 {
		mac := h1.MAC()
		mac[5] += byte(0x10 * (i + 1))
		l := open(t, h1, afpacket.Config{IO: afpacket.IOBlocking, HoldP: true, Addr: mac})
		rx = append(rx, l)
		got = append(got, blockedRead(l))
	}
	waitHeld(t, 1)
	time.Sleep(50 * time.Millisecond) // room for a wrong second holder to appear
	if n := afpacket.HeldPs(); n != 1 {
		t.Fatalf("three receives waiting with GOMAXPROCS 2: %d hold their P, want 1", n)
	}
	for i, l := range rx {
		f := frame(l.Addr(), tx.Addr(), afpacket.EtherType, 60+i, byte(i))
		write(t, tx, f)
		select {
		case g := <-got[i]:
			if !bytes.Equal(g, f) {
				t.Fatalf("link %d: got % x, want % x", i, g, f)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("link %d: no frame in 5s", i)
		}
	}
	waitHeld(t, 0)

	runtime.GOMAXPROCS(1)
	c := blockedRead(rx[0])
	time.Sleep(30 * time.Millisecond) // let it block in the kernel
	if n := afpacket.HeldPs(); n != 0 {
		t.Fatalf("GOMAXPROCS 1: %d receives hold their P, want 0", n)
	}
	f := frame(rx[0].Addr(), tx.Addr(), afpacket.EtherType, 100, 9)
	write(t, tx, f)
	select {
	case g := <-c:
		if !bytes.Equal(g, f) {
			t.Fatalf("GOMAXPROCS 1: got % x, want % x", g, f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GOMAXPROCS 1: no frame in 5s")
	}
}

// TestHoldPClose: Close interrupts a receive that holds its P, which
// returns link.ErrClosed, and frees the P.
func TestHoldPClose(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer afpacket.SetBlockTimeout(10 * time.Second)()
	tn := netns.NewPair(t)
	l := open(t, tn.Host(0), afpacket.Config{IO: afpacket.IOBlocking, HoldP: true})
	c := make(chan error, 1)
	go func() {
		_, err := l.ReadBatch([][]byte{make([]byte, 100)}, make([]int, 1))
		c <- err
	}()
	waitHeld(t, 1)
	closeUnblocks(t, l, c, "held ReadBatch")
	waitHeld(t, 0)
}

// TestSendBufferFull: a send that finds the socket's send buffer full
// (frames held in a slow qdisc) waits for room instead of failing or
// spinning, and every frame arrives, in order and byte for byte, one at a
// time (Write) and in batches (WriteBatch).
func TestSendBufferFull(t *testing.T) {
	forModes(t, func(t *testing.T, mode afpacket.IOMode) {
		tn := netns.NewPair(t)
		h0, h1 := tn.Host(0), tn.Host(1)
		// 40 Mbit/s: a 1500-byte frame leaves every 0.3 ms, while the
		// smallest send buffer holds about two frames.
		if err := h0.Do(func() error {
			nl, err := netlink.LinkByName(h0.IfName())
			if err != nil {
				return err
			}
			rate := uint64(5_000_000) // bytes per second
			return netlink.QdiscAdd(&netlink.Tbf{
				QdiscAttrs: netlink.QdiscAttrs{LinkIndex: nl.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
				Rate:       rate, Limit: 1 << 20, Buffer: netlink.Xmittime(rate, 3000),
			})
		}); err != nil {
			t.Skipf("no tbf qdisc: %v", err)
		}
		tx := open(t, h0, afpacket.Config{IO: mode, SocketBuffer: 1})
		rx := open(t, h1, afpacket.Config{IO: mode})
		const n = 40
		var want [][]byte
		for i := range n {
			want = append(want, frame(rx.Addr(), tx.Addr(), afpacket.EtherType, 1500, byte(i)))
		}
		// The receive queue (4 MiB) holds every frame: read them after.
		for _, f := range want[:n/2] {
			write(t, tx, f)
		}
		if k, err := tx.WriteBatch(want[n/2:]); k != n/2 || err != nil {
			t.Fatalf("WriteBatch: %d of %d frames, %v", k, n/2, err)
		}
		for _, f := range want {
			write(t, tx, f)
		}
		got := read(t, rx, 2*n)
		for i := range got {
			if w := want[i%n]; !bytes.Equal(got[i], w) {
				t.Fatalf("frame %d: got % x..., want % x...", i, got[i][:20], w[:20])
			}
		}
		if tx.SendWaits() == 0 {
			t.Fatal("no send found the send buffer full: the test did not test the wait")
		}
	})
}
