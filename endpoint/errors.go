package endpoint

import (
	"errors"
	"fmt"

	"github.com/openenoc/oetp/wire"
)

// Sentinel errors wrapped by OpError.Err; test them with errors.Is.
var (
	// ErrInvalid is wrapped when a local check rejects an operation before
	// acceptance (LOCAL_INVALID): nothing is sent and no Request ID is
	// consumed. The wrapping error says which check failed.
	ErrInvalid = errors.New("invalid operation")
	// ErrTimeout is wrapped when no response arrived before the sampled
	// timeout (TIMEOUT).
	ErrTimeout = errors.New("no response before the timeout")
	// ErrReset is wrapped when Reset invalidated the operation's context.
	ErrReset = errors.New("endpoint reset")
	// ErrClosed is returned after Close, and wrapped by operations that
	// Close interrupted.
	ErrClosed = errors.New("endpoint closed")
	// ErrLink is wrapped when the link refused a request frame
	// (LOCAL_AXIS); the link's error is wrapped too.
	ErrLink = errors.New("link refused the frame")
	// ErrMemory is wrapped when the local memory failed an access of a
	// locally initiated DMA transfer (LOCAL_AXI_*).
	ErrMemory = errors.New("local memory access failed")
)

// OpError is the error of a failed RMEM or DMA operation. Code is the CSR
// code the operation completed with (the code recorded in the peer status,
// when it was recorded); Err, if not nil, gives local detail such as a
// sentinel above or the context's error.
type OpError struct {
	Op   string // "RMEM read", "RMEM write", "DMA write" or "DMA read"
	Peer int    // the local peer index
	// Addr is the remote address of the RMEM operation, or of the DMA
	// fragment that failed (the block's start when it failed before its
	// first fragment): a caller can resume a block from there.
	Addr uint32
	Code wire.Code
	Err  error
	// Retries is the number of retransmissions the operation made (for a
	// DMA block, all its fragments together); see RetryPolicy.
	Retries int
	// OutcomeUnknown is true when the operation may have executed at the
	// peer: a try was handed to the link and not answered validly (it
	// timed out, was cancelled or reset, or was answered malformed). False
	// means it certainly did not, or the peer said it did not: it was
	// refused before anything was sent (a local check, a refused frame, a
	// local memory error before the fragment was sent), or the peer
	// answered ERROR_RSP. For a DMA block it is about the failed fragment;
	// the fragments before it completed.
	OutcomeUnknown bool
	// Bytes is the number of bytes of a DMA block that completed before
	// the failure (Transfer.Bytes): with Addr, where to resume.
	Bytes uint64
}

// MaybeExecuted reports whether the failed operation may have changed
// anything at the peer: its outcome is unknown, or part of a block
// completed.
func (e *OpError) MaybeExecuted() bool { return e.OutcomeUnknown || e.Bytes > 0 }

// Error returns e.g. "oetp: DMA write to peer 0: REMOTE_AXI_WR_SLVERR (14)",
// followed by ": " and Err when Err is set.
func (e *OpError) Error() string {
	prep := "to"
	if e.Op == opRMEMRead || e.Op == opDMARead {
		prep = "from"
	}
	return fmt.Sprintf("oetp: %s %s peer %d: %s", e.Op, prep, e.Peer, e.Outcome())
}

// Outcome describes the failure without the operation and peer, e.g.
// "TIMEOUT (8): no response before the timeout".
func (e *OpError) Outcome() string {
	s := fmt.Sprintf("%v (%d)", e.Code, uint8(e.Code))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Outcome describes an operation's error briefly: OpError.Outcome for an
// error wrapping an *OpError, else err's own text.
func Outcome(err error) string {
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Outcome()
	}
	return err.Error()
}

// Unwrap returns Err.
func (e *OpError) Unwrap() error { return e.Err }

// CodeOf returns the CSR code an operation completed with: NONE for nil,
// the OpError's Code for an error wrapping an *OpError, and LOCAL_INVALID
// for any other error.
func CodeOf(err error) wire.Code {
	if err == nil {
		return wire.CodeNone
	}
	var oe *OpError
	if errors.As(err, &oe) {
		return oe.Code
	}
	return wire.CodeLocalInvalid
}

// Operation names used in OpError.Op.
const (
	opRMEMRead  = "RMEM read"
	opRMEMWrite = "RMEM write"
	opDMAWrite  = "DMA write"
	opDMARead   = "DMA read"
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
