package endpoint

import (
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// serve runs the responder checks that follow admission on the request in
// w, in the specification's order (see check), performs the memory access, and builds the
// reply to a unicast request in w.tx: the success response or ERROR_RSP.
// It reports whether there is a reply to send. A group request gets the
// same checks and memory work and never a reply. A failure is
// recorded in the source peer's status before the ERROR_RSP is sent: the
// local code 1..7, except an incomplete DMA_WRITE_REQ, which records
// REMOTE_AXIS (10) while its ERROR_RSP carries cause 2.
//
// A DMA_WRITE_REQ has been validated completely (length and EndOfData) by
// the time memory is written, so a malformed one never modifies memory
// (while its ERROR_RSP reports the memory error its data would have met,
// when the memory can tell: see check); a
// DMA_READ_REQ's data is read completely before the response is sent, so a
// read error always becomes an ERROR_RSP, never a truncated response.
func (e *Endpoint) serve(w *worker) (reply bool) {
	f := wire.Frame(w.frame())
	cmd := w.cls.Cmd
	cause := e.check(w, f)
	if cause == 0 && e.epoch.Load() == w.epoch {
		cause = e.execute(w, f)
	}
	if e.epoch.Load() != w.epoch {
		return false // Reset: the context is invalidated; no record, no reply
	}
	if cause != 0 {
		code := wire.Code(cause)
		if cmd == wire.DMAWriteReq && cause == wire.CauseLength {
			code = wire.CodeRemoteAXIS
		}
		e.record(w.peer, code)
		e.st.responderFail.Add(1)
		if cmd.IsRMEM() {
			e.raiseResponder(RMEMError, w.peer, code)
		} else {
			e.raiseResponder(PeerDMAComplete, w.peer, code)
		}
		if w.group {
			return false
		}
		w.tx = wire.AppendErrorRsp(w.tx[:0], f.Src(), w.cfg.MAC, f.RequestID(), cause)
		w.cause = cause
		return true
	}
	switch cmd {
	case wire.RMEMReadReq:
		e.st.servedRMEMRead.Add(1)
	case wire.RMEMWriteReq:
		e.st.servedRMEMWrite.Add(1)
	case wire.DMAReadReq:
		e.st.servedDMARead.Add(1)
	case wire.DMAWriteReq:
		e.st.servedDMAWrite.Add(1)
	}
	if e.toucher != nil && (cmd == wire.DMAReadReq || cmd == wire.DMAWriteReq) {
		e.prefetch(w, f)
	}
	w.cause = 0
	return !w.group
}

// prefetch arranges for respond to touch, after the reply has been sent,
// the memory that a served DMA request of length L at address A makes the
// likely next one: [A+L, A+2L), the following fragment of the same block,
// clamped by Touch to the memory (nothing past 2^32). A block larger than
// the caches otherwise makes every fragment's copy stall on main memory,
// and that stall sits on the critical path of each round trip; touched
// while the initiator turns the reply into its next request, the lines are
// in the cache when that request arrives.
//
// It is only done for memory that is memory.Immediate and a memory.Toucher
// (RAM, File: e.toucher), whose Touch only reads: no byte, frame, record or
// code changes, and the memory of the served request was written (a DMA
// write) or read (a DMA read) completely before its response was built.
// Any other Space is never touched, since a read there may have effects.
func (e *Endpoint) prefetch(w *worker, f wire.Frame) {
	next := uint64(f.Address()) + uint64(f.Length())
	if next >= 1<<32 {
		return
	}
	w.ahead, w.aheadN = uint32(next), f.Length()
}

// reply transmits the reply that serve built in w.tx, with priority over
// initiating frames. A reply the link refuses is counted in TxErrors; its
// initiator times out.
//
// A DMA_READ_RSP that the link fills (w.fill) is written with WriteFill:
// the memory is read straight into the link's copy of the frame, once. If
// that read fails, nothing is sent but the ERROR_RSP the read error calls
// for (readFailed), as when the memory is read first.
func (e *Endpoint) reply(w *worker) {
	if w.fill {
		w.fill = false
		filled, err := e.writeFill(w.tx, wire.ParamOffset+4, len(w.tx)-(wire.ParamOffset+8), w.fillFn, true)
		if !filled && err == nil {
			e.readFailed(w)
		}
		return
	}
	// Counted before the write, like TxFrames: the initiator may see the
	// ERROR_RSP before Write returns.
	if w.cause != 0 {
		e.st.errorsSent[w.cause].Add(1)
	}
	if e.write(w.tx, true) != nil && w.cause != 0 {
		e.st.errorsSent[w.cause].Add(^uint64(0))
	}
}

// fillRead reads the data of w's DMA_READ_RSP into data, the frame's Data
// words in the link's copy, and zeroes their padding; on a read error it
// keeps the answer in w.fillResp and cancels the frame.
func (e *Endpoint) fillRead(w *worker, data []byte) bool {
	n := int(w.fillN)
	if len(data) < n {
		w.fillResp = memory.DECERR
		return false
	}
	if resp := e.mem.ReadAt(data[:n], w.fillAddr); resp != memory.OKAY {
		w.fillResp = resp
		return false
	}
	clear(data[n:])
	return true
}

// readFailed completes the DMA_READ_REQ in w whose memory read failed as
// reply sent it: what serve does for a failed access (the record, the
// event, the counts), then the ERROR_RSP.
func (e *Endpoint) readFailed(w *worker) {
	cause := readCause(w.fillResp)
	e.st.servedDMARead.Add(^uint64(0)) // counted by serve as served
	w.aheadN = 0
	code := wire.Code(cause)
	e.record(w.peer, code)
	e.st.responderFail.Add(1)
	e.raiseResponder(PeerDMAComplete, w.peer, code)
	f := wire.Frame(w.frame())
	w.tx = wire.AppendErrorRsp(w.tx[:0], f.Src(), w.cfg.MAC, f.RequestID(), cause)
	w.cause = cause
	e.reply(w)
}

// readCause is the wire cause of a failed memory read.
func readCause(resp memory.Resp) uint32 { return memErrCode(resp, false).Cause() }

// check returns the wire cause of the first failed admission check, or 0.
//
// The order is the openENOC RTL's, for every command: the checks its peer
// lookup makes on the header (peer mode; RMEM alignment; DMA Length 0:
// cause 1), then the DMA Length against the fragment ceiling (cause 3),
// then framing (frame length, EndOfData: cause 2; a frame over the
// ceiling: 3), then the window (cause 1), then memory. A header field the
// frame does not hold is not checked: its framing error stands.
//
// A DMA_WRITE_REQ differs in the last steps, because a streaming receiver
// ("Bulk payload transfer starts without waiting for the complete Ethernet
// frame") admits it from its header and meets a framing error only at the
// end of the frame: that late framing result replaces the window's cause
// 1 (the RTL answers 2), and when the window holds, the local memory error
// of the data bytes the frame carries, when the memory can tell
// (memory.Prober), beats it (cause 6 or 7 instead of 2). A malformed
// DMA_WRITE_REQ is never written (see serve).
func (e *Endpoint) check(w *worker, f wire.Frame) uint32 {
	cmd := w.cls.Cmd
	p := &w.peerEntry
	var need Mode
	switch cmd {
	case wire.RMEMReadReq, wire.RMEMWriteReq:
		need = ModeRMEM
	case wire.DMAReadReq:
		need = ModeDMARead
	case wire.DMAWriteReq:
		need = ModeDMAWrite
	}
	if p.Mode != need {
		var a uint32
		if len(f) >= wire.ParamOffset+8 {
			a = f.Address()
		}
		return e.invalid(w, InvalidMode, a, 0)
	}
	problem := w.cls.Problem.Cause()
	if len(f) < wire.ParamOffset+8 || !cmd.IsRMEM() && len(f) < wire.ParamOffset+12 {
		return wire.CauseLength // the header itself is incomplete
	}
	addr := f.Address()
	length := uint32(4)
	if cmd.IsRMEM() {
		if addr%4 != 0 {
			return e.invalid(w, InvalidAlignment, addr, length)
		}
	} else {
		length = f.Length()
		if length == 0 {
			return e.invalid(w, InvalidLength, addr, length)
		}
		if length > e.ceiling {
			return wire.CauseOverflow
		}
	}
	if cmd != wire.DMAWriteReq && problem != 0 {
		return problem
	}
	if !wire.RangeOK(addr, length, p.WindowBase, p.WindowSize) {
		if problem != 0 {
			return problem // a DMA_WRITE_REQ's late framing result
		}
		return e.invalid(w, InvalidWindow, addr, length)
	}
	if problem != 0 {
		// The data bytes present in the frame, which a streaming
		// receiver would have written before it saw the framing error.
		n := min(uint64(length), uint64(max(len(f)-(wire.ParamOffset+12), 0)))
		if n > 0 {
			if r, _ := memory.ProbeSpace(e.mem, addr, int(n), true); r != memory.OKAY {
				return memErrCode(r, true).Cause()
			}
		}
		return problem
	}
	return 0
}

// execute performs the memory access of an admitted request and builds the
// success response in w.tx. It returns the wire cause of a memory failure,
// or 0.
func (e *Endpoint) execute(w *worker, f wire.Frame) uint32 {
	dst, src, rid, addr := f.Src(), w.cfg.MAC, f.RequestID(), f.Address()
	switch w.cls.Cmd {
	case wire.RMEMReadReq:
		data, ok := e.mem.ReadWord(addr)
		if !ok {
			return wire.CauseAXIRdSlverr
		}
		w.tx = wire.AppendRMEMReadRsp(w.tx[:0], dst, src, rid, data)
	case wire.RMEMWriteReq:
		if mask := f.BitEnable(); mask != 0 {
			if !e.mem.WriteWord(addr, f.Data(), mask) {
				return wire.CauseAXIWrSlverr
			}
		}
		w.tx = wire.AppendRMEMWriteRsp(w.tx[:0], dst, src, rid)
	case wire.DMAReadReq:
		n := f.Length()
		frame, data := wire.GrowDMAReadRsp(w.tx[:0], dst, src, rid, n)
		if e.filler != nil && e.inline && !w.group {
			// The memory answers at once: it is read straight into the
			// link's copy of the response when reply sends it (fillRead);
			// a read error then becomes the ERROR_RSP (readFailed).
			w.fill, w.fillAddr, w.fillN = true, addr, n
		} else {
			switch resp := e.mem.ReadAt(data, addr); resp {
			case memory.OKAY:
			default:
				return readCause(resp)
			}
		}
		w.tx = frame
	case wire.DMAWriteReq:
		n := f.Length()
		if resp := e.mem.WriteAt(f.Payload(n), addr); resp != memory.OKAY {
			return memErrCode(resp, true).Cause()
		}
		w.tx = wire.AppendDMAWriteRsp(w.tx[:0], dst, src, rid)
	}
	return 0
}
