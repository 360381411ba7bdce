package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

func TestEncodeExact(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "payload.bin")
	if err := os.WriteFile(pf, []byte{0xA0, 0xA1, 0xA2, 0xA3, 0xA4}, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"RMEM_READ_REQ", "--dst", macB, "--src", macA, "--rid", "0x11223344", "--addr", "0x1000"}, hexRMEMReadReq},
		{[]string{"rmem-read-rsp", "--dst", macA, "--src", macB, "--rid", "287454020", "--data", "0xCAFEF00D"},
			"020e0c00000a020e0c00000b88b50e11443322110df0feca"},
		{[]string{"0x20", "--dst", macA, "--src", macB, "--rid", "16", "--addr", "64", "--mask", "0xF", "--data", "0x12345678"}, hexRMEMWriteReq},
		{[]string{"RMEM_WRITE_REQ", "--dst", macG, "--src", macB, "--rid", "0x11", "--addr", "0x44", "--data", "0x9ABCDEF0"}, // default mask: all ones
			"030e0c000001020e0c00000b88b50e201100000044000000fffffffff0debc9a"},
		{[]string{"RMEM_WRITE_RSP", "--dst", macB, "--src", macA, "--rid", "010"}, // decimal 10, not octal
			"020e0c00000b020e0c00000a88b50e210a000000"},
		{[]string{"DMA_READ_REQ", "--dst", macB, "--src", macA, "--rid", "0x21", "--addr", "0x3000", "--length", "5"},
			"020e0c00000b020e0c00000a88b50e30210000000030000005000000"},
		{[]string{"DMA_READ_RSP", "--dst", macA, "--src", macB, "--rid", "0x21", "--payload", "b0b1b2b3b4"},
			"020e0c00000a020e0c00000b88b50e3121000000b0b1b2b3b4000000d0e0d0e0"},
		{[]string{"DMA_WRITE_REQ", "--dst", macB, "--src", macA, "--rid", "0x20", "--addr", "0x2000", "--payload", "0xa0a1 a2:a3 A4"}, hexDMAWriteReq5},
		{[]string{"DMA_WRITE_REQ", "--dst", macB, "--src", macA, "--rid", "0x20", "--addr", "0x2000", "--payload-file", pf, "--length", "5"}, hexDMAWriteReq5},
		{[]string{"DMA_WRITE_REQ", "--dst", macB, "--src", macA, "--rid", "0x20", "--addr", "0x2000", "--payload-file", pf, "--pad"},
			hexDMAWriteReq5 + strings.Repeat("00", 20)},
		{[]string{"DMA_WRITE_RSP", "--dst", macA, "--src", macB, "--rid", "0x20", "--pad"},
			"020e0c00000a020e0c00000b88b50e4120000000" + strings.Repeat("00", 40)},
		{[]string{"ERROR_RSP", "--dst", macA, "--src", macB, "--rid", "0x20", "--cause", "LOCAL_AXI_WR_SLVERR"},
			"020e0c00000a020e0c00000b88b50eff2000000006000000"},
		{[]string{"255", "--dst", macA, "--src", macB, "--rid", "0x20", "--cause", "0xFFFFFFFF"},
			"020e0c00000a020e0c00000b88b50eff20000000ffffffff"},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, "", append([]string{"encode"}, c.args...)...)
		if code != exitOK || errOut != "" || out != c.want+"\n" {
			t.Errorf("oetp encode %q: exit %d, stderr %q\n got %s\nwant %s", c.args, code, errOut, out, c.want)
		}
	}
	// 8160 bytes is the largest payload: an 8192-byte frame.
	big := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(big, make([]byte, 8160), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := runCLI(t, "", "encode", "DMA_WRITE_REQ", "--dst", macB, "--src", macA, "--rid", "1", "--addr", "0", "--payload-file", big)
	if code != exitOK || len(out) != 2*8192+1 || !strings.HasSuffix(out, "d0e0d0e0\n") {
		t.Errorf("8160-byte payload: exit %d, %d hex characters", code, len(out))
	}
}

// TestEncodeDecodeRoundTrip encodes every command and decodes the result,
// padded and unpadded, expecting a valid frame with the same fields.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	payload := "000102030405060708090a0b0c0d0e0f10111213141516"
	cases := []struct {
		args   []string
		expect string // --expect-length for a DMA_READ_RSP
		want   map[string]any
	}{
		{[]string{"RMEM_READ_REQ", "--addr", "0xFFFFFFFC"}, "", map[string]any{"address": 4294967292.0}},
		{[]string{"RMEM_READ_RSP", "--data", "0xFFFFFFFF"}, "", map[string]any{"data": 4294967295.0}},
		{[]string{"RMEM_WRITE_REQ", "--addr", "8", "--mask", "5", "--data", "7"}, "", map[string]any{"address": 8.0, "bit_enable": 5.0, "data": 7.0}},
		{[]string{"RMEM_WRITE_RSP"}, "", map[string]any{}},
		{[]string{"DMA_READ_REQ", "--addr", "3", "--length", "8160"}, "", map[string]any{"address": 3.0, "length": 8160.0}},
		{[]string{"DMA_READ_RSP", "--payload", payload}, "23", map[string]any{"payload": payload, "end_of_data_ok": true}},
		{[]string{"DMA_WRITE_REQ", "--addr", "0x10", "--payload", payload}, "", map[string]any{"address": 16.0, "length": 23.0, "payload": payload, "end_of_data_ok": true}},
		{[]string{"DMA_WRITE_RSP"}, "", map[string]any{}},
		{[]string{"ERROR_RSP", "--cause", "2"}, "", map[string]any{"error_code": 2.0, "error": "REMOTE_AXIS"}},
	}
	for _, c := range cases {
		for _, padded := range []bool{false, true} {
			args := append([]string{"encode"}, c.args...)
			args = append(args, "--dst", macG, "--src", macA, "--rid", "0xdeadbeef")
			if padded {
				args = append(args, "--pad")
			}
			frameHex, errOut, code := runCLI(t, "", args...)
			if code != exitOK {
				t.Fatalf("%q: exit %d, %s", args, code, errOut)
			}
			frame, _ := hex.DecodeString(strings.TrimSpace(frameHex))
			dargs := []string{"decode"}
			if c.expect != "" {
				dargs = append(dargs, "--expect-length", c.expect)
			}
			out, errOut, code := runCLI(t, frameHex, dargs...) // via stdin
			if code != exitOK {
				t.Fatalf("decode %s: exit %d, %s", frameHex, code, errOut)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("decode output %q: %v", out, err)
			}
			want := map[string]any{"valid": true, "kind": "oetp", "dst": macG, "src": macA, "group": true,
				"frame_len": float64(len(frame)), "cmd": strings.ToUpper(c.args[0]), "request_id": float64(0xdeadbeef)}
			for k, v := range c.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%q padded=%v (-want +got):\n%s", c.args, padded, diff)
			}
			if padded && len(frame) < 60 {
				t.Errorf("%q --pad: %d bytes", c.args, len(frame))
			}
		}
	}
}

// Spec worked examples (see wire/spec_test.go).
const (
	hexRMEMReadReq   = "020e0c00000b020e0c00000a88b50e104433221100100000"
	hexRMEMWriteReq  = "020e0c00000a020e0c00000b88b50e2010000000400000000f00000078563412"
	hexDMAWriteReq5  = "020e0c00000b020e0c00000a88b50e40200000000020000005000000a0a1a2a3a4000000d0e0d0e0"
	hexDMAReadRspBad = "020e0c00000a020e0c00000b88b50e3121000000b0b1b2b3b4000000efbeadde"
)

func TestDecodeJSON(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"spec RMEM read request", []string{hexRMEMReadReq},
			`{"valid":true,"kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":24,"cmd":"RMEM_READ_REQ","request_id":287454020,"address":4096}`},
		{"spaced, colons and 0x", []string{"0x020e0c00000b 02:0e:0c:00:00:0a\t88B5 0E10 0x44332211 00100000"},
			`{"valid":true,"kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":24,"cmd":"RMEM_READ_REQ","request_id":287454020,"address":4096}`},
		{"spec RMEM write request", []string{hexRMEMWriteReq},
			`{"valid":true,"kind":"oetp","dst":"02:0e:0c:00:00:0a","src":"02:0e:0c:00:00:0b","group":false,"frame_len":32,"cmd":"RMEM_WRITE_REQ","request_id":16,"address":64,"bit_enable":15,"data":305419896}`},
		{"spec DMA write, padded by a MAC", []string{hexDMAWriteReq5 + strings.Repeat("00", 20)},
			`{"valid":true,"kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":60,"cmd":"DMA_WRITE_REQ","request_id":32,"address":8192,"length":5,"payload":"a0a1a2a3a4","end_of_data_ok":true}`},
		{"spec bad trailer", []string{"--expect-length", "5", hexDMAReadRspBad},
			`{"valid":false,"problem":"EndOfData missing or wrong at its fixed position: bytes 28..31 are efbeadde, want d0e0d0e0","kind":"oetp","dst":"02:0e:0c:00:00:0a","src":"02:0e:0c:00:00:0b","group":false,"frame_len":32,"cmd":"DMA_READ_RSP","request_id":33,"payload":"b0b1b2b3b4","end_of_data_ok":false}`},
		{"read response too short for the expected length", []string{"--expect-length", "0x9", hexDMAReadRspBad},
			`{"valid":false,"problem":"wrong frame length for the command: 32 bytes, want 36 (or 60 padded) for expected length 9","kind":"oetp","dst":"02:0e:0c:00:00:0a","src":"02:0e:0c:00:00:0b","group":false,"frame_len":32,"cmd":"DMA_READ_RSP","request_id":33}`},
		{"read response without --expect-length", []string{hexDMAReadRspBad},
			`{"valid":false,"problem":"needs --expect-length: a DMA_READ_RSP's length is the Length of the DMA_READ_REQ it answers","kind":"oetp","dst":"02:0e:0c:00:00:0a","src":"02:0e:0c:00:00:0b","group":false,"frame_len":32,"cmd":"DMA_READ_RSP","request_id":33}`},
		{"truncated RMEM write request", []string{hexRMEMWriteReq[:62]},
			`{"valid":false,"problem":"wrong frame length for the command: 31 bytes, want 32 (or 60 padded)","kind":"oetp","dst":"02:0e:0c:00:00:0a","src":"02:0e:0c:00:00:0b","group":false,"frame_len":31,"cmd":"RMEM_WRITE_REQ","request_id":16,"address":64,"bit_enable":15,"cause":2}`},
		{"DMA write request with a bad trailer", []string{hexDMAWriteReq5[:72] + "e0d0e0d0"},
			`{"valid":false,"problem":"EndOfData missing or wrong at its fixed position: bytes 36..39 are e0d0e0d0, want d0e0d0e0","kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":40,"cmd":"DMA_WRITE_REQ","request_id":32,"address":8192,"length":5,"payload":"a0a1a2a3a4","end_of_data_ok":false,"cause":2}`},
		{"DMA write request cut inside Length", []string{hexDMAWriteReq5[:54]},
			`{"valid":false,"problem":"wrong frame length for the command: 27 bytes, too short for the Length parameter","kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":27,"cmd":"DMA_WRITE_REQ","request_id":32,"address":8192,"cause":2}`},
		{"DMA write request with trailing bytes", []string{hexDMAWriteReq5 + "00"},
			`{"valid":false,"problem":"wrong frame length for the command: 41 bytes, want 40 (or 60 padded) for Length 5","kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":41,"cmd":"DMA_WRITE_REQ","request_id":32,"address":8192,"length":5,"cause":2}`},
		{"padded request over a 36-byte ceiling", []string{"--max-frame", "36", hexRMEMReadReq + strings.Repeat("00", 36)},
			`{"valid":false,"problem":"frame exceeds the frame ceiling: 60 bytes > 36","kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":60,"cmd":"RMEM_READ_REQ","request_id":287454020,"address":4096,"cause":3}`},
		{"ERROR_RSP cause 6", []string{"020e0c00000a020e0c00000b88b50eff2000000006000000"},
			`{"valid":true,"kind":"oetp","dst":"02:0e:0c:00:00:0a","src":"02:0e:0c:00:00:0b","group":false,"frame_len":24,"cmd":"ERROR_RSP","request_id":32,"error_code":6,"error":"REMOTE_AXI_WR_SLVERR"}`},
		{"ERROR_RSP cause 0x102", []string{"020e0c00000a020e0c00000b88b50eff2000000002010000"},
			`{"valid":true,"kind":"oetp","dst":"02:0e:0c:00:00:0a","src":"02:0e:0c:00:00:0b","group":false,"frame_len":24,"cmd":"ERROR_RSP","request_id":32,"error_code":258,"error":"LOCAL_INVALID"}`},
		{"group write", []string{"030e0c000001020e0c00000b88b50e201100000044000000fffffffff0debc9a"},
			`{"valid":true,"kind":"oetp","dst":"03:0e:0c:00:00:01","src":"02:0e:0c:00:00:0b","group":true,"frame_len":32,"cmd":"RMEM_WRITE_REQ","request_id":17,"address":68,"bit_enable":4294967295,"data":2596069104}`},
		{"reserved Cmd", []string{hexRMEMReadReq[:30] + "12" + hexRMEMReadReq[32:]},
			`{"valid":false,"problem":"reserved Cmd 0x12: not an assigned command; dropped without a reply","kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":24,"cmd":"RESERVED(0x12)"}`},
		{"no Request ID", []string{hexRMEMReadReq[:38]},
			`{"valid":false,"problem":"too short for a Request ID: 19 bytes, the Request ID ends at byte 20; dropped without a reply","kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":19,"cmd":"RMEM_READ_REQ"}`},
		{"Magic without Cmd", []string{hexRMEMReadReq[:30]},
			`{"valid":false,"problem":"too short for a Request ID: 15 bytes, the Request ID ends at byte 20; dropped without a reply","kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":15}`},
		{"wrong Magic", []string{hexRMEMReadReq[:28] + "0f" + hexRMEMReadReq[30:]},
			`{"valid":false,"problem":"not oETP: EtherType 0x88B5 but Magic 0x0F, not 0x0E (raw receive policy)","kind":"raw","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"ethertype":34997,"frame_len":24}`},
		{"0x88B5 header only", []string{hexRMEMReadReq[:28]},
			`{"valid":false,"problem":"not oETP: EtherType 0x88B5 but the frame ends before the Magic octet (raw receive policy)","kind":"raw","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"ethertype":34997,"frame_len":14}`},
		{"802.1Q-tagged RMEM_READ_REQ", []string{"020e0c00000b 020e0c00000a 8100 6005 88b5 0e10 01000000 00100000"},
			`{"valid":false,"problem":"not oETP v1: 802.1Q-tagged frame (VID 5), inner EtherType 0x88B5: VLAN tags are outside oETP v1 (raw receive policy)","kind":"raw","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"ethertype":33024,"vlan":[{"tpid":33024,"pcp":3,"dei":false,"vid":5}],"inner_ethertype":34997,"frame_len":28}`},
		{"802.1ad over 802.1Q", []string{"020e0c00000b 020e0c00000a 88a8 1007 8100 0005 88b5 0e10"},
			`{"valid":false,"problem":"not oETP v1: 802.1ad-tagged frame (VID 7), inner EtherType 0x88B5: VLAN tags are outside oETP v1 (raw receive policy)","kind":"raw","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"ethertype":34984,"vlan":[{"tpid":34984,"pcp":0,"dei":true,"vid":7},{"tpid":33024,"pcp":0,"dei":false,"vid":5}],"inner_ethertype":34997,"frame_len":24}`},
		{"raw ARP", []string{"ffffffffffff 020e0c00000a 0806 0001"},
			`{"valid":false,"problem":"not oETP: EtherType 0x0806 (raw receive policy)","kind":"raw","dst":"ff:ff:ff:ff:ff:ff","src":"02:0e:0c:00:00:0a","group":true,"ethertype":2054,"frame_len":16}`},
		{"runt", []string{"0102"},
			`{"valid":false,"problem":"runt frame (shorter than the Ethernet header): 2 bytes, an Ethernet header needs 14","kind":"runt","frame_len":2}`},
		{"empty argument", []string{""},
			`{"valid":false,"problem":"runt frame (shorter than the Ethernet header): 0 bytes, an Ethernet header needs 14","kind":"runt","frame_len":0}`},
	}
	var allArgs []string
	var allWant []string
	for _, c := range cases {
		out, errOut, code := runCLI(t, "", append([]string{"decode"}, c.args...)...)
		if code != exitOK || errOut != "" {
			t.Errorf("%s: exit %d, stderr %q", c.name, code, errOut)
		}
		if out != c.want+"\n" {
			t.Errorf("%s:\n got %s\nwant %s", c.name, out, c.want)
		}
		if len(c.args) == 1 {
			allArgs, allWant = append(allArgs, c.args[0]), append(allWant, c.want)
		}
	}
	// Several frames: one line each, in argument order.
	out, _, code := runCLI(t, "", append([]string{"decode"}, allArgs...)...)
	if code != exitOK || out != strings.Join(allWant, "\n")+"\n" {
		t.Errorf("decode of %d frames: exit %d\n%s", len(allArgs), code, cmp.Diff(strings.Join(allWant, "\n")+"\n", out))
	}
}

func TestDecodeStdin(t *testing.T) {
	in := "# captured frames\n\n" + hexRMEMReadReq + "\n  " + "not hex" + "\r\n" +
		"0x020e0c00000a:020e0c00000b 88b5 0e11 44332211 0df0feca\r\n" + "0e1\n"
	out, errOut, code := runCLI(t, in, "decode")
	want := `{"valid":true,"kind":"oetp","dst":"02:0e:0c:00:00:0b","src":"02:0e:0c:00:00:0a","group":false,"frame_len":24,"cmd":"RMEM_READ_REQ","request_id":287454020,"address":4096}
{"valid":true,"kind":"oetp","dst":"02:0e:0c:00:00:0a","src":"02:0e:0c:00:00:0b","group":false,"frame_len":24,"cmd":"RMEM_READ_RSP","request_id":287454020,"data":3405705229}
`
	if code != exitFailed || out != want {
		t.Errorf("exit %d, stdout:\n%s", code, cmp.Diff(want, out))
	}
	wantErr := `oetp: stdin line 4: hex group "not" contains 'n', which is not a hex digit
oetp: stdin line 6: hex group "0e1" has an odd number of digits: write whole bytes, e.g. 0e rather than e
oetp: 2 line(s) of stdin were not hex frames
`
	if errOut != wantErr {
		t.Errorf("stderr:\n%s", cmp.Diff(wantErr, errOut))
	}
	// A clean stream exits 0; an 8192-byte frame fits a line.
	big := "020e0c00000b020e0c00000a88b50e40" + "01000000" + "00000000" + "e01f0000" + strings.Repeat("5a", 8160) + "d0e0d0e0"
	out, errOut, code = runCLI(t, big+"\n", "decode")
	var d frames.Description
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != exitOK || errOut != "" {
		t.Fatalf("8192-byte frame: exit %d, %v, stderr %q", code, err, errOut)
	}
	if !d.Valid || d.FrameLen != 8192 || d.Length == nil || *d.Length != 8160 || d.Payload == nil || *d.Payload != strings.Repeat("5a", 8160) {
		t.Errorf("8192-byte frame: valid %v frame_len %d", d.Valid, d.FrameLen)
	}
}

// writePcap writes frames into a pcap file with the given snapshot length,
// the i-th frame stamped t0 + i ms.
func writePcap(t *testing.T, path string, snaplen int, t0 time.Time, frames ...[]byte) {
	t.Helper()
	var b bytes.Buffer
	w, err := pcap.NewWriter(&b, snaplen)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(t0.Add(time.Duration(i)*time.Millisecond), f); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, path, b.Bytes())
}

func TestDump(t *testing.T) {
	a, _ := wire.ParseMAC(macA)
	b, _ := wire.ParseMAC(macB)
	g, _ := wire.ParseMAC(macG)
	payload := []byte{0xb0, 0xb1, 0xb2, 0xb3, 0xb4}
	fs := [][]byte{
		wire.AppendDMAReadReq(nil, b, a, 7, 0x1000, 5),
		wire.AppendDMAReadRsp(nil, a, b, 7, payload),                            // paired with frame 1: valid
		wire.AppendDMAReadRsp(nil, a, b, 8, payload),                            // no request with rid 8
		wire.AppendRMEMWriteReq(nil, g, a, 9, 0x20, 0xffffffff, 5),              // group write
		wire.AppendErrorRsp(nil, a, b, 3, 6),                                    // remote SLVERR
		append(append(append([]byte{}, b[:]...), a[:]...), 0x08, 0x00, 0x45, 0), // raw IPv4
		{0x01, 0x02}, // runt
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "cap.pcap")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	writePcap(t, file, 0, t0, fs...)

	out, errOut, code := runCLI(t, "", "dump", file)
	ts := func(i int) string {
		return t0.Add(time.Duration(i) * time.Millisecond).Local().Format("15:04:05.000000")
	}
	want := strings.Join([]string{
		"1 " + ts(0) + " 02:0e:0c:00:00:0a > 02:0e:0c:00:00:0b DMA_READ_REQ rid=7 addr=0x00001000 len=5, 28 bytes",
		"2 " + ts(1) + " 02:0e:0c:00:00:0b > 02:0e:0c:00:00:0a DMA_READ_RSP rid=7 len=5, 32 bytes",
		"3 " + ts(2) + " 02:0e:0c:00:00:0b > 02:0e:0c:00:00:0a DMA_READ_RSP rid=8, 32 bytes INVALID: no DMA_READ_REQ with this Request ID earlier in the capture: the expected length is unknown",
		"4 " + ts(3) + " 02:0e:0c:00:00:0a > 03:0e:0c:00:00:01 RMEM_WRITE_REQ (group) rid=9 addr=0x00000020 bit_enable=0xffffffff data=0x00000005, 32 bytes",
		"5 " + ts(4) + " 02:0e:0c:00:00:0b > 02:0e:0c:00:00:0a ERROR_RSP rid=3 error_code=6 (REMOTE_AXI_WR_SLVERR), 24 bytes",
		"6 " + ts(5) + " 02:0e:0c:00:00:0a > 02:0e:0c:00:00:0b raw ethertype 0x0800, 16 bytes",
		"7 " + ts(6) + " runt, 2 bytes: " + frames.Describe(fs[6], frames.Options{MaxFrame: 8192}).Problem,
	}, "\n") + "\n"
	if code != 0 || out != want {
		t.Errorf("dump: exit %d, stderr %q\n got:\n%s\nwant:\n%s", code, errOut, out, want)
	}

	// --json: decode's objects plus index and time; the paired response
	// carries its payload.
	out, errOut, code = runCLI(t, "", "dump", "--json", file)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(fs) {
		t.Fatalf("dump --json: exit %d, %d lines; stderr %q", code, len(lines), errOut)
	}
	for i, line := range lines {
		var got frames.DumpRecord
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		opt := frames.Options{MaxFrame: 8192}
		if i == 1 {
			five := uint32(5)
			opt.ExpectLength = &five
		}
		wantRec := frames.DumpRecord{Index: i + 1, Time: t0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano), Description: frames.Describe(fs[i], opt)}
		if i == 2 {
			wantRec.Problem = "no DMA_READ_REQ with this Request ID earlier in the capture: the expected length is unknown"
		}
		if diff := cmp.Diff(wantRec, got, cmp.AllowUnexported(frames.DumpRecord{})); diff != "" {
			t.Errorf("line %d (-want +got):\n%s", i+1, diff)
		}
	}
	if !strings.Contains(lines[1], `"valid":true`) || !strings.Contains(lines[1], `"payload":"b0b1b2b3b4"`) || !strings.Contains(lines[1], `"time":"2026-01-02T03:04:05.001006Z"`) {
		t.Errorf("paired DMA_READ_RSP: %s", lines[1])
	}

	// A capture truncated by its snapshot length shows the length on the
	// wire.
	short := filepath.Join(dir, "short.pcap")
	writePcap(t, short, 28, t0, wire.AppendDMAWriteReq(nil, b, a, 1, 0, payload))
	out, _, code = runCLI(t, "", "dump", short)
	if wantSuffix := "DMA_WRITE_REQ rid=1 addr=0x00000000 len=5, 28 bytes (40 on the wire) INVALID: "; code != 0 || !strings.Contains(out, wantSuffix) {
		t.Errorf("truncated capture: exit %d, %q, want it to contain %q", code, out, wantSuffix)
	}
	out, _, _ = runCLI(t, "", "dump", "--json", short)
	if !strings.Contains(out, `"orig_len":40`) {
		t.Errorf("truncated capture --json: %s", out)
	}

	// A file that ends inside a record: the fs before it, then exit 1.
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.pcap")
	writeFile(t, cut, whole[:len(whole)-1])
	out, errOut, code = runCLI(t, "", "dump", cut)
	if n := strings.Count(out, "\n"); code != 1 || n != len(fs)-1 || !strings.Contains(errOut, "after 6 frame(s)") {
		t.Errorf("cut file: exit %d, %d lines, stderr %q", code, n, errOut)
	}
}

func TestDumpUsage(t *testing.T) {
	dir := t.TempDir()
	notPcap := filepath.Join(dir, "x.txt")
	writeFile(t, notPcap, []byte("hello, this is not a capture file"))
	wifi := filepath.Join(dir, "wifi.pcap")
	writeFile(t, wifi, handmadePcap(105))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dump"}, "takes one argument"},
		{[]string{"dump", "a", "b"}, "takes one argument"},
		{[]string{"dump", filepath.Join(dir, "missing.pcap")}, "missing.pcap"},
		{[]string{"dump", notPcap}, "not a pcap or pcapng file: the file starts with 68 65 6c 6c"},
		{[]string{"dump", wifi}, "link type LINKTYPE 105 does not carry Ethernet; oetp reads EN10MB (1), LINUX_SLL (113) and LINUX_SLL2 (276)"},
		{[]string{"dump", "--max-frame", "20", notPcap}, "--max-frame"},
		{[]string{"dump", "--count", "3", notPcap}, "--count, --promisc and --write belong to a live view"},
		{[]string{"dump", "--write", "x.pcapng", notPcap}, "--count, --promisc and --write belong to a live view: add --iface IF"},
		{[]string{"dump", "--iface", "lo", notPcap}, "reads a file or --iface, not both"},
		{[]string{"dump", "--iface", "nosuchif0"}, "--iface nosuchif0"},
		{[]string{"dump", "--iface", "lo", "--count", "0"}, "--count 0 is out of range"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// handmadePcap is an empty classic pcap file of the link type.
func handmadePcap(linkType uint32) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[0:], pcap.MagicMicroseconds)
	binary.LittleEndian.PutUint16(b[4:], 2)
	binary.LittleEndian.PutUint16(b[6:], 4)
	binary.LittleEndian.PutUint32(b[16:], 65535)
	binary.LittleEndian.PutUint32(b[20:], linkType)
	return b
}

// fixture is a capture that tshark or tcpdump wrote (link/pcap/testdata).
func fixture(name string) string { return filepath.Join("..", "..", "link", "pcap", "testdata", name) }

// TestDumpCaptures decodes the captures tshark and tcpdump wrote of the same
// five frames (see link/pcap's TestMakeFixtures): pcapng and pcap, EN10MB
// with VLAN tags, and the cooked LINUX_SLL and LINUX_SLL2 of 'any'.
func TestDumpCaptures(t *testing.T) {
	strip := regexp.MustCompile(`^(\d+) \S+ `) // the local-time stamp
	en10mb := []string{
		"1 02:0e:0c:00:00:01 > 02:0e:0c:00:00:02 RMEM_READ_REQ rid=7 addr=0x00001000, 24 bytes",
		"2 02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 RMEM_READ_RSP rid=7 data=0xc0ffee01, 24 bytes",
		"3 02:0e:0c:00:00:01 > 02:0e:0c:00:00:02 vlan 100 p5 RMEM_WRITE_REQ rid=8 addr=0x00001004 bit_enable=0x0000ff00 data=0x0000ab00, 32 bytes",
		"4 02:0e:0c:00:00:01 > 03:0e:0c:00:00:01 DMA_WRITE_REQ (group) rid=9 addr=0x00100000 len=16, 48 bytes",
		"5 02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 vlan 200 (tpid 0x88a8) vlan 300 DMA_WRITE_REQ rid=10 addr=0x00002000 len=5, 40 bytes",
	}
	sll := []string{
		"1 02:0e:0c:00:00:01 > ? [host] RMEM_READ_REQ rid=7 addr=0x00001000, 24 bytes",
		"2 02:0e:0c:00:00:02 > ? [outgoing] RMEM_READ_RSP rid=7 data=0xc0ffee01, 24 bytes",
		"3 02:0e:0c:00:00:01 > ? [host] vlan 100 p5 RMEM_WRITE_REQ rid=8 addr=0x00001004 bit_enable=0x0000ff00 data=0x0000ab00, 32 bytes",
		"4 02:0e:0c:00:00:01 > ? [multicast] DMA_WRITE_REQ (group) rid=9 addr=0x00100000 len=16, 48 bytes",
		"5 02:0e:0c:00:00:02 > ? [outgoing] vlan 200 (tpid 0x88a8) DMA_WRITE_REQ rid=10 addr=0x00002000 len=5, 40 bytes",
	}
	sll2 := slices.Clone(sll)
	sll2[2] = strings.Replace(sll2[2], " vlan 100 p5", "", 1) // libpcap keeps no tag in LINUX_SLL2
	sll2[4] = strings.Replace(sll2[4], " vlan 200 (tpid 0x88a8)", "", 1)
	for file, want := range map[string][]string{
		"tshark-en10mb.pcapng":  en10mb,
		"tcpdump-en10mb.pcap":   en10mb,
		"tshark-any-sll.pcapng": sll,
		"tcpdump-any-sll.pcap":  sll,
		"tcpdump-any-sll2.pcap": sll2,
	} {
		out, errOut, code := runCLI(t, "", "dump", fixture(file))
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			got = append(got, strip.ReplaceAllString(l, "$1 "))
		}
		if diff := cmp.Diff(want, got); code != 0 || diff != "" {
			t.Errorf("dump %s: exit %d, stderr %q (-want +got):\n%s", file, code, errOut, diff)
		}
	}

	// Standard input, JSON: the VLANs, the packet type and the direction.
	b, err := os.ReadFile(fixture("tcpdump-any-sll.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, string(b), "dump", "--json", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 {
		t.Fatalf("dump --json -: exit %d, %d lines, stderr %q", code, len(lines), errOut)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"vlans": []any{map[string]any{"tpid": float64(0x8100), "id": float64(100), "pcp": float64(5), "dei": false}},
		"packet_type": "host", "direction": "in", "src": "02:0e:0c:00:00:01", "group": false, "cmd": "RMEM_WRITE_REQ", "valid": true}
	for k, v := range want {
		if diff := cmp.Diff(v, rec[k]); diff != "" {
			t.Errorf("record 3 %s (-want +got):\n%s", k, diff)
		}
	}
	if _, ok := rec["dst"]; ok {
		t.Errorf("record 3 of a cooked capture has a dst: %s", lines[2])
	}
	if !strings.Contains(lines[1], `"direction":"out"`) || !strings.Contains(lines[1], `"packet_type":"outgoing"`) {
		t.Errorf("record 2: %s", lines[1])
	}
}

// TestDumpAgedOutSummary dumps a capture with requests unanswered for more
// than frames.ReadMaxAge: the summary on standard error counts them, and a late
// response says why its length is unknown.
func TestDumpAgedOutSummary(t *testing.T) {
	a, _ := wire.ParseMAC(macA)
	b, _ := wire.ParseMAC(macB)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	file := filepath.Join(t.TempDir(), "late.pcap")
	// writePcap spaces reqs 1 ms apart: pad with reqs to pass frames.ReadMaxAge
	// would take 60000 reqs, so write the late one with its own time.
	var reqs [][]byte
	for rid := range uint32(3) {
		reqs = append(reqs, wire.AppendDMAReadReq(nil, b, a, rid, 0x1000, 5))
	}
	writePcapAt(t, file, []time.Time{t0, t0, t0, t0.Add(frames.ReadMaxAge + time.Second)},
		append(reqs, wire.AppendDMAReadRsp(nil, a, b, 1, []byte{1, 2, 3, 4, 5}))...)
	out, errOut, code := runCLI(t, "", "dump", file)
	if code != 0 {
		t.Fatalf("dump: exit %d, %s", code, errOut)
	}
	if want := "oetp: 3 DMA_READ_REQ(s) had no response within 1m0s or beyond 65536 outstanding and were forgotten"; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q does not contain %q", errOut, want)
	}
	if want := "(requests unanswered for 1m0s, or beyond 65536 outstanding, are forgotten)"; !strings.Contains(out, want) {
		t.Errorf("stdout %q does not contain %q", out, want)
	}
}

// writePcapAt writes frames into a pcap file, frame i stamped at[i].
func writePcapAt(t *testing.T, path string, at []time.Time, frames ...[]byte) {
	t.Helper()
	var buf strings.Builder
	w, err := pcap.NewWriter(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(at[i], f); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, path, []byte(buf.String()))
}
