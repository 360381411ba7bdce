package e2e_test

import (
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/wire"
)

// TestPcapTee: a pcap Tee on A's link records A's side of an exchange with
// B: every request A sent (as the wire encoders build them) and every
// response it received (successes and an ERROR_RSP), whole and in order in
// each direction, in a classic pcap file that link/pcap's Reader reads back
// (microsecond stamps, Ethernet, nothing truncated, stamps within the test's
// run and never decreasing per direction).
func TestPcapTee(t *testing.T) {
	var path string
	begin := time.Now().Truncate(time.Microsecond)
	p := newPair(t, pairSetup{
		wrapA:  func(l link.Link) link.Link { l, path = teeFile(t, l, "a"); return l },
		modeAB: endpoint.ModeRMEM, modeBA: endpoint.ModeRMEM,
	})
	a, b, macA, macB := p.a, p.b, p.macA, p.macB
	data := []byte{0xD1, 0xD2, 0xD3, 0xD4, 0xD5}
	var sent, received [][]byte
	rec := func(req, rsp []byte) { sent, received = append(sent, req), append(received, rsp) }

	if err := a.RMEMWrite(bg(), peerAB, ramBase+8, 0xAABBCCDD, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	rec(wire.AppendRMEMWriteReq(nil, macB, macA, 0, ramBase+8, 0xFFFFFFFF, 0xAABBCCDD), wire.AppendRMEMWriteRsp(nil, macA, macB, 0))
	if v, err := a.RMEMRead(bg(), peerAB, ramBase+8); err != nil || v != 0xAABBCCDD {
		t.Fatalf("RMEMRead = %#x, %v", v, err)
	}
	rec(wire.AppendRMEMReadReq(nil, macB, macA, 1, ramBase+8), wire.AppendRMEMReadRsp(nil, macA, macB, 1, 0xAABBCCDD))

	p.modes(t, endpoint.ModeDMARead, endpoint.ModeDMAWrite)
	if _, err := a.DMAWrite(bg(), peerAB, ramBase+0x11, data); err != nil {
		t.Fatal(err)
	}
	rec(wire.AppendDMAWriteReq(nil, macB, macA, 2, ramBase+0x11, data), wire.AppendDMAWriteRsp(nil, macA, macB, 2))
	_, err := a.DMAWrite(bg(), peerAB, ramBase+ramSize-2, data)
	wantCode(t, "DMAWrite beyond B's RAM", err, wire.CodeRemoteInvalid)
	rec(wire.AppendDMAWriteReq(nil, macB, macA, 3, ramBase+ramSize-2, data), wire.AppendErrorRsp(nil, macA, macB, 3, wire.CauseInvalid))

	p.modes(t, endpoint.ModeDMAWrite, endpoint.ModeDMARead)
	dst := make([]byte, 5)
	if _, err := a.DMARead(bg(), peerAB, ramBase+0x11, dst); err != nil || string(dst) != string(data) {
		t.Fatalf("DMARead = % x, %v", dst, err)
	}
	rec(wire.AppendDMAReadReq(nil, macB, macA, 4, ramBase+0x11, 5), wire.AppendDMAReadRsp(nil, macA, macB, 4, data))
	// Not affected by the Tee: B saw the same requests.
	eventually(t, "B's ERROR_RSP count", func() bool { return b.Stats().ErrorsSent[wire.CauseInvalid] == 1 })
	if s := b.Stats(); s.ServedRMEMWrite != 1 || s.ServedRMEMRead != 1 || s.ServedDMAWrite != 1 || s.ServedDMARead != 1 || s.ErrorsSent[wire.CauseInvalid] != 1 {
		t.Fatalf("B's stats: %+v", s)
	}
	p.snB.expect(t, "A's requests", sent...)
	p.snA.expect(t, "B's responses", received...)

	// The file. A's Tee records a frame it sent once the kernel has taken
	// it, which may be after B's reply to it has been read and recorded:
	// the order is exact within each direction, and the last request may
	// be recorded after DMARead has returned.
	eventually(t, "all ten records", func() bool { return len(pcaptest.ReadCapture(t, path)) >= 10 })
	end := time.Now()
	format, records := pcaptest.ReadRecords(t, path)
	if format != pcap.PcapNG {
		t.Fatalf("file format %v, want pcapng (the default)", format)
	}
	var gotSent, gotReceived [][]byte
	var last [2]time.Time
	for _, r := range records {
		dir := 0
		if wire.Frame(r.Frame).Src() == macA {
			gotSent = append(gotSent, r.Frame)
		} else {
			dir = 1
			gotReceived = append(gotReceived, r.Frame)
		}
		if r.Time.Before(begin) || r.Time.After(end) || r.Time.Before(last[dir]) {
			t.Fatalf("record stamped %v: outside [%v, %v] or before %v", r.Time, begin, end, last[dir])
		}
		last[dir] = r.Time
	}
	eqFrames(t, "recorded as sent", sent, gotSent)
	eqFrames(t, "recorded as received", received, gotReceived)
	p.quiet(t)
}
