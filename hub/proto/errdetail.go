package proto

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// FlagDetail in a reply's flags says an error detail follows the message
// (before the result): the failed operation's *endpoint.OpError, whole.
const FlagDetail uint8 = 2

// The detail's flags.
const (
	detailOutcomeUnknown uint8 = 1 // OpError.OutcomeUnknown
)

// Causes: the engine's sentinel an OpError wraps, carried as a number so
// that errors.Is holds on the client's side of the hub as on the engine's.
const (
	CauseNone     uint8 = 0
	CauseInvalid  uint8 = 1 // endpoint.ErrInvalid
	CauseTimeout  uint8 = 2 // endpoint.ErrTimeout
	CauseReset    uint8 = 3 // endpoint.ErrReset
	CauseClosed   uint8 = 4 // endpoint.ErrClosed
	CauseLink     uint8 = 5 // endpoint.ErrLink
	CauseMemory   uint8 = 6 // endpoint.ErrMemory
	CauseCanceled uint8 = 7 // context.Canceled
	CauseDeadline uint8 = 8 // context.DeadlineExceeded
	CauseOther    uint8 = 9 // a cause with no sentinel: its text only
	// CauseStalled: the hub aborted a streamed WRITE_BLOCK whose data
	// stopped arriving (the hub's read deadline).
	CauseStalled uint8 = 10
)

var causeErrs = [...]error{CauseInvalid: endpoint.ErrInvalid, CauseTimeout: endpoint.ErrTimeout, CauseReset: endpoint.ErrReset,
	CauseClosed: endpoint.ErrClosed, CauseLink: endpoint.ErrLink, CauseMemory: endpoint.ErrMemory,
	CauseCanceled: context.Canceled, CauseDeadline: context.DeadlineExceeded, CauseStalled: ErrStalled}

// ErrStalled is the cause of a streamed WRITE_BLOCK the hub aborted because
// its data stopped arriving.
var ErrStalled = errors.New("the block's data stopped arriving")

// causeOf returns the cause number of err.
func causeOf(err error) uint8 {
	if err == nil {
		return CauseNone
	}
	for i, s := range causeErrs {
		if s != nil && errors.Is(err, s) {
			return uint8(i)
		}
	}
	return CauseOther
}

// causeError is a cause carried over the hub: the engine's text, and the
// sentinel it wrapped.
type causeError struct {
	text string
	is   error
}

func (e *causeError) Error() string { return e.text }
func (e *causeError) Unwrap() error { return e.is }

// ErrorDetail is the detail block of a failed operation's reply:
//
//	u8 flags (bit 0 outcome unknown), u8 cause, u16 reserved 0,
//	u32 failed address, u32 retries, u64 bytes done, u32 fragments done,
//	str16 operation, str16 cause text
//
// preceded by its u16 length, so that a later version may add fields.
type ErrorDetail struct {
	OutcomeUnknown bool
	Cause          uint8
	Addr           uint32
	Retries        uint32
	Bytes          uint64
	Fragments      uint32
	Op             string
	CauseText      string
}

// AppendErrorReply appends the header and status block of a failed device
// operation's reply with its whole error: status the CSR code, flags
// MAYBE_EXECUTED (the operation may have executed: the engine's outcome is
// unknown, or bytes were done) and DETAIL, the message msg, the detail. t
// is the block's progress (zero for RMEM). The result follows, then Finish.
func AppendErrorReply(b []byte, req Header, msg string, err error, bytes uint64, frags int) []byte {
	code := endpoint.CodeOf(err)
	d := ErrorDetail{Bytes: bytes, Fragments: uint32(frags)}
	var oe *endpoint.OpError
	if errors.As(err, &oe) {
		d.OutcomeUnknown, d.Addr, d.Retries, d.Op = oe.OutcomeUnknown, oe.Addr, uint32(oe.Retries), oe.Op
		if oe.Err != nil {
			d.CauseText, d.Cause = oe.Err.Error(), causeOf(oe.Err)
		}
	} else {
		d.CauseText, d.Cause = err.Error(), causeOf(err)
	}
	flags := FlagDetail
	if d.OutcomeUnknown || bytes > 0 {
		flags |= FlagMaybeExecuted
	}
	b = AppendReplyHeader(b, req, uint8(code), flags, msg)
	return AppendDetail(b, d)
}

// AppendDetail appends d with its length.
func AppendDetail(b []byte, d ErrorDetail) []byte {
	start := len(b)
	b = append(b, 0, 0)
	var f uint8
	if d.OutcomeUnknown {
		f |= detailOutcomeUnknown
	}
	b = append(b, f, d.Cause, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, d.Addr)
	b = binary.LittleEndian.AppendUint32(b, d.Retries)
	b = binary.LittleEndian.AppendUint64(b, d.Bytes)
	b = binary.LittleEndian.AppendUint32(b, d.Fragments)
	b = AppendStr16(b, d.Op)
	b = AppendStr16(b, d.CauseText)
	binary.LittleEndian.PutUint16(b[start:], uint16(len(b)-start-2))
	return b
}

// parseDetail decodes a detail block (with its length) from the start of b
// and returns the rest.
func parseDetail(b []byte) (ErrorDetail, []byte, error) {
	d := Decoder{B: b}
	n := int(d.U16("error detail length"))
	blk := Decoder{B: d.Bytes(n, "error detail")}
	var e ErrorDetail
	f := blk.U8("detail flags")
	e.OutcomeUnknown = f&detailOutcomeUnknown != 0
	e.Cause = blk.U8("detail cause")
	blk.U16("detail reserved")
	e.Addr = blk.U32("failed address")
	e.Retries = blk.U32("retries")
	e.Bytes = uint64(blk.U32("bytes low")) | uint64(blk.U32("bytes high"))<<32
	e.Fragments = blk.U32("fragments")
	e.Op = blk.Str16("operation")
	e.CauseText = blk.Str16("cause")
	if d.Err != nil {
		return e, nil, d.Err
	}
	if blk.Err != nil {
		return e, nil, blk.Err
	}
	return e, d.B, nil
}

// OpError rebuilds the engine's error from a failed reply's status and
// detail: the same code, operation, failed address, retries, outcome and
// cause (errors.Is finds the engine's sentinel), and Bytes done.
func (st ReplyStatus) OpError() *endpoint.OpError {
	e := &endpoint.OpError{Code: wire.Code(st.Status & 0xF), OutcomeUnknown: st.Flags&FlagMaybeExecuted != 0}
	d := st.Detail
	if d == nil {
		// A reply without the detail: the message is all there is.
		if st.Message != "" {
			e.Err = errors.New(st.Message)
		}
		return e
	}
	e.Op, e.Addr, e.Retries, e.OutcomeUnknown, e.Bytes = d.Op, d.Addr, int(d.Retries), d.OutcomeUnknown, d.Bytes
	if d.CauseText != "" || d.Cause != CauseNone {
		var is error
		if int(d.Cause) < len(causeErrs) {
			is = causeErrs[d.Cause]
		}
		e.Err = &causeError{text: d.CauseText, is: is}
	}
	return e
}
