package wire_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/wiretest"
)

// regen is the command that rewrites the golden files from the encoders.
const regen = "go test ./wire -run Golden -update"

var update = flag.Bool("update", false, "rewrite testdata/vectors.json and testdata/vectors.pcap from the encoders")

const vectorsJSON = "testdata/vectors.json"

// Documentation MAC addresses: local unicast 02:0e:0c:xx, local group 03:0e:0c:xx.
var (
	macA = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0x0a} // endpoint A (local)
	macB = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0x0b} // endpoint B (remote)
	macG = wire.MAC{0x03, 0x0e, 0x0c, 0x00, 0x00, 0x01} // the group both join
)

// vector is one entry of testdata/vectors.json (see testdata/README.md)
// and fields its decoded frame fields: the schema lives in wiretest, where
// the command's frame description reads the same file.
type (
	vector = wiretest.Vector
	fields = wiretest.Fields
)

func ptr[T any](v T) *T { return &v }

// Test-local vocabularies, written out independently of the package so the
// golden file checks the package rather than echoing it.
var (
	problemTokens = map[wire.Problem]string{
		wire.OK: "ok", wire.ProblemRunt: "runt", wire.ProblemReservedCmd: "reserved_cmd",
		wire.ProblemNoRequestID: "no_request_id", wire.ProblemTooLong: "too_long",
		wire.ProblemLength: "length", wire.ProblemEndOfData: "end_of_data",
	}
	// causeOf is the ERROR_RSP wire cause a unicast responder sends for a
	// request with the problem.
	causeOf = map[string]uint32{"ok": 0, "too_long": 3, "length": 2, "end_of_data": 2}
	// remoteNames maps wire causes 1..7 to the initiator's CSR mnemonic.
	remoteNames = map[uint32]string{1: "REMOTE_INVALID", 2: "REMOTE_AXIS", 3: "REMOTE_OVERFLOW",
		4: "REMOTE_AXI_RD_SLVERR", 5: "REMOTE_AXI_RD_DECERR", 6: "REMOTE_AXI_WR_SLVERR", 7: "REMOTE_AXI_WR_DECERR"}
	cmdNames = map[wire.Cmd]string{0x10: "RMEM_READ_REQ", 0x11: "RMEM_READ_RSP", 0x20: "RMEM_WRITE_REQ",
		0x21: "RMEM_WRITE_RSP", 0x30: "DMA_READ_REQ", 0x31: "DMA_READ_RSP", 0x40: "DMA_WRITE_REQ",
		0x41: "DMA_WRITE_RSP", 0xFF: "ERROR_RSP"}
)

func errorName(cause uint32) string {
	if n, ok := remoteNames[cause]; ok {
		return n
	}
	return "LOCAL_INVALID"
}

// msg is one frame's content: the encoder inputs and the expected decode.
type msg struct {
	cmd                         wire.Cmd
	dst, src                    wire.MAC
	rid, addr, length, mask, dt uint32
	cause                       uint32
	payload                     []byte
}

func (m msg) encode() []byte {
	b := make([]byte, 0, wire.MaxFrameLen)
	switch m.cmd {
	case wire.RMEMReadReq:
		return wire.AppendRMEMReadReq(b, m.dst, m.src, m.rid, m.addr)
	case wire.RMEMReadRsp:
		return wire.AppendRMEMReadRsp(b, m.dst, m.src, m.rid, m.dt)
	case wire.RMEMWriteReq:
		return wire.AppendRMEMWriteReq(b, m.dst, m.src, m.rid, m.addr, m.mask, m.dt)
	case wire.RMEMWriteRsp:
		return wire.AppendRMEMWriteRsp(b, m.dst, m.src, m.rid)
	case wire.DMAReadReq:
		return wire.AppendDMAReadReq(b, m.dst, m.src, m.rid, m.addr, m.length)
	case wire.DMAReadRsp:
		return wire.AppendDMAReadRsp(b, m.dst, m.src, m.rid, m.payload)
	case wire.DMAWriteReq:
		return wire.AppendDMAWriteReq(b, m.dst, m.src, m.rid, m.addr, m.payload)
	case wire.DMAWriteRsp:
		return wire.AppendDMAWriteRsp(b, m.dst, m.src, m.rid)
	case wire.ErrorRsp:
		return wire.AppendErrorRsp(b, m.dst, m.src, m.rid, m.cause)
	}
	panic("msg.encode: unassigned command " + m.cmd.String())
}

// fields returns every field of m's command. For DMA_WRITE_REQ, length is the
// Length parameter (normally len(payload)).
func (m msg) fields() fields {
	f := fields{Dst: m.dst.String(), Src: m.src.String(), Group: ptr(m.dst[0]&1 == 1), RequestID: ptr(m.rid)}
	switch m.cmd {
	case wire.RMEMReadReq:
		f.Address = ptr(m.addr)
	case wire.RMEMReadRsp:
		f.Data = ptr(m.dt)
	case wire.RMEMWriteReq:
		f.Address, f.BitEnable, f.Data = ptr(m.addr), ptr(m.mask), ptr(m.dt)
	case wire.DMAReadReq:
		f.Address, f.Length = ptr(m.addr), ptr(m.length)
	case wire.DMAWriteReq:
		f.Address, f.Length = ptr(m.addr), ptr(m.length)
		f.PayloadHex, f.EndOfDataOK = ptr(hex.EncodeToString(m.payload)), ptr(true)
	case wire.DMAReadRsp:
		f.PayloadHex, f.EndOfDataOK = ptr(hex.EncodeToString(m.payload)), ptr(true)
	case wire.ErrorRsp:
		f.ErrorCode, f.Error = ptr(m.cause), errorName(m.cause)
	}
	return f
}

// Parameter frame offsets, per command, straight from the command layout
// table (parameter i at 16 + 4(i-1)).
const (
	offRID    = 16
	offParam2 = 20
	offParam3 = 24
	offParam4 = 28
)

// visible keeps the fields a frame of n bytes carries completely; bulk says
// whether payload and end_of_data_ok are meaningful (the frame length fits
// the Length).
func visible(f fields, cmd wire.Cmd, n int, bulk bool) fields {
	in := func(off int) bool { return off+4 <= n }
	if !in(offRID) {
		f.RequestID = nil
	}
	if !in(offParam2) {
		f.Address, f.ErrorCode, f.Error = nil, nil, ""
		if cmd == wire.RMEMReadRsp {
			f.Data = nil
		}
	}
	if !in(offParam3) {
		f.Length, f.BitEnable = nil, nil
	}
	if !in(offParam4) && cmd == wire.RMEMWriteReq {
		f.Data = nil
	}
	if !bulk {
		f.PayloadHex, f.EndOfDataOK = nil, nil
	}
	return f
}

// pattern returns n deterministic bytes that differ from each other and from
// the padding value zero in most positions.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) + seed
	}
	return b
}

// pad returns frame extended with fill bytes to 60 bytes, as an Ethernet MAC
// pads a short frame.
func pad(frame []byte, fill byte) []byte {
	out := bytes.Clone(frame)
	for len(out) < wire.MinFrameLen {
		out = append(out, fill)
	}
	return out
}

func put32(frame []byte, off int, v uint32) []byte {
	out := bytes.Clone(frame)
	binary.LittleEndian.PutUint32(out[off:], v)
	return out
}

func rawFrame(dst, src wire.MAC, etherType uint16, payload []byte) []byte {
	b := append(append(dst[:0:0], dst[:]...), src[:]...)
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

// Builders for the spec's worked examples and the other messages.
func rmemReadReq(dst, src wire.MAC, rid, addr uint32) msg {
	return msg{cmd: wire.RMEMReadReq, dst: dst, src: src, rid: rid, addr: addr}
}
func rmemReadRsp(dst, src wire.MAC, rid, data uint32) msg {
	return msg{cmd: wire.RMEMReadRsp, dst: dst, src: src, rid: rid, dt: data}
}
func rmemWriteReq(dst, src wire.MAC, rid, addr, mask, data uint32) msg {
	return msg{cmd: wire.RMEMWriteReq, dst: dst, src: src, rid: rid, addr: addr, mask: mask, dt: data}
}
func rmemWriteRsp(dst, src wire.MAC, rid uint32) msg {
	return msg{cmd: wire.RMEMWriteRsp, dst: dst, src: src, rid: rid}
}
func dmaReadReq(dst, src wire.MAC, rid, addr, length uint32) msg {
	return msg{cmd: wire.DMAReadReq, dst: dst, src: src, rid: rid, addr: addr, length: length}
}
func dmaReadRsp(dst, src wire.MAC, rid uint32, payload []byte) msg {
	return msg{cmd: wire.DMAReadRsp, dst: dst, src: src, rid: rid, length: uint32(len(payload)), payload: payload}
}
func dmaWriteReq(dst, src wire.MAC, rid, addr uint32, payload []byte) msg {
	return msg{cmd: wire.DMAWriteReq, dst: dst, src: src, rid: rid, addr: addr, length: uint32(len(payload)), payload: payload}
}
func dmaWriteRsp(dst, src wire.MAC, rid uint32) msg {
	return msg{cmd: wire.DMAWriteRsp, dst: dst, src: src, rid: rid}
}
func errorRsp(dst, src wire.MAC, rid, cause uint32) msg {
	return msg{cmd: wire.ErrorRsp, dst: dst, src: src, rid: rid, cause: cause}
}

// vectorSet accumulates vectors in file order.
type vectorSet []vector

// oetp adds an oETP frame built from m and possibly altered afterwards.
// kind is "request", "response" or "drop"; problem a problemTokens value.
// expect is the DMA_READ_RSP expected length (nil otherwise); maxFrame 0
// means 8192.
func (s *vectorSet) oetp(name, desc string, m msg, frame []byte, problem string, maxFrame int, expect *uint32) {
	kind := "response"
	if m.cmd.IsRequest() {
		kind = "request"
	}
	bulk := problem == "ok" || problem == "end_of_data"
	if m.cmd == wire.DMAReadRsp && expect == nil {
		bulk = false
	}
	v := vector{Name: name, Description: desc, Kind: kind, Cmd: cmdNames[m.cmd], CmdCode: ptr(int(m.cmd)),
		Problem: problem, MaxFrame: maxFrame, ExpectLength: expect,
		Fields: visible(m.fields(), m.cmd, len(frame), bulk)}
	if problem == "end_of_data" {
		v.Fields.EndOfDataOK = ptr(false)
	}
	if kind == "request" {
		c, ok := causeOf[problem]
		if !ok {
			panic("no cause for problem " + problem)
		}
		v.Cause = ptr(c)
	}
	s.add(v, frame)
}

// good adds m exactly as the encoder produces it; it must decode cleanly.
func (s *vectorSet) good(name, desc string, m msg) {
	var expect *uint32
	if m.cmd == wire.DMAReadRsp {
		expect = ptr(uint32(len(m.payload)))
	}
	s.oetp(name, desc, m, m.encode(), "ok", 0, expect)
}

// other adds a frame that is not an accepted oETP frame: a runt, a raw
// frame, or a dropped one (with its Cmd octet, if any).
func (s *vectorSet) other(name, desc string, frame []byte, kind, problem string) {
	v := vector{Name: name, Description: desc, Kind: kind, Problem: problem}
	if len(frame) >= 14 {
		v.Fields = fields{Dst: wire.MAC(frame[0:6]).String(), Src: wire.MAC(frame[6:12]).String(), Group: ptr(frame[0]&1 == 1)}
	}
	if kind == "raw" {
		v.Fields.EtherType = ptr(int(binary.BigEndian.Uint16(frame[12:14])))
	}
	if kind == "drop" && len(frame) >= 16 {
		c := wire.Cmd(frame[15])
		v.CmdCode = ptr(int(c))
		if n, ok := cmdNames[c]; ok {
			v.Cmd = n
		} else {
			v.Cmd = fmt.Sprintf("RESERVED(0x%02X)", frame[15])
		}
	}
	s.add(v, frame)
}

func (s *vectorSet) add(v vector, frame []byte) {
	for _, o := range *s {
		if o.Name == v.Name {
			panic("duplicate vector name " + v.Name)
		}
	}
	if v.MaxFrame == 0 {
		v.MaxFrame = wire.MaxFrameLen
	}
	v.FrameHex, v.FrameLen = hex.EncodeToString(frame), len(frame)
	*s = append(*s, v)
}

// buildVectors returns the golden vectors, built with the encoders.
func buildVectors() []vector {
	var s vectorSet

	// The specification's worked examples, with their exact lengths.
	s.good("spec_rmem_read_req", "Worked example: RMEM read request A->B, 24 bytes (RID0, A0).",
		rmemReadReq(macB, macA, 0x11223344, 0x00001000))
	s.good("spec_rmem_read_rsp", "Worked example: successful RMEM read response B->A, 24 bytes (RID0, D0).",
		rmemReadRsp(macA, macB, 0x11223344, 0xCAFEF00D))
	s.good("spec_rmem_write_req_unicast", "Worked example: RMEM write request B->A to A's unicast MAC, 32 bytes, BitEnable M0 = 0x0000000F (bits 3:0).",
		rmemWriteReq(macA, macB, 0x00000010, 0x00000040, 0x0000000F, 0x12345678))
	s.good("spec_rmem_write_req_group", "Worked example: RMEM write request B->group, 32 bytes, BitEnable M1 = 0xFFFFFFFF; the responder sends no reply.",
		rmemWriteReq(macG, macB, 0x00000011, 0x00000044, 0xFFFFFFFF, 0x9ABCDEF0))
	s.good("spec_rmem_write_rsp", "Worked example: RMEM write response A->B for the unicast write, 20 bytes (RID0).",
		rmemWriteRsp(macB, macA, 0x00000010))
	s.good("spec_dma_write_req_len5", "Worked example: five-byte DMA write A->B, 40 bytes: D0, low byte of D1 and three zero padding bytes, EndOfData D0 E0 D0 E0.",
		dmaWriteReq(macB, macA, 0x00000020, 0x00002000, []byte{0xA0, 0xA1, 0xA2, 0xA3, 0xA4}))
	s.good("spec_dma_read_req_len5", "Worked example: DMA read request A->B for five bytes, 28 bytes.",
		dmaReadReq(macB, macA, 0x00000021, 0x00003000, 5))
	{
		m := dmaReadRsp(macA, macB, 0x00000021, []byte{0xB0, 0xB1, 0xB2, 0xB3, 0xB4})
		s.oetp("spec_dma_read_rsp_bad_trailer", "Worked example: 32-byte DMA read response for expected length 5 whose trailer DB7 = D2 = 0xDEADBEEF is not EndOfData: five bytes delivered, then REMOTE_AXIS (10).",
			m, put32(m.encode(), 28, 0xDEADBEEF), "end_of_data", 0, ptr(uint32(5)))
	}
	s.good("spec_error_rsp_axi_wr_slverr", "Worked example: ERROR_RSP B->A with wire Error Code 6 (B's local write SLVERR); A records REMOTE_AXI_WR_SLVERR (14).",
		errorRsp(macA, macB, 0x00000020, 6))

	// Every command; the DMA commands at lengths 1, 3, 4, 5 and 8160.
	s.good("dma_write_rsp", "DMA_WRITE_RSP, 20 bytes.", dmaWriteRsp(macA, macB, 0x00000020))
	for i, n := range []uint32{1, 3, 4, 5, 8160} {
		rid := 0x100 + uint32(i)
		s.good(fmt.Sprintf("dma_read_req_len%d", n), fmt.Sprintf("DMA_READ_REQ for %d bytes at an unaligned address, 28 bytes.", n),
			dmaReadReq(macB, macA, rid, 0x00004001, n))
		p := pattern(int(n), 0x40+byte(i))
		s.good(fmt.Sprintf("dma_read_rsp_len%d", n), fmt.Sprintf("DMA_READ_RSP carrying %d bytes, %d bytes: 24 + 4*ceil(%d/4).", n, wire.FrameLen(wire.DMAReadRsp, n), n),
			dmaReadRsp(macA, macB, rid, p))
		s.good(fmt.Sprintf("dma_write_req_len%d", n), fmt.Sprintf("DMA_WRITE_REQ carrying %d bytes, %d bytes: 32 + 4*ceil(%d/4).", n, wire.FrameLen(wire.DMAWriteReq, n), n),
			dmaWriteReq(macB, macA, 0x200+uint32(i), 0x00005003, pattern(int(n), 0x80+byte(i))))
	}
	for i, c := range []uint32{1, 2, 3, 4, 5, 7} {
		s.good(fmt.Sprintf("error_rsp_cause%d", c), fmt.Sprintf("ERROR_RSP with wire cause %d: the initiator records %s (%d).", c, remoteNames[c], 8+c),
			errorRsp(macA, macB, 0x300+uint32(i), c))
	}
	for i, c := range []uint32{0, 8, 0x102, 0xFFFFFFFF} {
		s.good(fmt.Sprintf("error_rsp_invalid_cause_0x%x", c), fmt.Sprintf("ERROR_RSP with wire cause 0x%X, outside 1..7: well framed, but the initiator validates all 32 bits and records LOCAL_INVALID (1), never a truncation and never TIMEOUT.", c),
			errorRsp(macA, macB, 0x310+uint32(i), c))
	}
	s.good("rmem_read_req_group_dst", "RMEM_READ_REQ to a group MAC: well framed (Classify does not look at the destination); an endpoint discards it without a reply.",
		rmemReadReq(macG, macA, 0x400, 0x00000100))
	s.good("dma_write_req_broadcast", "DMA_WRITE_REQ to ff:ff:ff:ff:ff:ff: the I/G bit makes it a group write (no reply).",
		dmaWriteReq(wire.Broadcast, macA, 0x401, 0x00000000, pattern(8, 1)))
	s.good("dma_write_req_eod_in_data", "DMA_WRITE_REQ whose data contains D0 E0 D0 E0 before the end: the marker is only checked at its fixed position.",
		dmaWriteReq(macB, macA, 0x402, 0x00006000, []byte{1, 2, 3, 4, 0xD0, 0xE0, 0xD0, 0xE0, 5, 6, 7, 8}))
	{
		m := dmaWriteReq(macB, macA, 0x403, 0x00006000, nil)
		s.oetp("dma_write_req_len0", "DMA_WRITE_REQ with Length 0, 32 bytes: well framed; the responder rejects the zero length (cause 1) after the peer checks.",
			m, m.encode(), "ok", 0, nil)
	}

	// Ethernet padding (a MAC pads to 60 bytes) and unpadded on-chip frames.
	padded := []struct {
		name string
		m    msg
	}{
		{"rmem_read_req", rmemReadReq(macB, macA, 0x500, 0x00000200)},
		{"rmem_read_rsp", rmemReadRsp(macA, macB, 0x500, 0x01020304)},
		{"rmem_write_req", rmemWriteReq(macB, macA, 0x501, 0x00000204, 0x00000005, 0xFFFFFFFF)},
		{"rmem_write_rsp", rmemWriteRsp(macA, macB, 0x501)},
		{"dma_read_req", dmaReadReq(macB, macA, 0x502, 0x00000300, 3)},
		{"dma_read_rsp_len5", dmaReadRsp(macA, macB, 0x502, pattern(5, 0x11))},
		{"dma_write_req_len5", dmaWriteReq(macB, macA, 0x503, 0x00000301, pattern(5, 0x22))},
		{"dma_write_rsp", dmaWriteRsp(macA, macB, 0x503)},
		{"error_rsp", errorRsp(macA, macB, 0x504, 1)},
	}
	for _, p := range padded {
		frame := p.m.encode()
		var expect *uint32
		if p.m.cmd == wire.DMAReadRsp {
			expect = ptr(uint32(len(p.m.payload)))
		}
		s.oetp(p.name+"_padded60", fmt.Sprintf("%s padded by a MAC from %d to 60 bytes with zeros: accepted.", cmdNames[p.m.cmd], len(frame)),
			p.m, pad(frame, 0), "ok", 0, expect)
	}
	{
		m := rmemReadReq(macB, macA, 0x510, 0x00000400)
		s.oetp("rmem_read_req_padded60_nonzero", "RMEM_READ_REQ padded to 60 bytes with 0x55: padding values are ignored.",
			m, pad(m.encode(), 0x55), "ok", 0, nil)
		s.oetp("rmem_read_req_at_max36", "Unpadded 24-byte RMEM_READ_REQ with a 36-byte frame ceiling (on-chip link): accepted.",
			m, m.encode(), "ok", 36, nil)
		s.oetp("rmem_read_req_padded60_at_max36", "The same request padded to 60 bytes with a 36-byte ceiling: the ceiling counts padding, so it is too long (cause 3).",
			m, pad(m.encode(), 0), "too_long", 36, nil)
		w := dmaWriteReq(macB, macA, 0x511, 0x00000404, pattern(4, 0x33))
		s.oetp("dma_write_req_len4_at_max36", "36-byte DMA_WRITE_REQ (the 4-byte fragment ceiling) at a 36-byte frame ceiling: accepted.",
			w, w.encode(), "ok", 36, nil)
		w5 := dmaWriteReq(macB, macA, 0x512, 0x00000408, []byte{0xC0, 0xC1, 0xC2, 0xC3, 0xC4})
		fr := w5.encode()
		fr[33], fr[34], fr[35] = 0xFF, 0xEE, 0xDD // word padding after the fifth byte
		s.oetp("dma_write_req_len5_nonzero_word_padding", "DMA_WRITE_REQ for 5 bytes whose three word-padding bytes are nonzero: ignored on receive; only 5 bytes are payload.",
			w5, fr, "ok", 0, nil)
		r5 := dmaReadRsp(macA, macB, 0x513, []byte{0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA})
		fr = r5.encode()
		fr[26], fr[27] = 0x99, 0x88
		s.oetp("dma_read_rsp_len6_nonzero_word_padding", "DMA_READ_RSP for 6 bytes whose two word-padding bytes are nonzero: ignored on receive.",
			r5, fr, "ok", 0, ptr(uint32(6)))
	}

	// Malformed classes, cheapest first.
	base := rmemReadReq(macB, macA, 0x600, 0x00000500).encode()
	s.other("runt_empty", "Empty frame: runt, dropped.", []byte{}, "runt", "runt")
	s.other("runt_13", "13 bytes, one short of an Ethernet header: runt, dropped.", base[:13], "runt", "runt")
	s.other("raw_88b5_header_only", "14-byte frame with EtherType 0x88B5 and no Magic: not identifiable as oETP, raw policy.", base[:14], "raw", "ok")
	s.other("raw_ipv4", "60-byte IPv4 frame (EtherType 0x0800): raw policy.", rawFrame(macB, macA, 0x0800, pattern(46, 0x45)), "raw", "ok")
	s.other("raw_66_bytes", "66-byte non-oETP frame (EtherType 0x88B6) as in the raw receive example: raw policy, forwarded whole.", rawFrame(macA, macB, 0x88B6, pattern(52, 0x66)), "raw", "ok")
	{
		fr := bytes.Clone(base)
		fr[14] = 0x0F
		s.other("raw_88b5_wrong_magic", "EtherType 0x88B5 with Magic 0x0F: not oETP, raw policy.", fr, "raw", "ok")
	}
	s.other("drop_magic_without_cmd", "15 bytes: 0x88B5 and Magic 0x0E, then the frame ends: malformed oETP, dropped (never raw).", base[:15], "drop", "no_request_id")
	for _, c := range []byte{0x12, 0x01, 0x00, 0x50, 0xFE} {
		fr := bytes.Clone(base)
		fr[15] = c
		s.other(fmt.Sprintf("drop_reserved_cmd_0x%02x", c), fmt.Sprintf("Reserved Cmd 0x%02X in an otherwise well-formed 24-byte frame: dropped without a reply (bit 0 alone never makes a response).", c), fr, "drop", "reserved_cmd")
	}
	s.other("drop_no_request_id_16", "RMEM_READ_REQ header with no parameters (16 bytes): no trustworthy Request ID, dropped without a reply.", base[:16], "drop", "no_request_id")
	s.other("drop_no_request_id_19", "ERROR_RSP cut inside the Request ID (19 bytes): dropped.",
		errorRsp(macA, macB, 0x601, 2).encode()[:19], "drop", "no_request_id")
	{
		m := dmaWriteReq(macB, macA, 0x602, 0x00007000, pattern(8164, 0x77))
		s.oetp("too_long_dma_write_req_8164", "DMA_WRITE_REQ for 8164 bytes, 8196 bytes: over the 8192-byte ceiling, cause 3 (overflow).",
			m, m.encode(), "too_long", 0, nil)
		m = dmaWriteReq(macB, macA, 0x603, 0x00007000, pattern(100, 0x78))
		s.oetp("too_long_at_max60", "132-byte DMA_WRITE_REQ at a 60-byte frame ceiling: cause 3.", m, m.encode(), "too_long", 60, nil)
		r := dmaReadRsp(macA, macB, 0x604, pattern(8172, 0x79))
		s.oetp("too_long_dma_read_rsp_8196", "8196-byte DMA_READ_RSP: over the ceiling before its expected length matters.",
			r, r.encode(), "too_long", 0, ptr(uint32(8172)))
	}
	{
		m := rmemWriteReq(macB, macA, 0x610, 0x00000600, 0x0000FFFF, 0x55AA55AA)
		s.oetp("truncated_rmem_write_req_31", "RMEM_WRITE_REQ missing its last byte (31 bytes): wrong length, cause 2.", m, m.encode()[:31], "length", 0, nil)
		r := rmemReadRsp(macA, macB, 0x611, 0x0BADF00D)
		s.oetp("truncated_rmem_read_rsp_23", "RMEM_READ_RSP missing its last byte (23 bytes): wrong length.", r, r.encode()[:23], "length", 0, nil)
		d := dmaWriteReq(macB, macA, 0x612, 0x00000700, pattern(8, 0x12))
		s.oetp("truncated_dma_write_req_27", "DMA_WRITE_REQ cut inside Length (27 bytes): wrong length, cause 2.", d, d.encode()[:27], "length", 0, nil)
		s.oetp("truncated_dma_write_req_len8_mid_data", "DMA_WRITE_REQ for 8 bytes cut after the first Data word (32 of 40 bytes): wrong length.", d, d.encode()[:32], "length", 0, nil)
		s.oetp("truncated_dma_write_req_len8_no_trailer", "DMA_WRITE_REQ for 8 bytes without EndOfData (36 of 40 bytes): wrong length.", d, d.encode()[:36], "length", 0, nil)
		big := dmaWriteReq(macB, macA, 0x613, 0x00000000, pattern(8160, 0x13))
		s.oetp("truncated_dma_write_req_8160_no_trailer", "DMA_WRITE_REQ for 8160 bytes without EndOfData (8188 bytes): wrong length.", big, big.encode()[:8188], "length", 0, nil)
		w29 := dmaWriteReq(macB, macA, 0x615, 0x00000900, pattern(29, 0x15))
		s.oetp("truncated_dma_write_req_len29_to_60", "DMA_WRITE_REQ for 29 bytes (64-byte frame, PDU 50) cut to 60 bytes: a PDU of 46 bytes or more has no padded form, wrong length, cause 2.",
			w29, w29.encode()[:60], "length", 0, nil)
		q := dmaReadReq(macB, macA, 0x614, 0x00000800, 16)
		s.oetp("truncated_dma_read_req_27", "DMA_READ_REQ missing its last byte (27 bytes): wrong length, cause 2.", q, q.encode()[:27], "length", 0, nil)
	}
	{
		m := rmemReadReq(macB, macA, 0x620, 0x00000900)
		s.oetp("trailing_rmem_read_req_25", "RMEM_READ_REQ with one trailing byte (25 bytes): neither exact nor padded to 60, cause 2.",
			m, append(m.encode(), 0), "length", 0, nil)
		d := dmaWriteReq(macB, macA, 0x621, 0x00000904, []byte{1, 2, 3, 4, 5})
		s.oetp("trailing_dma_write_req_len5_44", "DMA_WRITE_REQ for 5 bytes with a word after EndOfData (44 bytes): excess data, cause 2.",
			d, append(d.encode(), 0xD0, 0xE0, 0xD0, 0xE0), "length", 0, nil)
		e := errorRsp(macA, macB, 0x622, 3)
		s.oetp("trailing_error_rsp_64", "ERROR_RSP padded to 64 bytes instead of 60: wrong length.", e, append(pad(e.encode(), 0), 0, 0, 0, 0), "length", 0, nil)
		w := dmaWriteRsp(macA, macB, 0x623)
		s.oetp("trailing_dma_write_rsp_61", "DMA_WRITE_RSP of 61 bytes: wrong length.", w, append(pad(w.encode(), 0), 0), "length", 0, nil)
		big := dmaWriteReq(macB, macA, 0x624, 0x00000000, pattern(8156, 0x14))
		s.oetp("trailing_dma_write_req_8156_plus4", "DMA_WRITE_REQ for 8156 bytes followed by four extra bytes (8192 bytes, within the ceiling): wrong length.",
			big, append(big.encode(), 0, 0, 0, 0), "length", 0, nil)
	}
	{
		d := dmaWriteReq(macB, macA, 0x630, 0x00000A00, pattern(8, 0x21))
		s.oetp("bad_eod_dma_write_req_len8", "DMA_WRITE_REQ for 8 bytes whose trailer is 0xE0D0E0D1: EndOfData wrong, cause 2 (receiver records REMOTE_AXIS).",
			d, put32(d.encode(), 36, 0xE0D0E0D1), "end_of_data", 0, nil)
		s.oetp("bad_eod_big_endian", "DMA_WRITE_REQ for 8 bytes whose trailer is serialized big-endian (E0 D0 E0 D0): EndOfData wrong.",
			d, put32(d.encode(), 36, 0xD0E0D0E0), "end_of_data", 0, nil)
		b := dmaWriteReq(macB, macA, 0x631, 0x00000000, pattern(8160, 0x22))
		s.oetp("bad_eod_dma_write_req_8160", "8192-byte DMA_WRITE_REQ whose last trailer octet is 0x00: EndOfData wrong.",
			b, put32(b.encode(), 8188, 0x00D0E0D0), "end_of_data", 0, nil)
		r := dmaReadRsp(macA, macB, 0x632, pattern(8160, 0x23))
		s.oetp("bad_eod_dma_read_rsp_8160", "8184-byte DMA_READ_RSP for expected length 8160 whose trailer is zero: EndOfData wrong (REMOTE_AXIS).",
			r, put32(r.encode(), 8180, 0), "end_of_data", 0, ptr(uint32(8160)))
	}
	{
		d := dmaWriteReq(macB, macA, 0x640, 0x00000B00, []byte{1, 2, 3, 4, 5})
		s.oetp("zero_fill_dma_write_req_len5", "DMA_WRITE_REQ for 5 bytes cut before EndOfData (36 bytes), then zero-padded to 60 by a MAC: the padding cannot stand in for the trailer, cause 2.",
			d, pad(d.encode()[:36], 0), "end_of_data", 0, nil)
		s.oetp("zero_fill_dma_write_req_partial_eod", "DMA_WRITE_REQ for 5 bytes cut after two trailer octets (D0 E0), then zero-padded to 60: EndOfData wrong.",
			d, pad(d.encode()[:38], 0), "end_of_data", 0, nil)
		r := dmaReadRsp(macA, macB, 0x641, []byte{6, 7, 8, 9, 10})
		s.oetp("zero_fill_dma_read_rsp_len5", "DMA_READ_RSP for expected length 5 cut before EndOfData (28 bytes), zero-padded to 60: EndOfData wrong (REMOTE_AXIS).",
			r, pad(r.encode()[:28], 0), "end_of_data", 0, ptr(uint32(5)))
		lies := dmaWriteReq(macB, macA, 0x642, 0x00000B00, nil)
		lies.length = 0xFFFFFFFF
		s.oetp("dma_write_req_length_exceeds_frame", "32-byte DMA_WRITE_REQ whose Length is 0xFFFFFFFF: the frame cannot carry it, wrong length, cause 2.",
			lies, put32(lies.encode(), 24, 0xFFFFFFFF), "length", 0, nil)
	}
	{
		short := dmaReadRsp(macA, macB, 0x650, []byte{1, 2, 3, 4})
		s.oetp("dma_read_rsp_too_short_for_expected", "28-byte DMA_READ_RSP (4 bytes of data) against an expected length of 5 (32 bytes): wrong length, REMOTE_AXIS.",
			short, short.encode(), "length", 0, ptr(uint32(5)))
		long := dmaReadRsp(macA, macB, 0x651, []byte{1, 2, 3, 4, 5, 6, 7, 8})
		s.oetp("dma_read_rsp_too_long_for_expected", "32-byte DMA_READ_RSP (8 bytes of data) against an expected length of 4 (28 bytes, or 60 padded): wrong length, REMOTE_AXIS.",
			long, long.encode(), "length", 0, ptr(uint32(4)))
		r60 := dmaReadRsp(macA, macB, 0x653, pattern(36, 0x32))
		s.oetp("dma_read_rsp_60_for_expected_40", "60-byte DMA_READ_RSP (36 bytes of data) against an expected length of 40 (64 bytes): 60 bytes is a padded form only for a PDU under 46 bytes, so it is too short.",
			r60, r60.encode(), "length", 0, ptr(uint32(40)))
		big := dmaReadRsp(macA, macB, 0x652, pattern(8160, 0x31))
		s.oetp("dma_read_rsp_8160_for_expected_8156", "8184-byte DMA_READ_RSP against an expected length of 8156: one word too long.",
			big, big.encode(), "length", 0, ptr(uint32(8156)))
	}
	return s
}

// loadVectors reads testdata/vectors.json.
func loadVectors(t testing.TB) []vector {
	t.Helper()
	b, err := os.ReadFile(vectorsJSON)
	if err != nil {
		t.Fatalf("%v (generate it with: %s)", err, regen)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatalf("%s: %v", vectorsJSON, err)
	}
	return vs
}

// TestGoldenVectorsEncode regenerates every vector with the encoders and
// compares it with testdata/vectors.json byte for byte.
func TestGoldenVectorsEncode(t *testing.T) {
	got := testutil.GoldenJSON(t, buildVectors())
	if _, same := testutil.Golden(t, vectorsJSON, got, *update, regen); !same {
		var gv []vector
		if err := json.Unmarshal(got, &gv); err != nil {
			t.Fatal(err)
		}
		t.Errorf("encoders no longer reproduce %s (-file +encoders):\n%s\nIf the change is intended, run: %s",
			vectorsJSON, cmp.Diff(loadVectors(t), gv), regen)
	}
}

// decodeVector runs the decoder over one golden frame and returns the
// outcome in the golden file's vocabulary.
func decodeVector(t *testing.T, v vector, frame []byte) vector {
	t.Helper()
	got := vector{Name: v.Name, Description: v.Description, FrameHex: v.FrameHex, FrameLen: len(frame),
		MaxFrame: v.MaxFrame, ExpectLength: v.ExpectLength}
	c := wire.Classify(frame, v.MaxFrame)
	got.Kind = c.Kind.String()
	got.Problem = problemTokens[c.Problem]
	f := wire.Frame(frame)
	if len(frame) >= wire.HeaderLen {
		got.Fields.Dst, got.Fields.Src = f.Dst().String(), f.Src().String()
		got.Fields.Group = ptr(f.Dst().IsGroup())
	}
	switch c.Kind {
	case wire.KindRunt:
		return got
	case wire.KindRaw:
		got.Fields.EtherType = ptr(int(f.EtherType()))
		return got
	case wire.KindDrop:
		if len(frame) > 15 {
			got.Cmd, got.CmdCode = c.Cmd.String(), ptr(int(c.Cmd))
		}
		return got
	}
	got.Cmd, got.CmdCode = c.Cmd.String(), ptr(int(c.Cmd))
	if c.Kind == wire.KindRequest {
		got.Cause = ptr(c.Problem.Cause())
	}
	if c.Cmd == wire.DMAReadRsp && c.Problem == wire.OK && v.ExpectLength != nil {
		got.Problem = problemTokens[wire.CheckDMAReadRsp(frame, *v.ExpectLength)]
	}
	in := func(off int) bool { return off+4 <= len(frame) }
	fs := &got.Fields
	fs.RequestID = ptr(f.RequestID())
	switch c.Cmd {
	case wire.RMEMReadReq:
		if in(offParam2) {
			fs.Address = ptr(f.Address())
		}
	case wire.RMEMReadRsp:
		if in(offParam2) {
			fs.Data = ptr(f.Data())
		}
	case wire.RMEMWriteReq:
		if in(offParam2) {
			fs.Address = ptr(f.Address())
		}
		if in(offParam3) {
			fs.BitEnable = ptr(f.BitEnable())
		}
		if in(offParam4) {
			fs.Data = ptr(f.Data())
		}
	case wire.DMAReadReq, wire.DMAWriteReq:
		if in(offParam2) {
			fs.Address = ptr(f.Address())
		}
		if in(offParam3) {
			fs.Length = ptr(f.Length())
		}
	case wire.ErrorRsp:
		if in(offParam2) {
			fs.ErrorCode = ptr(f.ErrorCode())
			fs.Error = wire.CodeFromCause(f.ErrorCode()).String()
		}
	}
	if got.Problem == "ok" || got.Problem == "end_of_data" {
		var n uint32
		switch {
		case c.Cmd == wire.DMAWriteReq:
			n = f.Length()
		case c.Cmd == wire.DMAReadRsp && v.ExpectLength != nil:
			n = *v.ExpectLength
		default:
			return got
		}
		fs.PayloadHex = ptr(hex.EncodeToString(f.Payload(n)))
		eod, ok := f.EndOfDataAt(n)
		fs.EndOfDataOK = ptr(ok && eod == wire.EndOfData)
	}
	return got
}

// TestGoldenVectorsDecode decodes every frame of testdata/vectors.json with
// Classify, CheckDMAReadRsp and the accessors and compares the outcome and
// every field with the file.
func TestGoldenVectorsDecode(t *testing.T) {
	vs := loadVectors(t)
	if len(vs) < 90 {
		t.Fatalf("%s holds %d vectors; want the full set", vectorsJSON, len(vs))
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			frame, err := hex.DecodeString(v.FrameHex)
			if err != nil {
				t.Fatalf("frame_hex: %v", err)
			}
			if len(frame) != v.FrameLen {
				t.Fatalf("frame_hex holds %d bytes, frame_len says %d", len(frame), v.FrameLen)
			}
			if diff := cmp.Diff(v, decodeVector(t, v, frame)); diff != "" {
				t.Errorf("decode mismatch (-golden +decoded):\n%s", diff)
			}
		})
	}
}

// TestGoldenVectorsCoverage checks that the golden set holds the cases the
// specification and the RTL testbench rely on, with their exact lengths.
func TestGoldenVectorsCoverage(t *testing.T) {
	byName := map[string]vector{}
	for _, v := range loadVectors(t) {
		byName[v.Name] = v
	}
	lengths := map[string]int{
		"spec_rmem_read_req": 24, "spec_rmem_read_rsp": 24, "spec_rmem_write_req_unicast": 32,
		"spec_rmem_write_req_group": 32, "spec_rmem_write_rsp": 20, "spec_dma_write_req_len5": 40,
		"spec_dma_read_req_len5": 28, "spec_dma_read_rsp_bad_trailer": 32, "spec_error_rsp_axi_wr_slverr": 24,
		"dma_write_rsp":     20,
		"dma_read_req_len1": 28, "dma_read_req_len8160": 28,
		"dma_write_req_len1": 36, "dma_write_req_len3": 36, "dma_write_req_len4": 36, "dma_write_req_len5": 40, "dma_write_req_len8160": 8192,
		"dma_read_rsp_len1": 28, "dma_read_rsp_len3": 28, "dma_read_rsp_len4": 28, "dma_read_rsp_len5": 32, "dma_read_rsp_len8160": 8184,
		"rmem_read_req_padded60": 60, "rmem_write_rsp_padded60": 60, "dma_write_req_len5_padded60": 60,
		"runt_13": 13, "raw_ipv4": 60, "raw_66_bytes": 66, "raw_88b5_wrong_magic": 24,
		"drop_reserved_cmd_0x12": 24, "drop_reserved_cmd_0x01": 24, "drop_no_request_id_16": 16,
		"too_long_dma_write_req_8164": 8196, "truncated_rmem_write_req_31": 31, "trailing_rmem_read_req_25": 25,
		"bad_eod_dma_write_req_len8": 40, "zero_fill_dma_write_req_len5": 60,
		"dma_read_rsp_too_short_for_expected": 28, "dma_read_rsp_too_long_for_expected": 32,
	}
	for name, n := range lengths {
		v, ok := byName[name]
		if !ok {
			t.Errorf("vector %s missing", name)
			continue
		}
		if v.FrameLen != n {
			t.Errorf("%s: frame_len %d, want %d", name, v.FrameLen, n)
		}
	}
	problems := map[string]bool{}
	for _, v := range byName {
		problems[v.Kind+"/"+v.Problem] = true
	}
	for _, p := range []string{"runt/runt", "raw/ok", "drop/reserved_cmd", "drop/no_request_id",
		"request/ok", "request/too_long", "request/length", "request/end_of_data",
		"response/ok", "response/too_long", "response/length", "response/end_of_data"} {
		if !problems[p] {
			t.Errorf("no vector classifies as %s", p)
		}
	}
}
