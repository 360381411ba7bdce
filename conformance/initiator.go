package conformance

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/openenoc/oetp/wire"
)

// The initiator cases make the device send requests with the DUT file's
// [trigger] commands and play the peer it sends them to (Trigger.MAC):
// they check the device's frames octet for octet and the outcome it
// reports (done, error_code, rd_data) against the specification.

// The trigger keys the initiator cases need.
const (
	KeyTrigRMEMRead   = "[trigger] rmem_read"
	KeyTrigRMEMWrite  = "[trigger] rmem_write"
	KeyTrigDMAWrite   = "[trigger] dma_write"
	KeyTrigDMARead    = "[trigger] dma_read"
	KeyTrigTimeoutOff = "[trigger] timeout_off and timeout_on"
	// KeyTrigTimeoutShort names what the timer-start case needs.
	KeyTrigTimeoutShort = "[trigger] timeout_short (a DMA response timeout shorter than sending one DMA_WRITE_REQ of the largest fragment) and timeout_on"
)

// wrapWalk is how many requests the Request ID wrap case makes to reach
// the wrap when the DUT file cannot preset the counter.
const wrapWalk = 64

// initAddr is the runner-side address of the RMEM initiator cases: a
// word every device can reach (the openENOC CSR window is 0..0x3fc).
const initAddr = 0x40

func init() { allCases = append(allCases, initiatorCases...) }

var initiatorCases = []Case{
	{sec: "txn", Role: Initiator, Needs: []string{KeyTrigRMEMRead},
		Rule: "A reply must match an outstanding context’s source MAC, Request ID, and expected response command.",
		run: func(t *T) {
			op, rid := t.readOut()
			const data = 0xA5C3_0F01
			t.answer(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid, data))
			t.wantOutcome("RMEM read answered correctly", op, 0, data, true)
		}},
	{sec: "txn", Role: Initiator, Needs: []string{KeyTrigRMEMWrite},
		Rule: "A success response implies that the entire requested operation succeeded; there is no success Status or transferred-length parameter.",
		run: func(t *T) {
			const data, mask = 0x1234_5678, 0x0000_0005
			op := t.startRMEMWrite(initAddr, data, mask)
			req := t.expectRequest("RMEM_WRITE_REQ", wire.RMEMWriteReq, 18)
			rid := wire.Frame(req).RequestID()
			want := frameOf(t.initMAC(), t.Target(), byte(wire.RMEMWriteReq), []uint32{rid, initAddr, mask, data})
			t.sameLogical("RMEM_WRITE_REQ", want, req)
			t.answer(wire.AppendRMEMWriteRsp(nil, t.Target(), t.initMAC(), rid))
			t.wantOutcome("RMEM write answered correctly", op, 0, 0, false)
		}},
	{sec: "rid", Role: Initiator, Needs: []string{KeyTrigRMEMRead},
		Rule: "Allocating any locally initiated RMEM operation or DMA fragment, including a multicast write, uses the current counter value and increments it modulo 2^32.",
		run: func(t *T) {
			var prev uint32
			for i := range 3 {
				op, rid := t.readOut()
				if i > 0 && rid != prev+1 {
					t.Errorf("request %d carries Request ID %#08x, want the previous %#08x + 1", i+1, rid, prev)
				}
				prev = rid
				t.answer(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid, uint32(i)))
				t.wantOutcome(fmt.Sprintf("read %d", i+1), op, 0, uint32(i), true)
			}
			t.Notef("three requests carry consecutive Request IDs (oetp/rid/3 checks the wrap)")
		}},
	{sec: "error", Role: Initiator, Needs: []string{KeyTrigRMEMRead},
		Rule: "The initiator validates the full 32-bit value and maps it to CSR code = 8 + wire code. Wire values outside 1..7 are invalid response parameters and terminate the matching request with local invalid-parameter error code 1.",
		run: func(t *T) {
			for _, c := range []uint32{1, 2, 3, 4, 5, 6, 7, 0, 8, 0x10000006} {
				op, rid := t.readOut()
				t.answer(wire.AppendErrorRsp(nil, t.Target(), t.initMAC(), rid, c))
				want := 1
				if c >= 1 && c <= 7 {
					want = 8 + int(c)
				}
				t.wantOutcome(fmt.Sprintf("ERROR_RSP cause %#x", c), op, want, 0, false)
			}
		}},
	{sec: "txn", Role: Initiator, Needs: []string{KeyTrigRMEMRead},
		Rule: "A reply must match an outstanding context’s source MAC, Request ID, and expected response command. It cannot create a memory operation itself. Discard unmatched/late replies.",
		run: func(t *T) {
			op, rid := t.readOut()
			t.answer(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid+1, 0xBAD0BAD0))
			t.answer(wire.AppendRMEMWriteRsp(nil, t.Target(), t.initMAC(), rid))
			t.answer(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid, 0x600D600D))
			t.wantOutcome("RMEM read answered with a wrong Request ID, then the wrong command, then correctly", op, 0, 0x600D600D, true)
		}},
	{sec: "txn", Role: Initiator, Needs: []string{KeyTrigRMEMRead},
		Rule: "A recognized response from the expected peer, with the active Request ID and expected response command but an invalid length, terminates the request with an error when the mismatch is detected, without waiting for the configured response timeout.",
		run: func(t *T) {
			long := func(rid uint32) []byte {
				return padTo(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid, 1), 61, 0)
			}
			shortRsp := func(rid uint32) []byte { return wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid, 1)[:22] }
			cases := []struct {
				what string
				f    func(uint32) []byte
			}{{"a 61-byte RMEM_READ_RSP", long}}
			if !t.r.o.LinkPads {
				cases = append(cases, struct {
					what string
					f    func(uint32) []byte
				}{"a 22-byte RMEM_READ_RSP (Data cut short)", shortRsp})
			}
			for _, c := range cases {
				op, rid := t.readOut()
				t.answer(c.f(rid))
				t.wantOutcome("RMEM read answered by "+c.what, op, int(wire.CodeLocalAXIS), 0, false)
			}
		}},
	{sec: "seq", Role: Initiator, Needs: []string{KeyTrigRMEMRead},
		Rule: "Late responses to the timed-out Request ID are discarded and must not write local memory or complete a subsequently started transfer.",
		run: func(t *T) {
			op, rid := t.readOut()
			t0 := time.Now()
			t.wantOutcome("RMEM read never answered", op, int(wire.CodeTimeout), 0, false)
			t.Notef("TIMEOUT after %v", since(t0))
			op, next := t.readOut()
			if next != rid+1 {
				t.Errorf("the next request carries Request ID %#08x, want %#08x", next, rid+1)
			}
			t.answer(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid, 0xBAD0BAD0))
			t.answer(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), next, 0x600D0002))
			t.wantOutcome("next read, after the late reply to the timed-out one", op, 0, 0x600D0002, true)
		}},
	{sec: "seq", Role: Initiator, Needs: []string{KeyTrigRMEMRead, KeyTrigTimeoutOff},
		Rule: "Zero disables that timer and permits an indefinite response wait; a nonzero value bounds the wait for the matching response.",
		run: func(t *T) {
			tr := t.DUT().Trigger
			t.runConfig("timeout_off", tr.TimeoutOff, nil)
			defer t.runConfig("timeout_on", tr.TimeoutOn, nil)
			op, rid := t.readOut()
			wait := 3 * tr.Timeout
			select {
			case res := <-op:
				t.Fatalf("with timeout 0 the read ended after less than %v: %s", wait, res.o.raw)
			case <-time.After(wait):
			}
			t.answer(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid, 0x0F0F0F0F))
			t.wantOutcome(fmt.Sprintf("RMEM read answered after %v with timeout 0", wait), op, 0, 0x0F0F0F0F, true)
		}},
	{sec: "rid", Role: Initiator, Needs: []string{KeyTrigRMEMRead},
		Rule: "The engine maintains one unsigned 32-bit allocation counter. Allocating any locally initiated RMEM operation or DMA fragment, including a multicast write, uses the current counter value and increments it modulo 2^32.",
		run: func(t *T) {
			tr := t.DUT().Trigger
			if tr.SetRequestID != "" {
				t.initSetup()
				t.runConfig("set_request_id", tr.SetRequestID, map[string]string{"rid": hex32(0xFFFF_FFFE)})
			}
			// read makes the device read; its Request ID must follow prev
			// (when i > 0).
			read := func(i int, prev uint32) uint32 {
				op, rid := t.readOut()
				if i > 0 && rid != prev+1 {
					t.Fatalf("after Request ID %#08x the device sent %#08x, want %#08x (the counter wraps at 32 bits)", prev, rid, prev+1)
				}
				t.answer(wire.AppendRMEMReadRsp(nil, t.Target(), t.initMAC(), rid, uint32(i)))
				t.wantOutcome(fmt.Sprintf("read %d", i+1), op, 0, uint32(i), true)
				return rid
			}
			rid := read(0, 0)
			if gap := 0xFFFF_FFFF - rid; gap >= wrapWalk {
				t.Skipf("the device's Request ID is %#08x, %d requests before the wrap: needs DUT key [trigger] set_request_id to preset its counter near 0xffffffff (the openENOC RTL has no such control; only a hard reset sets it, to 0)", rid, uint64(gap)+1)
			}
			first := rid
			for i := 1; rid != 1; i++ {
				rid = read(i, rid)
			}
			t.Notef("Request IDs %#08x through 0xffffffff, then 0 and 1", first)
		}},
	{sec: "txn", Role: Initiator, Needs: []string{KeyTrigDMAWrite, KeyPeerDMAWrite},
		Rule: "A unicast block completes only after every issued fragment’s local work and remote reply succeed, one fragment at a time.",
		run: func(t *T) {
			n := t.blockLen()
			local := t.localBuf(n)
			data := t.pattern(int(n))
			t.fillLocal(local, data)
			const remote = 0x10000
			op := t.startDMA(t.DUT().Trigger.DMAWrite, t.initMAC(), local, remote, n)
			got := t.serveDMAWrite(remote, n, 0)
			if !bytes.Equal(got, data) {
				t.Errorf("the device's DMA write carried other bytes than its local memory holds (first difference at %d)", firstDiff(got, data))
			}
			t.wantOutcome(fmt.Sprintf("DMA write of %d bytes", n), op, 0, 0, false)
		}},
	{sec: "seq", Role: Initiator, Needs: []string{KeyTrigDMAWrite, KeyPeerDMAWrite},
		Rule: "Any fragment error aborts the rest of the block.",
		run: func(t *T) {
			n := t.blockLen()
			local := t.localBuf(n)
			t.fillLocal(local, t.pattern(int(n)))
			op := t.startDMA(t.DUT().Trigger.DMAWrite, t.initMAC(), local, 0x10000, n)
			req := t.expectRequest("first DMA_WRITE_REQ", wire.DMAWriteReq, 0)
			t.answer(wire.AppendErrorRsp(nil, t.Target(), t.initMAC(), wire.Frame(req).RequestID(), wire.CauseAXIWrSlverr))
			t.wantOutcome("DMA write whose first fragment gets ERROR_RSP cause 6", op, int(wire.CodeRemoteAXIWrSlverr), 0, false)
			t.noMoreRequests("after the failed fragment")
		}},
	{sec: "txn", Role: Initiator, Needs: []string{KeyTrigDMARead, KeyPeerDMARead},
		Rule: "For reads, supply data and completion to the local DMA path while respecting its handshakes.",
		run: func(t *T) {
			n := t.blockLen()
			local := t.localBuf(n)
			t.fillLocal(local, make([]byte, n))
			const remote = 0x20000
			data := t.pattern(int(n))
			op := t.startDMA(t.DUT().Trigger.DMARead, t.initMAC(), local, remote, n)
			t.serveDMARead(remote, data, -1)
			t.wantOutcome(fmt.Sprintf("DMA read of %d bytes", n), op, 0, 0, false)
			if got := t.readLocal(local, n); !bytes.Equal(got, data) {
				t.Errorf("the device's memory after its DMA read differs from the data sent (first difference at %d)", firstDiff(got, data))
			}
		}},
	{sec: "txn", Role: Initiator, Needs: []string{KeyTrigDMARead, KeyPeerDMARead},
		Rule: "An incomplete DMA_READ_RSP or a missing/incorrect EndOfData records remote code 10 directly.",
		run: func(t *T) {
			for _, bad := range []string{"EndOfData wrong", "EndOfData missing"} {
				n := uint32(64)
				local := t.localBuf(n)
				op := t.startDMA(t.DUT().Trigger.DMARead, t.initMAC(), local, 0x30000, n)
				req := t.expectRequest("DMA_READ_REQ", wire.DMAReadReq, 14)
				rsp, _ := wire.GrowDMAReadRsp(nil, t.Target(), t.initMAC(), wire.Frame(req).RequestID(), wire.Frame(req).Length())
				if bad == "EndOfData wrong" {
					rsp[len(rsp)-1] ^= 0xFF
				} else {
					rsp = rsp[:len(rsp)-4]
				}
				t.answer(rsp)
				t.wantOutcome("DMA read answered with "+bad, op, int(wire.CodeRemoteAXIS), 0, false)
			}
		}},
	{sec: "txn", Role: Initiator, Needs: []string{KeyTrigDMAWrite, KeyPeerDMAWrite, KeySlvErr},
		Rule: "Only the EndOfData trailer waits for successful local read completion.",
		run: func(t *T) {
			p := t.Peer(ModeDMAWrite)
			a := t.inErr(KeySlvErr, t.DUT().SlvErr, p, 64, 4)
			op := t.startDMA(t.DUT().Trigger.DMAWrite, t.initMAC(), a, 0x40000, 64)
			var sent [][]byte
			for {
				f := t.nextFromDevice(t.DUT().Trigger.Timeout)
				if f == nil {
					break
				}
				sent = append(sent, f)
				if oetpFrame(f) && wire.Frame(f).Cmd() == wire.DMAWriteReq {
					if c := wire.Classify(f, len(f)); c.Problem == wire.OK {
						t.Errorf("a complete DMA_WRITE_REQ with EndOfData for local memory that fails: %s", describe(f))
					}
				}
			}
			res := t.outcome(op)
			if res.o.code != int(wire.CodeLocalAXIRdSlverr) && res.o.code != int(wire.CodeLocalAXIRdDecerr) {
				t.Errorf("DMA write from SLVERR local memory: error_code %d, want 4 (or 5): %s", res.o.code, res.o.raw)
			}
			t.Notef("%d frame(s) sent before the failure was known", len(sent))
		}},
	{sec: "addr", Role: Initiator, Needs: []string{KeyTrigDMARead},
		Rule: "Group-addressed read requests are rejected locally without transmission; receivers discard any such request without a response.",
		run: func(t *T) {
			g := wire.MAC{0x03, 0x0e, 0x0c, 0x00, 0x00, 0x99}
			op := t.startDMA(t.DUT().Trigger.DMARead, g, t.localBuf(16), 0x50000, 16)
			res := t.outcome(op)
			if res.o.code != int(wire.CodeLocalInvalid) {
				t.Errorf("DMA read from group %v: error_code %d, want 1 (refused locally): %s", g, res.o.code, res.o.raw)
			}
			t.noMoreRequests("for a group read")
		}},
	{sec: "seq", Role: Initiator, Needs: []string{KeyTrigDMAWrite, KeyTrigTimeoutShort},
		Rule: "Counting starts after the complete request frame is accepted by the Ethernet-facing transmit stream.",
		run: func(t *T) {
			tr := t.DUT().Trigger
			mf := t.DUT().MaxFrame
			if mf == 0 {
				mf = 1500
			}
			n := wire.FragmentCeiling(mf)
			local := t.localBuf(n)
			t.initSetup()
			t.runConfig("timeout_short", tr.TimeoutShort, nil)
			defer t.runConfig("timeout_on", tr.TimeoutOn, nil)
			// With the timeout shorter than the request's transmission, a
			// timer started before its last byte expires before the runner
			// can see the frame; one answered write proves it starts later.
			// A timeout can also be the runner answering late on a loaded
			// host: up to three tries.
			var raws []string
			for try := 1; try <= 3; try++ {
				op := t.startDMA(tr.DMAWrite, t.initMAC(), local, 0x60000, n)
				req := t.expectRequest("DMA_WRITE_REQ", wire.DMAWriteReq, 0)
				t0 := time.Now()
				t.answer(wire.AppendDMAWriteRsp(nil, t.Target(), t.initMAC(), wire.Frame(req).RequestID()))
				answered := time.Since(t0)
				res := t.outcome(op)
				switch res.o.code {
				case 0:
					t.Notef("a %d-byte DMA_WRITE_REQ answered %v after its last byte completed with timeout_short (try %d)", n, answered, try)
					return
				case int(wire.CodeTimeout):
					raws = append(raws, res.o.raw)
				default:
					t.Fatalf("DMA write of %d bytes answered at once: the device reports error_code %d, want 0: %s", n, res.o.code, res.o.raw)
				}
			}
			t.Errorf("three %d-byte DMA writes, each answered as soon as the runner had the request, ended in TIMEOUT with timeout_short: the device's response timer seems to start before the request's last byte (or timeout_short is shorter than the runner's reply time): %s", n, strings.Join(raws, "; "))
		}},
}

// initMAC is the MAC the device's requests go to.
func (t *T) initMAC() wire.MAC { return t.DUT().Trigger.MAC }

// initSetup runs the setup trigger once per run, before the first
// initiator case.
func (t *T) initSetup() {
	if t.r.setupDone {
		return
	}
	t.r.setupDone = true
	if s := t.DUT().Trigger.Setup; s != "" {
		t.runConfig("setup", s, nil)
	}
}

func (t *T) startRMEMRead(addr uint32) <-chan triggerResult {
	t.initSetup()
	t.drain()
	return t.trigger("rmem_read", t.DUT().Trigger.RMEMRead, map[string]string{"addr": hex32(addr), "mac": t.initMAC().String()})
}

func (t *T) startRMEMWrite(addr, data, mask uint32) <-chan triggerResult {
	t.initSetup()
	t.drain()
	return t.trigger("rmem_write", t.DUT().Trigger.RMEMWrite, map[string]string{"addr": hex32(addr), "data": hex32(data), "mask": hex32(mask), "mac": t.initMAC().String()})
}

func (t *T) startDMA(line string, mac wire.MAC, local, remote, n uint32) <-chan triggerResult {
	t.initSetup()
	t.drain()
	return t.trigger("dma", line, map[string]string{"addr": hex32(remote), "local": hex32(local), "length": fmt.Sprint(n), "mac": mac.String()})
}

// nextFromDevice returns the next frame the device sends within d
// (recorded), or nil.
func (t *T) nextFromDevice(d time.Duration) []byte {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case f := <-t.r.rx:
			t.record(false, f)
			if wire.Frame(f).Src() == t.Target() {
				return f
			}
		case <-timer.C:
			return nil
		case <-t.r.done:
			t.r.linkErr = errLinkClosed
			t.Fatalf("the runner's link closed")
		}
	}
}

// expectRequest waits for the device's next request, which must be cmd to
// the runner's MAC with the exact length of a pdu-byte PDU (or 60 bytes
// padded; pdu 0: any length), and returns it.
func (t *T) expectRequest(what string, cmd wire.Cmd, pdu int) []byte {
	f := t.nextFromDevice(t.DUT().Trigger.Wait)
	if f == nil {
		t.Fatalf("%s: the device sent no request within %v of the trigger", what, t.DUT().Trigger.Wait)
	}
	switch {
	case !oetpFrame(f) || len(f) < wire.ParamOffset+4:
		t.Fatalf("%s: the device sent %s, want %s", what, describe(f), cmd)
	case wire.Frame(f).Cmd() != cmd:
		t.Fatalf("%s: the device sent %s, want %s", what, describe(f), cmd)
	case wire.Frame(f).Dst() != t.initMAC():
		t.Fatalf("%s: sent to %v, want the runner's %v", what, wire.Frame(f).Dst(), t.initMAC())
	case pdu > 0 && len(f) != wire.HeaderLen+pdu && !(pdu < wire.MinPayloadLen && len(f) == wire.MinFrameLen):
		t.Fatalf("%s: %d bytes, want %d (or 60 with Ethernet padding)", what, len(f), wire.HeaderLen+pdu)
	}
	return f
}

// readOut has the device start an RMEM read of initAddr and takes its
// exact RMEM_READ_REQ: it returns the operation and the request's Request
// ID.
func (t *T) readOut() (<-chan triggerResult, uint32) {
	op := t.startRMEMRead(initAddr)
	return op, wire.Frame(t.expectRMEMRead(initAddr)).RequestID()
}

func (t *T) expectRMEMRead(addr uint32) []byte {
	req := t.expectRequest("RMEM_READ_REQ", wire.RMEMReadReq, 10)
	want := frameOf(t.initMAC(), t.Target(), byte(wire.RMEMReadReq), []uint32{wire.Frame(req).RequestID(), addr})
	t.sameLogical("RMEM_READ_REQ", want, req)
	return req
}

// sameLogical requires got to start with want (got may be padded).
func (t *T) sameLogical(what string, want, got []byte) {
	if len(got) < len(want) || !bytes.Equal(got[:len(want)], want) {
		t.Fatalf("%s: the device sent\n%s\nwant\n%s", what, Hex(got), Hex(want))
	}
}

// answer sends the runner's reply.
func (t *T) answer(f []byte) { t.send(f) }

// outcome waits for the trigger's result.
func (t *T) outcome(op <-chan triggerResult) triggerResult {
	select {
	case res := <-op:
		if res.err != nil {
			t.Fatalf("trigger %q: %v", res.cmdline, res.err)
		}
		if res.o.code < 0 {
			t.Fatalf("trigger %q printed no error_code=: %q", res.cmdline, res.o.raw)
		}
		return res
	case <-time.After(t.DUT().Trigger.Wait + time.Second):
		t.Fatalf("the trigger did not end within [trigger] wait %v", t.DUT().Trigger.Wait)
	}
	return triggerResult{}
}

// wantOutcome requires the trigger's reported error_code to be code (and,
// when checkData, rd_data to be data).
func (t *T) wantOutcome(what string, op <-chan triggerResult, code int, data uint32, checkData bool) {
	res := t.outcome(op)
	if res.o.code != code {
		t.Fatalf("%s: the device reports error_code %d, want %d (%s): %s", what, res.o.code, code, wire.Code(code), res.o.raw)
	}
	if code == 0 && res.o.errFlag {
		t.Fatalf("%s: the device reports error=1 with error_code 0: %s", what, res.o.raw)
	}
	if checkData && (!res.o.hasData || res.o.data != data) {
		t.Fatalf("%s: the device reports rd_data %#08x (printed: %v), want %#08x: %s", what, res.o.data, res.o.hasData, data, res.o.raw)
	}
}

// noMoreRequests requires that the device sends nothing for Timeout.
func (t *T) noMoreRequests(when string) {
	if f := t.nextFromDevice(t.DUT().Trigger.Timeout); f != nil {
		t.Errorf("%s the device sent %s, want nothing", when, describe(f))
	}
}

// blockLen is the length of the DMA initiator cases: more than two
// fragments of the device's ceiling (max_frame), plus 5 bytes.
func (t *T) blockLen() uint32 {
	mf := t.DUT().MaxFrame
	if mf == 0 {
		mf = 1500
	}
	return 2*wire.FragmentCeiling(mf) + 5
}

// localBuf returns device-local scratch memory of n bytes that the runner
// can write (dma-write peer) and read back (dma-read peer).
func (t *T) localBuf(n uint32) uint32 {
	w, okW := t.DUT().peer(ModeDMAWrite)
	r, okR := t.DUT().peer(ModeDMARead)
	if okW && okR {
		if a, ok := t.shared(w, r, uint64(n), 4); ok {
			return a
		}
	}
	if okW {
		return t.scratch(w, uint64(n), 4)
	}
	return t.scratch(r, uint64(n), 4)
}

// fillLocal writes data into the device's memory at a, in chunks.
func (t *T) fillLocal(a uint32, data []byte) {
	for off := 0; off < len(data); off += 1024 {
		if !t.writeBack(a+uint32(off), data[off:min(off+1024, len(data))]) {
			t.Skipf("needs DUT key %s whose window holds the device's local buffer %#x+%d", KeyPeerDMAWrite, a, len(data))
		}
	}
}

// readLocal reads n bytes of the device's memory at a, in chunks.
func (t *T) readLocal(a, n uint32) []byte {
	var out []byte
	for off := uint32(0); off < n; off += 1024 {
		b, ok := t.readBack(a+off, min(1024, n-off))
		if !ok {
			t.Skipf("needs DUT key %s whose window holds the device's local buffer %#x+%d", KeyPeerDMARead, a, n)
		}
		out = append(out, b...)
	}
	return out
}

// serveDMAWrite plays the responder of a DMA block of n bytes the device
// writes to remote: it checks each DMA_WRITE_REQ's layout, that fragments
// follow each other (address, Request ID + 1), that none is sent while one
// is unanswered (the first is answered after a pause), and returns the
// bytes.
func (t *T) serveDMAWrite(remote, n uint32, _ int) []byte {
	var got []byte
	next, frag := remote, uint32(0)
	var prevRID uint32
	for i := 0; uint32(len(got)) < n; i++ {
		req := t.expectRequest(fmt.Sprintf("DMA_WRITE_REQ #%d", i+1), wire.DMAWriteReq, 0)
		f := wire.Frame(req)
		l := f.Length()
		switch {
		case f.Address() != next:
			t.Fatalf("fragment %d at %#x, want %#x (the previous fragment's end)", i+1, f.Address(), next)
		case l == 0 || uint64(len(got))+uint64(l) > uint64(n):
			t.Fatalf("fragment %d of Length %d after %d of %d bytes", i+1, l, len(got), n)
		case i > 0 && f.RequestID() != prevRID+1:
			t.Errorf("fragment %d carries Request ID %#08x, want %#08x", i+1, f.RequestID(), prevRID+1)
		case i > 0 && l > frag:
			t.Errorf("fragment %d of %d bytes, larger than the first (%d)", i+1, l, frag)
		}
		if c := wire.Classify(req, len(req)); c.Problem != wire.OK {
			t.Fatalf("fragment %d: malformed DMA_WRITE_REQ (%v): %s", i+1, c.Problem, describe(req))
		}
		pdu := wire.PDULen(wire.DMAWriteReq, l)
		if len(req) != wire.HeaderLen+pdu && !(pdu < wire.MinPayloadLen && len(req) == wire.MinFrameLen) {
			t.Errorf("fragment %d: %d bytes, want %d", i+1, len(req), wire.HeaderLen+pdu)
		}
		for j := 28 + int(l); j < 28+4*int(wire.DataWords(l)); j++ {
			if req[j] != 0 {
				t.Errorf("fragment %d: word padding byte %d is %#02x, want 0", i+1, j, req[j])
			}
		}
		if i == 0 {
			frag = l
			if extra := t.nextFromDevice(t.DUT().Trigger.Timeout / 8); extra != nil {
				t.Fatalf("a second frame while the first fragment is unanswered: %s (one fragment in flight)", describe(extra))
			}
		}
		got = append(got, req[28:28+l]...)
		next += l
		prevRID = f.RequestID()
		t.answer(wire.AppendDMAWriteRsp(nil, t.Target(), t.initMAC(), f.RequestID()))
	}
	t.Notef("%d bytes in fragments of %d", n, frag)
	return got
}

// serveDMARead answers the device's DMA_READ_REQs for data at remote.
func (t *T) serveDMARead(remote uint32, data []byte, _ int) {
	done := uint32(0)
	var prevRID uint32
	for i := 0; done < uint32(len(data)); i++ {
		req := t.expectRequest(fmt.Sprintf("DMA_READ_REQ #%d", i+1), wire.DMAReadReq, 14)
		f := wire.Frame(req)
		l := f.Length()
		want := frameOf(t.initMAC(), t.Target(), byte(wire.DMAReadReq), []uint32{f.RequestID(), remote + done, l})
		t.sameLogical(fmt.Sprintf("DMA_READ_REQ #%d", i+1), want, req)
		if l == 0 || done+l > uint32(len(data)) {
			t.Fatalf("fragment %d of Length %d after %d of %d bytes", i+1, l, done, len(data))
		}
		if i > 0 && f.RequestID() != prevRID+1 {
			t.Errorf("fragment %d carries Request ID %#08x, want %#08x", i+1, f.RequestID(), prevRID+1)
		}
		if i == 0 {
			if extra := t.nextFromDevice(t.DUT().Trigger.Timeout / 8); extra != nil {
				t.Fatalf("a second frame while the first fragment is unanswered: %s (one fragment in flight)", describe(extra))
			}
		}
		rsp, d := wire.GrowDMAReadRsp(nil, t.Target(), t.initMAC(), f.RequestID(), l)
		copy(d, data[done:done+l])
		t.answer(rsp)
		done += l
		prevRID = f.RequestID()
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
