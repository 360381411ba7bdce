package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/openenoc/oetp/wire"
)

// Case is one conformance check: a rule of the specification, quoted, and
// the exchange with the device that checks it.
type Case struct {
	// ID is "oetp/<section>/<n>", like h2spec's "http2/6.5.3/1".
	ID string
	// Section is the heading of the specification section that holds
	// Rule.
	Section string
	// Rule is the sentence (or sentences) of the specification the case
	// checks, verbatim.
	Rule string
	// Needs are the DUT keys (Key...) without which the case is skipped.
	Needs []string
	// Role is the part of the device the case checks (Responder when
	// empty).
	Role Role
	sec  string // the key of Section in sections
	run  func(*T)
}

// rmemBusErrorCase is the case of an RMEM read and write of a word of the
// rmem peer's window in the DUT's ranges for key (SLVERR or DECERR, named
// name), which CPUIF reports with its one error bit: causes 4 and 6.
func rmemBusErrorCase(key, name string, ranges func(*DUT) []Range) Case {
	return Case{sec: "rmem", Needs: []string{KeyPeerRMEM, key},
		Rule: "Local CPUIF execution errors use cause 4 for read failure and cause 6 for write failure because CPUIF supplies one error bit rather than an AXI response encoding.",
		run: func(t *T) {
			p := t.Peer(ModeRMEM)
			a := t.inErr(key, ranges(t.DUT()), p, 4, 4)
			t.ErrorRsp("RMEM_READ_REQ of a "+name+" word", t.rmemReadReq(p, t.RID(), a), wire.CauseAXIRdSlverr)
			t.ErrorRsp("RMEM_WRITE_REQ of a "+name+" word", t.rmemWriteReq(p, t.RID(), a, 0xFFFFFFFF, 1), wire.CauseAXIWrSlverr)
		}}
}

// onScratch is a case that needs and names the DUT's peer of mode m and
// runs on n bytes of word-aligned scratch memory at a in its window.
func onScratch(sec string, needs []string, m Mode, n uint64, rule string, run func(t *T, p Peer, a uint32)) Case {
	return Case{sec: sec, Needs: needs, Rule: rule, run: func(t *T) {
		p := t.Peer(m)
		run(t, p, t.scratch(p, n, 4))
	}}
}

// frameOf builds an oETP frame from dst, src, cmd and four-byte
// little-endian parameters, then appends tail.
func frameOf(dst, src wire.MAC, cmd byte, params []uint32, tail ...byte) []byte {
	b := append(append(append([]byte{}, dst[:]...), src[:]...), 0x88, 0xB5, wire.Magic, cmd)
	for _, p := range params {
		b = binary.LittleEndian.AppendUint32(b, p)
	}
	return append(b, tail...)
}

var eodBytes = []byte{0xD0, 0xE0, 0xD0, 0xE0}

// wordData returns payload followed by zero word padding.
func wordData(payload []byte) []byte {
	return append(bytes.Clone(payload), make([]byte, (4-len(payload)%4)%4)...)
}

// padTo extends f to n bytes with fill.
func padTo(f []byte, n int, fill byte) []byte {
	for len(f) < n {
		f = append(f, fill)
	}
	return f
}

// tagged inserts an 802.1Q or 802.1ad tag (tpid, tci) after the MACs.
func tagged(f []byte, tpid, tci uint16) []byte {
	out := append([]byte{}, f[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, tci)
	return append(out, f[12:]...)
}

// pattern returns n bytes that differ from one run to the next.
func (t *T) pattern(n int) []byte {
	b := make([]byte, n)
	seed := t.RID()
	for i := range b {
		b[i] = byte(uint32(i)*131+seed) ^ byte(seed>>8)
	}
	return b
}

// Requests from peer p to the target.

func (t *T) rmemReadReq(p Peer, rid, addr uint32) []byte {
	return frameOf(t.Target(), p.MAC, byte(wire.RMEMReadReq), []uint32{rid, addr})
}

func (t *T) rmemWriteReq(p Peer, rid, addr, mask, data uint32) []byte {
	return frameOf(t.Target(), p.MAC, byte(wire.RMEMWriteReq), []uint32{rid, addr, mask, data})
}

func (t *T) dmaReadReq(p Peer, rid, addr, n uint32) []byte {
	return frameOf(t.Target(), p.MAC, byte(wire.DMAReadReq), []uint32{rid, addr, n})
}

func (t *T) dmaWriteReq(p Peer, rid, addr uint32, payload []byte) []byte {
	return frameOf(t.Target(), p.MAC, byte(wire.DMAWriteReq), []uint32{rid, addr, uint32(len(payload))}, append(wordData(payload), eodBytes...)...)
}

// Successful operations; each fails the case when the device does not
// complete it exactly.

func (t *T) writeWord(p Peer, addr, data uint32) {
	req := t.rmemWriteReq(p, t.RID(), addr, 0xFFFFFFFF, data)
	t.Reply(fmt.Sprintf("RMEM_WRITE_REQ of %#08x at %#08x", data, addr), req, wire.RMEMWriteRsp, wire.RMEMWriteRspPDULen)
}

func (t *T) readWord(p Peer, addr uint32) uint32 {
	f := t.Reply(fmt.Sprintf("RMEM_READ_REQ at %#08x", addr), t.rmemReadReq(p, t.RID(), addr), wire.RMEMReadRsp, wire.RMEMReadRspPDULen)
	return wire.Frame(f).Param(2)
}

// wantWord reads the word at addr through p and fails the case unless it
// is want; what names the check.
func (t *T) wantWord(p Peer, addr, want uint32, what string) {
	if got := t.readWord(p, addr); got != want {
		t.Errorf("%s: %#08x reads %#08x, want %#08x", what, addr, got, want)
	}
}

// maskedWriteCase is a case that writes before to a scratch word of the
// rmem peer, then data under the BitEnable mask, and fails unless the word
// then holds want.
func maskedWriteCase(sec, rule string, before, mask, data, want uint32) Case {
	return onScratch(sec, []string{KeyPeerRMEM}, ModeRMEM, 4, rule, func(t *T, p Peer, a uint32) {
		t.writeWord(p, a, before)
		t.Reply(fmt.Sprintf("RMEM_WRITE_REQ with BitEnable %#08x", mask), t.rmemWriteReq(p, t.RID(), a, mask, data), wire.RMEMWriteRsp, wire.RMEMWriteRspPDULen)
		t.wantWord(p, a, want, fmt.Sprintf("%#08x written with Data %#08x under BitEnable %#08x", before, data, mask))
	})
}

func (t *T) dmaWrite(p Peer, addr uint32, payload []byte) {
	req := t.dmaWriteReq(p, t.RID(), addr, payload)
	t.Reply(fmt.Sprintf("DMA_WRITE_REQ of %d bytes at %#08x", len(payload), addr), req, wire.DMAWriteRsp, wire.DMAWriteRspPDULen)
}

// dmaRead reads n bytes and checks the reply's layout: exact length (or 60
// with padding), zero word padding and EndOfData at its fixed position.
func (t *T) dmaRead(p Peer, addr, n uint32) []byte {
	what := fmt.Sprintf("DMA_READ_REQ of %d bytes at %#08x", n, addr)
	f := t.Reply(what, t.dmaReadReq(p, t.RID(), addr, n), wire.DMAReadRsp, wire.PDULen(wire.DMAReadRsp, n))
	words := int(wire.DataWords(n))
	for i := 20 + int(n); i < 20+4*words; i++ {
		if f[i] != 0 {
			t.Errorf("%s: word padding byte at frame offset %d is %#02x, want 0", what, i, f[i])
		}
	}
	if at := 20 + 4*words; !bytes.Equal(f[at:at+4], eodBytes) {
		t.Fatalf("%s: % x at the EndOfData position (frame offset %d), want d0 e0 d0 e0", what, f[at:at+4], at)
	}
	return f[20 : 20+int(n)]
}

// scratch returns an address of p's window where n bytes are scratch
// memory (no slverr/decerr range), aligned to align; it skips the case when
// there is none.
func (t *T) scratch(p Peer, n uint64, align uint32) uint32 {
	if a, ok := t.findScratch(p.Window, n, align); ok {
		return a
	}
	t.Skipf("the window %v of peer %v holds no %d bytes outside slverr and decerr", p.Window, p.MAC, n)
	return 0
}

func (t *T) findScratch(w Range, n uint64, align uint32) (uint32, bool) {
	d := t.DUT()
	cands := []uint64{uint64(w.Base)}
	for _, r := range append(append([]Range(nil), d.SlvErr...), d.DecErr...) {
		cands = append(cands, r.End())
	}
	for _, c := range cands {
		a := (c + uint64(align) - 1) &^ (uint64(align) - 1)
		if a > 0xFFFFFFFF {
			continue
		}
		if w.Contains(uint32(a), n) && !d.faulty(uint32(a), n) {
			return uint32(a), true
		}
	}
	return 0, false
}

// shared returns scratch memory of n bytes inside both windows.
func (t *T) shared(a, b Peer, n uint64, align uint32) (uint32, bool) {
	lo := max(uint64(a.Window.Base), uint64(b.Window.Base))
	hi := min(a.Window.End(), b.Window.End())
	if lo >= hi {
		return 0, false
	}
	return t.findScratch(Range{Base: uint32(lo), Size: hi - lo}, n, align)
}

// readBack reads n bytes at addr through a peer that may read them: a
// dma-read peer, else an rmem peer (whole words). ok is false when no peer
// can.
func (t *T) readBack(addr uint32, n uint32) (b []byte, ok bool) {
	d := t.DUT()
	if d.faulty(addr, uint64(n)) {
		return nil, false
	}
	if p, has := d.peer(ModeDMARead); has && p.Window.Contains(addr, uint64(n)) {
		return t.dmaRead(p, addr, n), true
	}
	lo, hi := addr&^3, (uint64(addr)+uint64(n)+3)&^3
	if p, has := d.peer(ModeRMEM); has && p.Window.Contains(lo, hi-uint64(lo)) && !d.faulty(lo, hi-uint64(lo)) {
		var out []byte
		for a := uint64(lo); a < hi; a += 4 {
			out = binary.LittleEndian.AppendUint32(out, t.readWord(p, uint32(a)))
		}
		return out[addr-lo : addr-lo+n], true
	}
	return nil, false
}

// writeBack writes payload at addr through a peer that may write it: a
// dma-write peer, else an rmem peer (whole words, addr and length
// aligned). ok is false when no peer can.
func (t *T) writeBack(addr uint32, payload []byte) bool {
	d := t.DUT()
	n := uint64(len(payload))
	if d.faulty(addr, n) {
		return false
	}
	if p, has := d.peer(ModeDMAWrite); has && p.Window.Contains(addr, n) {
		t.dmaWrite(p, addr, payload)
		return true
	}
	if p, has := d.peer(ModeRMEM); has && addr%4 == 0 && n%4 == 0 && p.Window.Contains(addr, n) {
		for i := 0; i < len(payload); i += 4 {
			t.writeWord(p, addr+uint32(i), binary.LittleEndian.Uint32(payload[i:]))
		}
		return true
	}
	return false
}

// errIn returns an address of r, inside p's window, where n bytes lie in
// r; ok is false when r does not reach into the window that far.
func errIn(rs []Range, p Peer, n uint64, align uint32) (uint32, bool) {
	for _, r := range rs {
		lo := max(uint64(r.Base), uint64(p.Window.Base))
		hi := min(r.End(), p.Window.End())
		a := (lo + uint64(align) - 1) &^ (uint64(align) - 1)
		if a+n <= hi {
			return uint32(a), true
		}
	}
	return 0, false
}

// inErr returns an address where n bytes of p's window lie in one of rs
// (named key), or skips the case.
func (t *T) inErr(key string, rs []Range, p Peer, n uint64, align uint32) uint32 {
	a, ok := errIn(rs, p, n, align)
	if !ok {
		t.Skipf("needs DUT key %s with %d bytes inside the window %v of the %s peer %v", key, n, p.Window, p.Mode, p.MAC)
	}
	return a
}

// busErrors returns an address of p's window where n bytes answer SLVERR
// and one where n bytes answer DECERR.
func (t *T) busErrors(p Peer, n uint64) (slv, dec uint32) {
	return t.inErr(KeySlvErr, t.DUT().SlvErr, p, n, 4), t.inErr(KeyDecErr, t.DUT().DecErr, p, n, 4)
}

// readErrorRsp sends a DMA_READ_REQ whose memory read fails and requires
// an ERROR_RSP with cause or, as a variant, a DMA_READ_RSP cut short: "Once
// DMA_WRITE_REQ or DMA_READ_RSP transmission has begun, a local read error
// stops payload emission and ends that frame early without EndOfData."
func (t *T) readErrorRsp(what string, req []byte, cause uint32) {
	f := t.One(what, req)
	if len(f) < wire.ParamOffset+4 || wire.Frame(f).Cmd() != wire.DMAReadRsp {
		t.checkErrorRsp(what, req, f, cause, nil)
		return
	}
	r := wire.Frame(req)
	switch {
	case wire.Frame(f).Dst() != r.Src() || wire.Frame(f).Src() != t.Target():
		t.Fatalf("%s: DMA_READ_RSP from %v to %v, want from the device to %v", what, wire.Frame(f).Src(), wire.Frame(f).Dst(), r.Src())
	case wire.Frame(f).RequestID() != r.RequestID():
		t.Fatalf("%s: DMA_READ_RSP carries Request ID %#08x, want %#08x", what, wire.Frame(f).RequestID(), r.RequestID())
	case wire.CheckDMAReadRsp(f, r.Length()) == wire.OK:
		t.Fatalf("%s: a complete DMA_READ_RSP with EndOfData for memory that fails, want ERROR_RSP cause %d or a response cut short", what, cause)
	}
	t.Variant("read failure answered by a cut-short DMA_READ_RSP")
	t.Notef("%s: DMA_READ_RSP of %d bytes without EndOfData", what, len(f))
}
