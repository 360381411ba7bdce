package reliable_test

import (
	"bytes"
	"testing"

	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// FuzzParse: the receive checks never panic, and a frame they accept whole
// is reproduced byte for byte by the encoders from its decoded fields.
func FuzzParse(f *testing.F) {
	for _, b := range buildFrames() {
		f.Add(b.frame, uint16(b.maxFrame))
	}
	f.Fuzz(func(t *testing.T, frame []byte, maxFrame uint16) {
		h, p := reliable.Parse(frame, int(maxFrame))
		corrupt := reliable.Corrupt(frame)
		if p != reliable.OK {
			return
		}
		if !reliable.CheckCRC(frame, h) {
			return
		}
		if corrupt {
			t.Fatal("a frame with a valid CRC reported corrupt")
		}
		dst, src := wire.MAC(frame[0:6]), wire.MAC(frame[6:12])
		body := bytes.Clone(reliable.Body(frame, h))
		var again []byte
		switch {
		case h.Flags&reliable.FlagData != 0:
			again = reliable.AppendData(nil, dst, src, h, body)
		case h.Flags&reliable.FlagSyn != 0:
			s, ok := reliable.ParseSyn(body)
			if !ok {
				return // reserved SYN octets set: the receiver refuses it
			}
			again = reliable.AppendSyn(nil, dst, src, h, s)
		default:
			again = reliable.AppendControl(nil, dst, src, h)
		}
		end := reliable.BodyOffset + int(h.Length) + reliable.TrailerLen
		if !bytes.Equal(again, frame[:end]) {
			t.Fatalf("re-encoded\n%x\nreceived\n%x", again, frame[:end])
		}
		if h.Flags&reliable.FlagData != 0 {
			in := reliable.Decapsulate(bytes.Clone(frame), h)
			if len(in) != wire.HeaderLen+int(h.Length) || !bytes.Equal(in[wire.HeaderLen:], body) {
				t.Fatalf("Decapsulate gave %x", in)
			}
		}
	})
}

// FuzzEncode: whatever the fields, an encoded frame parses back to them.
func FuzzEncode(f *testing.F) {
	f.Add(uint8(reliable.FlagData|reliable.FlagAck), uint32(1), uint32(2), uint32(3), uint16(4), []byte{0x0e, 0x21, 1, 0, 0, 0})
	f.Add(uint8(reliable.FlagAck|reliable.FlagNak|reliable.FlagRsp), uint32(0xFFFFFFFF), uint32(0), uint32(0x80000000), uint16(0xFFFF), []byte(nil))
	f.Fuzz(func(t *testing.T, flags uint8, session, psn, apsn uint32, credits uint16, pdu []byte) {
		h := reliable.Header{Flags: reliable.Flags(flags), Session: session, PSN: psn, APSN: apsn, Credits: credits}
		var fr []byte
		switch {
		case h.Flags&reliable.FlagData != 0:
			if len(pdu) < 6 || len(pdu) > 8000 {
				return
			}
			fr = reliable.AppendData(nil, macB, macA, h, pdu)
		case h.Flags&reliable.FlagSyn != 0:
			fr = reliable.AppendSyn(nil, macB, macA, h, reliable.Syn{Depth: credits, Congestion: 1, MaxFrame: 8192})
		default:
			fr = reliable.AppendControl(nil, macB, macA, h)
		}
		got, p := reliable.Parse(fr, 8192)
		if p == reliable.ProblemFlags {
			return // a combination the protocol does not use
		}
		if p != reliable.OK || !reliable.CheckCRC(fr, got) {
			t.Fatalf("own frame %x: %v", fr, p)
		}
		if got.Session != session || got.PSN != psn || got.APSN != apsn || got.Credits != credits || got.Flags != h.Flags {
			t.Fatalf("decoded %+v from %+v", got, h)
		}
	})
}
