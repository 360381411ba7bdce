//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
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
