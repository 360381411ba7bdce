package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/cmd/oetp/internal/demo"
	"github.com/openenoc/oetp/netns"
)

// wantDemoSteps are the steps of the default demo (3 slaves) with the codes
// the master and the slave must record.
var wantDemoSteps = []struct {
	name, slave    string
	master, slaveC uint8
}{
	{"rmem write+read slave1 0x0", "slave1", 0, 0},
	{"rmem masked write+read slave1 0x0", "slave1", 0, 0},
	{"rmem group write 0x4, read back", "all", 0, 0},
	{"dma write slave1 0x100000", "slave1", 0, 0},
	{"dma read back slave1 0x100000", "slave1", 0, 0},
	{"dma group write 0x100000", "all", 0, 0},
	{"dma write slave2 0x140000, outside window", "slave2", 9, 1},
	{"dma write slave3 0x100000, request lost", "slave3", 8, 0},
	{"sha-256 of every slave's data", "all", 0, 0},
}

// checkDemoReport checks a --json report of a demo that must succeed.
func checkDemoReport(t *testing.T, out string, slaves int) {
	t.Helper()
	var rep demo.Report
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rep); err != nil {
		t.Fatalf("demo --json is not one JSON object: %v\n%s", err, out)
	}
	if !rep.OK || len(rep.Steps) != len(wantDemoSteps) {
		t.Fatalf("demo report: ok %v, %d steps:\n%s", rep.OK, len(rep.Steps), out)
	}
	for i, w := range wantDemoSteps {
		s := rep.Steps[i]
		if !s.OK || s.Name != w.name || s.SlaveName != w.slave || uint8(s.Master) != w.master || uint8(s.Slave) != w.slaveC {
			t.Errorf("step %d = %+v, want %q ok, master %d, %s %d", i+1, s, w.name, w.master, w.slave, w.slaveC)
		}
	}
	// The replicated bytes were moved: 64 KiB unicast each way, then 256 KiB
	// to the group in 33 fragments of at most 8160 bytes.
	if s := rep.Steps[3]; s.Bytes != 64<<10 || s.Fragments != 9 {
		t.Errorf("unicast write: %d bytes in %d fragments, want 65536 in 9", s.Bytes, s.Fragments)
	}
	if s := rep.Steps[5]; s.Bytes != 256<<10 || s.Fragments != 33 {
		t.Errorf("group write: %d bytes in %d fragments, want 262144 in 33", s.Bytes, s.Fragments)
	}
	if len(rep.Digests) != slaves+1 {
		t.Fatalf("%d digests, want %d", len(rep.Digests), slaves+1)
	}
	for _, d := range rep.Digests {
		if d.SHA256 != rep.Digests[0].SHA256 || !d.Equal || len(d.SHA256) != 64 {
			t.Errorf("digest %+v differs from the master's %s", d, rep.Digests[0].SHA256)
		}
	}
}

func TestDemo(t *testing.T) {
	out, errOut, code := runCLI(t, "", "demo")
	if code != exitOK || errOut != "" {
		t.Fatalf("demo: exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "\ndemo: OK: all 9 steps had their expected outcome (") || strings.Contains(out, "FAILED") {
		t.Errorf("demo did not report success:\n%s", out)
	}
	// The table: one row per step, each with result ok.
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		if regexp.MustCompile(`^\d+ `).MatchString(line) {
			rows = append(rows, line)
		}
	}
	if len(rows) != len(wantDemoSteps) {
		t.Fatalf("%d table rows, want %d:\n%s", len(rows), len(wantDemoSteps), out)
	}
	for i, w := range wantDemoSteps {
		codes := regexp.MustCompile(`\s+ok\s+\S+\(\d+\)\s+\S+ \S+\(\d+\)\s`)
		if !strings.HasPrefix(rows[i], strings.TrimSpace(strings.Split(rows[i], " ")[0])+"  "+w.name) || !codes.MatchString(rows[i]) {
			t.Errorf("row %d = %q, want step %q with result ok", i+1, rows[i], w.name)
		}
	}
	if !strings.Contains(rows[6], "REMOTE_INVALID(9)  slave2 LOCAL_INVALID(1)") || !strings.Contains(rows[7], "TIMEOUT(8)         slave3 NONE(0)") {
		t.Errorf("error rows do not show both sides' codes:\n%s\n%s", rows[6], rows[7])
	}
	// One SHA-256 line per node, all equal.
	sums := regexp.MustCompile(`(?m)^sha256 (master|slave\d) +([0-9a-f]{64})  (source|equal)$`).FindAllStringSubmatch(out, -1)
	if len(sums) != 4 {
		t.Fatalf("%d sha256 lines, want 4:\n%s", len(sums), out)
	}
	for _, s := range sums {
		if s[2] != sums[0][2] {
			t.Errorf("%s sha256 %s, master %s", s[1], s[2], sums[0][2])
		}
	}

	out, errOut, code = runCLI(t, "", "demo", "--json")
	if code != exitOK {
		t.Fatalf("demo --json: exit %d, stderr %q", code, errOut)
	}
	checkDemoReport(t, out, 3)
}

func TestDemoShapes(t *testing.T) {
	// One slave plays every role; an odd size leaves a partial last word.
	out, errOut, code := runCLI(t, "", "demo", "--slaves", "1", "--size", "8163", "--json")
	if code != exitOK {
		t.Fatalf("demo --slaves 1: exit %d, stderr %q\n%s", code, errOut, out)
	}
	var rep demo.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Steps {
		names = append(names, s.Name)
		if !s.OK {
			t.Errorf("step %q failed: %s", s.Name, s.Detail)
		}
	}
	want := []string{"rmem write+read slave1 0x0", "rmem masked write+read slave1 0x0", "rmem group write 0x4, read back",
		"dma write slave1 0x100000", "dma read back slave1 0x100000", "dma group write 0x100000",
		"dma write slave1 0x101fe3, outside window", "dma write slave1 0x100000, request lost", "sha-256 of every slave's data"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if s := rep.Steps[5]; s.Bytes != 8163 || s.Fragments != 2 {
		t.Errorf("group write of 8163 bytes: %d bytes, %d fragments, want 2", s.Bytes, s.Fragments)
	}
}

func TestDemoLoss(t *testing.T) {
	// Nearly every frame is lost: the demo must say it failed.
	out, errOut, code := runCLI(t, "", "demo", "--loss", "0.999", "--timeout", "20ms")
	if code != exitFailed || !strings.Contains(out, "\ndemo: FAILED: ") || !strings.Contains(errOut, "not every step") {
		t.Errorf("demo --loss 0.999: exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "DIFFERENT") {
		t.Errorf("demo --loss 0.999 reported no different digest:\n%s", out)
	}
}

func TestDemoUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--slaves", "0"}, "--slaves"},
		{[]string{"demo", "--slaves", "201"}, "--slaves"},
		{[]string{"demo", "--size", "0"}, "--size"},
		{[]string{"demo", "--size", "65M"}, "--size"},
		{[]string{"demo", "--size", "lots"}, `"--size"`},
		{[]string{"demo", "--loss", "1"}, "--loss"},
		{[]string{"demo", "--loss", "-0.1"}, "--loss"},
		{[]string{"demo", "--timeout", "0"}, "--timeout"},
		{[]string{"demo", "x"}, "takes no arguments"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestDemoNetns runs the demo over network namespaces (root only).
func TestDemoNetns(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skipf("network namespaces unavailable: %v (run as root)", err)
	}
	out, errOut, code := runCLI(t, "", "demo", "--netns", "--json")
	if code != exitOK {
		t.Fatalf("demo --netns: exit %d, stderr %q\n%s", code, errOut, out)
	}
	checkDemoReport(t, out, 3)
	if !strings.Contains(out, `"network":"a Linux bridge of network namespaces (netns, link/afpacket)"`) {
		t.Errorf("demo --netns did not run on namespaces:\n%s", out)
	}
}
