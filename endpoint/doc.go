// Package endpoint is the protocol engine of one oETP endpoint: one unicast
// MAC address on a link.Link, serving one memory.Space to its peers and
// initiating RMEM and DMA operations on theirs, exactly as the openENOC oETP
// v1 engine specification defines them.
//
// An Endpoint plays both roles at once. The initiator (initiator.go) owns the
// initiating slot shared by RMEM and DMA, the 32-bit Request ID counter, the
// response timers and the reply matcher; the number of outstanding requests
// is a parameter, one in v1. The responder admits a received request cheapest
// check first (peer, framing, mode, alignment, length, window), performs the
// memory access and answers unicast requests; group writes are never
// answered. Failures on either side are latched in the peer's status (the
// CSR error flag and 4-bit code) and raise Events, the analogue of the
// hardware's interrupts. Cycles become time.Duration and CSRs become Config,
// Peer and PeerStatus.
//
// RMEMRead, RMEMWrite and the DMA calls return nil or an *OpError whose Code
// is the CSR code of the completion (CodeOf extracts it) and which says
// whether the operation may have executed (OpError.OutcomeUnknown):
// LOCAL_INVALID (1) nothing was sent; LOCAL_AXIS (2) the link refused the
// frame; 4..7 the local memory failed; TIMEOUT (8) no response in time, the
// context ended, or Reset/Close invalidated the operation; 9..15 the peer
// answered ERROR_RSP with cause 1..7 (10 also for a malformed response).
//
// Recovery from a lossy link is opt-in per peer (SetRetryPolicy) or per
// operation (WithRetry): a try is resent as a new request with a new Request
// ID, never for a volatile range. docs/design/engine.md describes the receive
// loop, responder contexts, chained DMA blocks and the outcome of every call.
package endpoint
