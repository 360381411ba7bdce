//go:build unix

package memory

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func mustFile(t *testing.T, path string, base uint32, size uint64) *File {
	t.Helper()
	f, err := OpenFile(path, base, size)
	if err != nil {
		t.Fatalf("OpenFile(%q, %#x, %#x): %v", path, base, size, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFileCreateAndShare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem")
	f := mustFile(t, path, 0x1000, 4096)
	if f.Path() != path || f.Base() != 0x1000 || f.Size() != 4096 {
		t.Fatalf("Path %q Base %#x Size %#x", f.Path(), f.Base(), f.Size())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 4096 {
		t.Fatalf("created file has %d bytes, want 4096", fi.Size())
	}
	if resp := f.WriteAt([]byte("hello"), 0x1010); resp != OKAY {
		t.Fatalf("WriteAt = %v", resp)
	}
	if !f.WriteWord(0x1FFC, 0x44332211, 0xFFFFFFFF) {
		t.Fatal("WriteWord of last word failed")
	}

	// An independent read of the file sees the writes without Sync or Close.
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 4096)
	copy(want[0x10:], "hello")
	copy(want[0xFFC:], []byte{0x11, 0x22, 0x33, 0x44})
	if !bytes.Equal(got, want) {
		t.Fatalf("os.ReadFile sees % x ... want % x ...", got[:0x20], want[:0x20])
	}

	// An independent mapping sees them too, and its writes show through f.
	fd, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	m, err := unix.Mmap(int(fd.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if !bytes.Equal(m, want) {
		t.Fatal("second mapping does not see the writes")
	}
	copy(m[0x20:], "world")
	p := make([]byte, 5)
	if resp := f.ReadAt(p, 0x1020); resp != OKAY || string(p) != "world" {
		t.Fatalf("ReadAt after write through second mapping = %v %q", resp, p)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

func TestFileSemantics(t *testing.T) {
	dir := t.TempDir()
	t.Run("bulk", func(t *testing.T) {
		for _, tc := range []bulkCase{
			{"last byte", 0x100F, 1, OKAY},
			{"whole", 0x1000, 16, OKAY},
			{"straddle end", 0x100E, 4, DECERR},
			{"below", 0x0FFC, 4, DECERR},
			{"past end", 0x1010, 1, DECERR},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := mustFile(t, filepath.Join(dir, tc.name), 0x1000, 16)
				if got := f.WriteAt(fill(tc.n, 0xA5), tc.addr); got != tc.want {
					t.Fatalf("WriteAt = %v, want %v", got, tc.want)
				}
				want := make([]byte, 16)
				if tc.want == OKAY {
					copy(want[tc.addr-0x1000:], fill(tc.n, 0xA5))
				}
				disk, _ := os.ReadFile(filepath.Join(dir, tc.name))
				if !bytes.Equal(disk, want) {
					t.Fatalf("file holds % x, want % x", disk, want)
				}
			})
		}
	})
	t.Run("words", func(t *testing.T) {
		f := mustFile(t, filepath.Join(dir, "words"), 0x1000, 16)
		testWords(t, f, wordCases(0x1000, 0x1010))
	})
	t.Run("concurrent masked writes", func(t *testing.T) {
		hammerWord(t, mustFile(t, filepath.Join(dir, "hammer"), 0, 64), 0x20)
	})
}

func TestFileExistingSizes(t *testing.T) {
	dir := t.TempDir()
	t.Run("shorter file is extended", func(t *testing.T) {
		path := filepath.Join(dir, "short")
		if err := os.WriteFile(path, []byte("hello"), 0o600); err != nil {
			t.Fatal(err)
		}
		f := mustFile(t, path, 0, 4096)
		want := make([]byte, 4096)
		copy(want, "hello")
		if !bytes.Equal(f.Bytes(), want) {
			t.Fatalf("mapping starts % x, want existing bytes then zeros", f.Bytes()[:8])
		}
		if fi, _ := os.Stat(path); fi.Size() != 4096 {
			t.Fatalf("file size %d, want 4096", fi.Size())
		}
		if resp := f.WriteAt([]byte{0xFF}, 4095); resp != OKAY {
			t.Fatalf("write to extended last byte = %v", resp)
		}
	})
	t.Run("longer file is kept", func(t *testing.T) {
		path := filepath.Join(dir, "long")
		content := pattern(100)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		f := mustFile(t, path, 0x100, 16)
		if !bytes.Equal(f.Bytes(), content[:16]) {
			t.Fatalf("mapping % x, want the file's first 16 bytes", f.Bytes())
		}
		if resp := f.WriteAt([]byte{1}, 0x110); resp != DECERR {
			t.Fatalf("write past the region = %v, want DECERR", resp)
		}
		if disk, _ := os.ReadFile(path); !bytes.Equal(disk, content) {
			t.Fatal("the rest of the longer file changed")
		}
	})
}

func TestOpenFileErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		base uint32
		size uint64
		want string
		is   error
	}{
		{"unaligned base", filepath.Join(dir, "a"), 0x1002, 16, "not a multiple of 4", nil},
		{"size 0", filepath.Join(dir, "b"), 0, 0, "size 0", nil},
		{"past 2^32", filepath.Join(dir, "c"), 0xFFFFFFF0, 32, "past the 32-bit address space", nil},
		{"missing directory", filepath.Join(dir, "no", "such"), 0, 16, "no/such", fs.ErrNotExist},
		{"directory", dir, 0, 16, dir, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := OpenFile(tt.path, tt.base, tt.size)
			if err == nil {
				f.Close()
				t.Fatal("OpenFile succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("error %v is not %v", err, tt.is)
			}
		})
	}
	// Validation failures do not create the file.
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("rejected OpenFile created its file: %v", err)
	}
}

func TestFileClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem")
	f, err := OpenFile(path, 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("abc"), 0)
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync after Close: %v", err)
	}
	if resp := f.ReadAt(make([]byte, 1), 0); resp != DECERR {
		t.Fatalf("ReadAt after Close = %v, want DECERR", resp)
	}
	if _, ok := f.ReadWord(0); ok {
		t.Fatal("ReadWord after Close succeeded")
	}
	if disk, _ := os.ReadFile(path); string(disk[:3]) != "abc" || len(disk) != 16 {
		t.Fatalf("file after Close = %q", disk)
	}
}

// TestFileOtherProcess has a child process open the same file and write a
// word and bytes; the parent sees them through its own live mapping.
func TestFileOtherProcess(t *testing.T) {
	if path := os.Getenv("OETP_MEMORY_CHILD_FILE"); path != "" {
		f, err := OpenFile(path, 0x1000, 64)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if !f.WriteWord(0x1008, 0xA5A5A5A5, 0x0000FFFF) || f.WriteAt([]byte("child"), 0x1020) != OKAY {
			t.Fatal("child write failed")
		}
		return
	}
	path := filepath.Join(t.TempDir(), "shared")
	f := mustFile(t, path, 0x1000, 64)
	f.WriteWord(0x1008, 0x12345678, 0xFFFFFFFF)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileOtherProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "OETP_MEMORY_CHILD_FILE="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if d, ok := f.ReadWord(0x1008); !ok || d != 0x1234A5A5 {
		t.Fatalf("word after child's masked write = %#x, %v; want 0x1234a5a5", d, ok)
	}
	p := make([]byte, 5)
	if f.ReadAt(p, 0x1020) != OKAY || string(p) != "child" {
		t.Fatalf("bytes after child's write = %q", p)
	}
}
