package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/openenoc/oetp/wire"
)

// sampleFrames returns one valid frame of every command, the DMA commands at
// several lengths, with the DMA_READ_RSP expected length (0 otherwise).
func sampleFrames() []struct {
	name   string
	frame  []byte
	expect uint32
} {
	type sf = struct {
		name   string
		frame  []byte
		expect uint32
	}
	var out []sf
	for _, m := range []msg{
		rmemReadReq(macB, macA, 1, 0x100), rmemReadRsp(macA, macB, 1, 0xFFFFFFFF),
		rmemWriteReq(macB, macA, 2, 0x104, 0xF, 0x55), rmemWriteRsp(macA, macB, 2),
		dmaWriteRsp(macA, macB, 3), errorRsp(macA, macB, 4, 2),
	} {
		out = append(out, sf{m.cmd.String(), m.encode(), 0})
	}
	for _, n := range []int{1, 3, 4, 5, 8, 29, 8160} {
		out = append(out,
			sf{fmt.Sprintf("DMA_READ_REQ/%d", n), dmaReadReq(macB, macA, 5, 0x200, uint32(n)).encode(), 0},
			sf{fmt.Sprintf("DMA_WRITE_REQ/%d", n), dmaWriteReq(macB, macA, 6, 0x201, pattern(n, 9)).encode(), 0},
			sf{fmt.Sprintf("DMA_READ_RSP/%d", n), dmaReadRsp(macA, macB, 7, pattern(n, 10)).encode(), uint32(n)})
	}
	return out
}

// classifyAll is Classify followed, for a DMA_READ_RSP with a readable
// Request ID, by CheckDMAReadRsp against expect.
func classifyAll(b []byte, maxFrame int, expect uint32) wire.Class {
	c := wire.Classify(b, maxFrame)
	if c.Kind == wire.KindResponse && c.Cmd == wire.DMAReadRsp && c.Problem == wire.OK {
		c.Problem = wire.CheckDMAReadRsp(b, expect)
	}
	return c
}

// TestTruncationEveryPrefix classifies every proper prefix of a valid frame
// of every command and expects the exact class: runt below 14 bytes, raw at
// 14 (no Magic yet), dropped oETP until the Request ID is complete, then the
// command with a length problem. Zero Ethernet padding appended to a
// truncated bulk frame must never make it acceptable.
func TestTruncationEveryPrefix(t *testing.T) {
	for _, s := range sampleFrames() {
		t.Run(s.name, func(t *testing.T) {
			full := s.frame
			if c := classifyAll(full, wire.MaxFrameLen, s.expect); c.Problem != wire.OK {
				t.Fatalf("full frame: %+v", c)
			}
			cmd := wire.Cmd(full[15])
			kind := wire.KindResponse
			if cmd.IsRequest() {
				kind = wire.KindRequest
			}
			for n := 0; n < len(full); n++ {
				var want wire.Class
				switch {
				case n < 14:
					want = wire.Class{Kind: wire.KindRunt, Problem: wire.ProblemRunt}
				case n == 14:
					want = wire.Class{Kind: wire.KindRaw}
				case n == 15:
					want = wire.Class{Kind: wire.KindDrop, Problem: wire.ProblemNoRequestID}
				case n < 20:
					want = wire.Class{Kind: wire.KindDrop, Cmd: cmd, Problem: wire.ProblemNoRequestID}
				default:
					want = wire.Class{Kind: kind, Cmd: cmd, Problem: wire.ProblemLength}
				}
				prefix := full[:n:n] // no spare capacity: any overread panics
				if got := classifyAll(prefix, wire.MaxFrameLen, s.expect); got != want {
					t.Errorf("prefix %d of %d: %+v, want %+v", n, len(full), got, want)
				}
				if (cmd == wire.DMAWriteReq || cmd == wire.DMAReadRsp) && n >= 16 && n < wire.MinFrameLen {
					if got := classifyAll(pad(prefix, 0), wire.MaxFrameLen, s.expect); got.Problem == wire.OK {
						t.Errorf("prefix %d zero-padded to 60 bytes classifies OK: %+v", n, got)
					}
				}
			}
		})
	}
}

func TestPDUAndFrameLen(t *testing.T) {
	fixed := map[wire.Cmd]int{wire.RMEMReadReq: 10, wire.RMEMReadRsp: 10, wire.RMEMWriteReq: 18,
		wire.RMEMWriteRsp: 6, wire.DMAReadReq: 14, wire.DMAWriteRsp: 6, wire.ErrorRsp: 10}
	for cmd, pdu := range fixed {
		for _, l := range []uint32{0, 5, math.MaxUint32} { // the length argument is ignored
			if got := wire.PDULen(cmd, l); got != pdu {
				t.Errorf("PDULen(%v, %d) = %d, want %d", cmd, l, got, pdu)
			}
			if got := wire.FrameLen(cmd, l); got != pdu+14 {
				t.Errorf("FrameLen(%v, %d) = %d, want %d", cmd, l, got, pdu+14)
			}
		}
	}
	bulk := []struct {
		b          uint32
		write, rsp int // 18+4*ceil(B/4), 10+4*ceil(B/4)
	}{
		{0, 18, 10}, {1, 22, 14}, {2, 22, 14}, {3, 22, 14}, {4, 22, 14}, {5, 26, 18}, {8, 26, 18},
		{9, 30, 22}, {28, 46, 38}, {8160, 8178, 8170}, {8168, 8186, 8178},
		{math.MaxUint32, 18 + 4*(1<<30), 10 + 4*(1<<30)},
	}
	for _, c := range bulk {
		if got := wire.PDULen(wire.DMAWriteReq, c.b); got != c.write {
			t.Errorf("PDULen(DMA_WRITE_REQ, %d) = %d, want %d", c.b, got, c.write)
		}
		if got := wire.PDULen(wire.DMAReadRsp, c.b); got != c.rsp {
			t.Errorf("PDULen(DMA_READ_RSP, %d) = %d, want %d", c.b, got, c.rsp)
		}
		if got := wire.FrameLen(wire.DMAWriteReq, c.b); got != c.write+14 {
			t.Errorf("FrameLen(DMA_WRITE_REQ, %d) = %d, want %d", c.b, got, c.write+14)
		}
		if got := wire.FrameLen(wire.DMAReadRsp, c.b); got != c.rsp+14 {
			t.Errorf("FrameLen(DMA_READ_RSP, %d) = %d, want %d", c.b, got, c.rsp+14)
		}
	}
	for _, c := range []wire.Cmd{0x00, 0x01, 0x12, 0x50, 0xFE} {
		if got := wire.PDULen(c, 4); got != 0 {
			t.Errorf("PDULen(%v) = %d, want 0", c, got)
		}
	}
	// The largest fragment fills the 8192-byte frame exactly.
	if got := wire.FrameLen(wire.DMAWriteReq, wire.MaxFragment); got != wire.MaxFrameLen {
		t.Errorf("FrameLen(DMA_WRITE_REQ, MaxFragment) = %d, want %d", got, wire.MaxFrameLen)
	}
	if wire.MaxPDULen != 8178 || wire.DMAOverhead != 32 || wire.MinFrameLen != 60 || wire.MinPayloadLen != 46 {
		t.Errorf("geometry constants changed: MaxPDULen %d DMAOverhead %d MinFrameLen %d MinPayloadLen %d",
			wire.MaxPDULen, wire.DMAOverhead, wire.MinFrameLen, wire.MinPayloadLen)
	}
	for _, c := range []struct {
		n    uint32
		want uint64
	}{{0, 0}, {1, 1}, {4, 1}, {5, 2}, {8160, 2040}, {math.MaxUint32, 1 << 30}} {
		if got := wire.DataWords(c.n); got != c.want {
			t.Errorf("DataWords(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

func TestFragmentCeiling(t *testing.T) {
	for _, c := range []struct {
		maxFrame int
		want     uint32
	}{{0, 0}, {35, 0}, {36, 4}, {37, 4}, {39, 4}, {40, 8}, {59, 24}, {60, 28}, {1514, 1480}, {8191, 8156}, {8192, 8160}} {
		if got := wire.FragmentCeiling(c.maxFrame); got != c.want {
			t.Errorf("FragmentCeiling(%d) = %d, want %d", c.maxFrame, got, c.want)
		}
	}
}

func TestEffectiveFragment(t *testing.T) {
	type r struct {
		mfs uint32
		ok  bool
	}
	cases := []struct {
		csr, ceiling uint32
		want         r
	}{
		{31, 8160, r{28, true}}, {7, 8160, r{4, true}}, {4, 8160, r{4, true}}, {8, 8160, r{8, true}},
		{8160, 8160, r{8160, true}}, {8161, 8160, r{8160, true}}, {8162, 8160, r{8160, true}}, {8163, 8160, r{8160, true}},
		{0, 8160, r{0, false}}, {1, 8160, r{0, false}}, {2, 8160, r{0, false}}, {3, 8160, r{0, false}},
		{8164, 8160, r{0, false}}, {math.MaxUint32, 8160, r{0, false}},
		{7, 4, r{4, true}}, {8, 4, r{0, false}}, {1483, 1480, r{1480, true}}, {1484, 1480, r{0, false}},
	}
	for _, c := range cases {
		mfs, ok := wire.EffectiveFragment(c.csr, c.ceiling)
		if (r{mfs, ok}) != c.want {
			t.Errorf("EffectiveFragment(%d, %d) = %d, %v; want %d, %v", c.csr, c.ceiling, mfs, ok, c.want.mfs, c.want.ok)
		}
	}
}

func TestCheckMaxFrame(t *testing.T) {
	for _, v := range []int{36, 60, 1514, 8192} {
		if err := wire.CheckMaxFrame(v); err != nil {
			t.Errorf("CheckMaxFrame(%d) = %v, want nil", v, err)
		}
	}
	for _, v := range []int{-1, 0, 35, 8193, math.MaxInt} {
		err := wire.CheckMaxFrame(v)
		if err == nil || !strings.Contains(err.Error(), "36..8192") || !strings.Contains(err.Error(), fmt.Sprint(v)) {
			t.Errorf("CheckMaxFrame(%d) = %v, want an error naming %d and the range 36..8192", v, err, v)
		}
	}
}

func TestRangeOK(t *testing.T) {
	const full = uint64(1) << 32
	cases := []struct {
		name               string
		addr, length, base uint32
		size               uint64
		want               bool
	}{
		{"ends exactly at 2^32", 0xFFFFFFFF, 1, 0, full, true},
		{"last two bytes", 0xFFFFFFFE, 2, 0, full, true},
		{"overflows beyond 2^32", 0xFFFFFFFF, 2, 0, full, false},
		{"huge length wraps", 0x10, 0xFFFFFFF8, 0, full, false},
		{"whole space", 0, 0xFFFFFFFF, 0, full, true},
		{"zero length", 0x1000, 0, 0x1000, 0x100, false},
		{"window first byte", 0x1000, 1, 0x1000, 0x100, true},
		{"whole window", 0x1000, 0x100, 0x1000, 0x100, true},
		{"window last byte", 0x10FF, 1, 0x1000, 0x100, true},
		{"one past the window", 0x1100, 1, 0x1000, 0x100, false},
		{"one byte too long", 0x1000, 0x101, 0x1000, 0x100, false},
		{"crosses the window end", 0x10FE, 4, 0x1000, 0x100, false},
		{"one below the window", 0x0FFF, 1, 0x1000, 0x100, false},
		{"straddles the base", 0x0FFF, 2, 0x1000, 0x100, false},
		{"window at the top", 0xFFFFFF00, 0x100, 0xFFFFFF00, 0x100, true},
		{"window claims past 2^32", 0xFFFFFFFF, 2, 0x80000000, full, false},
		{"window claims past 2^32, in range", 0xFFFFFFFF, 1, 0x80000000, full, true},
		{"empty window", 0x1000, 1, 0x1000, 0, false},
	}
	for _, c := range cases {
		if got := wire.RangeOK(c.addr, c.length, c.base, c.size); got != c.want {
			t.Errorf("%s: RangeOK(%#x, %#x, %#x, %#x) = %v, want %v", c.name, c.addr, c.length, c.base, c.size, got, c.want)
		}
	}
}

func TestCodes(t *testing.T) {
	names := []string{"NONE", "LOCAL_INVALID", "LOCAL_AXIS", "LOCAL_OVERFLOW",
		"LOCAL_AXI_RD_SLVERR", "LOCAL_AXI_RD_DECERR", "LOCAL_AXI_WR_SLVERR", "LOCAL_AXI_WR_DECERR",
		"TIMEOUT", "REMOTE_INVALID", "REMOTE_AXIS", "REMOTE_OVERFLOW",
		"REMOTE_AXI_RD_SLVERR", "REMOTE_AXI_RD_DECERR", "REMOTE_AXI_WR_SLVERR", "REMOTE_AXI_WR_DECERR"}
	for i, n := range names {
		c := wire.Code(i)
		if c.String() != n {
			t.Errorf("Code(%d).String() = %q, want %q", i, c.String(), n)
		}
		if !c.Valid() {
			t.Errorf("Code(%d).Valid() = false", i)
		}
		if c.IsLocal() != (i >= 1 && i <= 7) || c.IsRemote() != (i >= 9) {
			t.Errorf("Code(%d): IsLocal %v IsRemote %v", i, c.IsLocal(), c.IsRemote())
		}
		wantCause := uint32(0)
		if i >= 1 && i <= 7 {
			wantCause = uint32(i)
		}
		if c.Cause() != wantCause {
			t.Errorf("Code(%d).Cause() = %d, want %d", i, c.Cause(), wantCause)
		}
		for _, s := range []string{n, strings.ToLower(n), " " + n + "\n", fmt.Sprint(i)} {
			if got, err := wire.ParseCode(s); err != nil || got != c {
				t.Errorf("ParseCode(%q) = %v, %v; want %v", s, got, err, c)
			}
		}
	}
	if c := wire.Code(16); c.Valid() || c.String() != "CODE(16)" || c.IsRemote() || c.Cause() != 0 {
		t.Errorf("Code(16): Valid %v String %q IsRemote %v Cause %d", c.Valid(), c.String(), c.IsRemote(), c.Cause())
	}
	for _, s := range []string{"", "16", "-1", "+3", "0x0e", "14abc", "REMOTE", "LOCAL_TIMEOUT"} {
		if _, err := wire.ParseCode(s); err == nil || !strings.Contains(err.Error(), "0..15") {
			t.Errorf("ParseCode(%q) = %v, want an error suggesting 0..15", s, err)
		}
	}
	// The named wire causes are the local codes' numbers.
	for _, c := range []struct {
		cause uint32
		local wire.Code
	}{{wire.CauseInvalid, wire.CodeLocalInvalid}, {wire.CauseLength, wire.CodeLocalAXIS},
		{wire.CauseOverflow, wire.CodeLocalOverflow}, {wire.CauseAXIRdSlverr, wire.CodeLocalAXIRdSlverr},
		{wire.CauseAXIRdDecerr, wire.CodeLocalAXIRdDecerr}, {wire.CauseAXIWrSlverr, wire.CodeLocalAXIWrSlverr},
		{wire.CauseAXIWrDecerr, wire.CodeLocalAXIWrDecerr}} {
		if c.local.Cause() != c.cause || uint32(c.local) != c.cause {
			t.Errorf("%v.Cause() = %d, want %d", c.local, c.local.Cause(), c.cause)
		}
	}
}

func TestCodeFromCause(t *testing.T) {
	cases := map[uint32]wire.Code{
		0: wire.CodeLocalInvalid,
		1: wire.CodeRemoteInvalid, 2: wire.CodeRemoteAXIS, 3: wire.CodeRemoteOverflow,
		4: wire.CodeRemoteAXIRdSlverr, 5: wire.CodeRemoteAXIRdDecerr,
		6: wire.CodeRemoteAXIWrSlverr, 7: wire.CodeRemoteAXIWrDecerr,
		8:       wire.CodeLocalInvalid, // TIMEOUT is never a wire cause
		9:       wire.CodeLocalInvalid,
		0x102:   wire.CodeLocalInvalid, // low byte 2: never truncated to REMOTE_AXIS
		0x10A:   wire.CodeLocalInvalid,
		1 << 31: wire.CodeLocalInvalid, math.MaxUint32: wire.CodeLocalInvalid,
	}
	for cause, want := range cases {
		if got := wire.CodeFromCause(cause); got != want {
			t.Errorf("CodeFromCause(%#x) = %v, want %v", cause, got, want)
		}
	}
	if wire.CodeFromCause(6).String() != "REMOTE_AXI_WR_SLVERR" {
		t.Errorf("cause 6 maps to %v", wire.CodeFromCause(6))
	}
}

func TestProblemAndKind(t *testing.T) {
	causes := map[wire.Problem]uint32{wire.OK: 0, wire.ProblemRunt: 0, wire.ProblemReservedCmd: 0,
		wire.ProblemNoRequestID: 0, wire.ProblemTooLong: 3, wire.ProblemLength: 2, wire.ProblemEndOfData: 2}
	for p, want := range causes {
		if got := p.Cause(); got != want {
			t.Errorf("%v.Cause() = %d, want %d", p, got, want)
		}
		if p.String() == "" || strings.Contains(p.String(), "?") {
			t.Errorf("Problem(%d).String() = %q", p, p.String())
		}
	}
	if got := wire.Problem(200).String(); got != "problem(?)" {
		t.Errorf("Problem(200).String() = %q", got)
	}
	kinds := []string{"runt", "raw", "drop", "request", "response"}
	for i, want := range kinds {
		if got := wire.Kind(i).String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", i, got, want)
		}
	}
	if got := wire.Kind(9).String(); got != "kind(?)" {
		t.Errorf("Kind(9).String() = %q", got)
	}
}

func TestCmdHelpers(t *testing.T) {
	want := map[wire.Cmd]struct {
		name                  string
		req, rsp, write, rmem bool
	}{
		0x10: {"RMEM_READ_REQ", true, false, false, true},
		0x11: {"RMEM_READ_RSP", false, true, false, true},
		0x20: {"RMEM_WRITE_REQ", true, false, true, true},
		0x21: {"RMEM_WRITE_RSP", false, true, false, true},
		0x30: {"DMA_READ_REQ", true, false, false, false},
		0x31: {"DMA_READ_RSP", false, true, false, false},
		0x40: {"DMA_WRITE_REQ", true, false, true, false},
		0x41: {"DMA_WRITE_RSP", false, true, false, false},
		0xFF: {"ERROR_RSP", false, true, false, false},
	}
	var valid []wire.Cmd
	for i := 0; i < 256; i++ {
		c := wire.Cmd(i)
		w, assigned := want[c]
		if c.Valid() != assigned {
			t.Errorf("Cmd(%#02x).Valid() = %v", i, c.Valid())
		}
		if !assigned {
			if c.IsRequest() || c.IsResponse() || c.IsWrite() {
				t.Errorf("reserved Cmd(%#02x): IsRequest %v IsResponse %v IsWrite %v", i, c.IsRequest(), c.IsResponse(), c.IsWrite())
			}
			if got := fmt.Sprintf("RESERVED(0x%02X)", i); c.String() != got {
				t.Errorf("Cmd(%#02x).String() = %q, want %q", i, c.String(), got)
			}
			if _, err := wire.ParseCmd(fmt.Sprintf("0x%02x", i)); err == nil {
				t.Errorf("ParseCmd(%#02x) accepted a reserved code", i)
			}
			continue
		}
		valid = append(valid, c)
		if c.String() != w.name || c.IsRequest() != w.req || c.IsResponse() != w.rsp || c.IsWrite() != w.write || c.IsRMEM() != w.rmem {
			t.Errorf("Cmd(%#02x): %q req %v rsp %v write %v rmem %v; want %+v", i, c.String(), c.IsRequest(), c.IsResponse(), c.IsWrite(), c.IsRMEM(), w)
		}
		if w.req {
			if r := c.Response(); r != c+1 || !r.IsResponse() {
				t.Errorf("%v.Response() = %v", c, r)
			}
		}
		for _, s := range []string{w.name, strings.ToLower(w.name), strings.ReplaceAll(strings.ToLower(w.name), "_", "-"),
			" " + w.name + " ", fmt.Sprintf("0x%02x", i), fmt.Sprintf("0X%02X", i), fmt.Sprint(i)} {
			if got, err := wire.ParseCmd(s); err != nil || got != c {
				t.Errorf("ParseCmd(%q) = %v, %v; want %v", s, got, err, c)
			}
		}
	}
	if fmt.Sprint(valid) != fmt.Sprint(wire.Commands[:]) {
		t.Errorf("Commands = %v, want %v", wire.Commands, valid)
	}
	for _, s := range []string{"", "DMA_WRITE", "0x100", "256", "-1", "READ"} {
		if _, err := wire.ParseCmd(s); err == nil || !strings.Contains(err.Error(), "DMA_WRITE_REQ") {
			t.Errorf("ParseCmd(%q) = %v, want an error listing the mnemonics", s, err)
		}
	}
}

func TestMAC(t *testing.T) {
	want := wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0x01}
	for _, s := range []string{"02:0e:0c:00:00:01", "02-0E-0C-00-00-01", "020e0c000001", "020E0C000001",
		" 02:0e:0c:00:00:01\n", "2:e:c:0:0:1", "2-e-c-0-0-1"} {
		got, err := wire.ParseMAC(s)
		if err != nil || got != want {
			t.Errorf("ParseMAC(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "02:0e:0c:00:00", "02:0e:0c:00:00:01:02", "02::0e:0c:00:00:01",
		":02:0e:0c:00:00:01", "02:0e:0c:00:00:01:", "02:0e-0c:00:00:01", "020:e0c:00:00:01:0",
		"gg:0e:0c:00:00:01", "020e0c00000", "020e0c0000011", "02 0e 0c 00 00 01", "02:0e:0c:00:00:0x"} {
		got, err := wire.ParseMAC(s)
		if err == nil || !errors.Is(err, wire.ErrMAC) {
			t.Errorf("ParseMAC(%q) = %v, %v; want an error wrapping ErrMAC", s, got, err)
		}
	}
	if got := (wire.MAC{0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45}).String(); got != "ab:cd:ef:01:23:45" {
		t.Errorf("String() = %q", got)
	}
	for _, c := range []struct {
		m                         wire.MAC
		group, bcast, zero, local bool
	}{
		{macA, false, false, false, true},
		{macG, true, false, false, true},
		{wire.Broadcast, true, true, false, true},
		{wire.MAC{}, false, false, true, false},
		{wire.MAC{0x01, 0x00, 0x5e, 0, 0, 1}, true, false, false, false},
	} {
		if c.m.IsGroup() != c.group || c.m.IsBroadcast() != c.bcast || c.m.IsZero() != c.zero || c.m.IsLocal() != c.local {
			t.Errorf("%v: IsGroup %v IsBroadcast %v IsZero %v IsLocal %v", c.m, c.m.IsGroup(), c.m.IsBroadcast(), c.m.IsZero(), c.m.IsLocal())
		}
	}
	// Text marshalling, as used by JSON configuration.
	b, err := json.Marshal(map[string]wire.MAC{"mac": macG})
	if err != nil || string(b) != `{"mac":"03:0e:0c:00:00:01"}` {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
	var back map[string]wire.MAC
	if err := json.Unmarshal(b, &back); err != nil || back["mac"] != macG {
		t.Errorf("json.Unmarshal = %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"mac":"03:0e"}`), &back); err == nil {
		t.Error("json.Unmarshal accepted a short MAC")
	}
}

// TestClassifyCeiling checks the frame ceiling including padding, and that
// the ceiling check runs only once the Request ID is readable.
func TestClassifyCeiling(t *testing.T) {
	req := rmemReadReq(macB, macA, 1, 0x100).encode()
	for _, c := range []struct {
		frame    []byte
		maxFrame int
		want     wire.Problem
	}{
		{req, 24, wire.OK}, {req, 23, wire.ProblemTooLong}, {pad(req, 0), 59, wire.ProblemTooLong},
		{pad(req, 0), 60, wire.OK}, {req[:19], 10, wire.ProblemNoRequestID},
	} {
		if got := wire.Classify(c.frame, c.maxFrame).Problem; got != c.want {
			t.Errorf("%d-byte frame at ceiling %d: %v, want %v", len(c.frame), c.maxFrame, got, c.want)
		}
	}
}

func TestParseCmdNumbers(t *testing.T) {
	for s, want := range map[string]wire.Cmd{"0x40": wire.DMAWriteReq, "64": wire.DMAWriteReq, "0XFF": wire.ErrorRsp, "dma-write-req": wire.DMAWriteReq} {
		got, err := wire.ParseCmd(s)
		if err != nil || got != want {
			t.Errorf("ParseCmd(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"0x4-0", "0b1000000", "0o100", "0x12", "", "0x"} {
		if got, err := wire.ParseCmd(s); err == nil {
			t.Errorf("ParseCmd(%q) = %v, want an error", s, got)
		}
	}
}
