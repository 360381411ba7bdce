package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTOMLInputsBounded feeds every command that reads a TOML file a
// hostile one (100 KB of nested arrays, a long dotted key, 3 MB): each is
// refused before parsing with exit 2, naming the file and the limit.
func TestTOMLInputsBounded(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"arrays.toml": "a = " + strings.Repeat("[", 50<<10) + strings.Repeat("]", 50<<10) + "\n",
		"dotted.toml": "a" + strings.Repeat(".a", 50<<10) + " = 1\n",
		"big.toml":    "# " + strings.Repeat("x", 3<<20) + "\n",
	}
	for name, text := range files {
		writeTestFile(t, filepath.Join(dir, name), text)
	}
	for _, c := range []struct {
		args func(path string) []string
		file string
		want string
	}{
		{func(p string) []string { return []string{"serve", "--config", p} }, "arrays.toml", "nested deeper than 16 levels"},
		{func(p string) []string { return []string{"serve", "--config", p} }, "big.toml", "more than the 2097152 bytes (2 MiB)"},
		{func(p string) []string { return []string{"hub", "--config", p} }, "dotted.toml", "nested deeper than 16 levels"},
		{func(p string) []string { return []string{"devices", "--devices", p} }, "arrays.toml", "nested deeper than 16 levels"},
		{func(p string) []string { return []string{"regs", "list", "--table", p} }, "arrays.toml", "nested deeper than 16 levels"},
		{func(p string) []string { return []string{"regs", "list", "--table", p} }, "big.toml", "more than the 2097152 bytes (2 MiB)"},
		{func(p string) []string {
			return []string{"conformance", "run", "--iface", "lo", "--target", "02:0e:0c:00:00:01", "--dut", p}
		}, "dotted.toml", "nested deeper than 16 levels"},
	} {
		path := filepath.Join(dir, c.file)
		args := c.args(path)
		out, errOut, code := runCLI(t, "", args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, path) || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %s %s: exit %d, stdout %q, stderr %.300q; want exit 2 naming the file and %q", args[0], args[1], code, out, errOut, c.want)
		}
	}
}
