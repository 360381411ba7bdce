//go:build linux

package dmafile

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/memory"
)

// TestOutputReserve: reserve allocates the temporary file's blocks without
// changing its size, and the file that replaces --out holds exactly the
// bytes written.
func TestOutputReserve(t *testing.T) {
	dir := t.TempDir()
	probe, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(probe.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 4096); err != nil {
		t.Skipf("no fallocate on %s: %v", dir, err)
	}
	probe.Close()
	out := filepath.Join(dir, "out.bin")
	o, err := OpenOutput(nil, out)
	if err != nil {
		t.Fatal(err)
	}
	o.Reserve(1 << 20)
	st, err := o.tmp.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 {
		t.Fatalf("after reserve the temporary file has %d bytes, want 0", st.Size())
	}
	if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks < 1<<20 {
		t.Fatalf("after reserve the temporary file has %d bytes of blocks, want at least %d", blocks, 1<<20)
	}
	want := []byte("ten bytes!")
	if r := o.Space().WriteAt(want, 0); r != memory.OKAY {
		t.Fatalf("WriteAt: %v", r)
	}
	if err := o.Finish(true); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("--out holds %q, want %q", got, want)
	}
}
