//go:build linux

package bench

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/openenoc/oetp/wire"
)

// TestFloorEcho runs the floor rows' echo in this process on the far host
// of a veth pair, in each way of its region, and checks that it copies a
// DMA write's payload into its region at the request's address, answers
// with exactly the DMA_WRITE_RSP of the request's ID, answers a DMA read
// with exactly the DMA_READ_RSP of its region's bytes (word padding and
// EndOfData included), ignores requests outside its region, and reports
// the CRC-32 of its region at the stop frame.
func TestFloorEcho(t *testing.T) {
	near, far, s := echoPair(t)
	const size = 3 * wire.MaxFragment
	for _, spec := range []floorSpec{{size: size}, {size: size, huge: true}, {size: size, gather: true}, {size: size, huge: true, gather: true}} {
		t.Run(spec.String(), func(t *testing.T) {
			_, out, done := startEchoProc(t, far, func(stdin io.Reader, out io.Writer) error {
				return FloorEcho(far.IfName(), spec.String(), stdin, out)
			})
			region := make([]byte, size)
			for i := range region {
				region[i] = floorFill(i)
			}
			buf := make([]byte, 9216)
			exchange := func(req []byte) []byte {
				t.Helper()
				if err := s.write(retype(req)); err != nil {
					t.Fatal(err)
				}
				m, err := s.read(buf)
				if err != nil {
					t.Fatalf("no reply to % x...: %v", req[:28], err)
				}
				return buf[:m]
			}
			// A write of 4099 bytes (a padded last word) at offset 8160+5.
			payload := make([]byte, 4099)
			for i := range payload {
				payload[i] = byte(i*13 + 1)
			}
			off := wire.MaxFragment + 5
			got := exchange(wire.AppendDMAWriteReq(nil, far.MAC(), near.MAC(), 77, remoteBase+uint32(off), payload))
			if want := retype(wire.AppendDMAWriteRsp(nil, near.MAC(), far.MAC(), 77)); !bytes.Equal(got, want) {
				t.Errorf("write reply % x; want % x", got, want)
			}
			copy(region[off:], payload)
			// Reads: a full fragment, a padded one, the last bytes.
			for _, r := range []struct{ off, n int }{{0, wire.MaxFragment}, {off - 3, 4102}, {size - 1, 1}} {
				got := exchange(wire.AppendDMAReadReq(nil, far.MAC(), near.MAC(), 9, remoteBase+uint32(r.off), uint32(r.n)))
				want := retype(wire.AppendDMAReadRsp(nil, near.MAC(), far.MAC(), 9, region[r.off:r.off+r.n]))
				if !bytes.Equal(got, want) {
					t.Errorf("read of %d bytes at %d: reply of %d bytes % x...; want %d bytes % x...", r.n, r.off, len(got), got[:min(len(got), 28)], len(want), want[:28])
				}
			}
			// Outside the region: no reply (the next reply is the one to
			// the read after them), and the region unchanged.
			for _, req := range [][]byte{
				wire.AppendDMAWriteReq(nil, far.MAC(), near.MAC(), 1, remoteBase+size-4, payload[:8]),
				wire.AppendDMAWriteReq(nil, far.MAC(), near.MAC(), 1, remoteBase-4, payload[:8]),
				wire.AppendDMAReadReq(nil, far.MAC(), near.MAC(), 1, remoteBase+size-4, 8),
			} {
				if err := s.write(retype(req)); err != nil {
					t.Fatal(err)
				}
			}
			got = exchange(wire.AppendDMAReadReq(nil, far.MAC(), near.MAC(), 10, remoteBase+size-8, 8))
			if want := retype(wire.AppendDMAReadRsp(nil, near.MAC(), far.MAC(), 10, region[size-8:])); !bytes.Equal(got, want) {
				t.Errorf("after requests outside the region, the reply % x; want % x", got, want)
			}
			stopEcho(t, s, near, far, done, "FloorEcho")
			// 1 write and 4 reads answered.
			want := fmt.Sprintf("ready\ncrc32 %08x\ncpu ", crc32.ChecksumIEEE(region))
			if !strings.HasPrefix(out.String(), want) || !strings.HasSuffix(out.String(), " 5\n") {
				t.Errorf("output %q; want %q, the CPU time and 5 requests", out.String(), want)
			}
			var c floorCPU
			c.addEcho(out.String())
			if c.echoFrags != 5 || c.echo <= 0 {
				t.Errorf("echo CPU %+v from %q; want 5 requests and their time", c, out.String())
			}
			if err := checkFloorCRC(opDMAWrite, size, strings.TrimPrefix(out.String(), "ready\n"), crc32.ChecksumIEEE(region)); err != nil {
				t.Error(err)
			}
			if err := checkFloorCRC(opDMAWrite, size, strings.TrimPrefix(out.String(), "ready\n"), crc32.ChecksumIEEE(region)+1); err == nil {
				t.Error("checkFloorCRC accepts a wrong CRC")
			}
		})
	}
}

func TestFloorSpec(t *testing.T) {
	for _, s := range []string{"8160", "8160,huge", "8160,gather", "8160,huge,gather"} {
		f, err := parseFloorSpec(s)
		if err != nil || f.String() != s {
			t.Errorf("parseFloorSpec(%q) = %v, %v; want it back", s, f, err)
		}
	}
	for _, s := range []string{"", "0", "-4", "x", "8160,big", fmt.Sprint(MaxBlock + 1)} {
		if _, err := parseFloorSpec(s); err == nil {
			t.Errorf("parseFloorSpec(%q) accepted", s)
		}
	}
}

// TestFloorWant: the CRC the floor expects of the echo's region, computed
// in chunks, is the CRC of the whole pattern.
func TestFloorWant(t *testing.T) {
	p := &procEnv{}
	for _, n := range []int{1, 4095, 4096, 4097, 3 * wire.MaxFragment} {
		w, r := make([]byte, n), make([]byte, n)
		for i := range n {
			w[i], r[i] = procPattern(i), floorFill(i)
		}
		if got, want := p.floorWant(opDMAWrite, n), crc32.ChecksumIEEE(w); got != want {
			t.Errorf("write %d: %08x, want %08x", n, got, want)
		}
		if got, want := p.floorWant(opDMARead, n), crc32.ChecksumIEEE(r); got != want {
			t.Errorf("read %d: %08x, want %08x", n, got, want)
		}
	}
}
