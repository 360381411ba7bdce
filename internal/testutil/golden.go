package testutil

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Golden compares got with the golden file at path and returns the file's
// bytes and whether they equal got. With update it writes got to path
// instead (creating its directory) and reports a match. A file that cannot
// be read fails the test, naming regen, the command that writes it.
func Golden(t testing.TB, path string, got []byte, update bool, regen string) (want []byte, same bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", path, len(got))
		return got, true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with: %s)", err, regen)
	}
	return want, bytes.Equal(got, want)
}

// GoldenJSON renders v as the golden JSON files store it: indented by two
// spaces, with no HTML escaping, ending in a newline.
func GoldenJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
