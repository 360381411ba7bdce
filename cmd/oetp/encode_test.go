package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
