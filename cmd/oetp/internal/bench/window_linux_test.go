//go:build linux

package bench

import (
	"bytes"
	"io"
	"testing"

	"github.com/openenoc/oetp/wire"
)

// TestWindowEcho runs the windowed exchange's echo in this process on the
// far host of a veth pair, sends it a window of requests of both directions
// in one sendmmsg, and checks that it answers each with exactly its reply
// (the 20-byte DMA_WRITE_RSP, the 8192-byte DMA_READ_RSP), addressed to the
// request's source, ignores what it has no reply for, and returns at the
// stop frame.
func TestWindowEcho(t *testing.T) {
	near, far, s := echoPair(t)
	_, _, done := startEchoProc(t, far, func(stdin io.Reader, out io.Writer) error { return WindowEcho(far.IfName(), stdin, out) })
	wreq, wrsp := windowFrames(opDMAWrite, near.MAC(), far.MAC())
	rreq, rrsp := windowFrames(opDMARead, near.MAC(), far.MAC())
	if len(wreq) != 8192 || len(wrsp) != 20 || len(rreq) != 28 || len(rrsp) != 8192 {
		t.Fatalf("frames %d↔%d and %d↔%d; want 8192↔20 and 28↔8192", len(wreq), len(wrsp), len(rreq), len(rrsp))
	}
	const writes, reads = windowDepth - 4, 4
	var frames [][]byte
	for range writes {
		frames = append(frames, wreq)
	}
	for range reads {
		frames = append(frames, rreq)
	}
	// No reply for an RMEM write: ignored.
	frames = append(frames, retype(wire.AppendRMEMWriteReq(nil, far.MAC(), near.MAC(), 7, 0, 1, 0xffffffff)))
	b := newMmsgBatch(frames)
	for i := 0; i < len(frames); {
		m, err := b.sendmmsg(s.fd, i)
		if err != nil {
			t.Fatal(err)
		}
		i += m
	}
	in, bufs := newRecvBatch()
	var gotW, gotR int
	for gotW+gotR < writes+reads {
		m, err := in.recvmmsg(s.fd)
		if err != nil {
			t.Fatalf("after %d write and %d read replies: %v", gotW, gotR, err)
		}
		for i := range m {
			f := bufs[i][:in.msgs[i].Len]
			switch {
			case bytes.Equal(f, wrsp):
				gotW++
			case bytes.Equal(f, rrsp):
				gotR++
			default:
				t.Fatalf("unexpected reply % x...(%d bytes)", f[:min(len(f), 24)], len(f))
			}
		}
	}
	if gotW != writes || gotR != reads {
		t.Errorf("%d write and %d read replies; want %d and %d", gotW, gotR, writes, reads)
	}
	stopEcho(t, s, near, far, done, "WindowEcho")
	if m, err := s.read(make([]byte, 9216)); err == nil {
		t.Errorf("a frame after the last reply (the RMEM write answered?): %d bytes", m)
	}
}
