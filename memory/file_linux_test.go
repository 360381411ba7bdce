package memory

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFileAllocated checks that a new file region owns its storage: no
// block of it is a hole a full filesystem could fail to back later.
func TestFileAllocated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem")
	const size = 1 << 20
	mustFile(t, path, 0, size)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size || st.Blocks*512 < size {
		t.Fatalf("file has size %d and %d bytes allocated, want %d of each", st.Size, st.Blocks*512, size)
	}
}

// TestOpenFileNoSpace opens a region larger than a small tmpfs mounted for
// the test (root only): OpenFile refuses, naming the file, the size and the
// free space, and leaves no file behind.
func TestOpenFileNoSpace(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256k,mode=0700"); err != nil {
		t.Skipf("mounting a tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	path := filepath.Join(dir, "ddr.bin")
	f, err := OpenFile(path, 0x10000000, 1<<20)
	if err == nil {
		f.Close()
		t.Fatal("OpenFile of 1 MiB on a 256 KiB tmpfs succeeded")
	}
	for _, want := range []string{path, "1048576 bytes (1 MiB)", "262144 bytes (256 KiB) free", "smaller SIZE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused OpenFile left its file: %v", err)
	}
	// A region that fits is allocated in full.
	g, err := OpenFile(path, 0x10000000, 128<<10)
	if err != nil {
		t.Fatalf("OpenFile of 128 KiB: %v", err)
	}
	defer g.Close()
	if got := g.WriteAt(make([]byte, 128<<10), 0x10000000); got != OKAY {
		t.Fatalf("WriteAt of the whole region = %v", got)
	}
}
