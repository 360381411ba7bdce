package conformance

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/openenoc/oetp/wire"
)

// sections maps the ID slugs to the headings of the specification
// (oetp-v1-engine) whose text holds the cases' rules.
var sections = map[string]string{
	"scope":  "Implementation status and scope",
	"frame":  "Established encapsulation",
	"length": "Lengths, MTU, and padding",
	"addr":   "MAC addressing",
	"param":  "Parameter encoding",
	"rid":    "Request ID allocation and hard reset",
	"cmd":    "Command layouts",
	"txn":    "Transactions and access policy",
	"access": "Peer access checks",
	"error":  "Error origin and CSR status",
	"seq":    "Transfer sequencing and timeouts",
	"rmem":   "RMEM failure completion and notification",
}

// sectionOrder is the order of the sections in the specification, which
// is the order of the case list.
var sectionOrder = []string{"scope", "frame", "length", "addr", "param", "rid", "cmd", "txn", "access", "error", "seq", "rmem"}

// Cases returns every case, in the order of the specification's sections
// and, within a section, of their numbers.
func Cases() []Case { return append([]Case(nil), ordered()...) }

// ordered is allCases with IDs and sections assigned: oetp/<slug>/<n>, n
// counting the section's cases in the order of allCases (so a case keeps
// its ID as long as cases are only appended). It is built on first use,
// not at every start of every oetp command.
var ordered = sync.OnceValue(func() []Case {
	count := map[string]int{}
	for i := range allCases {
		c := &allCases[i]
		count[c.sec]++
		c.ID = fmt.Sprintf("oetp/%s/%d", c.sec, count[c.sec])
		c.Section = sections[c.sec]
		if c.Role == "" {
			c.Role = Responder
		}
		if c.Section == "" {
			panic("conformance: unknown section " + c.sec)
		}
	}
	var out []Case
	for _, sec := range sectionOrder {
		for _, c := range allCases {
			if c.sec == sec {
				out = append(out, c)
			}
		}
	}
	return out
})

var rmem = []string{KeyPeerRMEM}

var allCases = []Case{
	// Implementation status and scope: VLAN-tagged frames are not v1.
	onScratch("scope", rmem, ModeRMEM, 4,
		"VLAN tags, automatic retries, duplicate suppression, and soft reset are outside this version.",
		func(t *T, p Peer, a uint32) {
			t.None("802.1Q-tagged (VID 5) RMEM_READ_REQ", tagged(t.rmemReadReq(p, t.RID(), a), 0x8100, 5))
		}),
	onScratch("scope", rmem, ModeRMEM, 4,
		"VLAN tags, automatic retries, duplicate suppression, and soft reset are outside this version.",
		func(t *T, p Peer, a uint32) {
			t.None("802.1ad-tagged (S-VID 7) RMEM_READ_REQ", tagged(t.rmemReadReq(p, t.RID(), a), 0x88A8, 7))
			t.None("802.1ad + 802.1Q double-tagged RMEM_READ_REQ", tagged(tagged(t.rmemReadReq(p, t.RID(), a), 0x8100, 5), 0x88A8, 7))
		}),
	onScratch("scope", rmem, ModeRMEM, 4,
		"VLAN tags, automatic retries, duplicate suppression, and soft reset are outside this version.",
		func(t *T, p Peer, a uint32) {
			t.None("priority-tagged (802.1Q VID 0, PCP 3) RMEM_READ_REQ", tagged(t.rmemReadReq(p, t.RID(), a), 0x8100, 3<<13))
		}),
	onScratch("frame", rmem, ModeRMEM, 4,
		"The figure describes an untagged frame; VLAN support would change these offsets and needs an explicit decision.",
		func(t *T, p Peer, a uint32) {
			t.writeWord(p, a, 0x5A5A0001)
			t.None("802.1Q-tagged RMEM_WRITE_REQ", tagged(t.rmemWriteReq(p, t.RID(), a, 0xFFFFFFFF, 0x0BADBAD0), 0x8100, 5))
			t.wantWord(p, a, 0x5A5A0001, "the tagged write changed memory")
		}),

	// Established encapsulation.
	onScratch("access", rmem, ModeRMEM, 4,
		"Other EtherTypes, or 0x88B5 with different Magic, follow the raw non-oETP receive policy.",
		func(t *T, p Peer, a uint32) {
			for _, magic := range []byte{0x0F, 0x00, 0xE0} {
				f := t.rmemReadReq(p, t.RID(), a)
				f[14] = magic
				t.None(fmt.Sprintf("RMEM_READ_REQ with Magic %#02x", magic), f)
			}
			f := t.rmemReadReq(p, t.RID(), a)
			f[12], f[13] = 0x88, 0xB6
			t.None("RMEM_READ_REQ with EtherType 0x88B6", f)
		}),
	onScratch("frame", rmem, ModeRMEM, 4,
		"The first parameter starts at frame offset 16.",
		func(t *T, p Peer, a uint32) {
			rid := uint32(0x04030201)
			f := t.One("RMEM_READ_REQ", t.rmemReadReq(p, rid, a))
			if len(f) < 24 {
				t.Fatalf("reply of %d bytes", len(f))
			}
			tg := t.Target()
			want := append(append(append([]byte{}, p.MAC[:]...), tg[:]...), 0x88, 0xB5, 0x0E, 0x11, 0x01, 0x02, 0x03, 0x04)
			if !bytes.Equal(f[:20], want) {
				t.Errorf("reply starts % x, want % x (destination, source, EtherType, Magic, Cmd, Request ID at offset 16)", f[:20], want)
			}
		}),

	// Command layouts.
	onScratch("cmd", rmem, ModeRMEM, 4,
		"RMEM READ_REQ/READ_RSP/WRITE_REQ/WRITE_RSP PDU lengths are 10, 10, 18, and 6 bytes.",
		func(t *T, p Peer, a uint32) {
			t.writeWord(p, a, 0xC0FFEE01)
			t.wantWord(p, a, 0xC0FFEE01, "RMEM_READ_RSP after writing 0xc0ffee01")
		}),
	{sec: "cmd", Needs: rmem,
		Rule: "RMEM reads carry no BitEnable, always read a complete aligned word, and return the complete Data word.",
		run: func(t *T) {
			p := t.Peer(ModeRMEM)
			a := t.scratch(p, 8, 8)
			t.writeWord(p, a, 0xA1B2C3D4)
			t.writeWord(p, a+4, 0x11223344)
			t.wantWord(p, a+4, 0x11223344, "the second word")
			t.wantWord(p, a, 0xA1B2C3D4, "the first word")
		}},
	{sec: "cmd", Needs: []string{KeyPeerDMAWrite},
		Rule: "DMA write requests have three metadata parameters, Data, and EndOfData, with PDU length 18 + 4*ceil(B/4).",
		run: func(t *T) {
			p := t.Peer(ModeDMAWrite)
			for _, n := range []uint32{1, 4, 5, 8} {
				a := t.scratch(p, uint64(n), 4)
				data := t.pattern(int(n))
				t.dmaWrite(p, a, data)
				if got, ok := t.readBack(a, n); ok && !bytes.Equal(got, data) {
					t.Errorf("after a DMA write of % x at %#08x memory holds % x", data, a, got)
				}
			}
		}},
	{sec: "cmd", Needs: []string{KeyPeerDMARead},
		Rule: "DMA read replies have one metadata parameter, Data, and EndOfData, with length 10 + 4*ceil(B/4); their format could fit 8168 bytes.",
		run: func(t *T) {
			p := t.Peer(ModeDMARead)
			for _, n := range []uint32{1, 3, 4, 5, 8} {
				a := t.scratch(p, uint64(n), 4)
				data := t.pattern(int(n))
				wrote := t.writeBack(a, data)
				got := t.dmaRead(p, a, n)
				if wrote && !bytes.Equal(got, data) {
					t.Errorf("DMA read of %d bytes at %#08x returns % x, want % x", n, a, got, data)
				}
			}
		}},
	onScratch("cmd", rmem, ModeRMEM, 4,
		"All other Cmd values are reserved.",
		func(t *T, p Peer, a uint32) {
			for _, c := range []byte{0x00, 0x12, 0x22, 0x50, 0x80, 0xF0, 0xFE} {
				t.None(fmt.Sprintf("reserved Cmd %#02x in an RMEM_READ_REQ layout", c), frameOf(t.Target(), p.MAC, c, []uint32{t.RID(), a}))
			}
		}),
	onScratch("cmd", rmem, ModeRMEM, 4,
		"Decode exact assigned codes before applying the request/response pairing rule; an arbitrary value with bit 0 set is not automatically a valid response.",
		func(t *T, p Peer, a uint32) {
			for _, c := range []byte{0x01, 0x13, 0x51, 0xFD} {
				t.None(fmt.Sprintf("reserved Cmd %#02x", c), frameOf(t.Target(), p.MAC, c, []uint32{t.RID(), a}))
			}
		}),

	// Parameter encoding.
	onScratch("param", rmem, ModeRMEM, 4,
		"Every four-byte oETP parameter uses little-endian byte order: 0x11223344 is encoded as 44 33 22 11.",
		func(t *T, p Peer, a uint32) {
			t.writeWord(p, a, 0x11223344)
			f := t.Reply("RMEM_READ_REQ", t.rmemReadReq(p, t.RID(), a), wire.RMEMReadRsp, wire.RMEMReadRspPDULen)
			if !bytes.Equal(f[20:24], []byte{0x44, 0x33, 0x22, 0x11}) {
				t.Errorf("RMEM_READ_RSP Data octets % x, want 44 33 22 11", f[20:24])
			}
		}),
	maskedWriteCase("cmd", "BitEnable = 0xFFFFFFFF writes the complete word; 0x00000005 enables only Data bits 0 and 2 and maps to CPUIF wr_biten = 0x00000005.",
		0xFFFFFFFF, 5, 0, 0xFFFFFFFA),
	maskedWriteCase("param", "Bit i enables Data bit i, for i = 0 through 31.",
		0x0000FFFF, 0x80018001, 0xFFFF0000, 0x80017FFE),
	maskedWriteCase("cmd", "BitEnable = 0x00000000 is a successful no-op: after the usual frame, peer-policy, alignment, and range validation, do not issue a target CPUIF write.",
		0x600DF00D, 0, 0xFFFFFFFF, 0x600DF00D),
	onScratch("cmd", rmem, ModeRMEM, 4,
		"Invalid requests are not made valid by a zero mask.",
		func(t *T, p Peer, a uint32) {
			t.ErrorRsp("unaligned zero-BitEnable RMEM_WRITE_REQ", t.rmemWriteReq(p, t.RID(), a+2, 0, 0), wire.CauseInvalid)
			if end := p.Window.End(); end+4 <= 1<<32 {
				t.ErrorRsp("zero-BitEnable RMEM_WRITE_REQ past the window", t.rmemWriteReq(p, t.RID(), uint32(end+3)&^3, 0, 0), wire.CauseInvalid)
			}
		}),
	{sec: "cmd", Needs: []string{KeyPeerRMEM, KeySlvErr},
		Rule: "BitEnable = 0x00000000 is a successful no-op: after the usual frame, peer-policy, alignment, and range validation, do not issue a target CPUIF write.",
		run: func(t *T) {
			p := t.Peer(ModeRMEM)
			a := t.inErr(KeySlvErr, t.DUT().SlvErr, p, 4, 4)
			t.Reply("zero-BitEnable RMEM_WRITE_REQ to a SLVERR word", t.rmemWriteReq(p, t.RID(), a, 0, 1), wire.RMEMWriteRsp, wire.RMEMWriteRspPDULen)
		}},
	onScratch("param", []string{KeyPeerDMAWrite}, ModeDMAWrite, 8,
		"The receiver writes them at successive destination addresses without reversing each four-byte group.",
		func(t *T, p Peer, a uint32) {
			data := []byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}
			t.dmaWrite(p, a, data)
			if r, ok := t.DUT().peer(ModeRMEM); ok && r.Window.Contains(a, 8) {
				if got := t.readWord(r, a); got != 0x04030201 {
					t.Errorf("bytes 01 02 03 04 written by DMA at %#08x read as the word %#08x, want 0x04030201", a, got)
				}
				return
			}
			got, ok := t.readBack(a, 8)
			if !ok {
				t.Skipf("needs a dma-read or rmem peer whose window holds %#08x to read back", a)
			}
			if !bytes.Equal(got, data) {
				t.Errorf("DMA write of % x reads back % x", data, got)
			}
		}),
	onScratch("param", []string{KeyPeerDMARead}, ModeDMARead, 8,
		"Unused bytes in the final parameter are zero on transmit, ignored on receive, and never written to memory.",
		func(t *T, p Peer, a uint32) {
			t.writeBack(a, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
			t.dmaRead(p, a, 5) // checks the three padding bytes
		}),
	onScratch("param", []string{KeyPeerDMAWrite}, ModeDMAWrite, 8,
		"Unused bytes in the final parameter are zero on transmit, ignored on receive, and never written to memory.",
		func(t *T, p Peer, a uint32) {
			t.dmaWrite(p, a, []byte{0, 0, 0, 0, 0, 0, 0, 0})
			req := t.dmaWriteReq(p, t.RID(), a, []byte{1, 2, 3, 4, 5})
			copy(req[33:36], []byte{0xAA, 0xBB, 0xCC})
			t.Reply("DMA_WRITE_REQ of 5 bytes with nonzero word padding", req, wire.DMAWriteRsp, wire.DMAWriteRspPDULen)
			got, ok := t.readBack(a, 8)
			if !ok {
				t.Skipf("needs a dma-read or rmem peer whose window holds %#08x to read back", a)
			}
			if want := []byte{1, 2, 3, 4, 5, 0, 0, 0}; !bytes.Equal(got, want) {
				t.Errorf("memory holds % x, want % x: word padding was written", got, want)
			}
		}),

	// Lengths, MTU, and padding.
	onScratch("length", rmem, ModeRMEM, 4,
		"Accept either the exact logical length or, for a PDU shorter than 46 bytes, the frame padded to 46 payload bytes.",
		func(t *T, p Peer, a uint32) {
			t.writeWord(p, a, 0x0F0F0F0F)
			req := padTo(t.rmemReadReq(p, t.RID(), a), 60, 0xA5)
			f := t.Reply("RMEM_READ_REQ padded to 60 bytes with 0xa5", req, wire.RMEMReadRsp, wire.RMEMReadRspPDULen)
			if got := wire.Frame(f).Param(2); got != 0x0F0F0F0F {
				t.Errorf("read %#08x, want 0x0f0f0f0f", got)
			}
			req = padTo(t.rmemWriteReq(p, t.RID(), a, 0xFFFFFFFF, 0x12345678), 60, 0xFF)
			t.Reply("RMEM_WRITE_REQ padded to 60 bytes with 0xff", req, wire.RMEMWriteRsp, wire.RMEMWriteRspPDULen)
			t.wantWord(p, a, 0x12345678, "the padded write")
		}),
	onScratch("length", rmem, ModeRMEM, 4,
		"Reject truncation and other trailing lengths.",
		func(t *T, p Peer, a uint32) {
			t.ErrorRsp("RMEM_READ_REQ padded to 61 bytes", padTo(t.rmemReadReq(p, t.RID(), a), 61, 0), wire.CauseLength)
			t.ErrorRsp("RMEM_WRITE_REQ padded to 64 bytes", padTo(t.rmemWriteReq(p, t.RID(), a, 1, 1), 64, 0), wire.CauseLength)
		}),
	onScratch("length", []string{KeyPeerRMEM, KeyShortFrames}, ModeRMEM, 4,
		"Reject truncation and other trailing lengths.",
		func(t *T, p Peer, a uint32) {
			t.ErrorRsp("RMEM_READ_REQ with one trailing byte (25 bytes)", append(t.rmemReadReq(p, t.RID(), a), 0), wire.CauseLength)
			t.ErrorRsp("RMEM_WRITE_REQ cut to 31 bytes", t.rmemWriteReq(p, t.RID(), a, 1, 1)[:31], wire.CauseLength)
			t.ErrorRsp("RMEM_READ_REQ cut to 22 bytes", t.rmemReadReq(p, t.RID(), a)[:22], wire.CauseLength)
		}),
	onScratch("length", []string{KeyPeerDMAWrite}, ModeDMAWrite, 64,
		"Reject truncation and other trailing lengths.",
		func(t *T, p Peer, a uint32) {
			t.ErrorRsp("DMA_WRITE_REQ of 40 bytes with a word after EndOfData", append(t.dmaWriteReq(p, t.RID(), a, t.pattern(40)), 0, 0, 0, 0), wire.CauseLength)
			req := frameOf(t.Target(), p.MAC, byte(wire.DMAWriteReq), []uint32{t.RID(), a, 64}, t.pattern(32)...)
			t.ErrorRsp("DMA_WRITE_REQ of Length 64 ending after 32 data bytes", req, wire.CauseLength)
		}),
	onScratch("length", []string{KeyPeerDMAWrite}, ModeDMAWrite, 4,
		"Ignore Ethernet padding values on receive; their generation belongs to the external MAC, not the oETP engine.",
		func(t *T, p Peer, a uint32) {
			data := t.pattern(4)
			req := padTo(t.dmaWriteReq(p, t.RID(), a, data), 60, 0xEE)
			t.Reply("DMA_WRITE_REQ of 4 bytes padded to 60 with 0xee", req, wire.DMAWriteRsp, wire.DMAWriteRspPDULen)
			if got, ok := t.readBack(a, 4); ok && !bytes.Equal(got, data) {
				t.Errorf("memory holds % x, want % x", got, data)
			}
		}),
	onScratch("txn", []string{KeyPeerDMAWrite}, ModeDMAWrite, 40,
		"An incomplete unicast DMA_WRITE_REQ receives ERROR_RSP wire cause 2 while its receiver records CSR code 10.",
		func(t *T, p Peer, a uint32) {
			req := t.dmaWriteReq(p, t.RID(), a, t.pattern(40))
			req[len(req)-1] ^= 0x01
			t.ErrorRsp("DMA_WRITE_REQ with EndOfData d0 e0 d0 e1", req, wire.CauseLength)
		}),
	onScratch("length", []string{KeyPeerDMAWrite}, ModeDMAWrite, 4,
		"Zero-filled Ethernet padding cannot replace any missing nonzero trailer octet.",
		func(t *T, p Peer, a uint32) {
			req := t.dmaWriteReq(p, t.RID(), a, t.pattern(4))
			t.ErrorRsp("DMA_WRITE_REQ of 4 bytes without EndOfData, zero-padded to 60", padTo(req[:len(req)-4], 60, 0), wire.CauseLength)
		}),
	onScratch("length", []string{KeyPeerDMAWrite}, ModeDMAWrite, 16,
		"These are fixed expected positions, not a delimiter search: arbitrary memory data may contain this value without ending the transfer.",
		func(t *T, p Peer, a uint32) {
			data := bytes.Repeat(eodBytes, 3)
			data = append(data, 0x42, 0x43)
			t.dmaWrite(p, a, data)
			if got, ok := t.readBack(a, uint32(len(data))); ok && !bytes.Equal(got, data) {
				t.Errorf("memory holds % x, want % x", got, data)
			}
		}),
	onScratch("length", []string{KeyPeerDMARead}, ModeDMARead, 64,
		"Relative to the PDU start its offset is 14 + 4*ceil(Length/4) for DMA_WRITE_REQ and 6 + 4*ceil(ExpectedLength/4) for DMA_READ_RSP.",
		func(t *T, p Peer, a uint32) {
			for _, n := range []uint32{2, 7, 12, 61} {
				t.dmaRead(p, a+1, n) // checks EndOfData at its fixed position
			}
		}),
	{sec: "cmd", Needs: []string{KeyPeerDMARead, KeyMaxFrame},
		Rule: "The corresponding common peer DMA memory-fragment ceiling is 4 * floor((MAX_RAW_FRAME_SIZE - 32) / 4).",
		run: func(t *T) {
			p := t.Peer(ModeDMARead)
			ceil := wire.FragmentCeiling(t.DUT().MaxFrame)
			if wire.FrameLen(wire.DMAReadRsp, ceil) > t.LinkMax() {
				t.Skipf("a DMA_READ_RSP of %d bytes (the ceiling) needs %d-byte frames; the runner's link carries %d", ceil, wire.FrameLen(wire.DMAReadRsp, ceil), t.LinkMax())
			}
			a := t.scratch(p, uint64(ceil), 4)
			t.dmaRead(p, a, ceil)
		}},
	onScratch("cmd", []string{KeyPeerDMARead, KeyMaxFrame}, ModeDMARead, 4,
		"Received DMA requests use the synthesized fragment ceiling independently of the receiver’s local fragmentation setting.",
		func(t *T, p Peer, a uint32) {
			n := wire.FragmentCeiling(t.DUT().MaxFrame) + 1
			t.ErrorRsp(fmt.Sprintf("DMA_READ_REQ of %d bytes (ceiling + 1)", n), t.dmaReadReq(p, t.RID(), a, n), wire.CauseOverflow)
		}),

	// MAC addressing.
	onScratch("addr", []string{KeyPeerRMEM, KeyGroup}, ModeRMEM, 4,
		"For a group-addressed write, the initiator does not wait for a reply and the responder sends neither a success response nor ERROR_RSP.",
		func(t *T, p Peer, a uint32) {
			t.writeWord(p, a, 0)
			req := t.rmemWriteReq(p, t.RID(), a, 0xFFFFFFFF, 0x6E0C0001)
			copy(req[0:6], t.DUT().Group[:])
			t.None("RMEM_WRITE_REQ to the group", req)
			t.wantWord(p, a, 0x6E0C0001, "the group write was not applied")
		}),
	onScratch("access", []string{KeyPeerRMEM, KeyGroup}, ModeRMEM, 4,
		"A group write never receives an error reply.",
		func(t *T, p Peer, a uint32) {
			req := t.rmemWriteReq(p, t.RID(), a+1, 0xFFFFFFFF, 1)
			copy(req[0:6], t.DUT().Group[:])
			t.None("unaligned RMEM_WRITE_REQ to the group", req)
		}),
	onScratch("cmd", []string{KeyPeerDMAWrite, KeyGroup}, ModeDMAWrite, 8,
		"Multicast writes still use 0x20 or 0x40 and generate neither 0x21/0x41 nor 0xFF responses.",
		func(t *T, p Peer, a uint32) {
			data := t.pattern(8)
			req := t.dmaWriteReq(p, t.RID(), a, data)
			copy(req[0:6], t.DUT().Group[:])
			t.None("DMA_WRITE_REQ to the group", req)
			if got, ok := t.readBack(a, 8); ok && !bytes.Equal(got, data) {
				t.Errorf("the group DMA write was not applied: memory holds % x, want % x", got, data)
			}
			bad := t.dmaWriteReq(p, t.RID(), a, data)
			copy(bad[0:6], t.DUT().Group[:])
			bad[len(bad)-1] = 0
			t.None("DMA_WRITE_REQ with a bad EndOfData to the group", bad)
		}),
	onScratch("addr", []string{KeyPeerRMEM, KeyGroup}, ModeRMEM, 4,
		"Group-addressed read requests are rejected locally without transmission; receivers discard any such request without a response.",
		func(t *T, p Peer, a uint32) {
			req := t.rmemReadReq(p, t.RID(), a)
			copy(req[0:6], t.DUT().Group[:])
			t.None("RMEM_READ_REQ to the group", req)
		}),
	onScratch("addr", []string{KeyPeerDMARead, KeyGroup}, ModeDMARead, 4,
		"Group-addressed read requests are rejected locally without transmission; receivers discard any such request without a response.",
		func(t *T, p Peer, a uint32) {
			req := t.dmaReadReq(p, t.RID(), a, 4)
			copy(req[0:6], t.DUT().Group[:])
			t.None("DMA_READ_REQ to the group", req)
		}),
	{sec: "addr", Needs: rmem,
		Rule: "Broadcast is accepted only when multicast_address is configured to all ones.",
		run: func(t *T) {
			if t.DUT().Group.IsBroadcast() {
				t.Skipf("the DUT's group is the broadcast address")
			}
			p := t.Peer(ModeRMEM)
			a := t.scratch(p, 4, 4)
			t.writeWord(p, a, 0xB0B0B0B0)
			req := t.rmemWriteReq(p, t.RID(), a, 0xFFFFFFFF, 0x0B0B0B0B)
			copy(req[0:6], wire.Broadcast[:])
			t.None("broadcast RMEM_WRITE_REQ", req)
			t.wantWord(p, a, 0xB0B0B0B0, "the broadcast write was applied")
		}},
	onScratch("addr", rmem, ModeRMEM, 4,
		"There is no implicit acceptance of other groups or broadcast traffic.",
		func(t *T, p Peer, a uint32) {
			other := wire.MAC{0x03, 0x0E, 0x0C, 0xFF, 0xFF, 0xFE}
			if other == t.DUT().Group {
				other[5] = 0xFD
			}
			t.writeWord(p, a, 0xC0C0C0C0)
			req := t.rmemWriteReq(p, t.RID(), a, 0xFFFFFFFF, 0x0C0C0C0C)
			copy(req[0:6], other[:])
			t.None("RMEM_WRITE_REQ to another group "+other.String(), req)
			t.wantWord(p, a, 0xC0C0C0C0, "the write to another group was applied")
		}),
	onScratch("addr", rmem, ModeRMEM, 4,
		"Individual destinations must equal conf.mac_address; group destinations must equal conf.multicast_address.",
		func(t *T, p Peer, a uint32) {
			other := t.Target()
			other[5] ^= 0x80
			t.writeWord(p, a, 0xD0D0D0D0)
			req := t.rmemWriteReq(p, t.RID(), a, 0xFFFFFFFF, 0x0D0D0D0D)
			copy(req[0:6], other[:])
			t.None("RMEM_WRITE_REQ to another unicast MAC "+other.String(), req)
			t.wantWord(p, a, 0xD0D0D0D0, "the write to another MAC was applied")
		}),

	// Peer access checks.
	{sec: "access", Needs: []string{KeyPeerRMEM, KeyUnknownMAC},
		Rule: "Unknown sources never cause memory access and are discarded without a reply.",
		run: func(t *T) {
			p := t.Peer(ModeRMEM)
			u := Peer{MAC: t.DUT().UnknownMAC}
			a := t.scratch(p, 4, 4)
			t.writeWord(p, a, 0xE0E0E0E0)
			t.None("RMEM_READ_REQ from unknown_mac", t.rmemReadReq(u, t.RID(), a))
			t.None("RMEM_WRITE_REQ from unknown_mac", t.rmemWriteReq(u, t.RID(), a, 0xFFFFFFFF, 1))
			t.None("DMA_READ_REQ from unknown_mac", t.dmaReadReq(u, t.RID(), a, 4))
			t.None("DMA_WRITE_REQ from unknown_mac", t.dmaWriteReq(u, t.RID(), a, []byte{1, 2, 3, 4}))
			t.None("unaligned RMEM_READ_REQ from unknown_mac", t.rmemReadReq(u, t.RID(), a+1))
			t.wantWord(p, a, 0xE0E0E0E0, "a request from unknown_mac changed memory")
		}},
	onScratch("addr", []string{KeyPeerRMEM, KeyUnknownMAC, KeyGroup}, ModeRMEM, 4,
		"The receiver resolves the unicast source MAC to its own peer table for access policy and address validation; the group destination is not a substitute for the source-peer lookup.",
		func(t *T, p Peer, a uint32) {
			t.writeWord(p, a, 0xF0F0F0F0)
			req := t.rmemWriteReq(Peer{MAC: t.DUT().UnknownMAC}, t.RID(), a, 0xFFFFFFFF, 2)
			copy(req[0:6], t.DUT().Group[:])
			t.None("group RMEM_WRITE_REQ from unknown_mac", req)
			t.wantWord(p, a, 0xF0F0F0F0, "a group write from unknown_mac was applied")
		}),

	onScratch("access", rmem, ModeRMEM, 8,
		"Recognized unicast requests from known peers with a trustworthy Request ID receive ERROR_RSP when command, length, or access validation fails, including an operation prohibited by that peer’s mode.",
		func(t *T, p Peer, a uint32) {
			t.ErrorRsp("DMA_READ_REQ from the rmem peer", t.dmaReadReq(p, t.RID(), a, 4), wire.CauseInvalid)
			t.ErrorRsp("DMA_WRITE_REQ from the rmem peer", t.dmaWriteReq(p, t.RID(), a, []byte{1, 2, 3, 4}), wire.CauseInvalid)
		}),
	onScratch("access", []string{KeyPeerDMAWrite}, ModeDMAWrite, 8,
		"Recognized unicast requests from known peers with a trustworthy Request ID receive ERROR_RSP when command, length, or access validation fails, including an operation prohibited by that peer’s mode.",
		func(t *T, p Peer, a uint32) {
			t.ErrorRsp("RMEM_READ_REQ from the dma-write peer", t.rmemReadReq(p, t.RID(), a), wire.CauseInvalid)
			t.ErrorRsp("RMEM_WRITE_REQ from the dma-write peer", t.rmemWriteReq(p, t.RID(), a, 1, 1), wire.CauseInvalid)
			t.ErrorRsp("DMA_READ_REQ from the dma-write peer", t.dmaReadReq(p, t.RID(), a, 4), wire.CauseInvalid)
		}),
	onScratch("access", []string{KeyPeerDMARead}, ModeDMARead, 8,
		"Recognized unicast requests from known peers with a trustworthy Request ID receive ERROR_RSP when command, length, or access validation fails, including an operation prohibited by that peer’s mode.",
		func(t *T, p Peer, a uint32) {
			t.ErrorRsp("RMEM_READ_REQ from the dma-read peer", t.rmemReadReq(p, t.RID(), a), wire.CauseInvalid)
			t.ErrorRsp("RMEM_WRITE_REQ from the dma-read peer", t.rmemWriteReq(p, t.RID(), a, 1, 1), wire.CauseInvalid)
			t.ErrorRsp("DMA_WRITE_REQ from the dma-read peer", t.dmaWriteReq(p, t.RID(), a, []byte{1, 2, 3, 4}), wire.CauseInvalid)
		}),
	{sec: "access", Needs: []string{KeyPeerNone},
		Rule: "Recognized unicast requests from known peers with a trustworthy Request ID receive ERROR_RSP when command, length, or access validation fails, including an operation prohibited by that peer’s mode.",
		run: func(t *T) {
			p := t.Peer(ModeNone)
			a := (p.Window.Base + 3) &^ 3
			// Whether a mode-0 entry makes its MAC a known peer the
			// specification leaves open; the openENOC RTL's lookup never
			// matches a disabled entry.
			const v = "mode-0 entry treated as unknown source"
			t.ErrorRspOrNone("RMEM_READ_REQ from the mode-none peer", t.rmemReadReq(p, t.RID(), a), wire.CauseInvalid, v)
			t.ErrorRspOrNone("RMEM_WRITE_REQ from the mode-none peer", t.rmemWriteReq(p, t.RID(), a, 1, 1), wire.CauseInvalid, v)
			t.ErrorRspOrNone("DMA_READ_REQ from the mode-none peer", t.dmaReadReq(p, t.RID(), a, 4), wire.CauseInvalid, v)
			t.ErrorRspOrNone("DMA_WRITE_REQ from the mode-none peer", t.dmaWriteReq(p, t.RID(), a, []byte{1, 2, 3, 4}), wire.CauseInvalid, v)
		}},
	{sec: "access", Needs: rmem,
		Rule: "Validate responder addresses against the local window associated with the source peer.",
		run: func(t *T) {
			p := t.Peer(ModeRMEM)
			checked := false
			if p.Window.Base >= 4 {
				t.ErrorRsp("RMEM_READ_REQ of the word below the window", t.rmemReadReq(p, t.RID(), (p.Window.Base-4)&^3), wire.CauseInvalid)
				checked = true
			}
			if end := p.Window.End(); end+4 <= 1<<32 {
				t.ErrorRsp("RMEM_READ_REQ of the word past the window", t.rmemReadReq(p, t.RID(), uint32(end+3)&^3), wire.CauseInvalid)
				t.ErrorRsp("RMEM_WRITE_REQ of the word past the window", t.rmemWriteReq(p, t.RID(), uint32(end+3)&^3, 1, 1), wire.CauseInvalid)
				checked = true
			}
			if !checked {
				t.Skipf("the rmem peer's window is the whole address space")
			}
		}},
	{sec: "cmd", Needs: []string{KeyPeerDMARead},
		Rule: "Validate Address + Length with a widened calculation, checking overflow and the entire permitted window.",
		run: func(t *T) {
			p := t.Peer(ModeDMARead)
			t.ErrorRsp("DMA_READ_REQ of 8 bytes at 0xfffffffc (wraps past 2^32)", t.dmaReadReq(p, t.RID(), 0xFFFFFFFC, 8), wire.CauseInvalid)
			t.ErrorRsp("DMA_READ_REQ of 0xffffffff bytes at 1", t.dmaReadReq(p, t.RID(), 1, 0xFFFFFFFF), wire.CauseOverflow)
			if end := p.Window.End(); end < 1<<32 && end >= 2 {
				t.ErrorRsp("DMA_READ_REQ straddling the window's end", t.dmaReadReq(p, t.RID(), uint32(end-2), 4), wire.CauseInvalid)
			}
			if p.Window.Base >= 2 {
				t.ErrorRsp("DMA_READ_REQ straddling the window's base", t.dmaReadReq(p, t.RID(), p.Window.Base-2, 4), wire.CauseInvalid)
			}
		}},
	{sec: "cmd", Needs: []string{KeyPeerDMAWrite},
		Rule: "Validate Address + Length with a widened calculation, checking overflow and the entire permitted window.",
		run: func(t *T) {
			p := t.Peer(ModeDMAWrite)
			t.ErrorRsp("DMA_WRITE_REQ of 8 bytes at 0xfffffffc (wraps past 2^32)", t.dmaWriteReq(p, t.RID(), 0xFFFFFFFC, t.pattern(8)), wire.CauseInvalid)
			if end := p.Window.End(); end < 1<<32 && end >= 2 {
				t.ErrorRsp("DMA_WRITE_REQ straddling the window's end", t.dmaWriteReq(p, t.RID(), uint32(end-2), t.pattern(4)), wire.CauseInvalid)
			}
		}},
	{sec: "cmd", Needs: []string{KeyPeerDMARead, KeyPeerDMAWrite},
		Rule: "Bulk lengths must be positive.",
		run: func(t *T) {
			r := t.Peer(ModeDMARead)
			w := t.Peer(ModeDMAWrite)
			t.ErrorRsp("DMA_READ_REQ of Length 0", t.dmaReadReq(r, t.RID(), t.scratch(r, 4, 4), 0), wire.CauseInvalid)
			t.ErrorRsp("DMA_WRITE_REQ of Length 0", t.dmaWriteReq(w, t.RID(), t.scratch(w, 4, 4), nil), wire.CauseInvalid)
		}},
	onScratch("cmd", rmem, ModeRMEM, 8,
		"Bulk DMA supports unaligned ranges; RMEM remains word aligned.",
		func(t *T, p Peer, a uint32) {
			for _, off := range []uint32{1, 2, 3} {
				t.ErrorRsp(fmt.Sprintf("RMEM_READ_REQ at %#08x (unaligned)", a+off), t.rmemReadReq(p, t.RID(), a+off), wire.CauseInvalid)
			}
			t.ErrorRsp(fmt.Sprintf("RMEM_WRITE_REQ at %#08x (unaligned)", a+2), t.rmemWriteReq(p, t.RID(), a+2, 0xFFFFFFFF, 1), wire.CauseInvalid)
		}),
	onScratch("cmd", []string{KeyPeerDMAWrite}, ModeDMAWrite, 16,
		"Bulk DMA supports unaligned ranges; RMEM remains word aligned.",
		func(t *T, p Peer, a uint32) {
			t.writeBack(a, make([]byte, 16))
			data := t.pattern(7)
			t.dmaWrite(p, a+3, data)
			got, ok := t.readBack(a, 16)
			if !ok {
				t.Notef("memory not read back: no dma-read or rmem peer can read %#08x", a)
				return
			}
			want := append(append(make([]byte, 3), data...), make([]byte, 6)...)
			if !bytes.Equal(got, want) {
				t.Errorf("after a 7-byte DMA write at %#08x memory from %#08x holds % x, want % x", a+3, a, got, want)
			}
			if r, ok := t.DUT().peer(ModeDMARead); ok && r.Window.Contains(a+3, 7) {
				if got := t.dmaRead(r, a+3, 7); !bytes.Equal(got, data) {
					t.Errorf("an unaligned DMA read at %#08x returns % x, want % x", a+3, got, data)
				}
			}
		}),
	onScratch("access", rmem, ModeRMEM, 8,
		"Bulk payload transfer starts without waiting for the complete Ethernet frame. Count and check framing and payload length while receiving data.",
		func(t *T, p Peer, a uint32) {
			req := t.dmaWriteReq(p, t.RID(), a, t.pattern(8))
			req[len(req)-1] = 0
			t.ErrorRsp("DMA_WRITE_REQ with a bad EndOfData from the rmem peer (mode is checked before framing)", req, wire.CauseInvalid)
		}),
	{sec: "access", Needs: []string{KeyPeerDMAWrite},
		Rule: "Bulk payload transfer starts without waiting for the complete Ethernet frame. Count and check framing and payload length while receiving data.",
		run: func(t *T) {
			p := t.Peer(ModeDMAWrite)
			req := frameOf(t.Target(), p.MAC, byte(wire.DMAWriteReq), []uint32{t.RID(), t.scratch(p, 4, 4), 0}, 0, 0, 0, 0)
			t.ErrorRsp("DMA_WRITE_REQ of Length 0 with a bad EndOfData (Length is checked before framing)", req, wire.CauseInvalid)
			if end := p.Window.End(); end < 1<<32 {
				bad := t.dmaWriteReq(p, t.RID(), uint32(end-4)&^3, t.pattern(8))
				bad[len(bad)-1] = 0
				// A streaming receiver meets the bad EndOfData after it
				// admitted the request: the openENOC RTL's late framing
				// result replaces the window's cause.
				t.ErrorRspOr("DMA_WRITE_REQ past the window with a bad EndOfData (the window is checked before framing)", bad, wire.CauseInvalid,
					map[uint32]string{wire.CauseLength: "late framing cause 2 replaces the window's cause 1"})
			}
		}},
	onScratch("access", []string{KeyPeerDMAWrite, KeyMaxFrame}, ModeDMAWrite, 4,
		"Bulk payload transfer starts without waiting for the complete Ethernet frame. Count and check framing and payload length while receiving data.",
		func(t *T, p Peer, a uint32) {
			n := wire.FragmentCeiling(t.DUT().MaxFrame) + 4
			req := padTo(frameOf(t.Target(), p.MAC, byte(wire.DMAWriteReq), []uint32{t.RID(), a, n}, t.pattern(16)...), 60, 0)
			t.ErrorRsp(fmt.Sprintf("DMA_WRITE_REQ of Length %d (ceiling + 4) in a 60-byte frame", n), req, wire.CauseOverflow)
		}),

	// Transactions and access policy.
	onScratch("txn", rmem, ModeRMEM, 4,
		"A reply must match an outstanding context’s source MAC, Request ID, and expected response command. It cannot create a memory operation itself. Discard unmatched/late replies.",
		func(t *T, p Peer, a uint32) {
			dst, src := t.Target(), p.MAC
			t.writeWord(p, a, 0x1234ABCD)
			t.None("unsolicited RMEM_READ_RSP", wire.AppendRMEMReadRsp(nil, dst, src, t.RID(), 7))
			t.None("unsolicited RMEM_WRITE_RSP", wire.AppendRMEMWriteRsp(nil, dst, src, t.RID()))
			t.None("unsolicited DMA_WRITE_RSP", wire.AppendDMAWriteRsp(nil, dst, src, t.RID()))
			t.None("unsolicited DMA_READ_RSP", wire.AppendDMAReadRsp(nil, dst, src, t.RID(), []byte{1, 2, 3, 4}))
			t.None("RMEM_READ_RSP with a bad length", append(wire.AppendRMEMReadRsp(nil, dst, src, t.RID(), 7), 0))
			t.wantWord(p, a, 0x1234ABCD, "unsolicited responses changed memory")
		}),
	{sec: "txn", Needs: rmem,
		Rule: "An ERROR_RSP is never answered with another ERROR_RSP.",
		run: func(t *T) {
			p := t.Peer(ModeRMEM)
			dst, src := t.Target(), p.MAC
			for _, cause := range []uint32{1, 2, 7, 0, 8, 0xFFFFFFFF} {
				t.None(fmt.Sprintf("ERROR_RSP with cause %d", cause), wire.AppendErrorRsp(nil, dst, src, t.RID(), cause))
			}
			t.None("ERROR_RSP with a trailing byte", append(wire.AppendErrorRsp(nil, dst, src, t.RID(), 1), 0))
			if !t.r.o.LinkPads {
				t.None("ERROR_RSP cut to 22 bytes", wire.AppendErrorRsp(nil, dst, src, t.RID(), 1)[:22])
			}
		}},
	{sec: "cmd", Needs: []string{KeyPeerDMARead},
		Rule: "A received read is answered with the exact requested Length and is not split into additional replies.",
		run: func(t *T) {
			p := t.Peer(ModeDMARead)
			n := uint32(4096)
			if t.DUT().MaxFrame != 0 {
				n = min(n, wire.FragmentCeiling(t.DUT().MaxFrame))
			}
			for wire.FrameLen(wire.DMAReadRsp, n) > t.LinkMax() {
				n /= 2
			}
			n -= 3 // not a whole number of words
			a := t.scratch(p, uint64(n), 4)
			data := t.pattern(int(n))
			wrote := t.writeBack(a, data)
			if got := t.dmaRead(p, a, n); wrote && !bytes.Equal(got, data) {
				t.Errorf("a DMA read of %d bytes returned different bytes than were written", n)
			}
		}},
	onScratch("param", rmem, ModeRMEM, 4,
		"Each RMEM operation or DMA fragment receives an ID; any unicast reply echoes it.",
		func(t *T, p Peer, a uint32) {
			for _, rid := range []uint32{0, 0xFFFFFFFF, 0x80000000, 0x000000FF, 0x12345678} {
				t.Reply(fmt.Sprintf("RMEM_READ_REQ with Request ID %#08x", rid), t.rmemReadReq(p, rid, a), wire.RMEMReadRsp, wire.RMEMReadRspPDULen)
			}
		}),
	onScratch("txn", rmem, ModeRMEM, 4,
		"A success response implies that the entire requested operation succeeded; there is no success Status or transferred-length parameter.",
		func(t *T, p Peer, a uint32) {
			t.writeWord(p, a, 0x00C0FFEE) // the reply means the word is written:
			t.wantWord(p, a, 0x00C0FFEE, "the word read right after RMEM_WRITE_RSP")
		}),
	onScratch("rid", rmem, ModeRMEM, 4,
		"Version 1 adds no session/epoch parameter or duplicate-request suppression.",
		func(t *T, p Peer, a uint32) {
			rid := t.RID()
			t.Reply("RMEM_READ_REQ", t.rmemReadReq(p, rid, a), wire.RMEMReadRsp, wire.RMEMReadRspPDULen)
			t.Reply("the same RMEM_READ_REQ again, same Request ID", t.rmemReadReq(p, rid, a), wire.RMEMReadRsp, wire.RMEMReadRspPDULen)
		}),

	// Error origin and CSR status: bus errors.
	rmemBusErrorCase(KeySlvErr, "SLVERR", func(d *DUT) []Range { return d.SlvErr }),
	rmemBusErrorCase(KeyDecErr, "DECERR", func(d *DUT) []Range { return d.DecErr }),
	{sec: "error", Needs: []string{KeyPeerDMARead, KeySlvErr, KeyDecErr},
		Rule: "Local CSR codes 4/5 denote AXI read SLVERR/DECERR; codes 6/7 denote AXI write SLVERR/DECERR.",
		run: func(t *T) {
			p := t.Peer(ModeDMARead)
			s, d := t.busErrors(p, 8)
			t.readErrorRsp("DMA_READ_REQ of SLVERR memory", t.dmaReadReq(p, t.RID(), s, 8), wire.CauseAXIRdSlverr)
			t.readErrorRsp("DMA_READ_REQ of DECERR memory", t.dmaReadReq(p, t.RID(), d, 8), wire.CauseAXIRdDecerr)
		}},
	{sec: "error", Needs: []string{KeyPeerDMAWrite, KeySlvErr, KeyDecErr},
		Rule: "Local CSR codes 4/5 denote AXI read SLVERR/DECERR; codes 6/7 denote AXI write SLVERR/DECERR.",
		run: func(t *T) {
			p := t.Peer(ModeDMAWrite)
			s, d := t.busErrors(p, 8)
			t.ErrorRsp("DMA_WRITE_REQ to SLVERR memory", t.dmaWriteReq(p, t.RID(), s, t.pattern(8)), wire.CauseAXIWrSlverr)
			t.ErrorRsp("DMA_WRITE_REQ to DECERR memory", t.dmaWriteReq(p, t.RID(), d, t.pattern(8)), wire.CauseAXIWrDecerr)
		}},
	{sec: "error", Needs: []string{KeyPeerDMAWrite, KeySlvErr, KeyDecErr},
		Rule: "The current DMA engine records local and completion-path errors separately and gives a fragment’s local memory error precedence when both are present.",
		run: func(t *T) {
			p := t.Peer(ModeDMAWrite)
			s, d := t.busErrors(p, 40)
			for _, c := range []struct {
				what  string
				addr  uint32
				cause uint32
			}{{"SLVERR", s, wire.CauseAXIWrSlverr}, {"DECERR", d, wire.CauseAXIWrDecerr}} {
				bad := t.dmaWriteReq(p, t.RID(), c.addr, t.pattern(40))
				bad[len(bad)-2] = 0
				t.ErrorRsp("DMA_WRITE_REQ with a bad EndOfData to "+c.what+" memory", bad, c.cause)
				extra := append(t.dmaWriteReq(p, t.RID(), c.addr, t.pattern(40)), 0, 0, 0, 0)
				t.ErrorRsp("DMA_WRITE_REQ with a word after EndOfData to "+c.what+" memory", extra, c.cause)
			}
		}},
	// Cause precedence when a request has several faults: the
	// specification lists the checks but not which cause wins; the
	// openENOC RTL's lookup checks (mode, alignment, Length 0: cause 1)
	// come before the Length ceiling (3), framing (2) and the window (1).
	{sec: "access", Needs: []string{KeyPeerRMEM, KeyPeerDMAWrite, KeyPeerDMARead},
		Rule: "Before local memory access, check the decoded command layout, destination, source peer policy, alignment, and the entire address range.",
		run: func(t *T) {
			r, w, d := t.Peer(ModeRMEM), t.Peer(ModeDMAWrite), t.Peer(ModeDMARead)
			const framing = "framing checked before the peer mode, alignment or Length"
			v2 := map[uint32]string{wire.CauseLength: framing}
			bad := func(f []byte) []byte { return padTo(f, 61, 0) } // 61 bytes: neither exact nor padded
			t.ErrorRspOr("61-byte RMEM_READ_REQ from the dma-write peer", bad(t.rmemReadReq(w, t.RID(), t.scratch(w, 4, 4))), wire.CauseInvalid, v2)
			t.ErrorRspOr("61-byte unaligned RMEM_WRITE_REQ from the rmem peer", bad(t.rmemWriteReq(r, t.RID(), t.scratch(r, 8, 4)+2, 1, 1)), wire.CauseInvalid, v2)
			t.ErrorRspOr("61-byte DMA_READ_REQ of Length 0", bad(t.dmaReadReq(d, t.RID(), t.scratch(d, 4, 4), 0)), wire.CauseInvalid, v2)
			if t.DUT().MaxFrame != 0 {
				ceil := wire.FragmentCeiling(t.DUT().MaxFrame)
				t.ErrorRspOr(fmt.Sprintf("61-byte DMA_READ_REQ of Length %d (ceiling + 4)", ceil+4), bad(t.dmaReadReq(d, t.RID(), t.scratch(d, 4, 4), ceil+4)), wire.CauseOverflow, v2)
			}
			if end := r.Window.End(); end+4 <= 1<<32 {
				t.ErrorRspOr("61-byte RMEM_READ_REQ past the window", bad(t.rmemReadReq(r, t.RID(), uint32(end+3)&^3)), wire.CauseLength,
					map[uint32]string{wire.CauseInvalid: "window checked before framing"})
			}
		}},
	// A source MAC with the group bit set is no peer.
	onScratch("addr", rmem, ModeRMEM, 4,
		"An Ethernet source address has its group bit clear; see IEEE 802.3 address-field definition, Section 3.2.3.",
		func(t *T, p Peer, a uint32) {
			t.writeWord(p, a, 0x6E6E0001)
			g := p
			g.MAC[0] |= 1
			t.None("RMEM_READ_REQ from the rmem peer's MAC with the group bit set", t.rmemReadReq(g, t.RID(), a))
			t.None("RMEM_WRITE_REQ from the rmem peer's MAC with the group bit set", t.rmemWriteReq(g, t.RID(), a, 0xFFFFFFFF, 0x0BADBAD0))
			t.wantWord(p, a, 0x6E6E0001, "a request from a group source changed memory")
		}),
	// A frame that ends before a whole Request ID.
	{sec: "access", Needs: []string{KeyPeerRMEM, KeyShortFrames},
		Rule: "Recognized unicast requests from known peers with a trustworthy Request ID receive ERROR_RSP when command, length, or access validation fails, including an operation prohibited by that peer’s mode. A group write never receives an error reply. Unparseable frames are discarded.",
		run: func(t *T) {
			p := t.Peer(ModeRMEM)
			full := t.rmemReadReq(p, t.RID(), t.scratch(p, 4, 4))
			for _, n := range []int{16, 17, 19} {
				t.None(fmt.Sprintf("RMEM_READ_REQ cut to %d bytes (Request ID incomplete)", n), full[:n])
			}
			w := t.rmemWriteReq(p, t.RID(), t.scratch(p, 4, 4), 1, 1)
			t.None("RMEM_WRITE_REQ cut to 18 bytes", w[:18])
		}},
	// A request that arrives while the responder serves another.
	{sec: "seq", Needs: []string{KeyPeerRMEM, KeyPeerDMAWrite},
		Rule: "If no responder context is available when a new incoming request is classified, discard that request and drain its frame through TLAST without issuing memory work or a response.",
		run: func(t *T) {
			w, r := t.Peer(ModeDMAWrite), t.Peer(ModeRMEM)
			n := uint64(1024)
			if t.DUT().MaxFrame != 0 {
				n = uint64(wire.FragmentCeiling(t.DUT().MaxFrame))
			}
			for n > 4 && !t.hasScratch(w.Window, n, 4) {
				n /= 2
			}
			a := t.scratch(w, n, 4)
			b := t.scratch(r, 4, 4)
			t.writeWord(r, b, 0x5B5B0001)
			first := t.dmaWriteReq(w, t.RID(), a, t.pattern(int(n)))
			second := t.rmemReadReq(r, t.RID(), b)
			got := t.Exchange(first, second)
			var firstOK, secondOK bool
			for _, f := range got {
				switch {
				case isReplyTo(f, w.MAC, wire.Frame(first).RequestID()):
					t.checkReply("DMA_WRITE_REQ", f, w.MAC, wire.Frame(first).RequestID(), wire.DMAWriteRsp, 6)
					firstOK = true
				case isReplyTo(f, r.MAC, wire.Frame(second).RequestID()):
					t.checkReply("RMEM_READ_REQ sent right behind it", f, r.MAC, wire.Frame(second).RequestID(), wire.RMEMReadRsp, 10)
					if d := wire.Frame(f).Data(); d != 0x5B5B0001 {
						t.Errorf("RMEM_READ_RSP data %#08x, want 0x5b5b0001", d)
					}
					secondOK = true
				default:
					t.Errorf("unexpected %s", describe(f))
				}
			}
			switch {
			case !firstOK:
				t.Errorf("no DMA_WRITE_RSP to a %d-byte DMA_WRITE_REQ", n)
			case !secondOK:
				t.Variant("busy responder drops a request that arrives while it serves another")
			default:
				t.Notef("the device served a request sent right behind a %d-byte DMA write (it queues, or was free)", n)
			}
		}},
	// Several entries with one MAC: the lowest enabled index serves it.
	{sec: "access", Needs: []string{KeyDuplicatePeer},
		Rule: "Validate responder addresses against the local window associated with the source peer.",
		run: func(t *T) {
			low, high, undo := t.duplicatePeer()
			defer undo()
			a := t.scratch(low, 8, 4)
			t.ErrorRsp(fmt.Sprintf("%s request from %v, whose lowest enabled entry is mode %s and a higher one mode %s", high.Mode.request(), low.MAC, low.Mode, high.Mode),
				t.requestFor(high, a), wire.CauseInvalid)
			t.Reply(fmt.Sprintf("%s request from %v (its lowest enabled entry's mode)", low.Mode.request(), low.MAC), t.requestFor(low, a), low.Mode.reply(), low.Mode.replyPDU())
		}},
}
