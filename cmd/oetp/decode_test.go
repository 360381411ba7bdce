package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
)

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
