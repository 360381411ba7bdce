//go:build linux

package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/openenoc/oetp/internal/testutil"
)

// A signal while a command opens its hub route (the hub accepted the
// connection and answers nothing, as a frozen or overloaded one): the
// command ends within a second, exit 130 or 143, and prints what the
// direct path prints for an operation its signal ended before sending:
// the JSON line with "interrupted", TIMEOUT, outcome_unknown false, for a
// block 0 bytes and the failed address, and the route taken.
func TestHubOpenInterrupted(t *testing.T) {
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	sock := filepath.Join(dir, "hub.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c // and never answered
		}
	}()
	in := filepath.Join(dir, "blk.bin")
	if err := os.WriteFile(in, make([]byte, 20000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		args []string
	}{
		{syscall.SIGINT, 130, []string{"rmem", "write", "--addr", "0x10", "--data", "0x11111111"}},
		{syscall.SIGTERM, 143, []string{"dma", "write", "--addr", "0x100000", "--in", in}},
	} {
		for _, json := range []bool{true, false} {
			args := append(tc.args, "--iface", "lo", "--peer", "02:0e:0c:00:00:01", "--hub", sock)
			if json {
				args = append(args, "--json")
			}
			cmd := exec.Command(bin, args...)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var c net.Conn
			select {
			case c = <-accepted:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("%v: no connection", tc.args)
			}
			// The HELLO has come: the command waits for its answer.
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 12)); err != nil {
				t.Fatalf("%v: %v", tc.args, err)
			}
			cmd.Process.Signal(tc.sig)
			t0 := time.Now()
			cmd.Wait()
			took := time.Since(t0)
			c.Close()
			code := cmd.ProcessState.ExitCode()
			if code != tc.code || took > time.Second {
				t.Errorf("%v json=%v: exit %d after %v, want %d within 1s\nstdout: %s\nstderr: %s", tc.args, json, code, took, tc.code, out.String(), errOut.String())
			}
			name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[tc.sig]
			wantErr := "failed: interrupted by " + name
			if !bytes.Contains(errOut.Bytes(), []byte(wantErr)) || bytes.Contains(errOut.Bytes(), []byte("before the command could report")) {
				t.Errorf("%v json=%v: stderr %q, want %q", tc.args, json, errOut.String(), wantErr)
			}
			if !json {
				if out.Len() != 0 {
					t.Errorf("%v: stdout %q without --json", tc.args, out.String())
				}
				continue
			}
			got := lastLineJSON(t, out.String())
			want := map[string]any{"ok": false, "error": "TIMEOUT", "error_code": 8.0, "interrupted": name, "outcome_unknown": false,
				"message": "interrupted by " + name, "via": "hub", "hub": sock}
			if tc.args[0] == "dma" {
				want["bytes"], want["fragments"], want["failed_addr"] = 0.0, 0.0, float64(0x100000)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%v: %s = %v, want %v\n%s", tc.args, k, got[k], v, out.String())
				}
			}
		}
	}
}
