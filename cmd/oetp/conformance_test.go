package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/conformance"
)

// TestConformanceListAndTemplate: list shows every case with its rule,
// --json as an array; dut-template prints a DUT file that parses.
func TestConformanceListAndTemplate(t *testing.T) {
	out, errOut, code := runCLI(t, "", "conformance", "list")
	n := len(conformance.Cases())
	if code != exitOK || errOut != "" || !strings.Contains(out, "  oetp/cmd/1       RMEM READ_REQ/READ_RSP/WRITE_REQ/WRITE_RSP PDU lengths are 10, 10, 18, and 6 bytes.\n") || !strings.HasSuffix(out, "\n"+itoa(n)+" cases\n") {
		t.Errorf("list: exit %d, stderr %q\n%s", code, errOut, out)
	}
	out, _, code = runCLI(t, "", "conformance", "list", "--json")
	var items []map[string]any
	if err := json.Unmarshal([]byte(out), &items); err != nil || code != exitOK || len(items) != n || items[0]["id"] != "oetp/scope/1" {
		t.Errorf("list --json: exit %d, %v, %d items", code, err, len(items))
	}
	out, _, code = runCLI(t, "", "conformance", "dut-template")
	if _, err := conformance.ParseDUT(out); err != nil || code != exitOK || !strings.Contains(out, "#   oetp serve --iface IF --group 03:0e:0c:00:00:01") {
		t.Errorf("dut-template: exit %d, %v\n%s", code, err, out)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestConformanceRunUsage: missing or bad flags and DUT files exit 2 and
// name the fix, before any socket is opened.
func TestConformanceRunUsage(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "dut.toml")
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(good, []byte(conformance.Template), 0o644)
	os.WriteFile(bad, []byte("[[peer]]\nmac = \"02:00:00:00:00:01\"\nmode = \"rw\"\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", macB, "--dut", good}, "--iface is required"},
		{[]string{"--iface", "lo", "--dut", good}, "--target is required"},
		{[]string{"--iface", "lo", "--target", macG, "--dut", good}, "is a group address"},
		{[]string{"--iface", "lo", "--target", macB}, "--dut is required"},
		{[]string{"--iface", "lo", "--target", macB, "--dut", bad}, `mode "rw": use none, rmem, dma-write or dma-read`},
		{[]string{"--iface", "lo", "--target", macB, "--dut", filepath.Join(dir, "none.toml")}, "--dut"},
		{[]string{"--iface", "lo", "--target", macB, "--dut", good, "--only", "oetp/nope"}, `--only "oetp/nope" selects no case`},
		{[]string{"--iface", "no-such-if0", "--target", macB, "--dut", good}, "--iface no-such-if0"},
	} {
		out, errOut, code := runCLI(t, "", append([]string{"conformance", "run"}, c.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("conformance run %v: exit %d, stdout %q, stderr %q; want exit 2 naming %q", c.args, code, out, errOut, c.want)
		}
	}
}
