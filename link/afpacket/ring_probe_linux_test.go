//go:build linux

package afpacket_test

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/netns"
)

// BenchmarkRingProbe measures the receive directions below the
// link, as raw sockets with no protocol: a ping-pong of 8192-byte requests
// and 20-byte replies over a veth pair, the replies received with read(2)
// (what the link does today, with recvmmsg), from a PACKET_MMAP TPACKET_V2
// ring (a status word per frame, poll(2) to sleep) or from a TPACKET_V3
// ring (blocks handed over when full or when the block timeout, 1 ms at the
// least, retires them). Threads locked, blocking waits, no busy polling:
//
//	sudo go test -run '^$' -bench RingProbe -benchtime 2000x ./link/afpacket/
func BenchmarkRingProbe(b *testing.B) {
	for _, mode := range []string{"read", "v2-ring", "v3-ring-1ms"} {
		b.Run(mode, func(b *testing.B) {
			tn := netns.NewPair(b)
			near, far := probeSock(b, tn.Host(0)), probeSock(b, tn.Host(1))
			var rx func() error
			switch mode {
			case "read":
				buf := make([]byte, 9216)
				rx = func() error { _, err := unix.Read(near, buf); return err }
			case "v2-ring":
				rx = newV2Ring(b, near).next
			case "v3-ring-1ms":
				rx = newV3Ring(b, near, 1).next
			}
			req := probeFrame(tn.Host(1).MAC(), tn.Host(0).MAC(), 8192)
			rsp := probeFrame(tn.Host(0).MAC(), tn.Host(1).MAC(), 20)
			var stop atomic.Bool
			done := make(chan error, 1)
			go func() {
				runtime.LockOSThread()
				buf := make([]byte, 9216)
				for {
					n, err := unix.Read(far, buf)
					if stop.Load() {
						done <- nil
						return
					}
					if err != nil {
						done <- err
						return
					}
					if n == len(req) {
						if _, err := unix.Write(far, rsp); err != nil {
							done <- err
							return
						}
					}
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			rts := make([]time.Duration, 0, b.N)
			b.SetBytes(8160)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := unix.Write(near, req); err != nil {
					b.Fatal(err)
				}
				if err := rx(); err != nil {
					b.Fatal(err)
				}
				rts = append(rts, time.Since(t0))
			}
			b.StopTimer()
			stop.Store(true)
			unix.Write(near, req) // wake the echo
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			slices.Sort(rts)
			b.ReportMetric(float64(rts[len(rts)/2].Nanoseconds()), "p50-ns")
		})
	}
}

// probeType is the EtherType of the probe's frames.
const probeType = 0x88B7

func probeSock(b *testing.B, h *netns.Host) int {
	var fd int
	err := h.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(probeType)))
		if err != nil {
			return err
		}
		// A timeout so that a lost frame fails the benchmark instead of
		// hanging it.
		tv := unix.Timeval{Sec: 1}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(probeType), Ifindex: h.Index()})
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	return fd
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func probeFrame(dst, src [6]byte, n int) []byte {
	f := make([]byte, n)
	copy(f, dst[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], probeType)
	return f
}

// ring is a mapped PACKET_MMAP receive ring.
type ring struct {
	fd    int
	mem   []byte
	size  int // frame (v2) or block (v3) size
	count int
	i     int
}

func mapRing(b *testing.B, fd, size int) []byte {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Munmap(mem) })
	return mem
}

func (r *ring) status(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// wait sleeps in poll(2) until st shows TP_STATUS_USER.
func (r *ring) wait(st *uint32) error {
	for atomic.LoadUint32(st)&unix.TP_STATUS_USER == 0 {
		fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 1000); err != nil && err != unix.EINTR {
			return err
		} else if n == 0 && atomic.LoadUint32(st)&unix.TP_STATUS_USER == 0 {
			return fmt.Errorf("no frame in the ring within 1s")
		}
	}
	return nil
}

func newV2Ring(b *testing.B, fd int) *ring {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		b.Fatal(err)
	}
	req := unix.TpacketReq{Block_size: 1 << 16, Block_nr: 16, Frame_size: 1 << 14, Frame_nr: 64}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		b.Fatal(err)
	}
	return &ring{fd: fd, mem: mapRing(b, fd, 1<<20), size: 1 << 14, count: 64}
}

// next waits for the next frame of a TPACKET_V2 ring and gives it back.
func (r *ring) next() error {
	st := r.status(r.i * r.size)
	if err := r.wait(st); err != nil {
		return err
	}
	atomic.StoreUint32(st, unix.TP_STATUS_KERNEL)
	r.i = (r.i + 1) % r.count
	return nil
}

// v3ring is a TPACKET_V3 ring: frames come in blocks.
type v3ring struct {
	ring
	left int // frames of the current block not yet taken
}

func newV3Ring(b *testing.B, fd int, tovMS uint32) *v3ring {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		b.Fatal(err)
	}
	req := unix.TpacketReq3{Block_size: 1 << 18, Block_nr: 4, Frame_size: 1 << 14, Frame_nr: 64, Retire_blk_tov: tovMS}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		b.Fatal(err)
	}
	return &v3ring{ring: ring{fd: fd, mem: mapRing(b, fd, 1<<20), size: 1 << 18, count: 4}}
}

// next takes the next frame of the ring, waiting for a block to be handed
// over when the current one is used up.
func (r *v3ring) next() error {
	// struct tpacket_block_desc: version, offset_to_priv, then
	// tpacket_hdr_v1 whose first words are block_status and num_pkts.
	base := r.i * r.size
	st := r.status(base + 8)
	if r.left == 0 {
		if err := r.wait(st); err != nil {
			return err
		}
		r.left = int(*r.status(base + 12))
	}
	r.left--
	if r.left == 0 {
		atomic.StoreUint32(st, unix.TP_STATUS_KERNEL)
		r.i = (r.i + 1) % r.count
	}
	return nil
}
