//go:build linux

package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/atexit"
	"github.com/openenoc/oetp/conformance"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
)

// TestLongCommandsInterrupted: SIGINT or SIGTERM ends oetp bench, oetp
// demo and oetp conformance run within a second (interruptCmd checks it),
// with exit status 130 or 143 and "interrupted" on stderr, and leaves none
// of what they made: no process of theirs, no network namespace, no
// scratch directory. Each is signalled once its run is under way: bench's
// proc scenario once its scratch directory and its oetp serve exist, the
// demo once it holds its namespaces, the conformance run once its target
// logged a refused request.
func TestLongCommandsInterrupted(t *testing.T) {
	// Plain: the second is the program's own time, which the race
	// detector's slowdown would hide.
	bin := testutil.BuildCommandPlain(t, ".")
	tn := netns.NewPair(t)
	cl, sv := tn.Host(0), tn.Host(1)

	t.Run("bench", func(t *testing.T) {
		tmp := t.TempDir()
		cmd := cl.Command(bin, "bench", "--scenario", "proc", "--blocks", "4KiB", "--duration", "5s", "--rounds", "1")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var made made
		res := interruptCmd(t, cmd, os.Interrupt, func(c *exec.Cmd, _ *syncBuffer) bool {
			scratch, _ := filepath.Glob(filepath.Join(tmp, "oetp-bench-proc-*"))
			return len(scratch) > 0 && made.note(c.Process.Pid, "serve")
		})
		if res.code != 130 || !strings.Contains(res.stderr, "oetp bench interrupted by SIGINT") {
			t.Errorf("bench after SIGINT: exit %d\nstderr: %s", res.code, res.stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) > 0 {
			t.Errorf("bench left %v", left)
		}
		made.gone(t, bin)
	})

	t.Run("demo", func(t *testing.T) {
		var made made
		res := interruptCmd(t, cl.Command(bin, "demo", "--netns", "--size", "16M"), syscall.SIGTERM, func(c *exec.Cmd, out *syncBuffer) bool {
			return strings.Contains(out.String(), "oetp demo:") && made.note(c.Process.Pid, "")
		})
		if res.code != 143 || !strings.Contains(res.stderr, "oetp demo interrupted by SIGTERM") {
			t.Errorf("demo after SIGTERM: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
		}
		made.gone(t, bin)
	})

	t.Run("conformance", func(t *testing.T) {
		srv := startServe(t, bin, sv, append([]string{"--iface", sv.IfName()}, conformance.TemplateServeArgs...)...)
		dut := filepath.Join(t.TempDir(), "dut.toml")
		writeFile(t, dut, []byte(conformance.Template))
		res := interruptCmd(t, cl.Command(bin, "conformance", "run", "--iface", cl.IfName(), "--target", sv.MAC().String(), "--dut", dut), os.Interrupt,
			func(*exec.Cmd, *syncBuffer) bool { return strings.Contains(srv.stderr.String(), "LOCAL_INVALID") })
		if res.code != 130 || !strings.Contains(res.stderr, "oetp conformance run interrupted by SIGINT") {
			t.Errorf("conformance run after SIGINT: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
		}
	})
}

// made records the processes and network namespaces an interrupted
// command made, to check that none is left.
type made struct {
	pids []int
	nets map[string]bool // "net:[inode]"
}

// note records the descendants of pid and the network namespaces they are
// in or hold open, other than pid's own; it reports whether a descendant
// whose command line holds want ran ("": any namespace was found).
func (m *made) note(pid int, want string) bool {
	own, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	m.pids, m.nets = nil, map[string]bool{}
	found := false
	for _, p := range append([]int{pid}, atexit.Descendants(pid)...) {
		if p != pid {
			m.pids = append(m.pids, p)
			cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
			if want != "" && strings.Contains(string(cmdline), want) {
				found = true
			}
		}
		for _, n := range procNets(p) {
			if n != own {
				m.nets[n] = true
			}
		}
	}
	return found || (want == "" && len(m.nets) > 0)
}

// gone checks that none of the recorded processes runs and that no
// process of the command is in or holds one of the recorded namespaces
// (nothing else can: they were the command's).
func (m *made) gone(t *testing.T, bin string) {
	t.Helper()
	if len(m.nets) == 0 {
		t.Fatal("no namespace was recorded: the check proves nothing")
	}
	for _, p := range m.pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); err == nil && strings.Contains(string(b), bin) {
			t.Errorf("process %d (%s) still runs", p, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		for _, n := range procNets(p) {
			// A namespace's number is reused once it is gone: only a
			// process of the command (or of this binary) can still hold
			// one of its namespaces.
			b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if m.nets[n] && (slices.Contains(m.pids, p) || strings.Contains(string(b), bin)) {
				t.Errorf("process %d (%s) still holds the namespace %s", p, strings.ReplaceAll(string(b), "\x00", " "), n)
			}
		}
	}
}

// procNets lists the network namespaces process p is in or holds open.
func procNets(p int) []string {
	dir := "/proc/" + strconv.Itoa(p)
	var nets []string
	if n, err := os.Readlink(dir + "/ns/net"); err == nil {
		nets = append(nets, n)
	}
	fds, _ := os.ReadDir(dir + "/fd")
	for _, fd := range fds {
		if n, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && strings.HasPrefix(n, "net:[") {
			nets = append(nets, n)
		}
	}
	return nets
}

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
