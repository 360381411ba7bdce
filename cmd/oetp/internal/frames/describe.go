package frames

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// Description is the JSON description of one frame, printed one per
// line by decode (and by dump for each captured packet). Fields that do not
// apply to the frame are absent; numbers are JSON numbers.
type Description struct {
	// Valid is true for a well-formed oETP frame (for a DMA_READ_RSP, one
	// checked against its expected length).
	Valid bool `json:"valid"`
	// Problem says why the frame is not valid.
	Problem string `json:"problem,omitempty"`
	// Kind is "oetp" (EtherType 0x88B5 and Magic 0x0E), "raw" (anything
	// else, handled by the raw receive policy) or "runt" (no Ethernet header).
	Kind      string  `json:"kind"`
	Dst       string  `json:"dst,omitempty"`
	Src       string  `json:"src,omitempty"`
	Group     *bool   `json:"group,omitempty"`     // destination I/G bit: no reply to a group write
	EtherType *uint16 `json:"ethertype,omitempty"` // raw frames only
	// VLAN lists the 802.1Q/802.1ad tags of a tagged frame, outermost
	// first; InnerEtherType is the EtherType after them. A tagged frame is
	// not v1 oETP, whatever follows the tags.
	VLAN           []VLANTag `json:"vlan,omitempty"`
	InnerEtherType *uint16   `json:"inner_ethertype,omitempty"`
	FrameLen       int       `json:"frame_len"`
	Cmd            string    `json:"cmd,omitempty"` // mnemonic, or RESERVED(0xNN)
	RequestID      *uint32   `json:"request_id,omitempty"`
	Address        *uint32   `json:"address,omitempty"`
	Length         *uint32   `json:"length,omitempty"`
	BitEnable      *uint32   `json:"bit_enable,omitempty"`
	Data           *uint32   `json:"data,omitempty"` // RMEM data word
	// Payload is the hex of the meaningful DMA bytes: no word padding,
	// EndOfData or Ethernet padding.
	Payload     *string `json:"payload,omitempty"`
	EndOfDataOK *bool   `json:"end_of_data_ok,omitempty"`
	ErrorCode   *uint32 `json:"error_code,omitempty"` // ERROR_RSP wire cause, all 32 bits
	// Error is the CSR code the initiator records for ErrorCode, e.g.
	// REMOTE_AXI_WR_SLVERR, or LOCAL_INVALID for a cause outside 1..7.
	Error string `json:"error,omitempty"`
	// Cause is the ERROR_RSP wire cause a responder answers a malformed
	// request with (sent only when the destination is unicast).
	Cause *uint32 `json:"cause,omitempty"`
	// Transport is the reliable transport's header (docs/reliable.md) of a
	// frame of Kind "reliable"; the v1 fields above then describe the v1
	// PDU its DATA body carries.
	Transport *TransportDescription `json:"transport,omitempty"`
}

// TransportDescription is the decoded reliable transport header.
type TransportDescription struct {
	Flags   string `json:"flags"`
	Version uint8  `json:"version"`
	Length  uint16 `json:"length"`
	Session uint32 `json:"session"`
	PSN     uint32 `json:"psn"`
	APSN    uint32 `json:"apsn"`
	Credits uint16 `json:"credits"`
	// CRCOK says whether the CRC32C trailer matches (absent when a cheaper
	// check failed first).
	CRCOK *bool `json:"crc_ok,omitempty"`
	// Depth, Congestion and MaxFrame are a SYN's parameters.
	Depth      *uint16 `json:"depth,omitempty"`
	Congestion *uint8  `json:"congestion,omitempty"`
	MaxFrame   *uint16 `json:"max_frame,omitempty"`
}

// describeReliable decodes a reliable transport frame: its header, its CRC,
// and the v1 PDU of a DATA frame (whose DMA_READ_RSP length, without
// ExpectLength, is taken from the transport's Length: word padding
// included).
func describeReliable(frame []byte, opt Options) Description {
	n := len(frame)
	f := wire.Frame(frame)
	d := Description{Kind: "reliable", FrameLen: n, Dst: f.Dst().String(), Src: f.Src().String(), Group: ptr(f.Dst().IsGroup())}
	h, prob := reliable.Parse(frame, opt.MaxFrame)
	if prob == reliable.ProblemRunt || prob == reliable.ProblemVersion {
		d.Problem = fmt.Sprintf("reliable transport: %v; dropped", prob)
		return d
	}
	t := &TransportDescription{Flags: h.Flags.String(), Version: frame[reliable.Offset+1], Length: h.Length,
		Session: h.Session, PSN: h.PSN, APSN: h.APSN, Credits: h.Credits}
	d.Transport = t
	if prob != reliable.OK {
		d.Problem = fmt.Sprintf("reliable transport: %v; dropped", prob)
		if reliable.Corrupt(frame) {
			d.Problem += " (and no valid CRC32C: damaged on the way)"
		}
		return d
	}
	ok := reliable.CheckCRC(frame, h)
	t.CRCOK = &ok
	if !ok {
		d.Problem = "reliable transport: CRC32C mismatch; the receiver drops it silently"
	}
	switch {
	case h.Flags&reliable.FlagSyn != 0:
		if s, good := reliable.ParseSyn(reliable.Body(frame, h)); good {
			t.Depth, t.Congestion, t.MaxFrame = &s.Depth, &s.Congestion, &s.MaxFrame
		}
	case h.Flags&reliable.FlagData != 0:
		inner := reliable.Decapsulate(bytes.Clone(frame), h)
		iopt := opt
		if iopt.ExpectLength == nil && len(inner) > 24 && wire.Cmd(inner[15]) == wire.DMAReadRsp {
			iopt.ExpectLength = ptr(uint32(len(inner) - 24))
		}
		v := Describe(inner, iopt)
		d.Cmd, d.RequestID, d.Address, d.Length, d.BitEnable, d.Data = v.Cmd, v.RequestID, v.Address, v.Length, v.BitEnable, v.Data
		d.Payload, d.EndOfDataOK, d.ErrorCode, d.Error, d.Cause = v.Payload, v.EndOfDataOK, v.ErrorCode, v.Error, v.Cause
		if v.Problem != "" && ok {
			d.Problem = "v1 PDU: " + v.Problem
		}
		d.Valid = ok && v.Valid
		return d
	}
	d.Valid = ok
	return d
}

// VLANTag is one 802.1Q (TPID 0x8100) or 802.1ad (0x88A8, 0x9100) tag.
type VLANTag struct {
	TPID uint16 `json:"tpid"`
	PCP  uint8  `json:"pcp"`
	DEI  bool   `json:"dei"`
	VID  uint16 `json:"vid"`
}

// isTPID reports whether et is a VLAN tag protocol identifier.
func isTPID(et uint16) bool { return et == 0x8100 || et == 0x88A8 || et == 0x9100 }

// vlanTags parses the tags after the MACs of frame; the EtherType after
// them is returned with them (0 and no tags when the frame ends first).
func vlanTags(frame []byte) ([]VLANTag, uint16) {
	var tags []VLANTag
	o := 12
	for o+4 <= len(frame) && isTPID(uint16(frame[o])<<8|uint16(frame[o+1])) {
		tci := uint16(frame[o+2])<<8 | uint16(frame[o+3])
		tags = append(tags, VLANTag{TPID: uint16(frame[o])<<8 | uint16(frame[o+1]), PCP: uint8(tci >> 13), DEI: tci&0x1000 != 0, VID: tci & 0xFFF})
		o += 4
	}
	if o+2 > len(frame) {
		return tags, 0
	}
	return tags, uint16(frame[o])<<8 | uint16(frame[o+1])
}

// Options controls describe.
type Options struct {
	// MaxFrame is the receive frame ceiling (MAX_RAW_FRAME_SIZE), 36..8192.
	MaxFrame int
	// ExpectLength is the Length of the DMA_READ_REQ a DMA_READ_RSP answers;
	// without it a DMA_READ_RSP's length cannot be checked.
	ExpectLength *uint32
}

func ptr[T any](v T) *T { return &v }

// tagName names a TPID's standard.
func tagName(tpid uint16) string {
	if tpid == 0x8100 {
		return "802.1Q"
	}
	return "802.1ad"
}

// Describe decodes one frame. It never fails: what is wrong with the frame
// is the description's Problem.
func Describe(frame []byte, opt Options) Description {
	n := len(frame)
	d := Description{Kind: "runt", FrameLen: n}
	c := wire.Classify(frame, opt.MaxFrame)
	f := wire.Frame(frame)
	if c.Kind == wire.KindRunt {
		d.Problem = fmt.Sprintf("%v: %d bytes, an Ethernet header needs %d", c.Problem, n, wire.HeaderLen)
		return d
	}
	d.Dst, d.Src, d.Group = f.Dst().String(), f.Src().String(), ptr(f.Dst().IsGroup())
	if reliable.IsReliable(frame) {
		return describeReliable(frame, opt)
	}
	if c.Kind == wire.KindRaw {
		d.Kind, d.EtherType = "raw", ptr(f.EtherType())
		if isTPID(f.EtherType()) {
			tags, inner := vlanTags(frame)
			if len(tags) > 0 {
				d.VLAN, d.InnerEtherType = tags, ptr(inner)
				d.Problem = fmt.Sprintf("not oETP v1: %s-tagged frame (VID %d), inner EtherType 0x%04X: VLAN tags are outside oETP v1 (raw receive policy)", tagName(tags[0].TPID), tags[0].VID, inner)
				return d
			}
		}
		switch {
		case f.EtherType() != wire.EtherType:
			d.Problem = fmt.Sprintf("not oETP: EtherType 0x%04X (raw receive policy)", f.EtherType())
		case n == wire.HeaderLen:
			d.Problem = "not oETP: EtherType 0x88B5 but the frame ends before the Magic octet (raw receive policy)"
		default:
			d.Problem = fmt.Sprintf("not oETP: EtherType 0x88B5 but Magic 0x%02X, not 0x0E (raw receive policy)", frame[14])
		}
		return d
	}
	d.Kind = "oetp"
	if n > 15 {
		d.Cmd = c.Cmd.String()
	}
	switch {
	case c.Problem == wire.ProblemReservedCmd:
		d.Problem = fmt.Sprintf("%v 0x%02X: not an assigned command; dropped without a reply", c.Problem, uint8(c.Cmd))
		return d
	case c.Kind == wire.KindDrop:
		d.Problem = fmt.Sprintf("%v: %d bytes, the Request ID ends at byte 20; dropped without a reply", c.Problem, n)
		return d
	}

	in := func(off int) bool { return off+4 <= n }
	d.RequestID = ptr(f.RequestID())
	switch c.Cmd {
	case wire.RMEMReadReq:
		if in(20) {
			d.Address = ptr(f.Address())
		}
	case wire.RMEMReadRsp:
		if in(20) {
			d.Data = ptr(f.Data())
		}
	case wire.RMEMWriteReq:
		if in(20) {
			d.Address = ptr(f.Address())
		}
		if in(24) {
			d.BitEnable = ptr(f.BitEnable())
		}
		if in(28) {
			d.Data = ptr(f.Data())
		}
	case wire.DMAReadReq, wire.DMAWriteReq:
		if in(20) {
			d.Address = ptr(f.Address())
		}
		if in(24) {
			d.Length = ptr(f.Length())
		}
	case wire.ErrorRsp:
		if in(20) {
			d.ErrorCode = ptr(f.ErrorCode())
			d.Error = wire.CodeFromCause(f.ErrorCode()).String()
		}
	}

	// bulk is the number of meaningful DMA bytes, when known.
	problem := c.Problem
	var bulk *uint32
	switch c.Cmd {
	case wire.DMAWriteReq:
		bulk = d.Length
	case wire.DMAReadRsp:
		bulk = opt.ExpectLength
		if problem == wire.OK {
			if bulk == nil {
				d.Problem = "needs --expect-length: a DMA_READ_RSP's length is the Length of the DMA_READ_REQ it answers"
				return d
			}
			problem = wire.CheckDMAReadRsp(frame, *bulk)
		}
	}
	if bulk != nil && (problem == wire.OK || problem == wire.ProblemEndOfData) {
		d.Payload = ptr(hex.EncodeToString(f.Payload(*bulk)))
		eod, _ := f.EndOfDataAt(*bulk)
		d.EndOfDataOK = ptr(eod == wire.EndOfData)
	}
	if c.Kind == wire.KindRequest && problem.Cause() != 0 {
		d.Cause = ptr(problem.Cause())
	}
	switch problem {
	case wire.OK:
		d.Valid = true
	case wire.ProblemTooLong:
		d.Problem = fmt.Sprintf("%v: %d bytes > %d", problem, n, opt.MaxFrame)
	case wire.ProblemLength:
		d.Problem = lengthProblem(c.Cmd, n, bulk)
	case wire.ProblemEndOfData:
		if bulk == nil {
			d.Problem = problem.String()
			break
		}
		off := wire.FrameLen(c.Cmd, *bulk) - 4
		d.Problem = fmt.Sprintf("%v: bytes %d..%d are %x, want d0e0d0e0", problem, off, off+3, frame[off:off+4])
	default:
		d.Problem = problem.String()
	}
	return d
}

// lengthProblem explains a wrong frame length.
func lengthProblem(cmd wire.Cmd, n int, bulk *uint32) string {
	p := wire.ProblemLength.String()
	var want int
	var what string
	switch cmd {
	case wire.DMAWriteReq:
		if bulk == nil {
			return fmt.Sprintf("%s: %d bytes, too short for the Length parameter", p, n)
		}
		want, what = wire.FrameLen(cmd, *bulk), fmt.Sprintf(" for Length %d", *bulk)
	case wire.DMAReadRsp:
		if bulk == nil {
			return fmt.Sprintf("%s: %d bytes", p, n)
		}
		want, what = wire.FrameLen(cmd, *bulk), fmt.Sprintf(" for expected length %d", *bulk)
	default:
		want = wire.FrameLen(cmd, 0)
	}
	padded := ""
	if want < wire.MinFrameLen {
		padded = " (or 60 padded)"
	}
	return fmt.Sprintf("%s: %d bytes, want %d%s%s", p, n, want, padded, what)
}
