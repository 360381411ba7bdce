package endpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// TestErrorRspMapping: the full 32-bit Error Code of ERROR_RSP maps causes
// 1..7 to REMOTE codes 9..15 and every other value (0, 8, 0x100,
// 0xFFFFFFFF) to LOCAL_INVALID; the code is returned, recorded in the peer
// status and reported by RMEM_ERROR; a failed read returns all ones. DMA
// fragments map the same way and report PEER_DMA_COMPLETE.
func TestErrorRspMapping(t *testing.T) {
	a, p, sw := newScripted(t, endpoint.ModeRMEM, endpoint.Config{Events: endpoint.EventEnable{RMEMError: true, PeerDMAComplete: true}})
	cases := []struct {
		cause uint32
		want  wire.Code
	}{
		{1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15},
		{0, 1}, {8, 1}, {9, 1}, {0x100, 1}, {0x107, 1}, {0x80000001, 1}, {0xFFFFFFFF, 1},
	}
	var rid uint32
	for _, c := range cases {
		res := rmemRead(a, 0, 0x1000)
		eqBytes(t, "request", frame(macP, macA, 0x10, le(rid), le(0x1000)), p.next(t))
		p.send(t, frame(macA, macP, 0xFF, le(rid), le(c.cause)))
		rid++
		r := await(t, res)
		name := fmt.Sprintf("cause %#x", c.cause)
		wantCode(t, name, r.err, c.want)
		if r.data != 0xFFFFFFFF {
			t.Fatalf("%s: data %#x, want 0xFFFFFFFF", name, r.data)
		}
		wantStatus(t, name, a, 0, failed(c.want))
		ev, err := a.NextEvent(bg())
		if err != nil {
			t.Fatal(err)
		}
		diff(t, name+" event", endpoint.Event{Source: endpoint.RMEMError, Peer: 0, Code: c.want}, ev)
	}

	q := newTap(t, sw, macQ, false)
	setPeer(t, a, 1, win(macQ, endpoint.ModeDMARead))
	for _, c := range cases {
		res := dmaWrite(a, 1, 0x2000, []byte{1, 2, 3})
		eqBytes(t, "request", frame(macQ, macA, 0x40, le(rid), le(0x2000), le(3), []byte{1, 2, 3, 0}, eod), q.next(t))
		q.send(t, frame(macA, macQ, 0xFF, le(rid), le(c.cause)))
		rid++
		r := await(t, res)
		name := fmt.Sprintf("DMA cause %#x", c.cause)
		wantCode(t, name, r.err, c.want)
		if r.tr != (endpoint.Transfer{}) {
			t.Fatalf("%s: transfer %+v, want none", name, r.tr)
		}
		wantStatus(t, name, a, 1, failed(c.want))
		ev, _ := a.NextEvent(bg())
		diff(t, name+" event", endpoint.Event{Source: endpoint.PeerDMAComplete, Peer: 1, Code: c.want}, ev)
	}
	if s := a.Stats(); s.Timeouts != 0 || s.MalformedResponses != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestOpErrorText pins the error format and wrapping.
func TestOpErrorText(t *testing.T) {
	err := error(&endpoint.OpError{Op: "DMA write", Peer: 0, Code: wire.CodeRemoteAXIWrSlverr})
	if got, want := err.Error(), "oetp: DMA write to peer 0: REMOTE_AXI_WR_SLVERR (14)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	err = &endpoint.OpError{Op: "RMEM read", Peer: 2, Code: wire.CodeTimeout, Err: endpoint.ErrTimeout}
	if got, want := err.Error(), "oetp: RMEM read from peer 2: TIMEOUT (8): no response before the timeout"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, endpoint.ErrTimeout) {
		t.Fatal("OpError does not unwrap to its Err")
	}
	wrapped := fmt.Errorf("outer: %w", err)
	if endpoint.CodeOf(wrapped) != wire.CodeTimeout || endpoint.CodeOf(nil) != wire.CodeNone || endpoint.CodeOf(errors.New("x")) != wire.CodeLocalInvalid {
		t.Fatal("CodeOf")
	}
}

// TestMalformedResponses: a response that matches source, Request ID and
// command but has the wrong length or EndOfData ends the wait at once (the
// timeout is 0, so nothing else could end it): with LOCAL_AXIS (2) for an
// RMEM_READ_RSP or an ERROR_RSP, a local framing check, and with
// REMOTE_AXIS (10) for an incomplete DMA_READ_RSP; a bad DMA_READ_RSP never
// reaches local memory. Correct Ethernet padding and an EndOfData pattern
// inside the data are accepted.
func TestMalformedResponses(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{MaxFrame: 1000})
	var rid uint32
	pad := func(f []byte, n int) []byte { return append(f, make([]byte, n-len(f))...) }
	rmem := []struct {
		name string
		rsp  func(rid uint32) []byte
		want wire.Code
		data uint32
	}{
		{"RMEM_READ_RSP truncated", func(r uint32) []byte { return frame(macA, macP, 0x11, le(r), le(7))[:23] }, 2, 0xFFFFFFFF},
		{"RMEM_READ_RSP one byte long", func(r uint32) []byte { return append(frame(macA, macP, 0x11, le(r), le(7)), 0) }, 2, 0xFFFFFFFF},
		{"RMEM_READ_RSP padded to 61", func(r uint32) []byte { return pad(frame(macA, macP, 0x11, le(r), le(7)), 61) }, 2, 0xFFFFFFFF},
		{"ERROR_RSP truncated", func(r uint32) []byte { return frame(macA, macP, 0xFF, le(r), le(6))[:22] }, 2, 0xFFFFFFFF},
		{"ERROR_RSP one word long", func(r uint32) []byte { return frame(macA, macP, 0xFF, le(r), le(6), le(0)) }, 2, 0xFFFFFFFF},
		{"RMEM_READ_RSP padded to 60", func(r uint32) []byte { return pad(frame(macA, macP, 0x11, le(r), le(7)), 60) }, 0, 7},
		{"ERROR_RSP padded to 60", func(r uint32) []byte { return pad(frame(macA, macP, 0xFF, le(r), le(4)), 60) }, 12, 0xFFFFFFFF},
	}
	for _, c := range rmem {
		a.ClearError(0)
		res := rmemRead(a, 0, 0x1000)
		p.next(t)
		p.send(t, c.rsp(rid))
		rid++
		r := await(t, res)
		wantCode(t, c.name, r.err, c.want)
		if r.data != c.data {
			t.Fatalf("%s: data %#x, want %#x", c.name, r.data, c.data)
		}
		if c.want != 0 {
			wantStatus(t, c.name, a, 0, failed(c.want))
		} else {
			wantStatus(t, c.name, a, 0, endpoint.PeerStatus{})
		}
	}

	setPeer(t, a, 0, win(macP, endpoint.ModeDMAWrite))
	five := []byte{0xd0, 0xe0, 0xd0, 0xe0, 0x99} // data that contains the EndOfData pattern
	dma := []struct {
		name string
		n    int
		rsp  func(rid uint32) []byte
		want wire.Code
		data []byte
	}{
		{"bad EndOfData", 5, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), data(five), le(0xE0D0E0D1)) }, 10, nil},
		{"EndOfData missing", 5, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), data(five)) }, 10, nil},
		{"data truncated", 5, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), five[:4], eod) }, 10, nil},
		{"excess word", 5, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), data(five), eod, le(0)) }, 10, nil},
		{"zero padding instead of data", 5, func(r uint32) []byte { return pad(frame(macA, macP, 0x31, le(r), five[:4]), 60) }, 10, nil},
		{"too long for MaxFrame", 5, func(r uint32) []byte { return pad(frame(macA, macP, 0x31, le(r), data(five), eod), 1001) }, 10, nil},
		{"exact, EndOfData pattern in data", 5, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), data(five), eod) }, 0, five},
		{"padded to 60", 1, func(r uint32) []byte { return pad(frame(macA, macP, 0x31, le(r), []byte{0x42, 9, 9, 9}, eod), 60) }, 0, []byte{0x42}},
		{"ERROR_RSP", 5, func(r uint32) []byte { return frame(macA, macP, 0xFF, le(r), le(5)) }, 13, nil},
	}
	for _, c := range dma {
		a.ClearError(0)
		dst := bytes.Repeat([]byte{0x55}, c.n)
		res := dmaRead(a, 0, 0x1000, dst)
		eqBytes(t, c.name+" request", frame(macP, macA, 0x30, le(rid), le(0x1000), le(uint32(c.n))), p.next(t))
		p.send(t, c.rsp(rid))
		rid++
		r := await(t, res)
		wantCode(t, c.name, r.err, c.want)
		if c.want != 0 {
			eqBytes(t, c.name+": local memory untouched", bytes.Repeat([]byte{0x55}, c.n), dst)
			wantStatus(t, c.name, a, 0, failed(c.want))
		} else {
			eqBytes(t, c.name+": data", c.data, dst)
			wantStatus(t, c.name, a, 0, endpoint.PeerStatus{})
		}
	}
	if s := a.Stats(); s.MalformedResponses != 11 || s.Timeouts != 0 {
		t.Fatalf("MalformedResponses = %d, Timeouts = %d; want 11, 0", s.MalformedResponses, s.Timeouts)
	}
}

// TestUnmatchedResponses: replies with the wrong Request ID, command or
// source MAC are discarded and counted; they neither complete nor disturb
// the outstanding operation, which completes with the matching reply. A
// duplicate of that reply afterwards is discarded too.
func TestUnmatchedResponses(t *testing.T) {
	a, p, sw := newScripted(t, endpoint.ModeRMEM, endpoint.Config{})
	q := newTap(t, sw, macQ, false)
	res := rmemRead(a, 0, 0x1000)
	p.next(t)
	p.send(t, frame(macA, macP, 0x11, le(1), le(0xBAD)))      // wrong RID
	p.send(t, frame(macA, macP, 0x21, le(0)))                 // wrong command
	p.send(t, frame(macA, macP, 0x41, le(0)))                 // wrong command
	p.send(t, frame(macA, macP, 0x31, le(0), le(0xBAD), eod)) // wrong command
	q.send(t, frame(macA, macQ, 0x11, le(0), le(0xBAD)))      // wrong source
	q.send(t, frame(macA, macQ, 0xFF, le(0), le(6)))          // wrong source
	p.send(t, frame(macA, macP, 0x13, le(0), le(0xBAD)))      // reserved command
	p.send(t, append(frame(macA, macP, 0x11), 0, 0))          // no Request ID
	eventually(t, "discards", func() bool { return a.Stats().DropNoRequestID == 1 })
	pending(t, res)
	p.send(t, frame(macA, macP, 0x11, le(0), le(0x600D)))
	if r := await(t, res); r.err != nil || r.data != 0x600D {
		t.Fatalf("RMEMRead = %#x, %v; want 0x600d", r.data, r.err)
	}
	p.send(t, frame(macA, macP, 0x11, le(0), le(0xBAD))) // duplicate
	eventually(t, "duplicate", func() bool { return a.Stats().DropUnmatchedResponse == 7 })
	s := a.Stats()
	if s.DropUnmatchedResponse != 7 || s.DropReservedCmd != 1 || s.DropNoRequestID != 1 || s.DropLateResponse != 0 {
		t.Fatalf("stats %+v", s)
	}
	wantStatus(t, "A", a, 0, endpoint.PeerStatus{})
	// No response, ERROR_RSP or reserved frame is ever answered: nothing
	// but A's one request reached P or Q.
	p.none(t, 50*time.Millisecond)
	q.none(t, 10*time.Millisecond)
}

// TestLocalInvalid: every local check fails with LOCAL_INVALID before
// acceptance: nothing is transmitted and no Request ID is consumed (the
// first frame on the wire afterwards carries Request ID 0). Failures with
// a peer index in range are recorded and raise their events.
func TestLocalInvalid(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{Events: endpoint.EventEnable{RMEMError: true, PeerDMAComplete: true}})
	setPeer(t, a, 0, win(macP, endpoint.ModeRMEM))
	setPeer(t, a, 1, win(macQ, endpoint.ModeDMARead))
	setPeer(t, a, 2, win(group, endpoint.ModeRMEM))
	setPeer(t, a, 3, win(group, endpoint.ModeDMAWrite))
	setPeer(t, a, 4, win(macC, endpoint.ModeDMAWrite))
	setPeer(t, a, 6, win(macD, endpoint.ModeNone))
	one := []byte{1}
	type op struct {
		name  string
		peer  int
		run   func() error
		event endpoint.EventSource
	}
	rr := func(peer int, addr uint32) func() error {
		return func() error {
			d, err := a.RMEMRead(bg(), peer, addr)
			if d != 0xFFFFFFFF {
				t.Errorf("failed RMEMRead returned %#x", d)
			}
			return err
		}
	}
	rw := func(peer int, addr uint32) func() error {
		return func() error { return a.RMEMWrite(bg(), peer, addr, 1, 1) }
	}
	dw := func(peer int, addr uint32, b []byte) func() error {
		return func() error { _, err := a.DMAWrite(bg(), peer, addr, b); return err }
	}
	dr := func(peer int, addr uint32, b []byte) func() error {
		return func() error { _, err := a.DMARead(bg(), peer, addr, b); return err }
	}
	ops := []op{
		{"RMEM read, peer -1", -1, rr(-1, 0x1000), 0},
		{"RMEM read, peer 256", 256, rr(256, 0x1000), 0},
		{"RMEM read, unconfigured peer", 5, rr(5, 0x1000), endpoint.RMEMError},
		{"RMEM read, mode 0", 6, rr(6, 0x1000), endpoint.RMEMError},
		{"RMEM read, mode 3", 1, rr(1, 0x1000), endpoint.RMEMError},
		{"RMEM read, unaligned", 0, rr(0, 0x1002), endpoint.RMEMError},
		{"RMEM write, unaligned", 0, rw(0, 0x1001), endpoint.RMEMError},
		{"RMEM write, mode 2", 4, rw(4, 0x1000), endpoint.RMEMError},
		{"RMEM read, group", 2, rr(2, 0x1000), endpoint.RMEMError},
		{"DMA read, group", 3, dr(3, 0x1000, make([]byte, 4)), endpoint.PeerDMAComplete},
		{"DMA write, mode 1", 0, dw(0, 0x1000, one), endpoint.PeerDMAComplete},
		{"DMA write, mode 2", 4, dw(4, 0x1000, one), endpoint.PeerDMAComplete},
		{"DMA read, mode 3", 1, dr(1, 0x1000, make([]byte, 4)), endpoint.PeerDMAComplete},
		{"DMA write, zero length", 1, dw(1, 0x1000, nil), endpoint.PeerDMAComplete},
		{"DMA read, zero length", 4, dr(4, 0x1000, nil), endpoint.PeerDMAComplete},
		{"DMA write, past 2^32", 1, dw(1, 0xFFFFFFFF, []byte{1, 2}), endpoint.PeerDMAComplete},
		{"DMA read, past 2^32", 4, dr(4, 0xFFFFFFFC, make([]byte, 5)), endpoint.PeerDMAComplete},
		{"DMA write from nil", 1, func() error { _, err := a.DMAWriteFrom(bg(), 1, 0, nil, 0, 4); return err }, 0},
		{"DMA write, local past 2^32", 1, func() error {
			_, err := a.DMAWriteFrom(bg(), 1, 0x1000, newRAM(t), 0xFFFFFFF0, 0x20)
			return err
		}, endpoint.PeerDMAComplete},
	}
	base := a.Config()
	for _, mfs := range []uint32{0, 1, 2, 3, 8164, 8192, 0xFFFFFFFF} {
		ops = append(ops, op{fmt.Sprintf("MaxFragment %d", mfs), 1, func() error {
			c := base
			c.MaxFragment = mfs
			if err := a.SetConfig(c); err != nil {
				t.Fatal(err)
			}
			defer a.SetConfig(base)
			_, err := a.DMAWrite(bg(), 1, 0x1000, pattern(64, 0))
			return err
		}, endpoint.PeerDMAComplete})
	}
	for _, o := range ops {
		err := o.run()
		wantCode(t, o.name, err, wire.CodeLocalInvalid)
		if !errors.Is(err, endpoint.ErrInvalid) {
			t.Fatalf("%s: %v does not wrap ErrInvalid", o.name, err)
		}
		if o.peer < 0 || o.peer >= endpoint.MaxPeers || o.name == "DMA write from nil" {
			continue
		}
		wantStatus(t, o.name, a, o.peer, failed(wire.CodeLocalInvalid))
		ev, _ := a.NextEvent(bg())
		diff(t, o.name+" event", endpoint.Event{Source: o.event, Peer: o.peer, Code: wire.CodeLocalInvalid}, ev)
		a.ClearError(o.peer)
	}
	// Nothing was sent and no Request ID was consumed.
	res := rmemRead(a, 0, 0x1000)
	eqBytes(t, "first frame", frame(macP, macA, 0x10, le(0), le(0x1000)), sniff.next(t))
	_ = res
	sniff.none(t, 10*time.Millisecond)
}

// TestDMAFragmentation: a 20000-byte block with MaxFragment 31 (effective
// 28) at an unaligned address goes out as 714 fragments of 28 bytes and
// one of 8, one at a time, with consecutive Request IDs and addresses;
// progress is reported after each; reading it back fragments the same way.
func TestDMAFragmentation(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	ramB := newRAM(t)
	cfg := endpoint.Config{MaxFragment: 31}
	a := newEP(t, sw, macA, newRAM(t), cfg)
	b := newEP(t, sw, macB, ramB, endpoint.Config{})
	c := newEP(t, sw, macC, newRAM(t), cfg)
	dmaPath(t, a, 0, b, 0)
	setPeer(t, c, 0, win(macB, endpoint.ModeDMAWrite))
	setPeer(t, b, 1, win(macC, endpoint.ModeDMARead))
	const n, remote = 20000, 0x1003
	src := pattern(n, 3)
	var progress []uint64
	ctx := endpoint.WithProgress(bg(), func(done uint64) { progress = append(progress, done) })
	tr, err := a.DMAWrite(ctx, 0, remote, src)
	if err != nil || tr != (endpoint.Transfer{Bytes: n, Fragments: 715}) {
		t.Fatalf("DMAWrite = %+v, %v; want 20000 bytes in 715 fragments", tr, err)
	}
	if len(progress) != 715 || progress[0] != 28 || progress[713] != 714*28 || progress[714] != n {
		t.Fatalf("progress: %d calls, first %d, last %d", len(progress), progress[0], progress[len(progress)-1])
	}
	for k := range 715 {
		l := 28
		if k == 714 {
			l = 8
		}
		off := 28 * k
		eqBytes(t, fmt.Sprintf("fragment %d", k), frame(macB, macA, 0x40, le(uint32(k)), le(uint32(remote+off)), le(uint32(l)), data(src[off:off+l]), eod), sniff.next(t))
		eqBytes(t, fmt.Sprintf("response %d", k), frame(macA, macB, 0x41, le(uint32(k))), sniff.next(t))
	}
	got := make([]byte, n+2)
	ramB.ReadAt(got, remote-1)
	eqBytes(t, "B's memory", append(append([]byte{0}, src...), 0), got)

	dst := make([]byte, n)
	tr, err = c.DMARead(bg(), 0, remote, dst)
	if err != nil || tr != (endpoint.Transfer{Bytes: n, Fragments: 715}) {
		t.Fatalf("DMARead = %+v, %v", tr, err)
	}
	eqBytes(t, "read back", src, dst)
	for k := range 715 {
		l := 28
		if k == 714 {
			l = 8
		}
		eqBytes(t, fmt.Sprintf("read request %d", k), frame(macB, macC, 0x30, le(uint32(k)), le(uint32(remote+28*k)), le(uint32(l))), sniff.next(t))
		sniff.next(t)
	}
	if s := b.Stats(); s.ServedDMAWrite != 715 || s.ServedDMARead != 715 {
		t.Fatalf("B served %d writes, %d reads", s.ServedDMAWrite, s.ServedDMARead)
	}
}

// TestMaxFragmentRounding: the written MaxFragment is rounded down to a
// multiple of four (7 → 4, 8161..8163 → 8160) and sampled at block start:
// changing it during a block affects only later blocks.
func TestMaxFragmentRounding(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{})
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	dmaPath(t, a, 0, b, 0)
	if got := a.Config().MaxFragment; got != 8160 {
		t.Fatalf("default MaxFragment = %d, want the ceiling 8160", got)
	}
	lengths := func(k int) []uint32 {
		var ls []uint32
		for range k {
			f := sniff.next(t)
			ls = append(ls, uint32(f[24])|uint32(f[25])<<8|uint32(f[26])<<16|uint32(f[27])<<24)
			sniff.next(t)
		}
		return ls
	}
	cases := []struct {
		mfs  uint32
		n    int
		want []uint32
	}{
		{7, 10, []uint32{4, 4, 2}},
		{4, 9, []uint32{4, 4, 1}},
		{31, 57, []uint32{28, 28, 1}},
		{8160, 8161, []uint32{8160, 1}},
		{8161, 8161, []uint32{8160, 1}},
		{8163, 16321, []uint32{8160, 8160, 1}},
	}
	for _, c := range cases {
		cfg := a.Config()
		cfg.MaxFragment = c.mfs
		if err := a.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if got := a.Config().MaxFragment; got != c.mfs {
			t.Fatalf("stored MaxFragment %d, want %d as written", got, c.mfs)
		}
		if _, err := a.DMAWrite(bg(), 0, 0x1000, pattern(c.n, 1)); err != nil {
			t.Fatal(err)
		}
		diff(t, fmt.Sprintf("fragments with MaxFragment %d", c.mfs), c.want, lengths(len(c.want)))
	}
	// A change during a block applies to the next block.
	cfg := a.Config()
	cfg.MaxFragment = 8
	a.SetConfig(cfg)
	ctx := endpoint.WithProgress(bg(), func(uint64) {
		c := a.Config()
		c.MaxFragment = 4
		a.SetConfig(c)
	})
	if _, err := a.DMAWrite(ctx, 0, 0x1000, pattern(20, 1)); err != nil {
		t.Fatal(err)
	}
	diff(t, "block with a live change", []uint32{8, 8, 4}, lengths(3))
	if _, err := a.DMAWrite(bg(), 0, 0x1000, pattern(8, 1)); err != nil {
		t.Fatal(err)
	}
	diff(t, "next block", []uint32{4, 4}, lengths(2))
}

// faultMap returns a Map with RAM at [0x1000, 0x2000) followed by a SLVERR
// region (slverr) or a hole (DECERR).
func faultMap(t *testing.T, slverr bool) (*memory.Map, *memory.RAM) {
	t.Helper()
	if slverr {
		return newSLVERRMap(t, 0x1000, 0x1000, 0x2000, 0x1000)
	}
	return newSLVERRMap(t, 0x1000, 0x1000, 0, 0)
}

// TestDMALocalMemoryErrors: a local source read error fails the block with
// LOCAL_AXI_RD_SLVERR/DECERR before the failing fragment is sent (its
// Request ID is consumed); a local destination write error fails it with
// LOCAL_AXI_WR_SLVERR/DECERR. Earlier fragments stay delivered; the remote
// side records nothing.
func TestDMALocalMemoryErrors(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	ramB, ramC := newRAM(t), newRAM(t)
	cfg := endpoint.Config{MaxFragment: 16}
	a := newEP(t, sw, macA, newRAM(t), cfg)
	b := newEP(t, sw, macB, ramB, endpoint.Config{})
	c := newEP(t, sw, macC, ramC, endpoint.Config{})
	dmaPath(t, a, 0, b, 0) // A writes to B
	dmaPath(t, c, 0, a, 1) // A reads from C
	rid := uint32(0)
	for _, k := range []struct {
		slverr bool
		want   wire.Code
	}{{true, wire.CodeLocalAXIRdSlverr}, {false, wire.CodeLocalAXIRdDecerr}} {
		src, ram := faultMap(t, k.slverr)
		ram.WriteAt(pattern(16, 9), 0x1FF0)
		tr, err := a.DMAWriteFrom(bg(), 0, 0x3000, src, 0x1FF0, 40)
		wantCode(t, "write from faulty source", err, k.want)
		if !errors.Is(err, endpoint.ErrMemory) {
			t.Fatalf("%v does not wrap ErrMemory", err)
		}
		if tr != (endpoint.Transfer{Bytes: 16, Fragments: 1}) {
			t.Fatalf("transfer %+v, want one fragment of 16 bytes", tr)
		}
		eqBytes(t, "fragment 0", frame(macB, macA, 0x40, le(rid), le(0x3000), le(16), pattern(16, 9), eod), sniff.next(t))
		sniff.next(t)
		rid += 2 // the failed fragment consumed its Request ID
		got := make([]byte, 20)
		ramB.ReadAt(got, 0x3000)
		eqBytes(t, "B's memory", append(pattern(16, 9), 0, 0, 0, 0), got)
		wantStatus(t, "A", a, 0, failed(k.want))
		wantStatus(t, "B", b, 0, endpoint.PeerStatus{})
		a.ClearError(0)
	}
	ramC.WriteAt(pattern(40, 5), 0x4000)
	for _, k := range []struct {
		slverr bool
		want   wire.Code
	}{{true, wire.CodeLocalAXIWrSlverr}, {false, wire.CodeLocalAXIWrDecerr}} {
		dst, ram := faultMap(t, k.slverr)
		tr, err := a.DMAReadInto(bg(), 1, 0x4000, dst, 0x1FF0, 40)
		wantCode(t, "read into faulty destination", err, k.want)
		if tr != (endpoint.Transfer{Bytes: 16, Fragments: 1}) {
			t.Fatalf("transfer %+v, want one fragment of 16 bytes", tr)
		}
		got := make([]byte, 16)
		ram.ReadAt(got, 0x1FF0)
		eqBytes(t, "A's memory", pattern(40, 5)[:16], got)
		for f := range 2 {
			eqBytes(t, "read request", frame(macC, macA, 0x30, le(rid), le(0x4000+16*uint32(f)), le(16)), sniff.next(t))
			sniff.next(t)
			rid++
		}
		wantStatus(t, "A", a, 1, failed(k.want))
		wantStatus(t, "C", c, 0, endpoint.PeerStatus{})
	}
	if s := c.Stats(); s.ServedDMARead != 4 {
		t.Fatalf("C served %d reads, want 4", s.ServedDMARead)
	}
	sniff.none(t, 10*time.Millisecond)
}

// TestRMEMBeforeNextFragment: an RMEM operation waiting for the initiating
// slot goes before the next fragment of the DMA block in progress, without
// preempting the fragment already outstanding.
func TestRMEMBeforeNextFragment(t *testing.T) {
	a, p, sw := newScripted(t, endpoint.ModeDMARead, endpoint.Config{MaxFragment: 4})
	q := newTap(t, sw, macQ, false)
	setPeer(t, a, 1, win(macQ, endpoint.ModeRMEM))
	dma := dmaWrite(a, 0, 0x1000, pattern(12, 1))
	eqBytes(t, "fragment 0", frame(macP, macA, 0x40, le(0), le(0x1000), le(4), pattern(12, 1)[:4], eod), p.next(t))
	rm := rmemRead(a, 1, 0x2000)
	eventually(t, "RMEM waiting", func() bool { r, _ := endpoint.SlotWaiting(a); return r == 1 })
	q.none(t, 10*time.Millisecond) // not preempting the outstanding fragment
	p.send(t, frame(macA, macP, 0x41, le(0)))
	eqBytes(t, "RMEM read", frame(macQ, macA, 0x10, le(1), le(0x2000)), q.next(t))
	p.none(t, 10*time.Millisecond)
	q.send(t, frame(macA, macQ, 0x11, le(1), le(77)))
	if r := await(t, rm); r.err != nil || r.data != 77 {
		t.Fatalf("RMEMRead = %+v", r)
	}
	for k := 1; k < 3; k++ {
		eqBytes(t, "fragment", frame(macP, macA, 0x40, le(uint32(k+1)), le(0x1000+4*uint32(k)), le(4), pattern(12, 1)[4*k:4*k+4], eod), p.next(t))
		p.send(t, frame(macA, macP, 0x41, le(uint32(k+1))))
	}
	if r := await(t, dma); r.err != nil || r.tr.Fragments != 3 {
		t.Fatalf("DMAWrite = %+v", r)
	}
}

// An endpoint built with nil memory is an initiator only: its own requests
// complete, but a request addressed to it, even from a configured RMEM peer,
// gets no reply of any kind (one MAC, one responder).
func TestInitiatorOnly(t *testing.T) {
	sw := newSwitch(t)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	a := newEP(t, sw, macA, nil, endpoint.Config{RMEMTimeout: time.Second})
	p := newTap(t, sw, macP, false)
	setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, a, 1, win(macP, endpoint.ModeRMEM))
	setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))

	ctx := context.Background()
	if err := a.RMEMWrite(ctx, 0, ramBase+8, 0xCAFEF00D, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	got, err := a.RMEMRead(ctx, 0, ramBase+8)
	if err != nil || got != 0xCAFEF00D {
		t.Fatalf("RMEMRead = %#x, %v; want 0xcafef00d", got, err)
	}

	// Requests to A from a known peer: valid, malformed and not permitted.
	p.send(t, wire.AppendRMEMReadReq(nil, macA, macP, 1, ramBase))
	p.send(t, wire.AppendRMEMWriteReq(nil, macA, macP, 2, ramBase, 0xF, 1))
	p.send(t, wire.AppendDMAReadReq(nil, macA, macP, 3, ramBase, 8))
	p.send(t, wire.AppendRMEMReadReq(nil, macA, macP, 4, ramBase+1))
	p.none(t, 100*time.Millisecond)
	if s := a.Stats(); s.DropNoResponder != 4 || s.ErrorsSent != [8]uint64{} || s.ServedRMEMRead != 0 {
		t.Fatalf("initiator-only stats: DropNoResponder=%d ErrorsSent=%v ServedRMEMRead=%d; want 4, none, 0",
			s.DropNoResponder, s.ErrorsSent, s.ServedRMEMRead)
	}
	wantStatus(t, "A's record for P", a, 1, endpoint.PeerStatus{})
}

func TestOutcome(t *testing.T) {
	err := error(&endpoint.OpError{Op: "DMA write", Peer: 2, Code: wire.CodeTimeout, Err: endpoint.ErrTimeout})
	if got, want := err.Error(), "oetp: DMA write to peer 2: TIMEOUT (8): no response before the timeout"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if got, want := endpoint.Outcome(fmt.Errorf("wrapped: %w", err)), "TIMEOUT (8): no response before the timeout"; got != want {
		t.Errorf("Outcome = %q; want %q", got, want)
	}
	if got, want := endpoint.Outcome(errors.New("plain")), "plain"; got != want {
		t.Errorf("Outcome(plain) = %q; want %q", got, want)
	}
}
