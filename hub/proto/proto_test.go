package proto

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
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

// An error reply carries the engine's error whole, byte for byte as the
// protocol document shows, and back.
func TestErrorDetail(t *testing.T) {
	req := Header{Type: WriteBlock, Handle: 1, Tag: 9}
	err := &endpoint.OpError{Op: "DMA write", Addr: 0x200000, Code: wire.CodeTimeout, Err: endpoint.ErrTimeout, Retries: 2, OutcomeUnknown: true}
	rep := AppendErrorReply(nil, req, "m", err, 0x1000, 1)
	rep = Finish(binary.LittleEndian.AppendUint64(rep, 0x0000000100001000), 0)
	want := unhex("5a000000 93000100 09000000" + // header
		"08 03 0100 6d" + // TIMEOUT, MAYBE_EXECUTED|DETAIL, message "m"
		"4300 01 02 0000 00002000 02000000 0010000000000000 01000000" + // detail: outcome unknown, cause timeout, addr, retries, bytes, fragments
		"0900 444d41207772697465" + // "DMA write"
		"1e00 6e6f20726573706f6e7365206265666f7265207468652074696d656f7574" + // the cause's text
		"0010000001000000") // the result
	if !bytes.Equal(rep, want) {
		t.Fatalf("reply\n% x, want\n% x", rep, want)
	}
	_, body, _, rerr := ReadMessage(bytes.NewReader(rep), nil)
	st, res, perr := ParseReply(body)
	if rerr != nil || perr != nil || len(res) != 8 || st.Detail == nil {
		t.Fatalf("%v %v %+v % x", rerr, perr, st, res)
	}
	got := st.OpError()
	if got.Error() != err.Error() || !errors.Is(got, endpoint.ErrTimeout) || got.Addr != err.Addr || got.Retries != 2 ||
		!got.OutcomeUnknown || got.Bytes != 0x1000 || got.Code != wire.CodeTimeout {
		t.Errorf("rebuilt %+v (%v), want %+v", got, got, err)
	}
}
