package endpoint

import (
	"sync/atomic"

	"github.com/openenoc/oetp/wire"
)

// Stats are the endpoint's counters since New. Reset does not clear them.
type Stats struct {
	RxFrames uint64 // frames handed over by the link
	RxBytes  uint64 // bytes in RxFrames
	RxErrors uint64 // link read errors other than closure
	TxFrames uint64 // frames accepted by the link (counted as they are handed over): requests, replies and raw
	TxBytes  uint64 // bytes in TxFrames
	TxErrors uint64 // frames the link refused

	DropRunt          uint64 // shorter than an Ethernet header
	DropTooLong       uint64 // non-oETP frames longer than Config.MaxFrame
	DropRawPolicy     uint64 // non-oETP frames the raw policy rejected
	DropRawQueueFull  uint64 // admitted non-oETP frames that found the raw queue full
	DropReservedCmd   uint64 // oETP frames with a reserved Cmd
	DropNoRequestID   uint64 // oETP frames too short for a Request ID
	DropNotForUs      uint64 // oETP frames for another unicast MAC or an unconfigured group
	DropGroupRead     uint64 // read requests addressed to a group
	DropUnknownSource uint64 // requests from a MAC not in the peer table
	DropResponderBusy uint64 // requests that found every responder context busy
	DropNoResponder   uint64 // requests received by an initiator-only endpoint (nil memory)
	DropReset         uint64 // frames read before a Reset and discarded by it
	DropEventPending  uint64 // requests dropped as busy while a responder event waited for room in the full event queue
	DropReadRate      uint64 // DMA read requests dropped without a reply: their source was over Config.MaxReadRate

	DropUnmatchedResponse uint64 // responses matching no outstanding request
	DropLateResponse      uint64 // responses to a request that timed out or was aborted
	MalformedResponses    uint64 // matched responses with a bad length or EndOfData (REMOTE_AXIS)

	ServedRMEMRead  uint64 // received requests completed successfully, by command
	ServedRMEMWrite uint64
	ServedDMARead   uint64
	ServedDMAWrite  uint64

	// ResponderFailures counts received requests that failed admission or
	// memory access after their source was known (unicast and group).
	ResponderFailures uint64
	// ErrorsSent counts ERROR_RSP frames sent, indexed by wire cause 1..7,
	// counted as they are handed to the link (like TxFrames).
	ErrorsSent [8]uint64

	Timeouts    uint64 // initiated operations that ended in TIMEOUT (timer or cancellation)
	Retries     uint64 // retransmissions of initiated operations and fragments (see RetryPolicy)
	RawReceived uint64 // non-oETP frames queued for RecvRaw
	RawSent     uint64 // frames sent by SendRaw
	// The initiator's figures per peer (round trips, retries, timeouts)
	// are returned by Endpoint.PeerStats; Stats stays comparable.
}

type counters struct {
	rxFrames, rxBytes, rxErrors, txFrames, txBytes, txErrors                                 atomic.Uint64
	dropRunt, dropTooLong, dropRawPolicy, dropRawQueueFull, dropReservedCmd, dropNoRequestID atomic.Uint64
	dropNotForUs, dropGroupRead, dropUnknownSource, dropResponderBusy, dropReset             atomic.Uint64
	dropNoResponder, dropEventPending, dropReadRate                                          atomic.Uint64
	dropUnmatchedResponse, dropLateResponse, malformedResponses                              atomic.Uint64
	servedRMEMRead, servedRMEMWrite, servedDMARead, servedDMAWrite, responderFail            atomic.Uint64
	errorsSent                                                                               [8]atomic.Uint64
	timeouts, rawReceived, rawSent, retries                                                  atomic.Uint64
	lastUnknown                                                                              atomic.Uint64 // see LastUnknownSource
	lastReadRate                                                                             atomic.Uint64 // see LastReadRateSource
	expiredAfterResponse                                                                     atomic.Uint64 // test observability
	chained                                                                                  atomic.Uint64 // fragments sent by the receive loop; test observability
}

// Stats returns a snapshot of the counters.
func (e *Endpoint) Stats() Stats {
	c := &e.st
	s := Stats{
		RxFrames: c.rxFrames.Load(), RxBytes: c.rxBytes.Load(), RxErrors: c.rxErrors.Load(),
		TxFrames: c.txFrames.Load(), TxBytes: c.txBytes.Load(), TxErrors: c.txErrors.Load(),
		DropRunt: c.dropRunt.Load(), DropTooLong: c.dropTooLong.Load(), DropRawPolicy: c.dropRawPolicy.Load(),
		DropRawQueueFull: c.dropRawQueueFull.Load(), DropReservedCmd: c.dropReservedCmd.Load(),
		DropNoRequestID: c.dropNoRequestID.Load(), DropNotForUs: c.dropNotForUs.Load(),
		DropGroupRead: c.dropGroupRead.Load(), DropUnknownSource: c.dropUnknownSource.Load(),
		DropResponderBusy: c.dropResponderBusy.Load(), DropReset: c.dropReset.Load(),
		DropNoResponder: c.dropNoResponder.Load(), DropEventPending: c.dropEventPending.Load(),
		DropReadRate:          c.dropReadRate.Load(),
		DropUnmatchedResponse: c.dropUnmatchedResponse.Load(), DropLateResponse: c.dropLateResponse.Load(),
		MalformedResponses: c.malformedResponses.Load(),
		ServedRMEMRead:     c.servedRMEMRead.Load(), ServedRMEMWrite: c.servedRMEMWrite.Load(),
		ServedDMARead: c.servedDMARead.Load(), ServedDMAWrite: c.servedDMAWrite.Load(),
		ResponderFailures: c.responderFail.Load(),
		Timeouts:          c.timeouts.Load(), RawReceived: c.rawReceived.Load(), RawSent: c.rawSent.Load(),
		Retries: c.retries.Load(),
	}
	for i := range s.ErrorsSent {
		s.ErrorsSent[i] = c.errorsSent[i].Load()
	}
	return s
}

// packUnknown packs a request's source MAC and command for
// counters.lastUnknown: the MAC in bits 0..47, the command in 48..55, bit
// 56 set so that the zero value means none.
func packUnknown(src wire.MAC, cmd wire.Cmd) uint64 {
	var v uint64
	for _, b := range src {
		v = v<<8 | uint64(b)
	}
	return v | uint64(cmd)<<48 | 1<<56
}

// LastUnknownSource returns the source MAC and command of the most recent
// request dropped because its source is in no peer table entry (counted in
// Stats.DropUnknownSource); ok is false before the first. Recording it
// costs the receive path one atomic store; a tool that polls it with the
// counter (such as `oetp serve`) can say which MAC, and which peer mode,
// a misconfigured peer table is missing.
func (e *Endpoint) LastUnknownSource() (src wire.MAC, cmd wire.Cmd, ok bool) {
	return unpackUnknown(e.st.lastUnknown.Load())
}

// LastReadRateSource returns the source MAC of the most recent DMA read
// request dropped over Config.MaxReadRate (Stats.DropReadRate); ok is
// false before the first.
func (e *Endpoint) LastReadRateSource() (src wire.MAC, ok bool) {
	src, _, ok = unpackUnknown(e.st.lastReadRate.Load())
	return src, ok
}

// unpackUnknown undoes packUnknown; ok is false for the zero value.
func unpackUnknown(v uint64) (src wire.MAC, cmd wire.Cmd, ok bool) {
	if v == 0 {
		return src, 0, false
	}
	for i := 5; i >= 0; i-- {
		src[i] = byte(v)
		v >>= 8
	}
	return src, wire.Cmd(v), true
}
