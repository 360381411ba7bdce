// Package reliable is the codec of the oETP reliable transport (docs/reliable.md):
// the 20-byte transport header that goes in front of an unchanged v1 PDU,
// the CRC32C trailer behind it, and the receive checks in the order the
// transport runs them (cheap fields first, the CRC last).
//
// A reliable frame keeps EtherType 0x88B5 but starts its PDU with the
// Discriminator 0xE1 instead of the v1 Magic 0x0E, so a v1 engine routes it
// to its raw non-oETP receive policy and never mistakes it for v1:
//
//	frame  header  size  field
//	0              6     Destination MAC
//	6              6     Source MAC
//	12             2     EtherType 0x88B5 (88 B5)
//	14     0       1     Discriminator 0xE1
//	15     1       1     Version 1
//	16     2       1     Flags (DATA 0x01, ACK 0x02, NAK 0x04, SYN 0x08, RST 0x10, RSP 0x20)
//	17     3       1     Reserved, zero
//	18     4       2     Length: body bytes (v1 PDU or SYN parameters), little-endian
//	20     6       4     Session
//	24     10      4     PSN
//	28     14      4     APSN (acknowledged PSN: every PSN before it is acknowledged)
//	32     18      2     Credits
//	34     20      L     Body: the v1 PDU (Magic 0x0E, Cmd, parameters, EndOfData) or SYN parameters
//	34+L           4     CRC32C (Castagnoli) of frame bytes 0 .. 34+L-1, little-endian
//
// Every multi-byte field is little-endian, like v1's parameters; MAC octets
// and the EtherType keep network order. The v1 PDU's parameters stay 32-bit
// aligned to the frame start (they begin at frame offset 36).
//
// The package is pure: no I/O, no state, no allocation. Encoders write into
// the caller's buffer; Parse is a view over received bytes.
package reliable

import (
	"encoding/binary"
	"hash/crc32"
	"sync"

	"github.com/openenoc/oetp/wire"
)

// Frame geometry.
const (
	// Discriminator is the first PDU octet of a reliable frame (frame offset
	// 14), where a v1 frame has Magic 0x0E. 0xE1 differs from 0x0E in 7 of
	// 8 bits, so no one- to six-bit error turns one into the other.
	Discriminator byte = 0xE1
	// Version is the transport header version this package encodes.
	Version byte = 1
	// Offset is the frame offset of the transport header.
	Offset = wire.HeaderLen
	// HeaderLen is the length of the transport header.
	HeaderLen = 20
	// BodyOffset is the frame offset of the body: the v1 PDU's Magic.
	BodyOffset = Offset + HeaderLen
	// TrailerLen is the length of the CRC32C trailer.
	TrailerLen = 4
	// Overhead is what the transport adds to a v1 frame.
	Overhead = HeaderLen + TrailerLen
	// MinFrameLen is the shortest reliable frame: a header without body.
	MinFrameLen = BodyOffset + TrailerLen
	// SynLen is the length of the SYN parameters body.
	SynLen = 8
	// MaxBody is the largest body the 16-bit Length can describe.
	MaxBody = 0xFFFF
)

// Flags is the flags octet (frame offset 16).
type Flags uint8

// The flag bits. Bits 6 and 7 are reserved: zero on transmit, a frame that
// has them set is dropped.
const (
	// FlagData: the body is a v1 PDU and PSN is its sequence number (a
	// request's own PSN, or the PSN of the request a response answers).
	FlagData Flags = 0x01
	// FlagAck: APSN and Credits are valid. From the responder side: every
	// request PSN before APSN has been received; Credits request frames
	// from APSN on may be sent. From the initiator side: the response of
	// every PSN before APSN has been received.
	FlagAck Flags = 0x02
	// FlagNak: the responder found a gap; the initiator resends from APSN.
	// Only with FlagAck and FlagRsp.
	FlagNak Flags = 0x04
	// FlagSyn opens a session: from the initiator (alone) it offers Session
	// and the initial PSN; from the responder (with FlagAck and FlagRsp) it
	// accepts them. The body is the SYN parameters.
	FlagSyn Flags = 0x08
	// FlagRst: the responder has no such session (or refuses it); the
	// initiator fails what is outstanding on it and opens a new one. Only
	// with FlagRsp.
	FlagRst Flags = 0x10
	// FlagRsp marks frames sent by the responder side of a session.
	FlagRsp Flags = 0x20

	flagsReserved Flags = 0xC0
)

// Has reports whether every bit of m is set in f.
func (f Flags) Has(m Flags) bool { return f&m == m }

// String lists the set flags, e.g. "DATA|ACK|RSP".
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	names := [...]string{"DATA", "ACK", "NAK", "SYN", "RST", "RSP", "0x40", "0x80"}
	var b [48]byte
	s := b[:0]
	for i, n := range names {
		if f&(1<<i) != 0 {
			if len(s) > 0 {
				s = append(s, '|')
			}
			s = append(s, n...)
		}
	}
	return string(s)
}

// Header is the decoded transport header.
type Header struct {
	Flags   Flags
	Length  uint16 // body length
	Session uint32
	PSN     uint32
	APSN    uint32
	Credits uint16
}

// Syn is the body of a SYN frame.
//
//	body  size  field
//	0     2     Depth: most requests outstanding at once (the replay cache's slots), 1..1024
//	2     1     Congestion control algorithm: 1 = AIMD (the only one assigned)
//	3     1     Reserved, zero
//	4     2     MaxFrame: the largest frame the sender of the SYN receives, 38..8192
//	6     2     Reserved, zero
type Syn struct {
	Depth      uint16
	Congestion uint8
	MaxFrame   uint16
}

// CongestionAIMD is the only assigned congestion control algorithm.
const CongestionAIMD uint8 = 1

// MaxDepth is the largest Syn.Depth.
const MaxDepth = 1024

// castagnoli builds the CRC32C table on first use: hash/crc32 fills its
// SSE4.2 tables (0.3 ms) when the table is first made, and a package-level
// MakeTable made every start of every oetp command pay for it, reliable
// transport or not.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// CRC returns the CRC32C (Castagnoli, reflected, initial and final value
// 0xFFFFFFFF, as in iSCSI and RoCE's ICRC family) of b.
func CRC(b []byte) uint32 { return crc32.Checksum(b, castagnoli()) }

// IsReliable reports whether frame is a reliable transport frame by its
// cheapest test: EtherType 0x88B5 and the Discriminator at offset 14.
func IsReliable(frame []byte) bool {
	return len(frame) > Offset && frame[12] == byte(wire.EtherType>>8) &&
		frame[13] == byte(wire.EtherType&0xff) && frame[Offset] == Discriminator
}

func putHeader(b []byte, h Header) {
	b[Offset] = Discriminator
	b[Offset+1] = Version
	b[Offset+2] = byte(h.Flags)
	b[Offset+3] = 0
	binary.LittleEndian.PutUint16(b[Offset+4:], h.Length)
	binary.LittleEndian.PutUint32(b[Offset+6:], h.Session)
	binary.LittleEndian.PutUint32(b[Offset+10:], h.PSN)
	binary.LittleEndian.PutUint32(b[Offset+14:], h.APSN)
	binary.LittleEndian.PutUint16(b[Offset+18:], h.Credits)
}

// seal appends the CRC of b.
func seal(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, CRC(b))
}

// Headroom is the space a v1 frame needs in front of it for Encapsulate:
// encode the v1 frame at buf[Headroom:] (cap(buf) at least Headroom + v1
// length + TrailerLen) and Encapsulate turns it into a reliable frame in
// place, without copying the PDU.
const Headroom = HeaderLen

// Encapsulate turns the v1 frame at b[Headroom:] into a DATA frame in
// place and returns it (b[:len(b)+TrailerLen]): it moves the v1 frame's
// Ethernet header to b[0:14], writes h at 14 with FlagData set and Length
// the PDU's length, and appends the CRC. It panics if b is shorter than
// Headroom plus an Ethernet header and a 6-byte PDU or has no capacity for
// the trailer, like an out-of-range slice index.
func Encapsulate(b []byte, h Header) []byte {
	pdu := len(b) - Headroom - wire.HeaderLen
	if pdu < 6 || pdu > MaxBody || cap(b) < len(b)+TrailerLen {
		panic("reliable: Encapsulate needs a v1 frame at b[Headroom:] and room for the trailer")
	}
	copy(b[0:wire.HeaderLen], b[Headroom:Headroom+wire.HeaderLen])
	h.Flags |= FlagData
	h.Length = uint16(pdu)
	putHeader(b, h)
	return seal(b)
}

// AppendData appends a DATA frame carrying pdu (a v1 PDU from Magic on) to
// b. The v1 frame's MACs become the reliable frame's.
func AppendData(b []byte, dst, src wire.MAC, h Header, pdu []byte) []byte {
	start := len(b)
	b = appendEth(b, dst, src)
	h.Flags |= FlagData
	h.Length = uint16(len(pdu))
	b = append(b, make([]byte, HeaderLen)...)
	putHeader(b[start:], h)
	b = append(b, pdu...)
	return sealFrom(b, start)
}

// AppendControl appends a frame without body (an ACK, NAK or RST) to b.
func AppendControl(b []byte, dst, src wire.MAC, h Header) []byte {
	start := len(b)
	b = appendEth(b, dst, src)
	h.Length = 0
	b = append(b, make([]byte, HeaderLen)...)
	putHeader(b[start:], h)
	return sealFrom(b, start)
}

// AppendSyn appends a SYN frame (h.Flags should hold FlagSyn, and for the
// responder's answer FlagAck|FlagRsp too) carrying s to b.
func AppendSyn(b []byte, dst, src wire.MAC, h Header, s Syn) []byte {
	start := len(b)
	b = appendEth(b, dst, src)
	h.Length = SynLen
	b = append(b, make([]byte, HeaderLen+SynLen)...)
	putHeader(b[start:], h)
	body := b[start+BodyOffset:]
	binary.LittleEndian.PutUint16(body[0:], s.Depth)
	body[2] = s.Congestion
	body[3] = 0
	binary.LittleEndian.PutUint16(body[4:], s.MaxFrame)
	body[6], body[7] = 0, 0
	return sealFrom(b, start)
}

func appendEth(b []byte, dst, src wire.MAC) []byte {
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	return append(b, byte(wire.EtherType>>8), byte(wire.EtherType&0xff))
}

func sealFrom(b []byte, start int) []byte {
	return binary.LittleEndian.AppendUint32(b, CRC(b[start:]))
}

// Problem is what is wrong with a received reliable frame.
type Problem uint8

// Problems, in the order the checks run. ProblemCRC is found by CheckCRC,
// after the receiver's state checks.
const (
	OK             Problem = iota
	ProblemNotOurs         // not a reliable frame (EtherType or Discriminator)
	ProblemRunt            // shorter than a header and trailer
	ProblemVersion         // a Version other than 1
	ProblemFlags           // reserved bits, a reserved octet, or a combination the protocol does not use
	ProblemTooLong         // longer than the receiver's frame ceiling
	ProblemLength          // the frame is not exactly header + Length + trailer (or that padded to 60 bytes), or Length does not suit the flags
	ProblemCRC             // the CRC32C trailer does not match
)

var problemNames = [...]string{"ok", "not a reliable transport frame", "runt (shorter than header and trailer)",
	"unknown version", "reserved or invalid flags", "frame exceeds the frame ceiling",
	"wrong frame length for the body", "CRC32C mismatch"}

// String describes p.
func (p Problem) String() string {
	if int(p) < len(problemNames) {
		return problemNames[p]
	}
	return "problem(?)"
}

// Name returns a short lowercase identifier of p (as in testdata/vectors.json).
func (p Problem) Name() string {
	names := [...]string{"ok", "not_ours", "runt", "version", "flags", "too_long", "length", "crc"}
	if int(p) < len(names) {
		return names[p]
	}
	return "unknown"
}

// validFlags reports whether f is a combination the protocol uses.
func validFlags(f Flags) bool {
	if f&flagsReserved != 0 {
		return false
	}
	rsp := f&FlagRsp != 0
	switch {
	case f&FlagSyn != 0:
		// SYN from the initiator, SYN|ACK|RSP from the responder.
		return f == FlagSyn || f == FlagSyn|FlagAck|FlagRsp
	case f&FlagRst != 0:
		return f == FlagRst|FlagRsp
	case f&FlagNak != 0:
		return f == FlagAck|FlagNak|FlagRsp
	case f&FlagData != 0:
		// A request (DATA[|ACK]) or a response (DATA|ACK|RSP).
		return !rsp || f&FlagAck != 0
	default:
		// A pure ACK from either side.
		return f&FlagAck != 0
	}
}

// Parse runs the cheap checks on a received frame, in this order: EtherType
// and Discriminator, the minimum length, Version, the reserved octet and
// the flags, the frame ceiling maxFrame (padding included), then the length:
// the frame must be exactly 34 + Length + 4 bytes, or 60 bytes when that is
// shorter (a NIC's padding, whose values are ignored), and Length must suit
// the flags (6 or more for DATA, 8 for SYN, 0 otherwise). It does not check
// the CRC: the receiver does that last, with CheckCRC, after its session and
// PSN checks. It never allocates and never panics.
func Parse(frame []byte, maxFrame int) (Header, Problem) {
	if !IsReliable(frame) {
		return Header{}, ProblemNotOurs
	}
	n := len(frame)
	if n < MinFrameLen {
		return Header{}, ProblemRunt
	}
	if frame[Offset+1] != Version {
		return Header{}, ProblemVersion
	}
	h := Header{
		Flags:   Flags(frame[Offset+2]),
		Length:  binary.LittleEndian.Uint16(frame[Offset+4:]),
		Session: binary.LittleEndian.Uint32(frame[Offset+6:]),
		PSN:     binary.LittleEndian.Uint32(frame[Offset+10:]),
		APSN:    binary.LittleEndian.Uint32(frame[Offset+14:]),
		Credits: binary.LittleEndian.Uint16(frame[Offset+18:]),
	}
	if frame[Offset+3] != 0 || !validFlags(h.Flags) {
		return h, ProblemFlags
	}
	if n > maxFrame {
		return h, ProblemTooLong
	}
	want := BodyOffset + int(h.Length) + TrailerLen
	if n != want && !(want < wire.MinFrameLen && n == wire.MinFrameLen) {
		return h, ProblemLength
	}
	switch {
	case h.Flags&FlagData != 0:
		if h.Length < 6 {
			return h, ProblemLength
		}
	case h.Flags&FlagSyn != 0:
		if h.Length != SynLen {
			return h, ProblemLength
		}
	default:
		if h.Length != 0 {
			return h, ProblemLength
		}
	}
	return h, OK
}

// CheckCRC reports whether the CRC32C trailer of a frame that Parse
// accepted with header h matches frame bytes 0 .. 34+Length-1.
func CheckCRC(frame []byte, h Header) bool {
	end := BodyOffset + int(h.Length)
	if end+TrailerLen > len(frame) {
		return false
	}
	return binary.LittleEndian.Uint32(frame[end:]) == CRC(frame[:end])
}

// Body returns the body of a frame that Parse accepted with header h.
func Body(frame []byte, h Header) []byte {
	return frame[BodyOffset : BodyOffset+int(h.Length)]
}

// ParseSyn decodes a SYN body. It reports false when the reserved octets
// are not zero.
func ParseSyn(body []byte) (Syn, bool) {
	if len(body) != SynLen {
		return Syn{}, false
	}
	s := Syn{
		Depth:      binary.LittleEndian.Uint16(body[0:]),
		Congestion: body[2],
		MaxFrame:   binary.LittleEndian.Uint16(body[4:]),
	}
	return s, body[3] == 0 && body[6] == 0 && body[7] == 0
}

// Decapsulate turns a DATA frame that passed Parse and CheckCRC into the v1
// frame it carries, in place, and returns it: it copies the Ethernet header
// over the end of the transport header (frame bytes 20..33) and returns
// frame[20 : 34+Length], a v1 frame with the sender's MACs that the v1
// classifier (wire.Classify) takes as it is. It destroys the transport
// header, so read it first.
func Decapsulate(frame []byte, h Header) []byte {
	copy(frame[Headroom:Headroom+wire.HeaderLen], frame[0:wire.HeaderLen])
	return frame[Headroom : BodyOffset+int(h.Length)]
}

// Before reports whether PSN a comes before b in serial-number arithmetic
// (RFC 1982 on 32 bits): a is before b when b-a, taken as a signed 32-bit
// number, is positive.
func Before(a, b uint32) bool { return int32(a-b) < 0 }

// Corrupt reports whether a frame that failed one of Parse's checks after
// the Discriminator (ProblemVersion, ProblemFlags, ProblemTooLong,
// ProblemLength) carries no valid CRC32C trailer either where its Length
// field puts it or in its last four bytes: it was damaged on the way, and
// the receiver counts it as a CRC drop rather than as a malformed frame
// from a broken sender. A receiver calls it only on frames it has already
// rejected, so the common path never pays for it.
func Corrupt(frame []byte) bool {
	n := len(frame)
	if n < MinFrameLen || !IsReliable(frame) {
		return false
	}
	if end := n - TrailerLen; binary.LittleEndian.Uint32(frame[end:]) == CRC(frame[:end]) {
		return false
	}
	end := BodyOffset + int(binary.LittleEndian.Uint16(frame[Offset+4:]))
	if end+TrailerLen <= n && binary.LittleEndian.Uint32(frame[end:]) == CRC(frame[:end]) {
		return false
	}
	return true
}
