package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	n := 2*checkChunk + 5 // a last chunk shorter than the others
	pat := func(off int, b []byte) {
		for j := range b {
			b[j] = byte((off+j)*7 + 3)
		}
	}
	good := make([]byte, n)
	pat(0, good)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := checkFile(write("good", good), n, pat); err != nil {
		t.Fatalf("a file that holds the pattern: %v", err)
	}
	for _, off := range []int{0, checkChunk - 1, checkChunk, n - 1} {
		bad := append([]byte(nil), good...)
		bad[off] ^= 0x40
		err := checkFile(write("bad", bad), n, pat)
		var m *fileMismatch
		if !errors.As(err, &m) || m.Off != off || m.Got != bad[off] || m.Want != good[off] || m.Size != int64(n) {
			t.Errorf("byte %d changed: %#v (%v), want a mismatch at %d of %#x for %#x", off, m, err, off, bad[off], good[off])
		}
		if want := fmt.Sprintf("byte %d is %#x, want %#x", off, bad[off], good[off]); err == nil || err.Error() != want {
			t.Errorf("byte %d changed: the error says %v, want %q", off, err, want)
		}
	}
	for _, size := range []int{0, n - 1, n + 1} {
		b := make([]byte, size)
		pat(0, b)
		err := checkFile(write("size", b), n, pat)
		var m *fileMismatch
		if !errors.As(err, &m) || m.Off != -1 || m.Size != int64(size) {
			t.Errorf("a file of %d bytes checked for %d: %#v (%v)", size, n, m, err)
		}
		if want := fmt.Sprintf("the file holds %d bytes", size); err == nil || err.Error() != want {
			t.Errorf("a file of %d bytes: the error says %v, want %q", size, err, want)
		}
	}
	if err := checkFile(filepath.Join(dir, "absent"), n, pat); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an absent file: %v, want not-exist", err)
	}
}
