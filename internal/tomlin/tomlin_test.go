package tomlin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestScanDepth(t *testing.T) {
	deep := func(open, close string, n int) string {
		return "a = " + strings.Repeat(open, n) + "1" + strings.Repeat(close, n) + "\n"
	}
	for _, tc := range []struct {
		name string
		text string
		line int
	}{
		{"empty", "", 0},
		{"flat", "a = 1\nb = \"x\"\n", 0},
		{"config", "iface = \"eth0\"\n[[region]]\nbase = 0\nsize = \"64K\"\n[[peer]]\nmac = \"02:0e:0c:00:00:02\"\nwindow = [0, 65536]\n", 0},
		{"inline tables at the limit", deep("{b = ", "}", MaxDepth-1), 0},
		{"inline tables past the limit", deep("{b = ", "}", MaxDepth), 1},
		{"arrays at the limit", deep("[", "]", MaxDepth), 0},
		{"arrays past the limit", deep("[", "]", MaxDepth+1), 1},
		{"multi-line arrays past the limit", "x = 1\na = " + strings.Repeat("[\n", MaxDepth+1) + strings.Repeat("]\n", MaxDepth+1), 2 + MaxDepth},
		{"arrays of inline tables", "a = " + strings.Repeat("[{b = ", MaxDepth/2) + "1" + strings.Repeat("}]", MaxDepth/2) + "\n", 1},
		{"dotted key at the limit", "a" + strings.Repeat(".a", MaxDepth-1) + " = 1\n", 0},
		{"dotted key past the limit", "a" + strings.Repeat(".a", MaxDepth) + " = 1\n", 1},
		{"quoted dotted key", `"a"` + strings.Repeat(`."a"`, MaxDepth) + " = 1\n", 1},
		{"header past the limit", "\n[a" + strings.Repeat(".a", MaxDepth) + "]\n", 2},
		{"header and key add up", "[a" + strings.Repeat(".a", MaxDepth/2) + "]\nb" + strings.Repeat(".b", MaxDepth/2) + " = 1\n", 2},
		{"indented header", "  [a" + strings.Repeat(".a", MaxDepth) + "]\n", 1},
		{"brackets in a header name do not nest", " " + strings.Repeat("[", 100) + "\n", 0},
		{"header resets", "[a" + strings.Repeat(".a", MaxDepth/2) + "]\n[b]\nb" + strings.Repeat(".b", MaxDepth/2) + " = 1\n", 0},
		{"dots in values do not count", "a = [" + strings.Repeat("1.5, ", 100) + "]\nb = {c = 2.5, d = 3.5}\n", 0},
		{"brackets in strings do not count", `a = "` + strings.Repeat("[{", 100) + `"` + "\nb = '" + strings.Repeat("[", 100) + "'\n", 0},
		{"brackets in multi-line strings do not count", "a = \"\"\"\n" + strings.Repeat("[{\\\"\n", 100) + "\"\"\"\nb = '''" + strings.Repeat("[", 100) + "'''\n", 0},
		{"brackets in comments do not count", "# " + strings.Repeat("[", 100) + "\na = 1 # " + strings.Repeat("{", 100) + "\n", 0},
		{"line after a multi-line string", "a = \"\"\"\n\n\n\"\"\"\nb = " + strings.Repeat("[", MaxDepth+1) + "\n", 5},
	} {
		if got, _ := scan([]byte(tc.text), MaxDepth, MaxWeight); got != tc.line {
			t.Errorf("%s: scan = %d, want %d", tc.name, got, tc.line)
		}
	}
}

// TestAdversarial decodes the files that used to take gigabytes or crash the
// parser: each is refused before parsing, fast, with the file and the limit
// in the message.
func TestAdversarial(t *testing.T) {
	const size = 100 << 10
	for _, tc := range []struct {
		name, text, want string
	}{
		{"nested inline tables", "a = " + strings.Repeat("{a = ", size/5) + "1" + strings.Repeat("}", size/5), "nested deeper than 16 levels"},
		{"nested arrays", "a = " + strings.Repeat("[", size) + strings.Repeat("]", size), "nested deeper than 16 levels"},
		{"6 MB of nested arrays", "a = " + strings.Repeat("[", 3<<20) + strings.Repeat("]", 3<<20), "more than the 2097152 bytes (2 MiB)"},
		{"long dotted key", "a" + strings.Repeat(".a", size/2) + " = 1", "nested deeper than 16 levels"},
		{"many nested inline tables", strings.Repeat("k = "+strings.Repeat("{a = ", 15)+"1"+strings.Repeat("}", 15)+"\n", 8000), "more than 500000 keys"},
		{"many array elements", "a = [" + strings.Repeat("1,", 600000) + "]", "more than 500000 keys"},
	} {
		path := filepath.Join(t.TempDir(), "vendor.toml")
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var v map[string]any
		_, err := DecodeFile(path, &v)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: %v to refuse", tc.name, el)
		}
		var le *LimitError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want a LimitError naming %s and %q", tc.name, err, path, tc.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadFile(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("ReadFile of a directory: %v", err)
	}
	path := filepath.Join(dir, "ok.toml")
	os.WriteFile(path, []byte("a = {b = [1, 2]}\n"), 0o600)
	var v struct{ A struct{ B []int } }
	md, err := DecodeFile(path, &v)
	if err != nil || len(v.A.B) != 2 || len(md.Undecoded()) != 0 {
		t.Errorf("DecodeFile of a small file: %v, %+v", err, v)
	}
}

// FuzzScan checks that the scan never panics, ends in linear time, and
// agrees with a direct count on inputs without strings, comments or keys:
// the brackets alone. An input whose first non-blank byte is '[' opens a
// table header, whose brackets the parser refuses without nesting.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"", "a = 1", "a = [[1]]", "[a.b]\nc.d = {e = [1]}", "a = \"\"\"[\n\"\"\"", "'''", "a = '[' # [", "[[x]]\n", "\"\\", "a.\"b.c\".d = 1", " [[[[[[", "\t{{{{{{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		line, _ := scan(data, 4, 1<<30)
		if n := strings.Count(string(data), "\n") + 1; line < 0 || line > n {
			t.Fatalf("scan = %d for %d lines", line, n)
		}
		first := strings.TrimLeft(string(data), " \t\r")
		if !strings.ContainsAny(string(data), "\"'#=.\n") && first != "" && first[0] != '[' {
			depth, max := 0, 0
			for _, c := range data {
				switch c {
				case '[', '{':
					depth++
					max = maxInt(max, depth)
				case ']', '}':
					depth = maxInt(depth-1, 0)
				}
			}
			if (line > 0) != (max > 4) {
				t.Fatalf("scan = %d, bracket depth %d", line, max)
			}
		}
	})
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
