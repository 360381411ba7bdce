// Package pcaptest reads captures in tests.
package pcaptest

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/openenoc/oetp/link/pcap"
)

// ReadCapture returns every frame of the pcap or pcapng file at path, each
// a copy, and fails the test on a read error or a truncated record.
func ReadCapture(t testing.TB, path string) [][]byte {
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
	var frames [][]byte
	for {
		_, fr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return frames
		}
		if err != nil {
			t.Fatalf("%s: record %d: %v", path, len(frames), err)
		}
		if r.OrigLen() != len(fr) {
			t.Fatalf("%s: record %d truncated: %d of %d bytes", path, len(frames), len(fr), r.OrigLen())
		}
		frames = append(frames, append([]byte(nil), fr...))
	}
}
