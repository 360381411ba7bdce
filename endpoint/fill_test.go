package endpoint_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// fillSpy counts the writes a port gets, by path, and can run a hook when
// WriteFill is called, before the port fills the frame.
type fillSpy struct {
	*mem.Port
	writes, fills atomic.Int64
	onFill        func()
}

func (s *fillSpy) Write(f []byte) error { s.writes.Add(1); return s.Port.Write(f) }

func (s *fillSpy) WriteBatch(fs [][]byte) (int, error) {
	for i, f := range fs {
		if err := s.Write(f); err != nil {
			return i, err
		}
	}
	return len(fs), nil
}

func (s *fillSpy) WriteFill(f []byte, at, m int, fill func([]byte) bool) (bool, error) {
	s.fills.Add(1)
	if s.onFill != nil {
		s.onFill()
	}
	return s.Port.WriteFill(f, at, m, fill)
}

// answerWrites plays the DMA-write peer on tap p: it answers each of n
// fragments with a DMA_WRITE_RSP and returns the frames received.
func answerWrites(t *testing.T, p *tap, n int) [][]byte {
	t.Helper()
	var got [][]byte
	for range n {
		f := p.next(t)
		got = append(got, f)
		p.send(t, wire.AppendDMAWriteRsp(nil, macA, macP, wire.Frame(f).RequestID()))
	}
	return got
}

// wantFragments returns the DMA_WRITE_REQ frames of src at addr in
// fragments of mfs bytes, Request IDs from rid.
func wantFragments(src []byte, addr, rid uint32, mfs int) [][]byte {
	var want [][]byte
	for off := 0; off < len(src); off += mfs {
		end := min(off+mfs, len(src))
		want = append(want, wire.AppendDMAWriteReq(nil, macP, macA, rid, addr+uint32(off), src[off:end]))
		rid++
	}
	return want
}

// A DMA write over a link.FillWriter sends each fragment through WriteFill
// (its data copied from the source straight into the receiver's queue
// slot) with exactly the bytes of the codec's encoding, Request IDs in
// order, and the counts of Write.
func TestDMAWriteFilledInPlace(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	spy := &fillSpy{Port: attach(t, sw, macA)}
	a := newEPOn(t, spy, newRAM(t), endpoint.Config{MaxFragment: 12})
	setPeer(t, a, 0, win(macP, endpoint.ModeDMARead))
	endpoint.SetRequestID(a, 0x77)
	src := pattern(30, 5) // 12 + 12 + 6: the last fragment has word padding
	res := dmaWrite(a, 0, 0x2002, src)
	got := answerWrites(t, p, 3)
	r := await(t, res)
	if r.err != nil || r.tr.Bytes != 30 || r.tr.Fragments != 3 {
		t.Fatalf("DMAWrite = %+v, %v", r.tr, r.err)
	}
	want := wantFragments(src, 0x2002, 0x77, 12)
	for i := range want {
		eqBytes(t, "fragment", want[i], got[i])
	}
	if f, w := spy.fills.Load(), spy.writes.Load(); f != 3 || w != 0 {
		t.Errorf("%d WriteFill and %d Write calls, want 3 and 0", f, w)
	}
	st := a.Stats()
	var nb uint64
	for _, f := range want {
		nb += uint64(len(f))
	}
	if st.TxFrames != 3 || st.TxBytes != nb || st.TxErrors != 0 {
		t.Errorf("TxFrames %d TxBytes %d TxErrors %d, want 3, %d, 0", st.TxFrames, st.TxBytes, st.TxErrors, nb)
	}
	if ps := spy.Port.Stats(); ps.TxFrames != 3 || ps.TxBytes != nb {
		t.Errorf("port counted %d frames, %d bytes; want 3, %d", ps.TxFrames, ps.TxBytes, nb)
	}
	// RMEM requests of the same request entry go through Write.
	setPeer(t, a, 0, win(macP, endpoint.ModeRMEM))
	rr := rmemRead(a, 0, 0x1000)
	f := p.next(t)
	p.send(t, wire.AppendRMEMReadRsp(nil, macA, macP, wire.Frame(f).RequestID(), 9))
	if r := await(t, rr); r.err != nil || r.data != 9 || spy.writes.Load() != 1 {
		t.Errorf("RMEM read after the block: %v, data %d, %d writes", r.err, r.data, spy.writes.Load())
	}
}

// A try that ends before the link fills its data (here Reset, called by
// the link as the frame is written) is cancelled: nothing is sent, nothing
// counted, and the block fails with ErrReset.
func TestDMAWriteFillCancelled(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	spy := &fillSpy{Port: attach(t, sw, macA)}
	a := newEPOn(t, spy, newRAM(t), endpoint.Config{})
	setPeer(t, a, 0, win(macP, endpoint.ModeDMARead))
	spy.onFill = func() { spy.onFill = nil; a.Reset() }
	r := await(t, dmaWrite(a, 0, 0x2000, pattern(100, 1)))
	wantFailed(t, "DMAWrite", r, endpoint.ErrReset, result{})
	p.none(t, 20*time.Millisecond)
	if st := a.Stats(); st.TxFrames != 0 || st.TxBytes != 0 || st.TxErrors != 0 || spy.fills.Load() != 1 {
		t.Errorf("TxFrames %d TxBytes %d TxErrors %d after %d fills; want 0, 0, 0 after 1", st.TxFrames, st.TxBytes, st.TxErrors, spy.fills.Load())
	}
	// The next block works.
	res := dmaWrite(a, 0, 0x2000, pattern(100, 2))
	answerWrites(t, p, 1)
	if r := await(t, res); r.err != nil {
		t.Fatal(r.err)
	}
}

// A capture (pcap.Tee, a link.Wrap with a Write hook) of a FillWriter keeps
// the capability, and records exactly the frames the peer receives.
func TestDMAWriteFillCaptured(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, 65535)
	if err != nil {
		t.Fatal(err)
	}
	tee := pcap.Tee(attach(t, sw, macA), w)
	if _, ok := tee.(link.FillWriter); !ok {
		t.Fatal("pcap.Tee of a mem.Port is not a link.FillWriter")
	}
	a := newEPOn(t, tee, newRAM(t), endpoint.Config{MaxFragment: 16})
	setPeer(t, a, 0, win(macP, endpoint.ModeDMARead))
	res := dmaWrite(a, 0, 0x3000, pattern(40, 3))
	got := answerWrites(t, p, 3)
	if r := await(t, res); r.err != nil {
		t.Fatal(r.err)
	}
	a.Close()
	r, err := pcap.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for {
		_, f, err := r.Next()
		if err != nil {
			break
		}
		if wire.Frame(f).Src() == macA {
			sent = append(sent, bytes.Clone(f))
		}
	}
	if len(sent) != 3 {
		t.Fatalf("capture holds %d frames from A, want 3", len(sent))
	}
	for i := range got {
		eqBytes(t, "captured fragment", got[i], sent[i])
	}
	eqBytes(t, "fragment", wantFragments(pattern(40, 3), 0x3000, 0, 16)[2], got[2])
}

// A responder whose memory answers at once reads a DMA read's data
// straight into the link's copy of the DMA_READ_RSP (WriteFill), with the
// codec's exact bytes, word padding included; a read error sends the
// ERROR_RSP a read of the memory first would have sent, and records and
// counts the same.
func TestDMAReadResponseFilled(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	spy := &fillSpy{Port: attach(t, sw, macB)}
	m, ram := newSLVERRMap(t, 0x1000, 0x1000, 0x2000, 0x1000)
	if !memory.IsImmediate(m) {
		t.Fatal("the test's memory is not memory.Immediate")
	}
	ram.WriteAt(pattern(0x1000, 9), 0x1000)
	b := newEPOn(t, spy, m, endpoint.Config{})
	setPeer(t, b, 0, endpoint.Peer{MAC: macP, Mode: endpoint.ModeDMARead, WindowBase: 0x1000, WindowSize: 0x3000})
	dr := func(rid, addr, n uint32) []byte { return frame(macB, macP, 0x30, le(rid), le(addr), le(n)) }

	p.send(t, dr(1, 0x1003, 7))
	eqBytes(t, "DMA_READ_RSP", wire.AppendDMAReadRsp(nil, macP, macB, 1, pattern(0x1000, 9)[3:10]), p.next(t))
	if f, w := spy.fills.Load(), spy.writes.Load(); f != 1 || w != 0 {
		t.Errorf("%d WriteFill and %d Write calls for a DMA read, want 1 and 0", f, w)
	}

	// SLVERR (cause 4), and DECERR (5) in the window past the mapped
	// memory.
	setPeer(t, b, 0, endpoint.Peer{MAC: macP, Mode: endpoint.ModeDMARead, WindowBase: 0x1000, WindowSize: 0x4000})
	for i, c := range []struct {
		addr  uint32
		cause uint32
	}{{0x2000, wire.CauseAXIRdSlverr}, {0x3000, wire.CauseAXIRdDecerr}} {
		rid := uint32(2 + i)
		p.send(t, dr(rid, c.addr, 8))
		eqBytes(t, "ERROR_RSP", wire.AppendErrorRsp(nil, macP, macB, rid, c.cause), p.next(t))
		if got, want := b.PeerStatus(0), failed(wire.Code(c.cause)); got != want {
			t.Errorf("cause %d: status %+v, want %+v", c.cause, got, want)
		}
	}
	st := b.Stats()
	if st.ServedDMARead != 1 || st.ResponderFailures != 2 || st.TxFrames != 3 || st.TxErrors != 0 {
		t.Errorf("served %d, failed %d, TxFrames %d, TxErrors %d; want 1, 2, 3, 0", st.ServedDMARead, st.ResponderFailures, st.TxFrames, st.TxErrors)
	}
	if f, w := spy.fills.Load(), spy.writes.Load(); f != 3 || w != 2 {
		t.Errorf("%d WriteFill and %d Write calls, want 3 (one each read) and 2 (the ERROR_RSPs)", f, w)
	}
}
