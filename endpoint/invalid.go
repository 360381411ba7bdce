package endpoint

import (
	"sync"

	"github.com/openenoc/oetp/wire"
)

// InvalidCheck names the responder check a request failed with cause
// INVALID (the requester's REMOTE_INVALID): what a user changes to fix it.
type InvalidCheck uint8

// The checks, in the order the responder runs them.
const (
	InvalidNone      InvalidCheck = iota
	InvalidMode                   // the peer entry's mode does not allow the command
	InvalidAlignment              // an RMEM address that is not a multiple of 4
	InvalidLength                 // a DMA Length of 0
	InvalidWindow                 // the access is not inside the peer entry's window
)

// String returns "mode", "alignment", "length" or "window" ("" for none).
func (c InvalidCheck) String() string {
	switch c {
	case InvalidMode:
		return "mode"
	case InvalidAlignment:
		return "alignment"
	case InvalidLength:
		return "length"
	case InvalidWindow:
		return "window"
	}
	return ""
}

// InvalidRequest is the last request from a peer that the responder
// refused with cause INVALID: which check it failed, and its command,
// address and length (4 for RMEM).
type InvalidRequest struct {
	Check   InvalidCheck
	Cmd     wire.Cmd
	Address uint32
	Length  uint32
}

// invalidLog keeps each peer's last InvalidRequest. Only refused requests
// take its lock.
type invalidLog struct {
	mu   sync.Mutex
	last [MaxPeers]InvalidRequest
}

// invalid records that the request in w failed check c and returns the
// wire cause INVALID.
func (e *Endpoint) invalid(w *worker, c InvalidCheck, addr, length uint32) uint32 {
	if p := w.peer; p >= 0 && p < MaxPeers {
		e.invalids.mu.Lock()
		e.invalids.last[p] = InvalidRequest{Check: c, Cmd: w.cls.Cmd, Address: addr, Length: length}
		e.invalids.mu.Unlock()
	}
	return wire.CauseInvalid
}

// LastInvalid returns the last request from peer i that the responder
// refused with cause INVALID, and false when there was none: serve's log
// says which check failed (the ERROR_RSP cannot).
func (e *Endpoint) LastInvalid(i int) (InvalidRequest, bool) {
	if i < 0 || i >= MaxPeers {
		return InvalidRequest{}, false
	}
	e.invalids.mu.Lock()
	defer e.invalids.mu.Unlock()
	r := e.invalids.last[i]
	return r, r.Check != InvalidNone
}
