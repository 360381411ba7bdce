//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
)

// serve with transport=reliable for some peers, rmem and dma with
// --transport reliable|auto over a veth pair: the operations complete, the
// server's transport counters show the sessions, and a peer without
// transport=reliable makes auto fall back to v1 with a note while
// reliable reports TIMEOUT.
func TestReliableTransportOverVeth(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	srv := startServe(t, bin, h1, "--iface", "eth0", "--region", "0:64K", "--region", "0x100000:1M",
		"--peer", netClient+",mode=rmem,transport=reliable",
		"--peer", netWriter+",mode=dma-write,transport=reliable",
		"--peer", netReader+",mode=dma-read,transport=reliable",
		"--peer", netNobody+",mode=rmem") // v1 only
	cli := func(args ...string) (string, string, int) {
		t.Helper()
		return oetpIn(t, bin, h2, append(args, "--iface", "eth0")...)
	}

	out, errOut, code := cli("rmem", "write", "--peer", netServer, "--addr", "0x10", "--data", "0xC0FFEE01", "--transport", "reliable", "--json")
	checkResult(t, "rmem write", out, errOut, code, 0, res(true, 0, "NONE", "rmem write", netServer, 0x10))
	out, errOut, code = cli("rmem", "read", "--peer", netServer, "--addr", "0x10", "--transport", "auto", "--json")
	checkResult(t, "rmem read", out, errOut, code, 0, res(true, 0, "NONE", "rmem read", netServer, 0x10, "data", float64(0xC0FFEE01)))
	if strings.Contains(errOut, "note") {
		t.Errorf("auto with a reliable peer printed a note: %s", errOut)
	}

	data := make([]byte, 100<<10)
	rand.NewChaCha8([32]byte{3}).Read(data)
	// 8136-byte fragments: 100 KiB takes 13.
	in := dmaRoundTrip(t, cli, dir, data, "--transport", "reliable")
	// --fragment above the reliable ceiling is refused.
	_, errOut, code = cli("dma", "write", "--mac", netWriter, "--peer", netServer, "--addr", "0x100000", "--in", in, "--transport", "reliable", "--fragment", "8160")
	if code != 2 || !strings.Contains(errOut, "8136") {
		t.Errorf("--fragment 8160 with --transport reliable: exit %d, stderr %s", code, errOut)
	}

	// The v1-only peer: auto falls back with a note and succeeds...
	out, errOut, code = cli("rmem", "read", "--mac", netNobody, "--peer", netServer, "--addr", "0x10", "--transport", "auto", "--json")
	checkResult(t, "rmem read auto to a v1 entry", out, errOut, code, 0, res(true, 0, "NONE", "rmem read", netServer, 0x10, "data", float64(0xC0FFEE01)))
	if !strings.Contains(errOut, "using v1") {
		t.Errorf("auto fell back without a note: %q", errOut)
	}
	// ...reliable fails with TIMEOUT, no request sent, as v1 or otherwise:
	// it did not execute, and the message names the fix.
	out, errOut, code = cli("rmem", "read", "--mac", netNobody, "--peer", netServer, "--addr", "0x10", "--transport", "reliable", "--timeout", "200ms", "--json")
	checkResult(t, "rmem read reliable to a v1 entry", out, errOut, code, 1, res(false, 8, "TIMEOUT", "rmem read", netServer, 0x10,
		"outcome_unknown", false, "message", "TIMEOUT (8): "+(&oneshot.HandshakeError{Peer: mustMAC(t, netServer), Own: mustMAC(t, netNobody), Mode: endpoint.ModeRMEM}).Error()))
	if !strings.Contains(errOut, "does not answer the reliable transport") || !strings.Contains(errOut, "it did not execute (no request was sent)") {
		t.Errorf("no note about the handshake: %q", errOut)
	}
	// A group --peer with --transport reliable is refused.
	_, _, code = cli("rmem", "write", "--peer", netGroup, "--addr", "0x10", "--data", "1", "--transport", "reliable")
	if code != 2 {
		t.Errorf("group write with --transport reliable: exit %d, want 2", code)
	}

	srv.stop()
	log := srv.stderr.String()
	for _, want := range []string{"transport=reliable", "msg=transport", "crc_drops=0"} {
		if !strings.Contains(log, want) {
			t.Errorf("server log lacks %q:\n%s", want, log)
		}
	}
}

// relayProc is an `oetp relay` process.
type relayProc struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{}
}

func startRelay(t *testing.T, bin string, h *netns.Host, args ...string) *relayProc {
	t.Helper()
	return startRelayOn(t, bin, h, netns.RelayIfA, netns.RelayIfB, args...)
}

// startRelayOn starts `oetp relay ifA ifB args...` in the relay namespace h.
func startRelayOn(t *testing.T, bin string, h *netns.Host, ifA, ifB string, args ...string) *relayProc {
	t.Helper()
	r := &relayProc{done: make(chan struct{})}
	r.cmd = h.Command(bin, append([]string{"relay", ifA, ifB, "--json"}, args...)...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(r.stderr.String(), "relay "+ifA+" <-> "+ifB); time.Sleep(10 * time.Millisecond) {
		select {
		case <-r.done:
			t.Fatalf("oetp relay exited: %v\n%s", r.cmd.ProcessState, r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("oetp relay did not start: %s", r.stderr.String())
		}
	}
	return r
}

// stop ends the relay and returns its final counters per direction.
func (r *relayProc) stop(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("oetp relay did not stop")
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("oetp relay exit %d: %s", code, r.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(r.stdout.String()), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil || m["final"] != true {
		t.Fatalf("final stats line %q: %v", lines[len(lines)-1], err)
	}
	out := map[string]map[string]float64{}
	for _, dir := range []string{"p1->p2", "p2->p1"} {
		d, _ := m[dir].(map[string]any)
		out[dir] = map[string]float64{}
		for k, v := range d {
			out[dir][k], _ = v.(float64)
		}
	}
	return out
}

// TestRelayCommandRetries runs serve, the initiators and the relay as
// separate processes: h1 serves, h2 initiates, and every frame goes through
// `oetp relay` in the namespace between them.
func TestRelayCommandRetries(t *testing.T) {
	tn := netns.NewT(t, netns.Topology{Hosts: 2, Relay: true})
	h1, h2, rh := tn.Host(0), tn.Host(1), tn.Relay()
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.toml")
	writeFile(t, cfg, []byte(fmt.Sprintf(serveConfig, dir)))
	srv := startServe(t, bin, h1, "--config", cfg, "--json-events")
	cli := func(args ...string) (map[string]any, string, int) {
		t.Helper()
		out, errOut, code := oetpIn(t, bin, h2, append(args, "--iface", "eth0", "--json")...)
		return lastLineJSON(t, out), errOut, code
	}

	// 20 % loss each way: every operation succeeds with retries.
	r := startRelay(t, bin, rh, "--loss", "20%", "--seed", "7")
	retries := 0.0
	for i := range 10 {
		addr := fmt.Sprintf("%#x", 0x100+4*i)
		v := fmt.Sprintf("%#x", 0xC0DE0000+i)
		got, errOut, code := cli("rmem", "write", "--peer", netServer, "--addr", addr, "--data", v, "--retries", "8", "--timeout", "200ms")
		if code != 0 || got["ok"] != true {
			t.Fatalf("rmem write %d: exit %d %v; %s", i, code, got, errOut)
		}
		retries += got["retries"].(float64)
		got, errOut, code = cli("rmem", "read", "--peer", netServer, "--addr", addr, "--retries", "8", "--timeout", "200ms")
		if code != 0 || got["data"] != float64(0xC0DE0000+i) {
			t.Fatalf("rmem read %d: exit %d %v; %s", i, code, got, errOut)
		}
		retries += got["retries"].(float64)
	}
	block := bytes.Repeat([]byte("oetp relay test "), 4096) // 64 KiB
	in := filepath.Join(dir, "block.bin")
	writeFile(t, in, block)
	got, errOut, code := cli("dma", "write", "--mac", netWriter, "--peer", netServer, "--addr", "0x100000", "--in", in, "--retries", "8", "--timeout", "200ms")
	if code != 0 || got["bytes"] != float64(len(block)) {
		t.Fatalf("dma write: exit %d %v; %s", code, got, errOut)
	}
	retries += got["retries"].(float64)
	back := filepath.Join(dir, "back.bin")
	got, errOut, code = cli("dma", "read", "--mac", netReader, "--peer", netServer, "--addr", "0x100000", "--length", "64K", "--out", back, "--retries", "8", "--timeout", "200ms")
	if code != 0 {
		t.Fatalf("dma read: exit %d %v; %s", code, got, errOut)
	}
	retries += got["retries"].(float64)
	if b, err := os.ReadFile(back); err != nil || !bytes.Equal(b, block) {
		t.Fatalf("read back %d bytes (%v), want the block written", len(b), err)
	}
	st := r.stop(t)
	if retries == 0 || st["p2->p1"]["dropped"] == 0 || st["p1->p2"]["dropped"] == 0 {
		t.Fatalf("%v retries, relay %v: no loss, the test proves nothing", retries, st)
	}
	t.Logf("%v retries; relay %v", retries, st)

	// Everything lost: a volatile read gets one try and says it may have
	// executed; a plain one is retried, then fails with the link's figures.
	r = startRelay(t, bin, rh, "--loss", "100%")
	before := srv.stats()["served_rmem_read"]
	start := time.Now()
	got, errOut, code = cli("rmem", "read", "--peer", netServer, "--addr", "0x10", "--retries", "8", "--volatile", "--timeout", "100ms")
	el := time.Since(start)
	if code != 1 || got["error"] != "TIMEOUT" || got["outcome_unknown"] != true || got["retries"] != float64(0) {
		t.Fatalf("volatile read: exit %d %v; %s", code, got, errOut)
	}
	if !strings.Contains(errOut, "may have executed") || el > 5*time.Second {
		t.Fatalf("volatile read: %v, stderr %q", el, errOut)
	}
	got, errOut, code = cli("rmem", "read", "--peer", netServer, "--addr", "0x10", "--retries", "2", "--timeout", "50ms")
	link, _ := got["link"].(map[string]any)
	if code != 1 || got["outcome_unknown"] != true || got["retries"] != float64(2) || link["expired_tries"] != float64(3) || link["timeouts"] != float64(1) {
		t.Fatalf("plain read: exit %d %v; %s", code, got, errOut)
	}
	if !strings.Contains(errOut, "link figures: no round trip measured, 2 retries, 3 expired tries, 1 timeouts") {
		t.Fatalf("stderr %q does not give the link's figures", errOut)
	}
	st = r.stop(t)
	if st["p2->p1"]["received"] != 4 || st["p2->p1"]["dropped"] != 4 {
		t.Fatalf("relay %v: want the 4 requests (1 + 3 tries), all dropped", st)
	}
	if after := srv.stats()["served_rmem_read"]; after != before {
		t.Fatalf("served_rmem_read %v -> %v: nothing reached the server", before, after)
	}
}

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
