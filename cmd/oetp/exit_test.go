package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitCodeUsage checks the usage and configuration errors of the
// README's exit-code list that need no network: each exits 2, prints
// nothing on stdout and names the fault, before anything is opened or sent.
func TestExitCodeUsage(t *testing.T) {
	dir := t.TempDir()
	p := "02:0e:0c:00:00:02"
	zeroContexts := filepath.Join(dir, "contexts.toml")
	writeTestFile(t, zeroContexts, "iface = \"lo\"\ncontexts = 0\n")
	zeroFrame := filepath.Join(dir, "frame.toml")
	writeTestFile(t, zeroFrame, "iface = \"lo\"\nmax_frame = \"0\"\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		// An unknown subcommand, with the flags of the real one.
		{[]string{"rmem", "rd", "--iface", "lo", "--peer", p, "--addr", "0"}, `unknown command "rd" for oetp rmem (did you mean read?): use read, write`},
		{[]string{"dma", "--iface", "lo", "wirte"}, `unknown command "wirte" for oetp dma (did you mean write?)`},
		{[]string{"rmem", "--iface", "lo"}, "oetp rmem needs a subcommand: read, write"},
		{[]string{"rmemm", "read"}, `unknown command "rmemm" for "oetp"`},
		// An unaligned RMEM address.
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0x1002"}, "--addr 0x1002 is not word aligned"},
		{[]string{"rmem", "write", "--iface", "lo", "--peer", p, "--addr", "1", "--data", "0"}, "--addr 0x1 is not word aligned"},
		// Out-of-range values.
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "4G"}, `invalid argument "4G" for "--addr" flag: "4G" is too large; at most 4294967295`},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--max-frame", "0"}, "--max-frame 0 is out of range"},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--max-frame", "8193"}, "--max-frame"},
		{[]string{"dma", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--length", "0", "--out", filepath.Join(dir, "o")}, "--length 0"},
		{[]string{"serve", "--iface", "lo", "--contexts", "0"}, "--contexts 0 is out of range: use 1..1024"},
		{[]string{"serve", "--iface", "lo", "--contexts", "1025"}, "--contexts 1025 is out of range"},
		{[]string{"serve", "--iface", "lo", "--max-frame", "0"}, "--max-frame 0 is out of range"},
		{[]string{"serve", "--config", zeroContexts}, "contexts = 0 is out of range"},
		{[]string{"serve", "--config", zeroFrame}, "max_frame = 0 is out of range"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes a test file.
func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dirFile writes body to the file name in dir and returns its path.
func dirFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	writeFile(t, path, []byte(body))
	return path
}
