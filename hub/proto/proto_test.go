package proto

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// The example of docs/hub-protocol.md, byte for byte.
func TestDocExample(t *testing.T) {
	req := AppendHeader(nil, Read, 1, 7)
	req = Finish(binary.LittleEndian.AppendUint32(req, 0x10), 0)
	if want := unhex("0c000000 10000100 07000000 10000000"); !bytes.Equal(req, want) {
		t.Errorf("request % x, want % x", req, want)
	}
	h, _ := ParseHeader(req)
	rep := AppendReplyHeader(nil, h, StatusOK, 0, "")
	rep = Finish(binary.LittleEndian.AppendUint32(rep, 0xC0FFEE01), 0)
	if want := unhex("10000000 90000100 07000000 00000000 01eeffc0"); !bytes.Equal(rep, want) {
		t.Errorf("reply % x, want % x", rep, want)
	}
	hdr, body, _, err := ReadMessage(bytes.NewReader(rep), nil)
	if err != nil || hdr.Type != Read|Reply || hdr.Tag != 7 || hdr.Handle != 1 {
		t.Fatalf("%+v %v", hdr, err)
	}
	st, res, err := ParseReply(body)
	if err != nil || st.Status != 0 || binary.LittleEndian.Uint32(res) != 0xC0FFEE01 {
		t.Errorf("%+v % x %v", st, res, err)
	}
}

func TestFraming(t *testing.T) {
	for _, l := range []uint32{0, 7, MaxMessage + 1} {
		b := binary.LittleEndian.AppendUint32(nil, l)
		b = append(b, make([]byte, 8)...)
		if _, err := ParseHeader(b); err == nil {
			t.Errorf("length %d accepted", l)
		}
	}
	if StatusName(8) != "TIMEOUT" || StatusName(StatusNoDevice) != "NO_DEVICE" || TypeName(Batch|Reply) != "BATCH" {
		t.Error("names")
	}
}

func TestNodeRoundTrip(t *testing.T) {
	n := Node{Name: "ctrl.reset", Address: 0x40, Mask: 1, Perm: 3, Mode: 0, Size: 4, Description: "reset"}
	d := Decoder{B: AppendNode(nil, n)}
	if got := d.Node(); got != n || d.Err != nil || len(d.B) != 0 {
		t.Errorf("%+v %v", got, d.Err)
	}
}

func FuzzReadMessage(f *testing.F) {
	f.Add(unhex("10000000 90000100 07000000 00000000 01eeffc0"))
	f.Add(unhex("0c000000 10000100 07000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, body, _, err := ReadMessage(bytes.NewReader(b), nil)
		if err != nil {
			return
		}
		if _, res, err := ParseReply(body); err == nil {
			d := Decoder{B: res}
			d.Node()
			d.Str16("x")
			d.End("x")
		}
	})
}
