package wireshark_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/wire/reliable"
)

// The reliable transport's golden vectors (wire/reliable/testdata), as the
// codec and the dissector must both read them.
const reliableVectors = "../../wire/reliable/testdata/vectors"

type relVector struct {
	Name     string `json:"name"`
	FrameHex string `json:"frame_hex"`
	MaxFrame int    `json:"max_frame"`
	Problem  string `json:"problem"`
	CRCOK    *bool  `json:"crc_ok"`
}

func loadRelVectors(t *testing.T) []relVector {
	t.Helper()
	b, err := os.ReadFile(reliableVectors + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []relVector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestDissectorReliable dissects wire/reliable/testdata/vectors.pcap with
// tshark and the script: the golden output, then every verdict of the
// dissector against the codec's (CRC, malformed, the v1 PDU inside).
func TestDissectorReliable(t *testing.T) {
	ts := newTshark(t)
	vs := loadRelVectors(t)
	pcapFile, err := filepath.Abs(reliableVectors + ".pcap")
	if err != nil {
		t.Fatal(err)
	}
	out := ts.run(t, append([]string{"-2", "-r", pcapFile},
		fieldArgs("frame.number", "frame.len", "oetpr.disc", "oetpr.version", "oetpr.flags",
			"oetpr.length", "oetpr.session", "oetpr.psn", "oetpr.apsn", "oetpr.credits",
			"oetpr.syn.depth", "oetpr.syn.congestion", "oetpr.syn.max_frame",
			"oetpr.crc", "oetpr.crc_ok", "oetp.cmd", "oetp.rid")...)...)
	t.Run("fields", func(t *testing.T) { golden(t, "reliable_fields.txt", []byte(out)) })
	t.Run("summary", func(t *testing.T) {
		s := ts.run(t, append([]string{"-2", "-r", pcapFile}, summaryArgs...)...)
		golden(t, "reliable_summary.txt", []byte(s))
	})
	t.Run("verbose", func(t *testing.T) {
		s := ts.run(t, "-2", "-r", pcapFile, "-V", "-O", "oetpr,oetp", "-Y", "frame.number in {1, 4, 12, 15, 16}")
		golden(t, "reliable_verbose.txt", []byte(s))
	})

	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")[1:]
	if len(rows) != len(vs) {
		t.Fatalf("tshark printed %d frames, vectors.json has %d", len(rows), len(vs))
	}
	crcCol := 14
	for i, v := range vs {
		cols := strings.Split(rows[i], "\t")
		frame, _ := hex.DecodeString(v.FrameHex)
		switch {
		case v.CRCOK != nil:
			want := "0"
			if *v.CRCOK {
				want = "1"
			}
			if cols[crcCol] != want {
				t.Errorf("%s: oetpr.crc_ok %q, the codec says %s", v.Name, cols[crcCol], want)
			}
		case !reliable.IsReliable(frame) && cols[crcCol] != "":
			t.Errorf("%s: a CRC verdict on a frame that is not a reliable one", v.Name)
		}
	}

	// Error-severity expert info exactly on the frames the codec rejects
	// (too_long is judged against a receiver's smaller ceiling: the
	// dissector only knows 8192).
	got := ts.frames(t, pcapFile, "_ws.expert.severity == error")
	var want strings.Builder
	for i, v := range vs {
		if v.Problem != "ok" && v.Problem != "not_ours" && v.Problem != "too_long" {
			fmt.Fprintf(&want, "%d\n", i+1)
		}
	}
	if got != want.String() {
		t.Errorf("frames with error-severity expert info:\n got %q\nwant %q", got, want.String())
	}

	// The v1 PDU inside a DATA frame is dissected as v1 and a plain v1
	// frame stays v1.
	got = ts.frames(t, pcapFile, "oetp && !oetpr")
	var v1 bytes.Buffer
	for i, v := range vs {
		if v.Name == "v1_frame" {
			fmt.Fprintf(&v1, "%d\n", i+1)
		}
	}
	if got != v1.String() {
		t.Errorf("plain v1 frames: got %q want %q", got, v1.String())
	}
	for _, f := range []string{"oetpr.flags.nak == 1", "oetpr.flags.syn == 1", "oetpr.crc_ok == 0", "oetpr && oetp.cmd == 0x40", "oetpr.psn == 258"} {
		if ts.frames(t, pcapFile, f) == "" {
			t.Errorf("filter %q selects nothing", f)
		}
	}
}
