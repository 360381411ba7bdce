package pcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/openenoc/oetp/link/pcap"
)

// FuzzReader feeds arbitrary bytes to Reader and Ethernet: they must return
// records or a clear error, never panic, never return a record longer than
// the input, and every record must survive a round trip through a pcapng
// Writer unchanged.
func FuzzReader(f *testing.F) {
	for _, format := range formats {
		f.Add(writeFile(f, format, 0, testFrames()[:3]))
		f.Add(writeFile(f, format, 20, testFrames()[:2]))
		good := writeFile(f, format, 0, testFrames()[:1])
		f.Add(good[:30])
		f.Add(good[:len(good)-3])
	}
	f.Add(handmade(binary.LittleEndian, pcap.MagicNanoseconds, 0xffffffff, testFrames()[2]))
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := pcap.NewReader(bytes.NewReader(data))
		if err != nil {
			if r != nil {
				t.Fatal("NewReader returned a reader and an error")
			}
			return
		}
		var out bytes.Buffer
		w, err := pcap.NewWriter(&out, 0)
		if err != nil {
			t.Fatal(err)
		}
		var recs [][]byte
		var fr pcap.Frame
		for range 1000 {
			ts, d, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				break
			}
			if len(d) > len(data) {
				t.Fatalf("record of %d bytes from %d bytes of input", len(d), len(data))
			}
			if err := pcap.Ethernet(r.LinkType(), d, &fr); err != nil && !errors.Is(err, pcap.ErrFrame) && !errors.Is(err, pcap.ErrLinkType) {
				t.Fatalf("Ethernet: unexpected error kind %v", err)
			}
			if len(d) > pcap.MaxSnaplen {
				continue
			}
			if err := w.WritePacket(ts, d); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, bytes.Clone(d))
		}
		back, err := pcap.NewReader(&out)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range recs {
			_, d, err := back.Next()
			if err != nil || !bytes.Equal(d, want) {
				t.Fatalf("round trip record %d: %d bytes %v; want %d bytes", i+1, len(d), err, len(want))
			}
		}
	})
}
