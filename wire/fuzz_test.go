package wire_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/wire"
)

// seedFrames seeds a frame corpus with every golden vector and sample frame.
func seedFrames(f *testing.F, add func(frame []byte, expect uint32)) {
	vs := buildVectors()
	for _, v := range vs {
		frame, err := hex.DecodeString(v.FrameHex)
		if err != nil {
			f.Fatal(err)
		}
		var e uint32
		if v.ExpectLength != nil {
			e = *v.ExpectLength
		}
		add(frame, e)
	}
	for _, s := range sampleFrames() {
		add(s.frame, s.expect)
	}
}

// logical returns the bytes an encoder would produce for a frame that
// Classify accepted: the logical frame without Ethernet padding, with the
// word padding zeroed (it is ignored on receive).
func logical(b []byte, cmd wire.Cmd, n uint32) []byte {
	l := wire.FrameLen(cmd, n)
	out := bytes.Clone(b[:l])
	if cmd == wire.DMAWriteReq || cmd == wire.DMAReadRsp {
		off := 20
		if cmd == wire.DMAWriteReq {
			off = 28
		}
		for i := off + int(n); i < l-4; i++ {
			out[i] = 0
		}
	}
	return out
}

// reencode builds the frame again from the fields of a classified frame.
func reencode(f wire.Frame, n uint32) []byte {
	b := make([]byte, 0, wire.MaxFrameLen)
	d, s, rid := f.Dst(), f.Src(), f.RequestID()
	switch f.Cmd() {
	case wire.RMEMReadReq:
		return wire.AppendRMEMReadReq(b, d, s, rid, f.Address())
	case wire.RMEMReadRsp:
		return wire.AppendRMEMReadRsp(b, d, s, rid, f.Data())
	case wire.RMEMWriteReq:
		return wire.AppendRMEMWriteReq(b, d, s, rid, f.Address(), f.BitEnable(), f.Data())
	case wire.RMEMWriteRsp:
		return wire.AppendRMEMWriteRsp(b, d, s, rid)
	case wire.DMAReadReq:
		return wire.AppendDMAReadReq(b, d, s, rid, f.Address(), f.Length())
	case wire.DMAReadRsp:
		return wire.AppendDMAReadRsp(b, d, s, rid, f.Payload(n))
	case wire.DMAWriteReq:
		return wire.AppendDMAWriteReq(b, d, s, rid, f.Address(), f.Payload(f.Length()))
	case wire.DMAWriteRsp:
		return wire.AppendDMAWriteRsp(b, d, s, rid)
	case wire.ErrorRsp:
		return wire.AppendErrorRsp(b, d, s, rid, f.ErrorCode())
	}
	return nil
}

// FuzzClassify: Classify never panics, its class agrees with the frame's
// header bytes, and a frame classified OK re-encodes from its decoded fields
// to its own logical bytes.
func FuzzClassify(f *testing.F) {
	seedFrames(f, func(frame []byte, _ uint32) { f.Add(frame, uint16(wire.MaxFrameLen)) })
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, b []byte, mf uint16) {
		maxFrame := int(mf)
		c := wire.Classify(b, maxFrame)
		n := len(b)
		oetp := n > 14 && b[12] == 0x88 && b[13] == 0xB5 && b[14] == 0x0E
		switch {
		case n < 14:
			if c != (wire.Class{Kind: wire.KindRunt, Problem: wire.ProblemRunt}) {
				t.Fatalf("%d-byte runt: %+v", n, c)
			}
			return
		case !oetp:
			if c != (wire.Class{Kind: wire.KindRaw}) {
				t.Fatalf("non-oETP frame: %+v", c)
			}
			return
		case n < 20 || !wire.Cmd(b[15]).Valid():
			if c.Kind != wire.KindDrop || c.Problem == wire.OK {
				t.Fatalf("unparseable oETP frame: %+v", c)
			}
			return
		}
		cmd := wire.Cmd(b[15])
		if c.Cmd != cmd || (c.Kind == wire.KindRequest) != cmd.IsRequest() || (c.Kind == wire.KindResponse) != cmd.IsResponse() {
			t.Fatalf("class %+v for Cmd %v", c, cmd)
		}
		if (c.Problem == wire.ProblemTooLong) != (n > maxFrame) {
			t.Fatalf("%d bytes at ceiling %d: %v", n, maxFrame, c.Problem)
		}
		if c.Problem != wire.OK {
			return
		}
		fr := wire.Frame(b)
		var bulk uint32
		switch cmd {
		case wire.DMAWriteReq:
			bulk = fr.Length()
		case wire.DMAReadRsp:
			if n == wire.MinFrameLen || (n-24)%4 != 0 {
				return // the expected length is not determined by the frame alone
			}
			bulk = uint32(n - 24)
			if wire.CheckDMAReadRsp(b, bulk) != wire.OK {
				return
			}
		}
		want := logical(b, cmd, bulk)
		if n != len(want) && !(n == wire.MinFrameLen && len(want) < wire.MinFrameLen) {
			t.Fatalf("%v classified OK with %d bytes; logical length %d", cmd, n, len(want))
		}
		if got := reencode(fr, bulk); !bytes.Equal(got, want) {
			t.Fatalf("re-encoding %v:\n got %x\nwant %x", cmd, got, want)
		}
		if cmd == wire.DMAWriteReq || cmd == wire.DMAReadRsp {
			if eod, ok := fr.EndOfDataAt(bulk); !ok || eod != wire.EndOfData {
				t.Fatalf("%v classified OK without EndOfData: %#x %v", cmd, eod, ok)
			}
		}
	})
}

// FuzzRoundTrip: any fields encode to a frame that Classify accepts and
// whose accessors return the same fields, padded to 60 bytes or not.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(0), uint64(0x020e0c00000b), uint64(0x020e0c00000a), uint32(1), uint32(2), uint32(3), uint32(4), []byte{1, 2, 3, 4, 5}, false, byte(0))
	f.Add(uint8(5), uint64(0x030e0c000001), uint64(0x020e0c00000a), uint32(0xFFFFFFFF), uint32(0), uint32(0), uint32(0), make([]byte, 8160), true, byte(0x55))
	f.Add(uint8(6), uint64(0xffffffffffff), uint64(0x020e0c00000a), uint32(7), uint32(0x1003), uint32(8), uint32(9), []byte{0xD0, 0xE0, 0xD0, 0xE0}, true, byte(0xD0))
	for i := range wire.Commands {
		f.Add(uint8(i), uint64(0x020e0c00000b), uint64(0x020e0c00000a), uint32(i), uint32(i*4), uint32(i+1), uint32(0xA5A5A5A5), pattern(i*3, 1), i%2 == 0, byte(i))
	}
	f.Fuzz(func(t *testing.T, sel uint8, dst64, src64 uint64, rid, addr, x, y uint32, payload []byte, padded bool, fill byte) {
		var dst, src wire.MAC
		var tmp [8]byte
		binary.BigEndian.PutUint64(tmp[:], dst64)
		copy(dst[:], tmp[2:])
		binary.BigEndian.PutUint64(tmp[:], src64)
		copy(src[:], tmp[2:])
		if len(payload) > wire.MaxFragment {
			payload = payload[:wire.MaxFragment]
		}
		m := msg{cmd: wire.Commands[int(sel)%len(wire.Commands)], dst: dst, src: src, rid: rid, addr: addr,
			length: x, mask: x, dt: y, cause: x, payload: payload}
		if m.cmd == wire.DMAWriteReq || m.cmd == wire.DMAReadRsp {
			m.length = uint32(len(payload))
		}
		frame := m.encode()
		if len(frame) != wire.FrameLen(m.cmd, m.length) {
			t.Fatalf("%v: %d bytes, FrameLen %d", m.cmd, len(frame), wire.FrameLen(m.cmd, m.length))
		}
		if padded {
			frame = pad(frame, fill)
		}
		kind := wire.KindResponse
		if m.cmd.IsRequest() {
			kind = wire.KindRequest
		}
		if c := classifyAll(frame, wire.MaxFrameLen, m.length); c != (wire.Class{Kind: kind, Cmd: m.cmd}) {
			t.Fatalf("%v (padded %v): %+v", m.cmd, padded, c)
		}
		fr := wire.Frame(frame)
		want := visible(m.fields(), m.cmd, len(frame), true)
		got := fields{Dst: fr.Dst().String(), Src: fr.Src().String(), Group: ptr(fr.Dst().IsGroup()), RequestID: ptr(fr.RequestID())}
		switch m.cmd {
		case wire.RMEMReadReq:
			got.Address = ptr(fr.Address())
		case wire.RMEMReadRsp:
			got.Data = ptr(fr.Data())
		case wire.RMEMWriteReq:
			got.Address, got.BitEnable, got.Data = ptr(fr.Address()), ptr(fr.BitEnable()), ptr(fr.Data())
		case wire.DMAReadReq:
			got.Address, got.Length = ptr(fr.Address()), ptr(fr.Length())
		case wire.DMAWriteReq:
			got.Address, got.Length = ptr(fr.Address()), ptr(fr.Length())
			got.PayloadHex, got.EndOfDataOK = ptr(hex.EncodeToString(fr.Payload(fr.Length()))), ptr(true)
		case wire.DMAReadRsp:
			got.PayloadHex, got.EndOfDataOK = ptr(hex.EncodeToString(fr.Payload(m.length))), ptr(true)
		case wire.ErrorRsp:
			got.ErrorCode, got.Error = ptr(fr.ErrorCode()), errorName(fr.ErrorCode())
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%v round trip (-encoded +decoded):\n%s", m.cmd, d)
		}
	})
}

// FuzzCheckDMAReadRsp: CheckDMAReadRsp never panics on any bytes, and on a
// DMA_READ_RSP it agrees with a direct reading of the specification.
func FuzzCheckDMAReadRsp(f *testing.F) {
	seedFrames(f, func(frame []byte, e uint32) { f.Add(frame, e) })
	f.Add([]byte{}, uint32(0xFFFFFFFF))
	f.Fuzz(func(t *testing.T, b []byte, e uint32) {
		got := wire.CheckDMAReadRsp(b, e)
		c := wire.Classify(b, wire.MaxFrameLen)
		if c.Kind != wire.KindResponse || c.Cmd != wire.DMAReadRsp || c.Problem != wire.OK {
			return
		}
		words := (uint64(e) + 3) / 4
		exact := 24 + 4*words
		want := wire.OK
		eod := 20 + 4*words
		switch {
		case uint64(len(b)) != exact && !(10+4*words < 46 && len(b) == 60):
			want = wire.ProblemLength
		case !bytes.Equal(b[eod:eod+4], []byte{0xD0, 0xE0, 0xD0, 0xE0}):
			want = wire.ProblemEndOfData
		}
		if got != want {
			t.Fatalf("%d-byte DMA_READ_RSP, expected %d: %v, want %v", len(b), e, got, want)
		}
		if got == wire.OK && len(wire.Frame(b).Payload(e)) != int(e) {
			t.Fatalf("Payload(%d) has the wrong length", e)
		}
	})
}

var macGrammar = regexp.MustCompile(`^(?:[0-9a-fA-F]{1,2}(?::[0-9a-fA-F]{1,2}){5}|[0-9a-fA-F]{1,2}(?:-[0-9a-fA-F]{1,2}){5}|[0-9a-fA-F]{12})$`)

// FuzzParseMAC: ParseMAC never panics, accepts exactly the documented
// grammar, and agrees with String on the octets.
func FuzzParseMAC(f *testing.F) {
	for _, s := range []string{"02:0e:0c:00:00:01", "03-0E-0C-00-00-01", "020e0c000001", "2:e:c:0:0:1",
		"02::0e:0c:00:00:01", "02:0e-0c:00:00:01", " ff:ff:ff:ff:ff:ff\t", "", ":::::", "0x:00:00:00:00:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := wire.ParseMAC(s)
		t2 := strings.TrimSpace(s)
		if ok := macGrammar.MatchString(t2); ok != (err == nil) {
			t.Fatalf("ParseMAC(%q) = %v, %v; grammar match %v", s, m, err, ok)
		}
		if err != nil {
			return
		}
		var octets []string
		switch {
		case strings.Contains(t2, ":"):
			octets = strings.Split(t2, ":")
		case strings.Contains(t2, "-"):
			octets = strings.Split(t2, "-")
		default:
			for i := 0; i < 12; i += 2 {
				octets = append(octets, t2[i:i+2])
			}
		}
		for i, o := range octets {
			if len(o) == 1 {
				octets[i] = "0" + o
			}
		}
		if want := strings.ToLower(strings.Join(octets, ":")); m.String() != want {
			t.Fatalf("ParseMAC(%q).String() = %q, want %q", s, m.String(), want)
		}
		if back, err := wire.ParseMAC(m.String()); err != nil || back != m {
			t.Fatalf("ParseMAC(%q) = %v, %v; want %v", m.String(), back, err, m)
		}
	})
}
