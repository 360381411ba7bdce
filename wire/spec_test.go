package wire_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/openenoc/oetp/wire"
)

// unhexFrame decodes hex written in spaced groups.
func unhexFrame(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad literal %q: %v", s, err)
	}
	return b
}

// TestSpecWorkedExamples checks the encoders against the specification's
// worked examples, written out by hand word by word (Ethernet words DA0..,
// DB0..; parameters little-endian, MACs and EtherType in network order),
// and checks that the golden file holds the same bytes.
func TestSpecWorkedExamples(t *testing.T) {
	// Each encoder gets its own buffer: the results are compared later.
	nb := func() []byte { return make([]byte, 0, wire.MaxFrameLen) }
	examples := []struct {
		name string
		got  []byte
		want string
	}{
		{"spec_rmem_read_req", wire.AppendRMEMReadReq(nb(), macB, macA, 0x11223344, 0x00001000),
			"020e0c00 000b020e 0c00000a 88b50e10 44332211 00100000"},
		{"spec_rmem_read_rsp", wire.AppendRMEMReadRsp(nb(), macA, macB, 0x11223344, 0xCAFEF00D),
			"020e0c00 000a020e 0c00000b 88b50e11 44332211 0df0feca"},
		{"spec_rmem_write_req_unicast", wire.AppendRMEMWriteReq(nb(), macA, macB, 0x10, 0x40, 0x0000000F, 0x12345678),
			"020e0c00 000a020e 0c00000b 88b50e20 10000000 40000000 0f000000 78563412"},
		{"spec_rmem_write_req_group", wire.AppendRMEMWriteReq(nb(), macG, macB, 0x11, 0x44, 0xFFFFFFFF, 0x9ABCDEF0),
			"030e0c00 0001020e 0c00000b 88b50e20 11000000 44000000 ffffffff f0debc9a"},
		{"spec_rmem_write_rsp", wire.AppendRMEMWriteRsp(nb(), macB, macA, 0x10),
			"020e0c00 000b020e 0c00000a 88b50e21 10000000"},
		{"spec_dma_write_req_len5", wire.AppendDMAWriteReq(nb(), macB, macA, 0x20, 0x2000, []byte{0xA0, 0xA1, 0xA2, 0xA3, 0xA4}),
			"020e0c00 000b020e 0c00000a 88b50e40 20000000 00200000 05000000 a0a1a2a3 a4000000 d0e0d0e0"},
		{"spec_dma_read_req_len5", wire.AppendDMAReadReq(nb(), macB, macA, 0x21, 0x3000, 5),
			"020e0c00 000b020e 0c00000a 88b50e30 21000000 00300000 05000000"},
		{"spec_error_rsp_axi_wr_slverr", wire.AppendErrorRsp(nb(), macA, macB, 0x20, wire.CauseAXIWrSlverr),
			"020e0c00 000a020e 0c00000b 88b50eff 20000000 06000000"},
		{"dma_write_rsp", wire.AppendDMAWriteRsp(nb(), macA, macB, 0x20),
			"020e0c00 000a020e 0c00000b 88b50e41 20000000"},
	}
	golden := map[string]string{}
	for _, v := range loadVectors(t) {
		golden[v.Name] = v.FrameHex
	}
	for _, e := range examples {
		want := unhexFrame(t, e.want)
		if got := hex.EncodeToString(e.got); got != hex.EncodeToString(want) {
			t.Errorf("%s: encoder\n got %s\nwant %s", e.name, got, hex.EncodeToString(want))
		}
		if g := golden[e.name]; g != hex.EncodeToString(want) {
			t.Errorf("%s: golden frame_hex %s, want %s", e.name, g, hex.EncodeToString(want))
		}
	}

	// The bad-trailer read response: DB5 = D0, DB6 = low byte of D1 and
	// three padding bytes, DB7 = D2 (not EndOfData).
	bad := unhexFrame(t, "020e0c00 000a020e 0c00000b 88b50e31 21000000 b0b1b2b3 b4000000 efbeadde")
	if g := golden["spec_dma_read_rsp_bad_trailer"]; g != hex.EncodeToString(bad) {
		t.Errorf("spec_dma_read_rsp_bad_trailer: golden frame_hex %s, want %x", g, bad)
	}
	if c := wire.Classify(bad, wire.MaxFrameLen); c != (wire.Class{Kind: wire.KindResponse, Cmd: wire.DMAReadRsp}) {
		t.Errorf("bad trailer: Classify = %+v, want a DMA_READ_RSP response with a readable Request ID", c)
	}
	if p := wire.CheckDMAReadRsp(bad, 5); p != wire.ProblemEndOfData {
		t.Errorf("bad trailer: CheckDMAReadRsp(5) = %v, want %v", p, wire.ProblemEndOfData)
	}
	if got := wire.Frame(bad).Payload(5); hex.EncodeToString(got) != "b0b1b2b3b4" {
		t.Errorf("bad trailer: Payload(5) = %x, want b0b1b2b3b4 (five bytes reach DMA before the failure)", got)
	}
	good := wire.AppendDMAReadRsp(nb(), macA, macB, 0x21, []byte{0xB0, 0xB1, 0xB2, 0xB3, 0xB4})
	if want := unhexFrame(t, "020e0c00 000a020e 0c00000b 88b50e31 21000000 b0b1b2b3 b4000000 d0e0d0e0"); string(good) != string(want) {
		t.Errorf("good read response:\n got %x\nwant %x", good, want)
	}
}

// TestEncodersAppend checks that the encoders append to a non-empty buffer
// without touching its contents, and grow one that lacks capacity.
func TestEncodersAppend(t *testing.T) {
	prefix := []byte{0xAA, 0xBB}
	for _, small := range []bool{false, true} {
		b := append(make([]byte, 0, wire.MaxFrameLen), prefix...)
		if small {
			b = append([]byte(nil), prefix...)
		}
		out := wire.AppendDMAWriteReq(b, macB, macA, 0x20, 0x2000, []byte{0xA0, 0xA1, 0xA2, 0xA3, 0xA4})
		want := "aabb" + "020e0c00000b020e0c00000a88b50e40200000000020000005000000a0a1a2a3a4000000d0e0d0e0"
		if got := hex.EncodeToString(out); got != want {
			t.Errorf("small=%v:\n got %s\nwant %s", small, got, want)
		}
		out = wire.AppendRMEMWriteRsp(b[:2], macB, macA, 0x10)
		if got := hex.EncodeToString(out); got != "aabb020e0c00000b020e0c00000a88b50e2110000000" {
			t.Errorf("small=%v: RMEM_WRITE_RSP after a prefix = %s", small, got)
		}
	}
}

// TestGrowZeroesWordPadding checks that a reused buffer full of garbage
// still yields zero word padding and EndOfData, and that the data slot is
// exactly n bytes at the Data offset.
func TestGrowZeroesWordPadding(t *testing.T) {
	for _, n := range []uint32{1, 2, 3, 4, 5, 7, 8160} {
		dirty := make([]byte, wire.MaxFrameLen)
		for i := range dirty {
			dirty[i] = 0xFF
		}
		for _, tc := range []struct {
			cmd  wire.Cmd
			grow func([]byte) ([]byte, []byte)
			off  int
		}{
			{wire.DMAWriteReq, func(b []byte) ([]byte, []byte) { return wire.GrowDMAWriteReq(b, macB, macA, 1, 2, n) }, 28},
			{wire.DMAReadRsp, func(b []byte) ([]byte, []byte) { return wire.GrowDMAReadRsp(b, macA, macB, 1, n) }, 20},
		} {
			frame, data := tc.grow(dirty[:0])
			if len(frame) != wire.FrameLen(tc.cmd, n) || len(data) != int(n) {
				t.Fatalf("%v n=%d: frame %d bytes, data %d", tc.cmd, n, len(frame), len(data))
			}
			if &data[0] != &frame[tc.off] {
				t.Errorf("%v n=%d: data does not start at frame offset %d", tc.cmd, n, tc.off)
			}
			words := (int(n) + 3) / 4
			for i := tc.off + int(n); i < tc.off+4*words; i++ {
				if frame[i] != 0 {
					t.Errorf("%v n=%d: word padding byte at %d = %#x, want 0", tc.cmd, n, i, frame[i])
				}
			}
			if got := hex.EncodeToString(frame[len(frame)-4:]); got != "d0e0d0e0" {
				t.Errorf("%v n=%d: trailer %s, want d0e0d0e0", tc.cmd, n, got)
			}
		}
	}
}
