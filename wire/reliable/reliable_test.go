package reliable_test

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

func TestCRC32CCheckValue(t *testing.T) {
	// The CRC-32C check value of the ASCII digits 1..9 (RFC 3720, B.4).
	if got := reliable.CRC([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("CRC(123456789) = %#08x, want 0xe3069283", got)
	}
}

// The exact bytes of a request, field by field at the documented offsets.
func TestLayoutExact(t *testing.T) {
	b := make([]byte, reliable.Headroom, 128)
	b = wire.AppendRMEMReadReq(b, macB, macA, 0x11223344, 0x1000)
	f := reliable.Encapsulate(b, reliable.Header{Flags: reliable.FlagAck, Session: 0xA1A2A3A4, PSN: 0xB1B2B3B4, APSN: 0xC1C2C3C4, Credits: 0xD1D2})
	want := "020e0c00000b" + "020e0c00000a" + "88b5" + // Ethernet header, unchanged
		"e1" + "01" + "03" + "00" + "0a00" + // Discriminator, Version, DATA|ACK, reserved, Length 10
		"a4a3a2a1" + "b4b3b2b1" + "c4c3c2c1" + "d2d1" + // Session, PSN, APSN, Credits
		"0e10" + "44332211" + "00100000" // the v1 PDU: Magic, RMEM_READ_REQ, Request ID, Address
	crc := reliable.CRC(mustHex(t, want))
	want += hex.EncodeToString([]byte{byte(crc), byte(crc >> 8), byte(crc >> 16), byte(crc >> 24)})
	if got := hex.EncodeToString(f); got != want {
		t.Fatalf("frame\n got %s\nwant %s", got, want)
	}
	if len(f) != 48 || reliable.BodyOffset != 34 {
		t.Fatalf("len %d", len(f))
	}
	h, p := reliable.Parse(f, 8192)
	if p != reliable.OK || !reliable.CheckCRC(f, h) {
		t.Fatalf("Parse: %v", p)
	}
	if d := cmp.Diff(reliable.Header{Flags: reliable.FlagData | reliable.FlagAck, Length: 10, Session: 0xA1A2A3A4, PSN: 0xB1B2B3B4, APSN: 0xC1C2C3C4, Credits: 0xD1D2}, h); d != "" {
		t.Fatal(d)
	}
	v1 := reliable.Decapsulate(f, h)
	if want := wire.AppendRMEMReadReq(nil, macB, macA, 0x11223344, 0x1000); !bytes.Equal(v1, want) {
		t.Fatalf("Decapsulate = %x, want %x", v1, want)
	}
}

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A v1 engine classifies every reliable frame as raw (0x88B5 with another
// Magic): it follows the raw receive policy and is never answered.
func TestV1SeesRaw(t *testing.T) {
	for _, b := range buildFrames() {
		if !reliable.IsReliable(b.frame) || len(b.frame) < reliable.Offset+1 {
			continue
		}
		if k := wire.Classify(b.frame, 8192).Kind; k != wire.KindRaw {
			t.Errorf("%s: v1 classifies it as %v, want raw", b.name, k)
		}
	}
}

// Every truncation of every vector is rejected, never a panic.
func TestTruncations(t *testing.T) {
	for _, b := range buildFrames() {
		for n := 0; n < len(b.frame); n++ {
			f := b.frame[:n]
			h, p := reliable.Parse(f, 8192)
			if p == reliable.OK && reliable.CheckCRC(f, h) && n >= reliable.MinFrameLen {
				// Only the unpadded prefix of the padded ACK and the
				// original of the frame with trailing bytes are valid.
				if !(b.name == "ack_padded" && n == 38) && !(b.name == "bad_trailing" && n == len(b.frame)-4) {
					t.Errorf("%s cut to %d bytes accepted", b.name, n)
				}
			}
			reliable.Corrupt(f)
		}
	}
}

func TestFlagCombinations(t *testing.T) {
	valid := map[reliable.Flags]bool{}
	for _, f := range []reliable.Flags{
		reliable.FlagSyn, reliable.FlagSyn | reliable.FlagAck | reliable.FlagRsp,
		reliable.FlagRst | reliable.FlagRsp, reliable.FlagAck | reliable.FlagNak | reliable.FlagRsp,
		reliable.FlagData, reliable.FlagData | reliable.FlagAck, reliable.FlagData | reliable.FlagAck | reliable.FlagRsp,
		reliable.FlagAck, reliable.FlagAck | reliable.FlagRsp,
	} {
		valid[f] = true
	}
	for i := 0; i < 256; i++ {
		fl := reliable.Flags(i)
		h := reliable.Header{Flags: fl, Session: 1}
		var f []byte
		switch {
		case fl&reliable.FlagData != 0:
			f = reliable.AppendData(nil, macB, macA, h, wire.AppendRMEMWriteRsp(nil, macB, macA, 1)[14:])
		case fl&reliable.FlagSyn != 0:
			f = reliable.AppendSyn(nil, macB, macA, h, reliable.Syn{Depth: 1, Congestion: 1, MaxFrame: 8192})
		default:
			f = reliable.AppendControl(nil, macB, macA, h)
		}
		_, p := reliable.Parse(f, 8192)
		if got := p == reliable.OK; got != valid[fl] {
			t.Errorf("flags %v: Parse %v, want valid=%v", fl, p, valid[fl])
		}
	}
}

func TestBefore(t *testing.T) {
	for _, c := range []struct {
		a, b uint32
		want bool
	}{{1, 2, true}, {2, 1, false}, {1, 1, false}, {0xFFFFFFFF, 0, true}, {0, 0xFFFFFFFF, false}, {0, 0x7FFFFFFF, true}} {
		if got := reliable.Before(c.a, c.b); got != c.want {
			t.Errorf("Before(%#x, %#x) = %v", c.a, c.b, got)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	buf := make([]byte, 0, 9000)
	payload := testutil.Pattern(8136, 1)
	ctl := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(200, func() {
		b := buf[:reliable.Headroom]
		b = wire.AppendDMAWriteReq(b, macB, macA, 1, 0x1000, payload)
		f := reliable.Encapsulate(b, reliable.Header{Flags: reliable.FlagAck, Session: 1, PSN: 2})
		h, p := reliable.Parse(f, 8192)
		if p != reliable.OK || !reliable.CheckCRC(f, h) {
			panic(p)
		}
		reliable.Decapsulate(f, h)
		ctl = reliable.AppendControl(ctl[:0], macA, macB, reliable.Header{Flags: reliable.FlagAck | reliable.FlagRsp})
		ctl = reliable.AppendSyn(ctl[:0], macA, macB, reliable.Header{Flags: reliable.FlagSyn}, reliable.Syn{Depth: 1})
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame", allocs)
	}
}

func BenchmarkEncapsulateParseCRC8K(b *testing.B) {
	buf := make([]byte, 0, 9000)
	payload := testutil.Pattern(8136, 1)
	b.SetBytes(8136)
	b.ReportAllocs()
	for b.Loop() {
		f := buf[:reliable.Headroom]
		f = wire.AppendDMAWriteReq(f, macB, macA, 1, 0x1000, payload)
		f = reliable.Encapsulate(f, reliable.Header{Flags: reliable.FlagAck, Session: 1, PSN: 2})
		h, _ := reliable.Parse(f, 8192)
		if !reliable.CheckCRC(f, h) {
			b.Fatal("crc")
		}
	}
}
