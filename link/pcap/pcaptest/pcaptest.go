// Package pcaptest reads captures in tests.
package pcaptest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/openenoc/oetp/link/pcap"
)

// Record is one record of a capture: its stamp, a copy of its frame and
// the link type of its interface.
type Record struct {
	Time     time.Time
	Frame    []byte
	LinkType pcap.LinkType
}

// ReadCapture returns every frame of the pcap or pcapng file at path, each
// a copy, and fails the test on a read error or a truncated record.
func ReadCapture(t testing.TB, path string) [][]byte {
	t.Helper()
	_, records := ReadRecords(t, path)
	frames := make([][]byte, len(records))
	for i, r := range records {
		frames[i] = r.Frame
	}
	return frames
}

// ReadRecords returns the format and every record of the pcap or pcapng
// file at path, and fails the test on a read error or a truncated record.
func ReadRecords(t testing.TB, path string) (pcap.Format, []Record) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcap.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var records []Record
	for {
		ts, fr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Format(), records
		}
		if err != nil {
			t.Fatalf("%s: record %d: %v", path, len(records), err)
		}
		if r.OrigLen() != len(fr) {
			t.Fatalf("%s: record %d truncated: %d of %d bytes", path, len(records), len(fr), r.OrigLen())
		}
		records = append(records, Record{Time: ts, Frame: append([]byte(nil), fr...), LinkType: r.LinkType()})
	}
}

// GoldenEpoch is the stamp of the first frame of a golden capture.
const GoldenEpoch = 1700000000

// Golden returns a classic pcap file (snaplen 65535) of frames, frame i
// stamped GoldenEpoch+i seconds: a capture whose bytes depend only on the
// frames, to compare with a golden file.
func Golden(t testing.TB, frames [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pcap.NewWriterFormat(&buf, pcap.Classic, 65535)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(time.Unix(GoldenEpoch+int64(i), 0), f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
