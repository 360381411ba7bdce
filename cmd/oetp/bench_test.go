package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/cmd/oetp/internal/bench"
)

func TestBenchJSONAndSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "bench.svg")
	out, errOut, code := runCLI(t, "", "bench", "--scenario", "codec,mem", "--duration", "40ms", "--rounds", "2",
		"--blocks", "4KiB,64KiB", "--json", "--svg", svg)
	if code != exitOK {
		t.Fatalf("bench: exit %d, stderr %q", code, errOut)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json printed no JSON report: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[r.Scenario] = true
		if r.Ops <= 0 {
			t.Errorf("%s %s: %d ops", r.Scenario, r.Name, r.Ops)
		}
	}
	if !seen["codec"] || !seen["mem"] || seen["veth"] {
		t.Errorf("scenarios in the report: %v; want codec and mem only", seen)
	}
	if !strings.Contains(errOut, "mem: rmem-read") {
		t.Errorf("no progress lines on stderr: %q", errOut)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !strings.HasPrefix(string(b), "<svg") {
		t.Errorf("--svg wrote %q, %v", b, err)
	}
}

func TestBenchTable(t *testing.T) {
	out, errOut, code := runCLI(t, "", "bench", "--scenario", "codec", "--duration", "30ms", "--quiet")
	if code != exitOK || errOut != "" {
		t.Fatalf("bench: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"scenario", "encode DMA_WRITE_REQ", "= copy 8160B", "allocs/frame", "GB/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "tcp"}, "--scenario"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--rounds", "0"}, "--rounds"},
		{[]string{"--max-ops", "1"}, "--max-ops"},
		{[]string{"--blocks", "3"}, "--blocks"},
		{[]string{"--blocks", "1GiB"}, "--blocks"},
		{[]string{"--link-io", "fast"}, "--link-io"},
		{[]string{"--busy-poll", "11ms"}, "--busy-poll 11ms: use 0 (no veth-busy rows) through 10ms"},
		{[]string{"--busy-poll", "-1us"}, "--busy-poll"},
		{[]string{"extra"}, "no arguments"},
	} {
		out, errOut, code := runCLI(t, "", append([]string{"bench"}, c.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("bench %v: exit %d, stdout %q, stderr %q; want exit 2 naming %s", c.args, code, out, errOut, c.want)
		}
	}
}

func TestParseBlocks(t *testing.T) {
	got, err := parseBlocks("4096, 4KiB,64k,1MiB,2M,8160,0x2000")
	want := []int64{4096, 4096, 64 << 10, 1 << 20, 2 << 20, 8160, 8192}
	if err != nil || len(got) != len(want) {
		t.Fatalf("parseBlocks = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d = %d, want %d", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "x", "-4", "4.5KiB", "6", "0", "4KB", "8160B", "5GiB"} {
		if _, err := parseBlocks(bad); err == nil {
			t.Errorf("parseBlocks(%q) succeeded", bad)
		}
	}
}

// TestBenchRawEchoHidden checks the proc scenario's hidden echo flag: out of
// the help, and an interface that does not exist fails (exit 1) saying so,
// before anything is printed on stdout.
func TestBenchRawEchoHidden(t *testing.T) {
	out, _, code := runCLI(t, "", "bench", "--help")
	if code != exitOK || strings.Contains(out, bench.RawEchoFlag) {
		t.Errorf("bench --help: exit %d, mentions --%s: %v", code, bench.RawEchoFlag, strings.Contains(out, bench.RawEchoFlag))
	}
	for _, hidden := range []string{bench.FloorFlag, "floor-ways"} {
		if strings.Contains(out, hidden) {
			t.Errorf("bench --help mentions --%s", hidden)
		}
	}
	out, errOut, code := runCLI(t, "", "bench", "--"+bench.RawEchoFlag, "no-such-if0")
	if code != exitFailed || out != "" || !strings.Contains(errOut, "no-such-if0") {
		t.Errorf("bench --%s no-such-if0: exit %d, stdout %q, stderr %q; want exit 1 naming the interface", bench.RawEchoFlag, code, out, errOut)
	}
	// The floor echo: a bad region is refused before the interface is
	// looked at, then the interface as for the raw echo.
	out, errOut, code = runCLI(t, "", "bench", "--"+bench.RawEchoFlag, "no-such-if0", "--"+bench.FloorFlag, "4096,big")
	if code != exitFailed || out != "" || !strings.Contains(errOut, "unknown option \"big\"") {
		t.Errorf("bench --%s with --%s 4096,big: exit %d, stdout %q, stderr %q; want exit 1 naming the option", bench.RawEchoFlag, bench.FloorFlag, code, out, errOut)
	}
	out, errOut, code = runCLI(t, "", "bench", "--"+bench.RawEchoFlag, "no-such-if0", "--"+bench.FloorFlag, "4096")
	if code != exitFailed || out != "" || !strings.Contains(errOut, "no-such-if0") {
		t.Errorf("bench --%s no-such-if0 --%s 4096: exit %d, stdout %q, stderr %q; want exit 1 naming the interface", bench.RawEchoFlag, bench.FloorFlag, code, out, errOut)
	}
}
