package pcap_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/link/pcap"
)

// TestToolsReadOurFiles checks that tshark and tcpdump read what Writer
// writes, in both formats: every frame's length and timestamp.
func TestToolsReadOurFiles(t *testing.T) {
	frames := testFrames()
	for _, tool := range []struct {
		name string
		args func(path string) []string
		line func(i int) string
	}{
		{"tshark", func(p string) []string {
			return []string{"-r", p, "-T", "fields", "-e", "frame.len", "-e", "frame.time_epoch"}
		}, func(i int) string {
			return fmt.Sprintf("%d\t%d.%09d", len(frames[i]), stamp(i).Unix(), stamp(i).Nanosecond())
		}},
		{"tcpdump", func(p string) []string { return []string{"-r", p, "-nn", "-tt", "-e"} },
			func(i int) string { return fmt.Sprintf("%d.%06d ", stamp(i).Unix(), stamp(i).Nanosecond()/1000) }},
	} {
		bin, err := exec.LookPath(tool.name)
		if err != nil {
			t.Logf("%s not installed (apt-get install %s; .ci/run installs it): not checked", tool.name, tool.name)
			continue
		}
		for _, f := range formats {
			path := filepath.Join(t.TempDir(), "frames."+f.String())
			if err := os.WriteFile(path, writeFile(t, f, 0, frames), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, tool.args(path)...).Output()
			if err != nil {
				t.Fatalf("%s %v: %v", tool.name, f, err)
			}
			var lines []string // without tcpdump's hex dump lines
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if !strings.HasPrefix(l, "\t") {
					lines = append(lines, l)
				}
			}
			if len(lines) != len(frames) {
				t.Fatalf("%s read %d frames of the %v file, want %d:\n%s", tool.name, len(lines), f, len(frames), out)
			}
			for i, l := range lines {
				want := tool.line(i)
				if f == pcap.Classic && tool.name == "tshark" { // classic: microseconds
					want = fmt.Sprintf("%d\t%d.%06d000", len(frames[i]), stamp(i).Unix(), stamp(i).Nanosecond()/1000)
				}
				if tool.name == "tcpdump" && !strings.Contains(l, fmt.Sprintf("length %d", len(frames[i]))) || !strings.HasPrefix(l, want) {
					t.Errorf("%s %v frame %d: %q, want it to start with %q", tool.name, f, i+1, l, want)
				}
			}
		}
	}
}
