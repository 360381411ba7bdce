package dmafile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/memory"
)

// pattern returns n bytes that differ at every offset of a chunk.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>10)
	}
	return b
}

// TestReadSpace: fragments read in order across chunk boundaries, a
// retransmission behind the chunk and a read straddling its end give the
// file's exact bytes; the file's tail past its end fails the fragment.
func TestReadSpace(t *testing.T) {
	const base = 3
	data := pattern(2*chunkSize + 5000)
	p := filepath.Join(t.TempDir(), "in.bin")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size := int64(len(data) - base)
	s := &readSpace{fileSpace: fileSpace{f: f, base: base}, size: size}
	got := make([]byte, size)
	const frag = 8136
	read := func(a int) {
		t.Helper()
		end := min(a+frag, int(size))
		if r := s.ReadAt(got[a:end], uint32(a)); r != memory.OKAY {
			t.Fatalf("ReadAt(%d bytes at %d) = %v", end-a, a, r)
		}
	}
	for a := 0; a < int(size); a += frag {
		read(a)
		if a == 140*frag { // Go-Back-N from behind the chunk: the window again, then onward
			for b := 120 * frag; b <= a; b += frag {
				read(b)
			}
		}
	}
	if !bytes.Equal(got, data[base:]) {
		t.Fatal("the fragments read differ from the file")
	}
	if s.n == 0 || s.off == 0 {
		t.Fatalf("the chunk holds %d bytes at %d: the reads did not go through it", s.n, s.off)
	}
	// The file shrinks under the transfer: the fragment past its end fails.
	if err := os.Truncate(p, int64(len(data)-100)); err != nil {
		t.Fatal(err)
	}
	s = &readSpace{fileSpace: fileSpace{f: f, base: base}, size: size}
	if r := s.ReadAt(got[:frag], uint32(size-frag)); r != memory.SLVERR {
		t.Fatalf("ReadAt past the shrunk file's end = %v, want SLVERR", r)
	}
	if r := s.ReadAt(got[:frag], 0); r != memory.OKAY || !bytes.Equal(got[:frag], data[base:base+frag]) {
		t.Fatalf("ReadAt(0) after the failed read = %v or other bytes", r)
	}
}

// TestWriteSpace: fragments that follow one another reach the file only
// when the chunk fills or the block's last byte arrives; one that does not
// follow writes out the chunk first; every byte ends where it belongs.
func TestWriteSpace(t *testing.T) {
	data := pattern(chunkSize + 3*8192 + 77)
	out := filepath.Join(t.TempDir(), "out.bin")
	o, err := OpenOutput(nil, out)
	if err != nil {
		t.Fatal(err)
	}
	o.Reserve(int64(len(data)))
	sp := o.Space()
	size := func() int64 {
		t.Helper()
		st, err := o.tmp.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	write := func(a, n int) {
		t.Helper()
		if r := sp.WriteAt(data[a:a+n], uint32(a)); r != memory.OKAY {
			t.Fatalf("WriteAt(%d bytes at %d) = %v", n, a, r)
		}
	}
	const frag = 8192
	write(0, frag)
	write(frag, frag)
	if n := size(); n != 0 {
		t.Fatalf("after two fragments the file has %d bytes, want 0 (gathered)", n)
	}
	write(5*frag, frag) // out of order: the first two go out
	if n := size(); n != 2*frag {
		t.Fatalf("after a fragment out of order the file has %d bytes, want %d", n, 2*frag)
	}
	write(2*frag, 3*frag)
	for a := 6 * frag; a < len(data); a += frag {
		write(a, min(frag, len(data)-a))
	}
	if n := size(); n != int64(len(data)) {
		t.Fatalf("after the block's last byte the file has %d bytes, want %d", n, len(data))
	}
	if err := o.Finish(true); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("--out differs from the fragments written")
	}
}

// TestWriteSpaceFails: a chunk that cannot be written fails the fragment
// that wrote it out and every later one, keeps the OS's words, and
// Finish(true) neither renames the file nor calls it a success.
func TestWriteSpaceFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	var failed firstError
	s := &writeSpace{fileSpace: fileSpace{f: full, failed: &failed}, end: 3 * 8192}
	frag := pattern(8192)
	if r := s.WriteAt(frag, 0); r != memory.OKAY {
		t.Fatalf("the first fragment = %v, want OKAY (gathered)", r)
	}
	if r := s.WriteAt(frag, 8192); r != memory.OKAY {
		t.Fatalf("the second fragment = %v, want OKAY (gathered)", r)
	}
	if r := s.WriteAt(frag, 2*8192); r != memory.SLVERR {
		t.Fatalf("the last fragment = %v, want SLVERR (the chunk went out and failed)", r)
	}
	if r := s.WriteAt(frag, 0); r != memory.SLVERR {
		t.Fatalf("a fragment after the failure = %v, want SLVERR", r)
	}
	if err := failed.get(); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("the kept error is %v, want no space left on device", err)
	}
	if s.Flush() {
		t.Fatal("Flush after a failed write reported success")
	}

	// Through Output: a temporary file whose chunk cannot be written.
	out := filepath.Join(t.TempDir(), "out.bin")
	o, err := OpenOutput(nil, out)
	if err != nil {
		t.Fatal(err)
	}
	o.Reserve(1 << 30) // the end is never reached: Finish writes the chunk
	o.ws.f = full
	if r := o.Space().WriteAt(frag, 0); r != memory.OKAY {
		t.Fatalf("WriteAt = %v, want OKAY (gathered)", r)
	}
	err = o.Finish(true)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "--out "+out) {
		t.Fatalf("Finish(true) = %v, want --out %s: no space left on device", err, out)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--out exists after a failed write (%v)", err)
	}
}
