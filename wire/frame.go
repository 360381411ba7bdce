package wire

import "encoding/binary"

// Frame is a view over one received or built Ethernet frame. Accessors read
// fields in place; nothing is copied. They assume the frame has been
// classified: a field accessor on a frame too short for that field panics,
// exactly like an out-of-range slice index, so call Classify first.
type Frame []byte

// Dst returns the destination MAC.
func (f Frame) Dst() MAC { return MAC(f[0:6]) }

// Src returns the source MAC.
func (f Frame) Src() MAC { return MAC(f[6:12]) }

// EtherType returns the EtherType in host order.
func (f Frame) EtherType() uint16 { return binary.BigEndian.Uint16(f[12:14]) }

// Cmd returns the Cmd octet (frame offset 15).
func (f Frame) Cmd() Cmd { return Cmd(f[15]) }

// Param returns four-byte parameter i (1-based) at frame offset 16+4(i-1).
func (f Frame) Param(i int) uint32 {
	o := ParamOffset + 4*(i-1)
	return binary.LittleEndian.Uint32(f[o : o+4])
}

// RequestID returns parameter 1, present in every command.
func (f Frame) RequestID() uint32 { return f.Param(1) }

// Address returns parameter 2 of RMEM_READ_REQ, RMEM_WRITE_REQ,
// DMA_READ_REQ and DMA_WRITE_REQ.
func (f Frame) Address() uint32 { return f.Param(2) }

// Length returns parameter 3 of DMA_READ_REQ and DMA_WRITE_REQ.
func (f Frame) Length() uint32 { return f.Param(3) }

// BitEnable returns parameter 3 of RMEM_WRITE_REQ.
func (f Frame) BitEnable() uint32 { return f.Param(3) }

// Data returns the scalar data word: parameter 4 of RMEM_WRITE_REQ or
// parameter 2 of RMEM_READ_RSP.
func (f Frame) Data() uint32 {
	if f.Cmd() == RMEMWriteReq {
		return f.Param(4)
	}
	return f.Param(2)
}

// ErrorCode returns the 32-bit Error Code of ERROR_RSP (parameter 2).
func (f Frame) ErrorCode() uint32 { return f.Param(2) }

// Payload returns the meaningful bulk bytes: Length bytes from frame offset
// 28 for DMA_WRITE_REQ, or n bytes from offset 20 for DMA_READ_RSP (n is the
// expected length from the saved request). Word padding, EndOfData and
// Ethernet padding are excluded.
func (f Frame) Payload(n uint32) []byte {
	o := dataOffset(f.Cmd())
	return f[o : o+int(n)]
}

// EndOfDataAt returns the 32-bit value at the fixed EndOfData position for a
// bulk frame carrying n bytes, and whether the frame is long enough to hold
// it. The position is fixed; the marker is never searched for.
func (f Frame) EndOfDataAt(n uint32) (uint32, bool) {
	o := uint64(dataOffset(f.Cmd())) + 4*DataWords(n)
	if o+4 > uint64(len(f)) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(f[o : o+4]), true
}

func dataOffset(c Cmd) int {
	if c == DMAWriteReq {
		return ParamOffset + 12
	}
	return ParamOffset + 4
}

// Kind is what a received frame is, as far as the codec can tell.
type Kind uint8

// Kinds, from the cheapest rejection to a parsed oETP frame.
const (
	// KindRunt is a frame shorter than an Ethernet header: dropped.
	KindRunt Kind = iota
	// KindRaw is not oETP: another EtherType, or 0x88B5 without Magic 0x0E.
	// It follows the raw receive policy.
	KindRaw
	// KindDrop is oETP (EtherType and Magic match) but unparseable: a
	// reserved Cmd, or too short to carry a Request ID. It is discarded
	// without a reply and never falls through to the raw path.
	KindDrop
	// KindRequest is one of the four requests with a trustworthy Request
	// ID. Class.Problem says whether it is malformed, and how.
	KindRequest
	// KindResponse is one of the five responses with a readable Request ID.
	// Class.Problem says whether its length is wrong. A DMA_READ_RSP's
	// length is only checked against the saved request by CheckDMAReadRsp.
	KindResponse
)

var kindNames = [...]string{"runt", "raw", "drop", "request", "response"}

// String returns a lowercase name of k.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(?)"
}

// Problem is what is wrong with a received frame.
type Problem uint8

// Problems, in the order the checks run.
const (
	OK                 Problem = iota
	ProblemRunt                // shorter than the 14-byte Ethernet header
	ProblemReservedCmd         // Cmd is not one of the nine assigned codes
	ProblemNoRequestID         // too short to carry the Request ID parameter
	ProblemTooLong             // longer than the configured frame ceiling
	ProblemLength              // neither the exact logical length nor the 60-byte padded form
	ProblemEndOfData           // EndOfData missing or wrong at its fixed position
)

var problemNames = [...]string{"ok", "runt frame (shorter than the Ethernet header)",
	"reserved Cmd", "too short for a Request ID", "frame exceeds the frame ceiling",
	"wrong frame length for the command", "EndOfData missing or wrong at its fixed position"}

// String describes p.
func (p Problem) String() string {
	if int(p) < len(problemNames) {
		return problemNames[p]
	}
	return "problem(?)"
}

// Cause returns the ERROR_RSP wire cause for a malformed request with this
// problem: 3 (overflow) for a frame over the ceiling, 2 (length/EndOfData)
// for a wrong length or trailer, 0 when p needs no error reply.
func (p Problem) Cause() uint32 {
	switch p {
	case ProblemTooLong:
		return CauseOverflow
	case ProblemLength, ProblemEndOfData:
		return CauseLength
	}
	return 0
}

// Class is the outcome of Classify.
type Class struct {
	Kind    Kind
	Cmd     Cmd     // valid for KindRequest, KindResponse and KindDrop (the received value; 0 when the frame ends before the Cmd octet)
	Problem Problem // OK or the first failed check
}

// Classify decides what a received frame is, cheapest check first: length
// for an Ethernet header, EtherType, Magic, exact Cmd, a readable Request
// ID, the frame ceiling maxFrame (padding included), then the exact length
// (the logical length, or 60 bytes for a PDU shorter than 46 bytes) and, for
// DMA_WRITE_REQ, EndOfData at its fixed position. Padding values are
// ignored. It never allocates and never panics.
//
// A DMA_WRITE_REQ whose Length parameter does not fit the frame is a length
// problem (cause 2); a frame longer than maxFrame is an overflow (cause 3).
// Whether Length is positive and within the fragment ceiling, and whether
// the range is permitted, are the responder's checks (after the peer mode).
// DMA_READ_RSP is classified only up to its Request ID: its length depends
// on the matching request; see CheckDMAReadRsp.
func Classify(b []byte, maxFrame int) Class {
	n := len(b)
	if n < HeaderLen {
		return Class{Kind: KindRunt, Problem: ProblemRunt}
	}
	if b[12] != byte(EtherType>>8) || b[13] != byte(EtherType&0xff) || n == HeaderLen || b[14] != Magic {
		return Class{Kind: KindRaw}
	}
	if n < ParamOffset {
		// EtherType and Magic match but the Cmd octet is missing: malformed
		// oETP, which never falls through to the raw path.
		return Class{Kind: KindDrop, Problem: ProblemNoRequestID}
	}
	cmd := Cmd(b[15])
	if !cmd.Valid() {
		return Class{Kind: KindDrop, Cmd: cmd, Problem: ProblemReservedCmd}
	}
	kind := KindResponse
	if cmd.IsRequest() {
		kind = KindRequest
	}
	if n < ParamOffset+4 {
		return Class{Kind: KindDrop, Cmd: cmd, Problem: ProblemNoRequestID}
	}
	c := Class{Kind: kind, Cmd: cmd}
	if n > maxFrame {
		c.Problem = ProblemTooLong
		return c
	}
	switch cmd {
	case DMAReadRsp:
		return c
	case DMAWriteReq:
		if n < ParamOffset+12 {
			c.Problem = ProblemLength
			return c
		}
		length := Frame(b).Length()
		if !lengthOK(n, PDULen(cmd, length)) {
			c.Problem = ProblemLength
			return c
		}
		if eod, _ := Frame(b).EndOfDataAt(length); eod != EndOfData {
			c.Problem = ProblemEndOfData
		}
		return c
	}
	if !lengthOK(n, PDULen(cmd, 0)) {
		c.Problem = ProblemLength
	}
	return c
}

// CheckDMAReadRsp validates a DMA_READ_RSP that Classify accepted (and that
// matched an outstanding request) against expected, the Length of that
// request: the exact length 24 + 4*ceil(expected/4) or the 60-byte padded
// form, then EndOfData at its fixed position. Either failure is recorded by
// the initiator as REMOTE_AXIS (10).
func CheckDMAReadRsp(b []byte, expected uint32) Problem {
	if !lengthOK(len(b), PDULen(DMAReadRsp, expected)) {
		return ProblemLength
	}
	if eod, _ := Frame(b).EndOfDataAt(expected); eod != EndOfData {
		return ProblemEndOfData
	}
	return OK
}
