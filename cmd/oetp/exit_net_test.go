//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/netns"
)

// TestExitCodeNet checks the exit codes that need an interface: a down
// interface, the own MAC as peer and a --fragment out of range are refused
// with 2 before anything is sent; an operation that was sent and failed (a
// TIMEOUT) exits 1. The commands run in-process inside the namespace.
func TestExitCodeNet(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.bin")
	writeTestFile(t, in, "0123456789abcdef")
	own, peer := h1.MAC().String(), h2.MAC().String()
	cli := func(h *netns.Host, args ...string) (out, errOut string, code int) {
		t.Helper()
		if err := h.Do(func() error {
			out, errOut, code = runCLI(t, "", args...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return
	}
	check := func(what string, wantCode int, want string, out, errOut string, code int) {
		t.Helper()
		if code != wantCode || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", what, code, out, errOut, wantCode, want)
		}
	}

	// The own MAC as peer.
	out, errOut, code := cli(h1, "rmem", "read", "--iface", "eth0", "--peer", own, "--addr", "0")
	check("rmem read --peer own MAC", 2, "--peer "+own+" is this endpoint's own MAC", out, errOut, code)
	out, errOut, code = cli(h1, "serve", "--iface", "eth0", "--region", "0:4K", "--peer", peer+",mode=rmem", "--peer", own+",mode=rmem")
	check("serve --peer own MAC", 2, "--peer #2 "+own+",mode=rmem", out, errOut, code)

	// --fragment out of range: refused by the engine before anything is
	// sent; --json still prints the result.
	out, errOut, code = cli(h1, "dma", "write", "--iface", "eth0", "--peer", peer, "--addr", "0", "--in", in, "--fragment", "3", "--json")
	check("dma write --fragment 3", 2, "LOCAL_INVALID (1)", out, errOut, code)
	if !strings.Contains(out, `"error":"LOCAL_INVALID"`) {
		t.Errorf("dma write --fragment 3 --json: stdout %q", out)
	}

	// Attempted and failed: nobody answers, exit 1.
	out, errOut, code = cli(h1, "rmem", "read", "--iface", "eth0", "--peer", "02:0e:0c:00:00:77", "--addr", "0", "--timeout", "50ms")
	check("rmem read timeout", 1, "TIMEOUT (8)", out, errOut, code)

	// An interface that is down.
	if err := h1.SetLinkUp(false); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = cli(h1, "rmem", "read", "--iface", "eth0", "--peer", peer, "--addr", "0")
	check("rmem read on a down interface", 2, "--iface eth0 is down: bring it up", out, errOut, code)
	out, errOut, code = cli(h1, "dma", "read", "--iface", "eth0", "--peer", peer, "--addr", "0", "--length", "4", "--out", filepath.Join(dir, "o"), "--json")
	check("dma read --json on a down interface", 2, "eth0 is down", out, errOut, code)
	if !strings.Contains(out, `"error":"LOCAL_INVALID"`) {
		t.Errorf("dma read --json on a down interface: stdout %q", out)
	}
	out, errOut, code = cli(h1, "serve", "--iface", "eth0", "--region", "0:4K")
	check("serve on a down interface", 2, "eth0 is down", out, errOut, code)
}
