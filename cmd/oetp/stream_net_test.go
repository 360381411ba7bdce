//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
)

// rssLimit is the bound on the resident memory of `dma write --in`
// and `dma read --out`, whatever the size.
const rssLimit = 64 << 20

// oetpRSS runs oetp on h with stdin and stdout and returns its exit status,
// stderr and peak resident set size: the largest VmHWM read from
// /proc/PID/status while it runs (every 2 ms; VmHWM is the high-water mark
// of the process's own memory since its exec). getrusage's ru_maxrss would
// not do: a child started with vfork inherits the parent's high-water mark.
func oetpRSS(t *testing.T, bin string, h *netns.Host, stdin io.Reader, stdout io.Writer, args ...string) (code int, stderr string, maxRSS int64) {
	t.Helper()
	cmd := h.Command(bin, args...)
	var errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	for {
		if b, err := os.ReadFile(status); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				var kb int64
				if n, _ := fmt.Sscanf(l, "VmHWM: %d kB", &kb); n == 1 && !strings.Contains(string(b), "Name:\tnsenter") {
					maxRSS = max(maxRSS, kb<<10)
				}
			}
		}
		select {
		case err := <-done:
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatalf("oetp %v: %v", args, err)
			}
			return cmd.ProcessState.ExitCode(), errOut.String(), maxRSS
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// sparseFile creates a sparse file of size bytes with marks written at a
// few offsets, and returns the marks by offset.
func sparseFile(t *testing.T, path string, size int64) map[int64][]byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	marks := map[int64][]byte{}
	for _, off := range []int64{0, 8150, size / 2, size - 16} { // 8150: across the first fragment boundary
		m := []byte(fmt.Sprintf("mark@%011d", off))[:16]
		if _, err := f.WriteAt(m, off); err != nil {
			t.Fatal(err)
		}
		marks[off] = m
	}
	return marks
}

// TestStreamingFiles moves files far larger than the RSS bound through `dma
// write --in` and `dma read --out` and measures each process's peak RSS: a
// 5 GiB sparse file is refused at once, a 160 MiB one is written and read
// back whole; a pipe and a FIFO stream too.
func TestStreamingFiles(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := testutil.BuildCommandPlain(t, ".")
	dir := t.TempDir()
	const size = 160 << 20
	writer, reader := "02:0e:0c:00:00:a1", "02:0e:0c:00:00:a2"
	startServe(t, bin, h1, "--iface", "eth0", "--region", fmt.Sprintf("0:%d:%s", size, filepath.Join(dir, "ddr.bin")),
		"--peer", writer+",mode=dma-write", "--peer", reader+",mode=dma-read")
	server := h1.MAC().String()
	op := func(mac string, args ...string) []string {
		return append([]string{"dma"}, append(args, "--iface", "eth0", "--peer", server, "--mac", mac, "--timeout", "5s")...)
	}
	check := func(what string, code int, stderr string, rss int64, wantCode int) {
		t.Helper()
		t.Logf("%s: exit %d, peak RSS %.1f MiB", what, code, float64(rss)/(1<<20))
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d; stderr %s", what, code, wantCode, stderr)
		}
		if rss >= rssLimit {
			t.Errorf("%s: peak RSS %d bytes, want < %d", what, rss, rssLimit)
		}
	}

	// 5 GiB: refused before anything is read or sent, at once.
	huge := filepath.Join(dir, "huge.bin")
	sparseFile(t, huge, 5<<30)
	t0 := time.Now()
	code, stderr, rss := oetpRSS(t, bin, h2, nil, io.Discard, op(writer, "write", "--addr", "0", "--in", huge)...)
	check("dma write of 5 GiB", code, stderr, rss, 2)
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("dma write of 5 GiB took %v to be refused", d)
	}
	if !strings.Contains(stderr, "holds 5368709120 bytes: from --addr 0x0 they end past the 4 GiB address space") {
		t.Errorf("dma write of 5 GiB: stderr %q", stderr)
	}

	// 160 MiB from a file, then back into a file.
	in := filepath.Join(dir, "in.bin")
	marks := sparseFile(t, in, size)
	code, stderr, rss = oetpRSS(t, bin, h2, nil, io.Discard, op(writer, "write", "--addr", "0", "--in", in)...)
	check("dma write --in FILE of 160 MiB", code, stderr, rss, 0)
	back := filepath.Join(dir, "back.bin")
	code, stderr, rss = oetpRSS(t, bin, h2, nil, io.Discard, op(reader, "read", "--addr", "0", "--length", "160M", "--out", back)...)
	check("dma read --out FILE of 160 MiB", code, stderr, rss, 0)
	sameFiles(t, in, back, size, marks)

	// A pipe on standard input: chunks of whole fragments. 10 MiB + 5 bytes
	// at 0x1000 of a pattern.
	pattern := make([]byte, 10<<20+5)
	for i := range pattern {
		pattern[i] = byte(i*7 + i>>13)
	}
	pr, pw := io.Pipe()
	go func() { pw.Write(pattern); pw.Close() }()
	code, stderr, rss = oetpRSS(t, bin, h2, pr, io.Discard, op(writer, "write", "--addr", "0x1000", "--in", "-")...)
	check("dma write --in - from a pipe", code, stderr, rss, 0)
	// Read it back to standard output (a pipe) and to a FIFO.
	var got bytes.Buffer
	code, stderr, rss = oetpRSS(t, bin, h2, nil, &got, op(reader, "read", "--addr", "0x1000", "--length", fmt.Sprint(len(pattern)), "--out", "-")...)
	check("dma read --out -", code, stderr, rss, 0)
	if !bytes.Equal(got.Bytes(), pattern) {
		t.Errorf("dma read --out -: %d bytes, not the %d written from the pipe", got.Len(), len(pattern))
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fromFIFO := make(chan []byte)
	go func() {
		b, _ := os.ReadFile(fifo)
		fromFIFO <- b
	}()
	code, stderr, rss = oetpRSS(t, bin, h2, nil, io.Discard, op(reader, "read", "--addr", "0x1000", "--length", fmt.Sprint(len(pattern)), "--out", fifo)...)
	check("dma read --out FIFO", code, stderr, rss, 0)
	if b := <-fromFIFO; !bytes.Equal(b, pattern) {
		t.Errorf("dma read --out FIFO: %d bytes, not the %d written", len(b), len(pattern))
	}

	// A failed read leaves the old --out file as it was: read past the
	// region (DECERR at the server).
	if err := os.WriteFile(back, []byte("old contents"), 0o640); err != nil {
		t.Fatal(err)
	}
	code, stderr, _ = oetpRSS(t, bin, h2, nil, io.Discard, op(reader, "read", "--addr", fmt.Sprint(size-8192), "--length", "64K", "--out", back)...)
	if b, _ := os.ReadFile(back); code != 1 || string(b) != "old contents" {
		t.Errorf("failed dma read: exit %d, --out now holds %d bytes; stderr %s", code, len(b), stderr)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".back.bin.oetp-*")); len(ents) != 0 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

// sameFiles compares two files of size bytes in 1 MiB pieces, and the marks.
func sameFiles(t *testing.T, a, b string, size int64, marks map[int64][]byte) {
	t.Helper()
	fa, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if st, _ := fb.Stat(); st.Size() != size {
		t.Fatalf("%s holds %d bytes, want %d", b, st.Size(), size)
	}
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(ba)) {
		fa.ReadAt(ba, off)
		fb.ReadAt(bb, off)
		if !bytes.Equal(ba, bb) {
			t.Fatalf("%s and %s differ in the MiB at %#x", a, b, off)
		}
	}
	for off, m := range marks {
		got := make([]byte, len(m))
		fb.ReadAt(got, off)
		if !bytes.Equal(got, m) {
			t.Errorf("%s at %d: %q, want %q", b, off, got, m)
		}
	}
}
