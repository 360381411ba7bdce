//go:build linux

package main

import (
	"math/rand/v2"
	"strings"
	"testing"

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
