package pcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/openenoc/oetp/link/pcap"
)

// FuzzReader feeds arbitrary bytes to Reader: it must return records or a
// clear error, never panic, never return a record longer than MaxSnaplen or
// than the input, and every record it returns must survive a round trip
// through Writer unchanged (timestamps to the microsecond) unless its
// timestamp lies beyond 2106.
func FuzzReader(f *testing.F) {
	f.Add(writeFile(f, 0, testFrames()[:3]))
	f.Add(writeFile(f, 20, testFrames()[:2]))
	frame := testFrames()[2]
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		f.Add(handmade(order, pcap.MagicMicroseconds, 999999, frame))
		f.Add(handmade(order, pcap.MagicNanoseconds, 999999999, frame))
		f.Add(handmade(order, pcap.MagicNanoseconds, 0xffffffff, frame))
	}
	good := writeFile(f, 0, testFrames()[:1])
	f.Add(good[:30])
	f.Add(good[:len(good)-3])
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
		type rec struct {
			ts    time.Time
			frame []byte
		}
		var recs []rec
		for {
			ts, fr, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, pcap.ErrTruncated) && !errors.Is(err, pcap.ErrRecordLength) {
					t.Fatalf("Next: unexpected error kind %v", err)
				}
				break
			}
			if len(fr) > pcap.MaxSnaplen || len(fr) > len(data) {
				t.Fatalf("record of %d bytes from %d bytes of input", len(fr), len(data))
			}
			if err := w.WritePacket(ts, fr); err != nil {
				// A fraction of a second beyond 999999 µs carries the
				// last seconds past what classic pcap holds.
				if ts.Unix() <= math.MaxUint32 {
					t.Fatal(err)
				}
				continue
			}
			recs = append(recs, rec{ts, bytes.Clone(fr)})
		}
		back, err := pcap.NewReader(&out)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range recs {
			ts, fr, err := back.Next()
			if err != nil || !bytes.Equal(fr, want.frame) || !ts.Equal(want.ts.Truncate(time.Microsecond)) {
				t.Fatalf("round trip record %d: %v %d bytes %v; want %v %d bytes", i+1, ts, len(fr), err, want.ts, len(want.frame))
			}
		}
		if _, _, err := back.Next(); err != io.EOF {
			t.Fatalf("round trip: extra records or error %v", err)
		}
	})
}
