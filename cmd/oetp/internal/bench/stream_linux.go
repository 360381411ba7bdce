//go:build linux

package bench

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/wire"
)

// The raw one-way stream: the medium's limit for a frame size, the figure
// the reliable transport's DMA goal is set against (≥ 0.6× the
// raw one-way AF_PACKET stream of 8 KiB frames). One locked OS thread
// sends the same frame over and over in sendmmsg(2) batches of streamBatch,
// another receives them in recvmmsg(2) batches of streamBatch on the far
// side; no protocol, no acknowledgement, no copy beyond the kernel's. The
// rate is what arrives: frames the receiver got, times the frame length,
// over the time from the first send to the last frame received. A veth
// pair does not push back on its sender, so frames beyond what the
// receiver keeps up with are dropped in its socket's queue; the note says
// what share arrived.

// streamBatch is the number of frames of one sendmmsg or recvmmsg call, as
// in the C measurement the issue quotes.
const streamBatch = 64

// streamFrameLen is the stream's frame length: the oETP frame ceiling.
const streamFrameLen = wire.MaxFrameLen

// mmsgBatch is n message headers, each with one iovec.
type mmsgBatch struct {
	msgs []unix.Mmsghdr
	iov  []unix.Iovec
}

// newRecvBatch returns a batch of streamBatch receive buffers of 9216
// bytes (a jumbo frame), and the buffers.
func newRecvBatch() (*mmsgBatch, [][]byte) {
	bufs := make([][]byte, streamBatch)
	for i := range bufs {
		bufs[i] = make([]byte, 9216)
	}
	return newMmsgBatch(bufs), bufs
}

// newSendBatch returns a batch of n messages that all send frame.
func newSendBatch(frame []byte, n int) *mmsgBatch {
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = frame
	}
	return newMmsgBatch(frames)
}

func newMmsgBatch(bufs [][]byte) *mmsgBatch {
	b := &mmsgBatch{msgs: make([]unix.Mmsghdr, len(bufs)), iov: make([]unix.Iovec, len(bufs))}
	for i := range b.msgs {
		b.iov[i].Base = &bufs[i][0]
		b.iov[i].SetLen(len(bufs[i]))
		b.msgs[i].Hdr.Iov = &b.iov[i]
		b.msgs[i].Hdr.SetIovlen(1)
	}
	return b
}

// sendmmsg sends the batch from message i on; it returns how many went.
func (b *mmsgBatch) sendmmsg(fd, i int) (int, error) { return b.sendmmsgN(fd, i, len(b.msgs)) }

// sendmmsgN sends messages i..k-1 of the batch; it returns how many went.
func (b *mmsgBatch) sendmmsgN(fd, i, k int) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[i])), uintptr(k-i), 0, 0, 0)
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			continue
		}
		return 0, os.NewSyscallError("sendmmsg", e)
	}
}

// recvmmsg waits for at least one frame (up to the socket's receive
// timeout: errRawTimeout) and returns how many arrived.
func (b *mmsgBatch) recvmmsg(fd int) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.msgs[0])), uintptr(len(b.msgs)), unix.MSG_WAITFORONE, 0, 0)
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, errRawTimeout
		}
		return 0, os.NewSyscallError("recvmmsg", e)
	}
}

// streamFrame is the stream's frame from src to dst: a DMA write request
// of streamFrameLen bytes, with the baseline's EtherType.
func streamFrame(dst, src wire.MAC) []byte {
	payload := make([]byte, wire.FragmentCeiling(streamFrameLen))
	for i := range payload {
		payload[i] = byte(i)
	}
	return retype(wire.AppendDMAWriteReq(nil, dst, src, 1, 0, payload))
}

// rawStream is the one-way stream from one raw socket to another.
type rawStream struct {
	from, to  *rawSock
	frame     []byte // the frame sent, streamFrameLen bytes
	stop      []byte // the frame that ends the receiver
	sent, got int64  // over all rounds
}

// step returns the stream's measurement, reported in scenario as
// "raw stream <from>→<to>": frames of op's direction (near to far for
// writes, far to near for reads).
func (v *vethRaw) stream(scenario, op string) *step {
	st := &rawStream{from: v.near, to: v.far, frame: streamFrame(v.farMAC, v.nearMAC), stop: stopFrame(v.farMAC, v.nearMAC)}
	dir := "near→far"
	if op == opDMARead {
		st.from, st.to = v.far, v.near
		st.frame, st.stop = streamFrame(v.nearMAC, v.farMAC), stopFrame(v.nearMAC, v.farMAC)
		dir = "far→near"
	}
	m := newMeter(false)
	m.noAllocs = true
	s := &step{m: m}
	s.res = Result{Scenario: scenario, Name: fmt.Sprintf("raw stream %s ×%d", dir, streamBatch),
		Frames: fmt.Sprintf("%d→", len(st.frame)), Baseline: true}
	s.round = func(d time.Duration, _ int64) error {
		return st.round(m, d)
	}
	s.after = func() error {
		if st.sent > 0 {
			s.res.Note = fmt.Sprintf("one-way stream of %d-byte frames in sendmmsg/recvmmsg batches of %d, %s: %.1f%% of the %d frames sent arrived; MB/s counts whole frames",
				len(st.frame), streamBatch, dir, 100*float64(st.got)/float64(st.sent), st.sent)
		}
		return nil
	}
	return s
}

// round streams for about d and adds what arrived to m.
func (st *rawStream) round(m *meter, d time.Duration) error {
	var got atomic.Int64
	var last atomic.Int64 // ns after start of the last frame received
	var halt atomic.Bool
	var begin atomic.Int64 // ns after t0 of the first send
	ready := make(chan error, 1)
	recvDone := make(chan error, 1)
	st.to.drain()
	t0 := time.Now()
	go func() {
		if err := lockThread(-1); err != nil {
			ready <- err
			return
		}
		b, bufs := newRecvBatch()
		ready <- nil
		for {
			n, err := b.recvmmsg(st.to.fd)
			if err == errRawTimeout {
				if halt.Load() {
					recvDone <- nil
					return
				}
				continue
			}
			if err != nil {
				recvDone <- err
				return
			}
			k := 0
			for i := range n {
				if int(b.msgs[i].Len) == len(st.frame) {
					k++
				} else if int(b.msgs[i].Len) >= wire.ParamOffset && bufs[i][15] == stopCmd {
					got.Add(int64(k))
					recvDone <- nil
					return
				}
			}
			if k > 0 {
				got.Add(int64(k))
				last.Store(int64(time.Since(t0)))
			}
		}
	}()
	if err := <-ready; err != nil {
		return err
	}
	sendDone := make(chan error, 1)
	var sent int64
	go func() {
		if err := lockThread(-1); err != nil {
			sendDone <- err
			return
		}
		b := newSendBatch(st.frame, streamBatch)
		start := time.Now()
		begin.Store(int64(start.Sub(t0)))
		deadline := start.Add(d)
		for time.Now().Before(deadline) {
			for i := 0; i < streamBatch; {
				n, err := b.sendmmsg(st.from.fd, i)
				if err != nil {
					sendDone <- err
					return
				}
				i += n
				sent += int64(n)
			}
		}
		sendDone <- nil
	}()
	err := <-sendDone
	// The receiver's queue may be full: send the stop frame a few times,
	// after the queue had time to drain; the flag ends the receiver at its
	// next read timeout should every copy be dropped.
	halt.Store(true)
	for range 3 {
		time.Sleep(time.Millisecond)
		_ = st.from.write(st.stop)
	}
	if rerr := <-recvDone; err == nil {
		err = rerr
	}
	st.to.drain() // the other copies of the stop frame

	if err != nil {
		return fmt.Errorf("raw stream: %w", err)
	}
	n := got.Load()
	st.sent += sent
	st.got += n
	m.ops += n
	m.frames += n
	m.bytes += n * int64(len(st.frame))
	m.elapsed += time.Duration(max(last.Load()-begin.Load(), 0))
	return nil
}

// drain reads and discards whatever waits in s's receive queue.
func (s *rawSock) drain() {
	buf := make([]byte, 9216)
	for {
		if _, _, err := unix.Recvfrom(s.fd, buf, unix.MSG_DONTWAIT); err != nil && err != unix.EINTR {
			return
		}
	}
}
