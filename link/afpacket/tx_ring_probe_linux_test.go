//go:build linux

package afpacket_test

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/netns"
)

// BenchmarkTxRingProbe measures the send direction below the link, as raw
// sockets with no protocol: a windowed exchange over a veth pair, 32
// requests of 8192 bytes in flight, each answered by a 20-byte reply, the
// echo answering each received batch with one sendmmsg(2). The near side
// sends each batch with sendmmsg(2) ("sendmmsg", what the link does: the
// kernel copies each frame into a buffer of its own) or copies the frames
// into the slots of a PACKET_TX_RING (TPACKET_V2) and hands the batch
// over with one send(2) ("tx-ring": the kernel builds each packet around
// the slot's pages, and copies them as the packet crosses to the other
// namespace). Threads locked, blocking receives with recvmmsg(2):
//
//	sudo go test -run '^$' -bench TxRingProbe -benchtime 100000x -count 5 ./link/afpacket/
func BenchmarkTxRingProbe(b *testing.B) {
	const depth = 32
	for _, mode := range []string{"sendmmsg", "tx-ring"} {
		b.Run(mode, func(b *testing.B) {
			tn := netns.NewPair(b)
			near, far := probeSock(b, tn.Host(0)), probeSock(b, tn.Host(1))
			for _, fd := range []int{near, far} {
				// A window of 8 KiB frames overflows the default buffer.
				if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20); err != nil {
					b.Fatal(err)
				}
			}
			req := probeFrame(tn.Host(1).MAC(), tn.Host(0).MAC(), 8192)
			rsp := probeFrame(tn.Host(0).MAC(), tn.Host(1).MAC(), 20)
			var send func(k int) error
			switch mode {
			case "sendmmsg":
				out := newProbeBatch(depth, req)
				send = func(k int) error { return out.send(near, k) }
			case "tx-ring":
				r := newTxRing(b, tn.Host(0))
				send = func(k int) error { return r.send(req, k) }
			}
			var stop atomic.Bool
			done := make(chan error, 1)
			go func() {
				runtime.LockOSThread()
				in, out := newProbeBatch(depth, nil), newProbeBatch(depth, rsp)
				for {
					n, err := in.recv(far)
					if stop.Load() {
						done <- nil
						return
					}
					if err != nil {
						done <- err
						return
					}
					k := 0
					for i := range n {
						if in.msgs[i].Len == uint32(len(req)) {
							k++
						}
					}
					if err := out.send(far, k); err != nil {
						done <- err
						return
					}
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			in := newProbeBatch(depth, nil)
			b.SetBytes(8192)
			b.ResetTimer()
			sent, got := min(depth, b.N), 0
			if err := send(sent); err != nil {
				b.Fatal(err)
			}
			for got < b.N {
				n, err := in.recv(near)
				if err != nil {
					b.Fatalf("after %d of %d replies: %v", got, b.N, err)
				}
				got += n
				if k := min(n, b.N-sent); k > 0 {
					if err := send(k); err != nil {
						b.Fatal(err)
					}
					sent += k
				}
			}
			b.StopTimer()
			stop.Store(true)
			unix.Write(near, req) // wake the echo
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// probeBatch is a sendmmsg(2) or recvmmsg(2) batch: every message sends
// frame, or receives into a buffer of its own.
type probeBatch struct {
	msgs []unix.Mmsghdr
	iov  []unix.Iovec
}

func newProbeBatch(n int, frame []byte) *probeBatch {
	p := &probeBatch{msgs: make([]unix.Mmsghdr, n), iov: make([]unix.Iovec, n)}
	for i := range p.msgs {
		buf := frame
		if buf == nil {
			buf = make([]byte, 9216)
		}
		p.iov[i].Base = &buf[0]
		p.iov[i].SetLen(len(buf))
		p.msgs[i].Hdr.Iov = &p.iov[i]
		p.msgs[i].Hdr.SetIovlen(1)
	}
	return p
}

// send sends the batch's first k messages.
func (p *probeBatch) send(fd, k int) error {
	for i := 0; i < k; {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&p.msgs[i])), uintptr(k-i), 0, 0, 0)
		switch e {
		case 0:
			i += int(r)
		case unix.EINTR: // nothing sent: try again
		default:
			return e
		}
	}
	return nil
}

// recv waits for at least one frame (up to the socket's timeout) and
// returns how many arrived.
func (p *probeBatch) recv(fd int) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&p.msgs[0])), uintptr(len(p.msgs)), unix.MSG_WAITFORONE, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
}

// txRing is a PACKET_TX_RING of TPACKET_V2 slots of 16 KiB on a socket of
// its own, bound to the interface for sending only.
type txRing struct {
	fd   int
	mem  []byte
	n    int
	head int
}

const txSlot = 16 << 10

func newTxRing(b *testing.B, h *netns.Host) *txRing {
	r := &txRing{n: 256}
	err := h.Do(func() (err error) {
		if r.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		b.Cleanup(func() { unix.Close(r.fd) })
		if err := unix.SetsockoptInt(r.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
			return err
		}
		req := unix.TpacketReq{Block_size: 64 << 10, Block_nr: uint32(r.n * txSlot / (64 << 10)), Frame_size: txSlot, Frame_nr: uint32(r.n)}
		if err := unix.SetsockoptTpacketReq(r.fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
			return err
		}
		return unix.Bind(r.fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: h.Index()})
	})
	if err != nil {
		b.Fatal(err)
	}
	r.mem = mapRing(b, r.fd, r.n*txSlot)
	return r
}

// send copies frame into the next k slots, after the tpacket2_hdr (32
// bytes), and hands them to the kernel with one send(2).
func (r *txRing) send(frame []byte, k int) error {
	for range k {
		s := r.mem[r.head*txSlot : (r.head+1)*txSlot]
		st := (*uint32)(unsafe.Pointer(&s[0]))
		for deadline := time.Now().Add(time.Second); atomic.LoadUint32(st) != unix.TP_STATUS_AVAILABLE; {
			if time.Now().After(deadline) {
				return unix.ETIMEDOUT
			}
			runtime.Gosched()
		}
		copy(s[32:], frame)
		binary.NativeEndian.PutUint32(s[4:], uint32(len(frame)))
		atomic.StoreUint32(st, unix.TP_STATUS_SEND_REQUEST)
		r.head = (r.head + 1) % r.n
	}
	for {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(r.fd), 0, 0, 0, 0, 0)
		if e != unix.EINTR {
			if e != 0 {
				return e
			}
			return nil
		}
	}
}
