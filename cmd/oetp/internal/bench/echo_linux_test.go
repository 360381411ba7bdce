//go:build linux

package bench

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// echoPair returns the hosts of a new veth pair and a raw socket on the
// near one, closed by the test's cleanup: an echo runs on the far one.
func echoPair(t *testing.T) (near, far *netns.Host, s *rawSock) {
	t.Helper()
	n := netns.NewPair(t)
	near, far = n.Host(0), n.Host(1)
	s, err := openRawOn(near)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return near, far, s
}

// startEchoProc runs echo (an echo process's body) on h with a pipe for its
// standard input and waits for its ready line: it returns the pipe's
// writer (closed by the test's cleanup), what the echo writes, and the
// echo's result.
func startEchoProc(t *testing.T, h *netns.Host, echo func(stdin io.Reader, out io.Writer) error) (*io.PipeWriter, *syncBuf, chan error) {
	t.Helper()
	stdin, stdinW := io.Pipe()
	t.Cleanup(func() { stdinW.Close() })
	out := &syncBuf{}
	lines := make(chan struct{}, 1)
	out.onWrite = func() {
		select {
		case lines <- struct{}{}:
		default:
		}
	}
	done := make(chan error, 1)
	go func() { done <- h.Do(func() error { return echo(stdin, out) }) }()
	timeout := time.After(10 * time.Second)
	for out.String() != "ready\n" {
		select {
		case <-lines:
		case err := <-done:
			t.Fatalf("the echo ended before its ready line: %v; it wrote %q", err, out.String())
		case <-timeout:
			t.Fatalf("no ready line: %q", out.String())
		}
	}
	return stdinW, out, done
}

// stopEcho sends the stop frame from near's socket s to the echo on far
// and waits for the echo (named name) to return without error.
func stopEcho(t *testing.T, s *rawSock, near, far *netns.Host, done chan error, name string) {
	t.Helper()
	if err := s.write(stopFrame(far.MAC(), near.MAC())); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return at the stop frame", name)
	}
}

// TestRawEcho runs the raw echo of the proc scenario's echo process in this
// process on the far host of a veth pair and checks that it answers each
// request with exactly the baseline's reply, addressed to the request's
// source, and returns at the stop frame.
func TestRawEcho(t *testing.T) {
	near, far, s := echoPair(t)
	_, _, done := startEchoProc(t, far, func(stdin io.Reader, out io.Writer) error { return RawEcho(far.IfName(), stdin, out) })
	buf := make([]byte, 9216)
	for _, op := range engineOps {
		req, rsp := rawFrames(op, near.MAC(), far.MAC())
		req, rsp = retype(req), retype(rsp)
		if err := s.write(req); err != nil {
			t.Fatal(err)
		}
		m, err := s.read(buf)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if !bytes.Equal(buf[:m], rsp) {
			t.Errorf("%s: the echo answered % x...(%d bytes); want % x...(%d bytes)", op, buf[:min(m, 24)], m, rsp[:24], len(rsp))
		}
	}
	// A request's Cmd without a reply (the RMEM write) gets none.
	w := retype(wire.AppendRMEMWriteReq(nil, far.MAC(), near.MAC(), 7, 0, 1, 0xffffffff))
	if err := s.write(w); err != nil {
		t.Fatal(err)
	}
	stopEcho(t, s, near, far, done, "RawEcho")
	s.drain()
	if m, err := s.read(buf); err == nil {
		t.Errorf("a frame after the stop: % x", buf[:min(m, 24)])
	} else if !strings.Contains(err.Error(), "no reply") {
		t.Errorf("read after the stop: %v; want the timeout", err)
	}
}

// TestRawEchoStdinEnd checks that the echo process ends once its parent is
// gone (its standard input reaches its end), even with no stop frame.
func TestRawEchoStdinEnd(t *testing.T) {
	n := netns.NewPair(t)
	far := n.Host(1)
	done := make(chan error, 1)
	go func() {
		done <- far.Do(func() error { return RawEcho(far.IfName(), strings.NewReader(""), io.Discard) })
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RawEcho: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RawEcho did not return after the end of its stdin")
	}
}

// TestWindowEcho runs the windowed exchange's echo in this process on the
// far host of a veth pair, sends it a window of requests of both directions
// in one sendmmsg, and checks that it answers each with exactly its reply
// (the 20-byte DMA_WRITE_RSP, the 8192-byte DMA_READ_RSP), addressed to the
// request's source, ignores what it has no reply for, and returns at the
// stop frame.
func TestWindowEcho(t *testing.T) {
	near, far, s := echoPair(t)
	_, _, done := startEchoProc(t, far, func(stdin io.Reader, out io.Writer) error { return WindowEcho(far.IfName(), "", stdin, out) })
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

// TestWindowFloorEcho runs the windowed floor's echo with a region of four
// fragments: it copies each write request's payload into the region at the
// request's address once its CRC32C holds, answers a read request with the
// region's bytes at its address and their frame's CRC32C, answers neither
// a write whose CRC32C fails nor a request outside the region, and then
// returns an error at the stop frame that says so.
func TestWindowFloorEcho(t *testing.T) {
	near, far, s := echoPair(t)
	size := 4 * windowFloorFrag
	_, _, done := startEchoProc(t, far, func(stdin io.Reader, out io.Writer) error {
		return WindowEcho(far.IfName(), strconv.Itoa(size), stdin, out)
	})
	wreq, wrsp := windowFrames(opDMAWrite, near.MAC(), far.MAC())
	rreq, _ := windowFrames(opDMARead, near.MAC(), far.MAC())
	at := func(f []byte, off int) []byte {
		f = slices.Clone(f)
		binary.LittleEndian.PutUint32(f[floorAddrOff:], remoteBase+uint32(off))
		binary.LittleEndian.PutUint32(f[floorLenOff:], uint32(windowFloorFrag))
		return f
	}
	payload := make([]byte, windowFloorFrag)
	for i := range payload {
		payload[i] = byte(i*13 + 5)
	}
	w := at(wreq, windowFloorFrag)
	copy(w[floorWriteHdr:], payload)
	sealFloor(w)
	bad := at(wreq, 2*windowFloorFrag)
	copy(bad[floorWriteHdr:], payload)
	sealFloor(bad)
	bad[floorWriteHdr+100] ^= 1 // after sealing: the CRC32C fails
	outside := at(rreq, size)   // one fragment past the region
	buf := make([]byte, 9216)
	exchange := func(req []byte) []byte {
		t.Helper()
		if err := s.write(req); err != nil {
			t.Fatal(err)
		}
		n, err := s.read(buf)
		if err != nil {
			t.Fatalf("no reply to the request at %#x: %v", binary.LittleEndian.Uint32(req[floorAddrOff:]), err)
		}
		return buf[:n]
	}
	if got := exchange(w); !bytes.Equal(got, wrsp) {
		t.Fatalf("write reply % x; want % x", got, wrsp)
	}
	for _, c := range []struct {
		off  int
		want func(i int) byte
	}{
		{windowFloorFrag, func(i int) byte { return payload[i] }},
		{2 * windowFloorFrag, func(i int) byte { return floorFill(2*windowFloorFrag + i) }}, // the failed write left it
		{0, floorFill},
	} {
		r := exchange(at(rreq, c.off))
		if m := near.MAC(); len(r) != windowFrameLen || !floorSealed(r) || !bytes.Equal(r[0:6], m[:]) {
			t.Fatalf("read reply at %d: %d bytes, CRC32C held %v, to % x", c.off, len(r), floorSealed(r), r[0:6])
		}
		for i := range windowFloorFrag {
			if r[floorReadHdr+i] != c.want(i) {
				t.Fatalf("read reply at %d: byte %d is %#x, want %#x", c.off, i, r[floorReadHdr+i], c.want(i))
			}
		}
	}
	for _, req := range [][]byte{bad, outside} {
		if err := s.write(req); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.write(stopFrame(far.MAC(), near.MAC())); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "2 requests failed their CRC32C or did not fit") {
			t.Fatalf("WindowEcho at the stop frame: %v; want the two refused requests reported", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WindowEcho did not return at the stop frame")
	}
	if n, err := s.read(buf); err == nil {
		t.Errorf("a reply to a refused request: %d bytes", n)
	}
}

// TestPipeFloor checks the near side's work in the windowed floor without
// a network: each request asks for the block's next fragment, a write
// carries it with its CRC32C, the offsets wrap before a fragment that
// would not fit, a read reply with a failing CRC32C is refused, and one
// that holds has its payload copied to the block's next fragment.
func TestPipeFloor(t *testing.T) {
	block := make([]byte, 3*windowFloorFrag+100) // the last 100 bytes are never used
	for i := range block {
		block[i] = byte(i * 7)
	}
	wreq, _ := windowFrames(opDMAWrite, wire.MAC{2}, wire.MAC{4})
	out := newSendBatch(wreq, 4)
	f := newPipeFloor(&rawPipe{req: wreq, external: true, floor: block}, out)
	f.fill(0, 4)
	for i, fr := range f.frames {
		off := i % 3 * windowFloorFrag
		if a := binary.LittleEndian.Uint32(fr[floorAddrOff:]); a != remoteBase+uint32(off) {
			t.Errorf("request %d asks for %#x; want %#x", i, a, remoteBase+uint32(off))
		}
		if !bytes.Equal(fr[floorWriteHdr:floorWriteHdr+windowFloorFrag], block[off:off+windowFloorFrag]) || !floorSealed(fr) {
			t.Errorf("request %d: payload or CRC32C wrong", i)
		}
		if out.iov[i].Base != &fr[0] {
			t.Errorf("message %d does not send its own frame", i)
		}
	}
	rreq, rrsp := windowFrames(opDMARead, wire.MAC{2}, wire.MAC{4})
	dst := make([]byte, 2*windowFloorFrag)
	f = newPipeFloor(&rawPipe{req: rreq, external: true, floor: dst}, newSendBatch(rreq, 2))
	r := slices.Clone(rrsp)
	for i := range windowFloorFrag {
		r[floorReadHdr+i] = byte(i + 1)
	}
	if f.take(r) {
		t.Fatal("a reply without its CRC32C was taken")
	}
	sealFloor(r)
	if !f.take(r) || !f.take(r) {
		t.Fatal("a sealed reply was refused")
	}
	for i, b := range dst {
		if b != byte(i%windowFloorFrag+1) {
			t.Fatalf("block byte %d is %#x; want %#x", i, b, byte(i%windowFloorFrag+1))
		}
	}
}
