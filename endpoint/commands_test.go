package endpoint_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// frame builds an oETP frame by hand (independently of package wire):
// header, then the parameters and data as given.
func frame(dst, src wire.MAC, cmd byte, parts ...[]byte) []byte {
	b := append(append(append([]byte{}, dst[:]...), src[:]...), 0x88, 0xb5, 0x0e, cmd)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// data returns payload followed by zero word padding.
func data(payload []byte) []byte {
	return append(bytes.Clone(payload), make([]byte, (4-len(payload)%4)%4)...)
}

var eod = []byte{0xd0, 0xe0, 0xd0, 0xe0}

// TestRMEMCommands: RMEM_READ_REQ/RSP and RMEM_WRITE_REQ/RSP, octet for
// octet, with BitEnable 0x5, 0xF, 0xFFFFFFFF and 0 (a successful no-op).
func TestRMEMCommands(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	ramA, ramB := newRAM(t), newRAM(t)
	a := newEP(t, sw, macA, ramA, endpoint.Config{})
	b := newEP(t, sw, macB, ramB, endpoint.Config{})
	setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, b, 3, win(macA, endpoint.ModeRMEM))
	ramB.WriteWord(0x1004, 0x11223344, 0xFFFFFFFF)

	got, err := a.RMEMRead(bg(), 0, 0x1004)
	if err != nil || got != 0x11223344 {
		t.Fatalf("RMEMRead = %#x, %v; want 0x11223344", got, err)
	}
	eqBytes(t, "RMEM_READ_REQ", unhex(t, "020e0c00000b 020e0c00000a 88b5 0e 10 00000000 04100000"), sniff.next(t))
	eqBytes(t, "RMEM_READ_RSP", unhex(t, "020e0c00000a 020e0c00000b 88b5 0e 11 00000000 44332211"), sniff.next(t))

	steps := []struct {
		data, mask, want uint32
		req              string
	}{
		{0xFFFFFFFF, 0x00000005, 0x00000005, "01000000 08100000 05000000 ffffffff"},
		{0x0000000A, 0x0000000F, 0x0000000A, "02000000 08100000 0f000000 0a000000"},
		{0xDEADBEEF, 0xFFFFFFFF, 0xDEADBEEF, "03000000 08100000 ffffffff efbeadde"},
		{0x12345678, 0x00000000, 0xDEADBEEF, "04000000 08100000 00000000 78563412"},
	}
	for i, s := range steps {
		if err := a.RMEMWrite(bg(), 0, 0x1008, s.data, s.mask); err != nil {
			t.Fatalf("step %d: RMEMWrite: %v", i, err)
		}
		eqBytes(t, fmt.Sprintf("step %d RMEM_WRITE_REQ", i), unhex(t, "020e0c00000b 020e0c00000a 88b5 0e 20"+s.req), sniff.next(t))
		eqBytes(t, fmt.Sprintf("step %d RMEM_WRITE_RSP", i), unhex(t, fmt.Sprintf("020e0c00000a 020e0c00000b 88b5 0e 21 %02x000000", i+1)), sniff.next(t))
		if w, _ := ramB.ReadWord(0x1008); w != s.want {
			t.Fatalf("step %d: B's word = %#x, want %#x", i, w, s.want)
		}
	}
	// Nothing else changed in B's memory.
	for addr := uint32(ramBase); addr < ramBase+ramSize; addr += 4 {
		w, _ := ramB.ReadWord(addr)
		if addr != 0x1004 && addr != 0x1008 && w != 0 {
			t.Fatalf("B's word %#x = %#x, want 0", addr, w)
		}
	}
	wantStatus(t, "A", a, 0, endpoint.PeerStatus{})
	wantStatus(t, "B", b, 3, endpoint.PeerStatus{})
	sb := b.Stats()
	if sb.ServedRMEMRead != 1 || sb.ServedRMEMWrite != 4 || sb.ResponderFailures != 0 {
		t.Fatalf("B stats %+v", sb)
	}
	sniff.none(t, 0)
}

// TestDMACommands: DMA_WRITE_REQ/RSP and DMA_READ_REQ/RSP for lengths 1, 3,
// 4, 5 and 8160 at aligned and unaligned addresses: exact frames (word
// padding zero, EndOfData at 14+4*ceil(L/4) of the PDU), exact memory.
func TestDMACommands(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	ramA, ramB, ramC := newRAM(t), newRAM(t), newRAM(t)
	a := newEP(t, sw, macA, ramA, endpoint.Config{})
	b := newEP(t, sw, macB, ramB, endpoint.Config{})
	c := newEP(t, sw, macC, ramC, endpoint.Config{})
	dmaPath(t, a, 0, b, 0) // A writes to B
	dmaPath(t, b, 1, c, 0) // C reads from B

	var rid, ridC uint32
	for _, n := range []int{1, 3, 4, 5, 8160} {
		for _, addr := range []uint32{0x2000, 0x3001, 0x4002, 0x5003} {
			name := fmt.Sprintf("len %d at %#x", n, addr)
			guard := bytes.Repeat([]byte{0xEE}, n+16)
			ramB.WriteAt(guard, addr-8)
			src := pattern(n, byte(n)+byte(addr))
			tr, err := a.DMAWrite(bg(), 0, addr, src)
			if err != nil || tr != (endpoint.Transfer{Bytes: uint64(n), Fragments: 1}) {
				t.Fatalf("%s: DMAWrite = %+v, %v", name, tr, err)
			}
			req := frame(macB, macA, 0x40, le(rid), le(addr), le(uint32(n)), data(src), eod)
			if len(req) != 32+4*((n+3)/4) {
				t.Fatalf("test builder: %d bytes", len(req))
			}
			eqBytes(t, name+" DMA_WRITE_REQ", req, sniff.next(t))
			eqBytes(t, name+" DMA_WRITE_RSP", frame(macA, macB, 0x41, le(rid)), sniff.next(t))
			rid++
			want := append(append(bytes.Repeat([]byte{0xEE}, 8), src...), bytes.Repeat([]byte{0xEE}, 8)...)
			got := make([]byte, len(want))
			ramB.ReadAt(got, addr-8)
			eqBytes(t, name+" B's memory", want, got)

			// C reads the same bytes back from B.
			dst := bytes.Repeat([]byte{0x55}, n)
			tr, err = c.DMARead(bg(), 0, addr, dst)
			if err != nil || tr != (endpoint.Transfer{Bytes: uint64(n), Fragments: 1}) {
				t.Fatalf("%s: DMARead = %+v, %v", name, tr, err)
			}
			eqBytes(t, name+" C's buffer", src, dst)
			eqBytes(t, name+" DMA_READ_REQ", frame(macB, macC, 0x30, le(ridC), le(addr), le(uint32(n))), sniff.next(t))
			rsp := frame(macC, macB, 0x31, le(ridC), data(src), eod)
			if len(rsp) != 24+4*((n+3)/4) {
				t.Fatalf("test builder: %d bytes", len(rsp))
			}
			eqBytes(t, name+" DMA_READ_RSP", rsp, sniff.next(t))
			ridC++
		}
	}
	for i, e := range []*endpoint.Endpoint{a, b, c} {
		for p := range 2 {
			wantStatus(t, fmt.Sprint("endpoint ", i), e, p, endpoint.PeerStatus{})
		}
	}
	if s := b.Stats(); s.ServedDMAWrite != 20 || s.ServedDMARead != 20 || s.ResponderFailures != 0 {
		t.Fatalf("B stats %+v", s)
	}
	sniff.none(t, 0)
}
