// Package wireshark_test proves contrib/wireshark/oetp.lua: it writes a
// capture of every oETP command and every malformed class with the
// project's own encoders and pcap writer, dissects it with tshark and the
// script, and compares tshark's output with the golden files in testdata/.
//
//	go test ./contrib/wireshark            # needs tshark (apt-get install tshark)
//	go test ./contrib/wireshark -update    # rewrite testdata/ after a deliberate change
package wireshark_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/ (golden tshark output and oetp.pcap) instead of comparing")

// script is the dissector under test.
const script = "oetp.lua"

// tshark runs the tshark binary with oetp.lua loaded, in an environment of
// its own: an empty HOME (no personal plugins or preferences, so an
// installed copy of oetp.lua cannot load twice), UTC and the C locale.
type tshark struct {
	path, script, home string
}

func newTshark(t *testing.T) *tshark {
	t.Helper()
	path, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed: apt-get install tshark")
	}
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	return &tshark{path: path, script: abs, home: t.TempDir()}
}

// frames returns the numbers of the frames of file that filter selects,
// one a line (two passes).
func (ts *tshark) frames(t *testing.T, file, filter string) string {
	t.Helper()
	return ts.run(t, "-2", "-r", file, "-Y", filter, "-T", "fields", "-e", "frame.number")
}

// summaryArgs print each frame's protocol, Info column and expert messages.
var summaryArgs = fieldArgs("frame.number", "_ws.col.Protocol", "_ws.col.Info", "_ws.expert.message")

// fieldArgs are the arguments that make tshark print the fields named, a
// column each, under a header row.
func fieldArgs(fields ...string) []string {
	args := []string{"-T", "fields", "-E", "header=y"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	return args
}

// run returns tshark's standard output. It fails the test on a non-zero
// exit and on anything on standard error but the warning about running as
// root: tshark exits 0 when a Lua script fails to load, so a script error
// shows only there.
func (ts *tshark) run(t *testing.T, args ...string) string {
	t.Helper()
	args = append([]string{"-n", "-X", "lua_script:" + ts.script}, args...)
	cmd := exec.Command(ts.path, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + ts.home, "TZ=UTC", "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var errText []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "Running as user ") {
			errText = append(errText, l)
		}
	}
	if err != nil || len(errText) > 0 {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, strings.Join(errText, "\n"))
	}
	if strings.Contains(stdout.String(), "Lua Error") {
		t.Fatalf("tshark %s: the script failed while dissecting:\n%s", strings.Join(args, " "), luaErrors(stdout.String()))
	}
	return stdout.String()
}

func luaErrors(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "Lua Error") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from tshark's output (go test -update rewrites it after a deliberate change):\n%s",
			path, diff(string(want), string(got)))
	}
}

// diff lists the lines that differ, with their line numbers.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}

// writeCapture writes the frames with link/pcap and returns the file.
func writeCapture(t *testing.T, frames []capFrame, snaplen int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pcap.NewWriterFormat(&buf, pcap.Classic, snaplen)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WritePacket(captureStart.Add(f.at), f.b); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// classify is the codec's verdict on a frame of the capture: whether it is
// oETP at all, and whether it is malformed. DMA_READ_RSP lengths are
// checked against the expected length of its request, when there is one.
func classify(f capFrame) (oetp, malformed bool) {
	c := wire.Classify(f.b, wire.MaxFrameLen)
	switch c.Kind {
	case wire.KindRunt, wire.KindRaw:
		return false, false
	case wire.KindDrop:
		return true, true
	}
	if c.Problem == wire.OK && c.Cmd == wire.DMAReadRsp && f.expected >= 0 {
		return true, wire.CheckDMAReadRsp(f.b, uint32(f.expected)) != wire.OK
	}
	return true, c.Problem != wire.OK
}

// frameNumbers returns the 1-based numbers of the frames for which keep is
// true, one per line, as tshark -T fields -e frame.number prints them.
func frameNumbers(frames []capFrame, keep func(capFrame) bool) string {
	var b strings.Builder
	for i, f := range frames {
		if keep(f) {
			fmt.Fprintf(&b, "%d\n", i+1)
		}
	}
	return b.String()
}

func TestDissector(t *testing.T) {
	ts := newTshark(t)
	frames := buildCapture()

	// The manifest says which frames are malformed; the codec must agree,
	// so the list below is not just the dissector's opinion.
	for i, f := range frames {
		if _, m := classify(f); m != f.malformed {
			t.Fatalf("frame %d (%s): wire.Classify says malformed=%v, the manifest says %v", i+1, f.name, m, f.malformed)
		}
	}

	capture := writeCapture(t, frames, 65535)
	golden(t, "oetp.pcap", capture)
	file := filepath.Join(t.TempDir(), "oetp.pcap")
	if err := os.WriteFile(file, capture, 0o644); err != nil {
		t.Fatal(err)
	}

	// Every frame, every field: two passes, so requests show Response in.
	fieldsArgs := fieldArgs("frame.number", "frame.len", "oetp.magic", "oetp.cmd", "oetp.rid",
		"oetp.addr", "oetp.length", "oetp.bit_enable", "oetp.data",
		"oetp.error_code", "oetp.error_csr", "oetp.expected_length",
		"oetp.eod", "oetp.eod_ok", "oetp.group",
		"oetp.request_in", "oetp.response_in", "oetp.time", "data.len")
	twoPass := ts.run(t, append([]string{"-2", "-r", file}, fieldsArgs...)...)
	if rows := strings.Count(twoPass, "\n") - 1; rows != len(frames) {
		t.Fatalf("tshark printed %d frames, the capture has %d", rows, len(frames))
	}

	t.Run("fields", func(t *testing.T) { golden(t, "fields.txt", []byte(twoPass)) })

	t.Run("summary", func(t *testing.T) {
		out := ts.run(t, append([]string{"-2", "-r", file}, summaryArgs...)...)
		golden(t, "summary.txt", []byte(out))
	})

	t.Run("bytes", func(t *testing.T) {
		out := ts.run(t, append([]string{"-2", "-r", file, "-Y", "oetp && frame.len <= 128"},
			fieldArgs("frame.number", "oetp.data_words", "oetp.payload", "oetp.word_padding",
				"oetp.eth_padding", "oetp.trailing", "oetp.undecoded")...)...)
		golden(t, "bytes.txt", []byte(out))
	})

	t.Run("verbose", func(t *testing.T) {
		// The spec's five-byte write, padded frames, an 8160-byte read
		// response, ERROR_RSP, unknown length, not oETP, and bad trailers.
		sel := "frame.number in {2, 7, 9, 11, 14, 18, 20, 23, 37, 39, 40, 49, 56, 59, 62, 64}"
		out := ts.run(t, "-2", "-r", file, "-V", "-O", "oetp", "-Y", sel)
		golden(t, "verbose.txt", []byte(out))
	})

	t.Run("malformed", func(t *testing.T) {
		got := ts.frames(t, file, "_ws.expert.severity == error")
		want := frameNumbers(frames, func(f capFrame) bool { return f.malformed })
		if got != want {
			t.Errorf("frames with error-severity expert info:\n got %q\nwant %q", got, want)
		}
	})

	t.Run("snaplen", func(t *testing.T) {
		// Cut to 64 bytes, as tcpdump -s 64 does: EndOfData beyond the
		// captured bytes is "not captured", not missing, so exactly the
		// same frames are malformed, judged by their length on the wire.
		cut := filepath.Join(t.TempDir(), "oetp-64.pcap")
		if err := os.WriteFile(cut, writeCapture(t, frames, 64), 0o644); err != nil {
			t.Fatal(err)
		}
		got := ts.frames(t, cut, "_ws.expert.severity == error")
		want := frameNumbers(frames, func(f capFrame) bool { return f.malformed })
		if got != want {
			t.Errorf("frames with error-severity expert info in a 64-byte snaplen capture:\n got %q\nwant %q", got, want)
		}
		out := ts.run(t, "-2", "-r", cut, "-V", "-O", "oetp", "-Y", "frame.number == 16")
		if !strings.Contains(out, "EndOfData: not captured (frame offset 8188, PDU offset 8174)") {
			t.Errorf("frame 16 cut to 64 bytes does not say EndOfData is not captured:\n%s", out)
		}
	})

	t.Run("not-oetp", func(t *testing.T) {
		got := ts.frames(t, file, "data && !oetp")
		want := frameNumbers(frames, func(f capFrame) bool { o, _ := classify(f); return !o })
		if got != want || want == "" {
			t.Errorf("frames handed to the data dissector:\n got %q\nwant %q", got, want)
		}
	})

	t.Run("filters", func(t *testing.T) {
		isOETP := func(f capFrame) bool { o, _ := classify(f); return o }
		for _, tc := range []struct {
			filter string
			keep   func(capFrame) bool
		}{
			{"oetp.cmd == 0x40", func(f capFrame) bool { return isOETP(f) && f.b[15] == 0x40 }},
			{"oetp.cmd == 0xff", func(f capFrame) bool { return isOETP(f) && f.b[15] == 0xff }},
			{"oetp.rid == 1", func(f capFrame) bool { return isOETP(f) && len(f.b) >= 20 && wire.Frame(f.b).RequestID() == 1 }},
			{"oetp.group == 1", func(f capFrame) bool { return isOETP(f) && wire.Frame(f.b).Dst().IsGroup() }},
			{"oetp.eod_ok == 0", func(f capFrame) bool {
				fr := wire.Frame(f.b)
				var eod uint32
				switch {
				case !isOETP(f):
					return false
				case fr.Cmd() == wire.DMAWriteReq && len(f.b) >= 28:
					eod, _ = fr.EndOfDataAt(fr.Length())
				case fr.Cmd() == wire.DMAReadRsp && f.expected >= 0:
					eod, _ = fr.EndOfDataAt(uint32(f.expected))
				default:
					return false
				}
				return eod != wire.EndOfData
			}},
			{"oetp.error_csr == 1", func(f capFrame) bool {
				return isOETP(f) && f.b[15] == 0xff && !slices.Contains([]uint32{1, 2, 3, 4, 5, 6, 7}, wire.Frame(f.b).ErrorCode())
			}},
		} {
			got := ts.frames(t, file, tc.filter)
			if want := frameNumbers(frames, tc.keep); got != want || want == "" {
				t.Errorf("-Y %q:\n got %q\nwant %q", tc.filter, got, want)
			}
		}
	})

	t.Run("readme-filters", func(t *testing.T) {
		// Every filter the README offers compiles and selects something in
		// the sample capture.
		readme, err := os.ReadFile("README.md")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(string(readme), "\n") {
			f, ok := strings.CutPrefix(l, "| `")
			if !ok {
				continue
			}
			f, _, _ = strings.Cut(f, "` |")
			for _, filter := range strings.Split(f, "` / `") {
				n++
				capture := file
				if strings.Contains(filter, "oetpr") {
					// The reliable transport's filters: its golden vectors.
					if capture, err = filepath.Abs(reliableVectors + ".pcap"); err != nil {
						t.Fatal(err)
					}
				}
				if out := ts.frames(t, capture, filter); out == "" {
					t.Errorf("README filter %q selects no frame of the sample capture", filter)
				}
			}
		}
		if n < 10 {
			t.Errorf("found %d filters in the README table, want at least 10", n)
		}
	})

	t.Run("one-pass", func(t *testing.T) {
		// Pairing learnt on the first pass must survive re-dissection
		// (pinfo.visited): a single pass and the second of two passes show
		// the same request, response time and expected length on every
		// response, with Request ID 1 reused by a later request.
		onePass := ts.run(t, append([]string{"-r", file}, fieldsArgs...)...)
		cols := func(out string, names ...string) []string {
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			hdr := strings.Split(lines[0], "\t")
			var idx []int
			for _, n := range names {
				idx = append(idx, slices.Index(hdr, n))
			}
			var rows []string
			for _, l := range lines[1:] {
				f := strings.Split(l, "\t")
				var r []string
				for _, i := range idx {
					r = append(r, f[i])
				}
				rows = append(rows, strings.Join(r, "\t"))
			}
			return rows
		}
		names := []string{"frame.number", "oetp.request_in", "oetp.time", "oetp.expected_length", "oetp.eod_ok"}
		a, b := cols(onePass, names...), cols(twoPass, names...)
		if !slices.Equal(a, b) {
			t.Errorf("one pass and two passes disagree:\n%s", diff(strings.Join(b, "\n"), strings.Join(a, "\n")))
		}
		paired := 0
		for _, r := range b {
			if strings.Split(r, "\t")[1] != "" {
				paired++
			}
		}
		if paired == 0 {
			t.Error("no response was paired with its request")
		}
	})

	t.Run("lua-errors", func(t *testing.T) {
		// run fails on "Lua Error" anywhere in the full verbose dump.
		out := ts.run(t, "-2", "-r", file, "-V")
		if n := strings.Count(out, "openENOC Ethernet Transport Protocol"); n != len(frames)-1 {
			t.Errorf("verbose dump has %d oETP trees, want %d (every frame but the bad Magic)", n, len(frames)-1)
		}
	})
}

// TestScriptVersion checks that the script stays loadable on Lua 5.2
// (Wireshark 4.0): no integer division or bitwise operators of Lua 5.3.
func TestScriptVersion(t *testing.T) {
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for n, line := range strings.Split(string(src), "\n") {
		code, _, _ := strings.Cut(line, "--")
		code = stripStrings(code)
		for _, op := range []string{"//", "<<", ">>", "&", "|", "~ ", "~("} {
			if strings.Contains(code, op) {
				t.Errorf("%s:%d: Lua 5.3 operator %q; use the bit library: %s", script, n+1, op, strconv.Quote(line))
			}
		}
	}
}

// stripStrings removes the contents of "..." literals from a line of Lua.
func stripStrings(s string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && in:
			i++
		case s[i] == '"':
			in = !in
		case !in:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
