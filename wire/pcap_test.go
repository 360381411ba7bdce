package wire_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
)

const (
	vectorsPcap = "testdata/vectors.pcap"
)

// buildPcap writes the golden frames, one packet each, with fixed
// timestamps so the file is reproducible.
func buildPcap(t *testing.T, vs []vector) []byte {
	t.Helper()
	frames := make([][]byte, len(vs))
	for i, v := range vs {
		f, err := hex.DecodeString(v.FrameHex)
		if err != nil {
			t.Fatal(err)
		}
		frames[i] = f
	}
	return pcaptest.Golden(t, frames)
}

// TestGoldenPcap compares testdata/vectors.pcap with the frames of the
// golden vectors written again, and reads it back packet by packet.
func TestGoldenPcap(t *testing.T) {
	vs := buildVectors()
	got := buildPcap(t, vs)
	want, same := testutil.Golden(t, vectorsPcap, got, *update, regen)
	if !same {
		t.Errorf("%s (%d bytes) differs from the encoders' frames (%d bytes); if intended, run: %s",
			vectorsPcap, len(want), len(got), regen)
	}

	// The classic little-endian header and the first record header, written
	// out by hand: magic, version 2.4, zone 0, sigfigs 0, snaplen 65535,
	// LINKTYPE_ETHERNET; then 1700000000 s, 0 us, 24 bytes captured of 24.
	const head = "d4c3b2a1" + "02000400" + "00000000" + "00000000" + "ffff0000" + "01000000" +
		"00f15365" + "00000000" + "18000000" + "18000000"
	if h := hex.EncodeToString(want[:len(head)/2]); h != head {
		t.Errorf("file starts %s, want %s", h, head)
	}

	r, err := pcap.NewReader(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		ts, frame, err := r.Next()
		if err != nil {
			t.Fatalf("packet %d (%s): %v", i, v.Name, err)
		}
		if !ts.Equal(time.Unix(pcaptest.GoldenEpoch+int64(i), 0)) {
			t.Errorf("packet %d (%s): timestamp %v", i, v.Name, ts)
		}
		if hex.EncodeToString(frame) != v.FrameHex {
			t.Errorf("packet %d (%s): frame differs from frame_hex", i, v.Name)
		}
	}
	if _, _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after %d packets: %v, want io.EOF", len(vs), err)
	}
}
