// Package endpoint is the protocol engine of one oETP endpoint: one unicast
// MAC address on a link.Link, serving one memory.Space to its peers and
// initiating RMEM and DMA operations on theirs, exactly as the openENOC oETP
// v1 engine specification defines them.
//
// An Endpoint plays both roles at once. As an initiator it owns one
// initiating slot shared by RMEM and DMA (a pending RMEM goes before the next
// DMA fragment), the 32-bit Request ID counter, the response timers and the
// reply matcher. As a responder it admits received requests cheapest check
// first (classification, destination, source peer, framing, peer mode,
// alignment, length, fragment ceiling, window), performs the memory access,
// and answers unicast requests with a success response or ERROR_RSP; group
// writes are never answered. Failures on either side are latched in the
// peer's status (the CSR error flag and 4-bit code) and raise events, the
// analogue of the hardware interrupts.
//
// One receive loop per endpoint reads batches of frames from the link into
// a ring of preallocated buffers. Requests are served by a bounded number of
// responder contexts (Config.Contexts); when none is free the request is
// dropped and counted, and the loop keeps going, so a reply to the endpoint's
// own outstanding request is still matched. The goroutine that admits a
// request serves it itself and hands the receive role to an idle context, so
// a request is served without a goroutine hop; when the memory is
// memory.Immediate (RAM, file mappings, fault regions and maps of them, which
// never wait), the receive loop serves it without handing the role on, which
// saves waking a context per request and, like the hardware's streaming
// responder, frees the context by the time the next frame is classified. On a
// link that implements link.Looper the receive loop runs inside the link's
// ReadLoop, handling each batch from its callback, which spares the read of an
// empty socket before every wait. Replies to received requests have transmit
// priority over new initiating and raw frames.
//
// A unicast DMA block is chained: the receive loop sends each next fragment
// as soon as it has validated the previous fragment's response, so the
// calling goroutine sleeps once per block, not once per fragment (see
// DMAWrite), also while it reports progress (WithProgress).
//
// The initiator is one type (initiator.go) that owns the outstanding
// requests, their Request ID index and timers, and the block in transfer;
// the number of outstanding requests is a parameter, one in v1. Recovery
// from a lossy link is opt-in per peer (SetRetryPolicy) or per operation
// (WithRetry): a try that timed out or was answered malformed is sent again
// as a new request with a new Request ID, with a timeout that follows the
// measured round trip (RFC 6298), never for a volatile address range, and
// every failure says whether the operation may have executed
// (OpError.OutcomeUnknown). See RetryPolicy.
//
// # Outcomes of an initiated operation
//
// RMEMRead, RMEMWrite and the DMA calls return nil or an *OpError whose
// Code is the CSR code of the completion (CodeOf extracts it):
//
//   - LOCAL_INVALID (1), wrapping ErrInvalid: a local check failed before
//     acceptance; nothing was sent and no Request ID was consumed. Also the
//     code of an ERROR_RSP whose Error Code is not a cause 1..7.
//   - LOCAL_AXIS (2), wrapping ErrLink: the link refused the request frame.
//   - LOCAL_AXI_RD_SLVERR..LOCAL_AXI_WR_DECERR (4..7), wrapping ErrMemory:
//     the local source or destination of a DMA block failed.
//   - TIMEOUT (8), wrapping ErrTimeout: no response before the sampled
//     timeout; or wrapping ctx.Err(): the context ended (before acceptance:
//     nothing sent, nothing recorded; while awaiting the response: handled
//     exactly like a timeout); or wrapping ErrReset or ErrClosed: Reset or
//     Close invalidated the operation (nothing recorded, no event).
//   - REMOTE_INVALID..REMOTE_AXI_WR_DECERR (9..15): the peer answered
//     ERROR_RSP with cause 1..7; REMOTE_AXIS (10) also when a matching
//     response was malformed (wrong length or EndOfData).
//
// Except where noted, the code is also latched in the peer's status and
// raises the operation's event when enabled. A call made after Close
// returns LOCAL_INVALID wrapping ErrClosed.
//
// Hardware cycles become time.Duration, CSRs become Config, Peer and
// PeerStatus, and interrupts become Events. Where the specification describes
// streaming hardware that cannot see a whole frame before acting on it, this
// software engine validates a received DMA_WRITE_REQ or DMA_READ_RSP
// completely before it touches memory, so a malformed frame never modifies
// memory; everything observable on the wire, in memory and in the recorded
// codes is otherwise as the specification describes.
package endpoint
