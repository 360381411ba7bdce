//go:build unix

package memory

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileLostBacking truncates the file under a live mapping, as another
// process may: every access to the lost pages takes a memory fault, which
// must answer SLVERR (bulk) or ok=false (word) and leave the process
// running. Once the file is long again the same accesses succeed.
func TestFileLostBacking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem")
	f := mustFile(t, path, 0x1000, 64<<10)
	if f.WriteAt([]byte("before"), 0x1000) != OKAY {
		t.Fatal("WriteAt before truncation failed")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 8192)
	if got := f.ReadAt(p, 0x2000); got != SLVERR {
		t.Errorf("ReadAt of a truncated page = %v, want SLVERR", got)
	}
	if got := f.WriteAt(p, 0x3000); got != SLVERR {
		t.Errorf("WriteAt of a truncated page = %v, want SLVERR", got)
	}
	wantWordFails(t, "a truncated page", f, 0x1004)
	if got, want := f.Faults(), uint64(4); got != want {
		t.Errorf("Faults() = %d, want %d", got, want)
	}
	f.Touch(0x1000, 4096) // must not crash; it loads nothing under -race
	// Outside the space the answer is still DECERR, without a fault.
	if got := f.ReadAt(p[:4], 0x100); got != DECERR {
		t.Errorf("ReadAt outside = %v, want DECERR", got)
	}

	if err := os.Truncate(path, 64<<10); err != nil {
		t.Fatal(err)
	}
	if got := f.WriteAt([]byte("after"), 0x2000); got != OKAY {
		t.Fatalf("WriteAt after the file is long again = %v, want OKAY", got)
	}
	if got := f.ReadAt(p[:5], 0x2000); got != OKAY || string(p[:5]) != "after" {
		t.Fatalf("ReadAt after = %v %q", got, p[:5])
	}
}
