//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/wire"
)

// hubRouteBoard is the hub fixture's board with a peer entry for h2's own
// MAC too, so that a command can reach it directly (--no-hub) as well as
// through the hub.
const hubRouteBoard = hubBoardConfig + `[[peer]]
mac = "` + netClient + `"
mode = "rmem"
window = "0:0x8000"

`

// windowRMEM gives the hub's RMEM entry the window of hubRouteBoard's: an
// access at 0x8000 or above is answered REMOTE_INVALID on both routes.
func windowRMEM(peers string) string {
	return strings.Replace(peers, "mode = \"rmem\"", "window = \"0:0x8000\"\nmode = \"rmem\"", 1)
}

// runOn runs the binary on h2 with the hub found by $OETP_HUB.
func (f *hubFixture) runOn(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := f.tn.Host(1).Command("env", append([]string{"OETP_HUB=" + f.sock, f.bin}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// routeJSON decodes a result, checks its route and drops what differs
// between routes by nature: the route, the time, and the link figures that
// only the command's own endpoint measures.
func routeJSON(t *testing.T, out, via, hub string) map[string]any {
	t.Helper()
	got := lastLineJSON(t, out)
	if got["via"] != via || (hub != "" && got["hub"] != hub) || (hub == "" && got["hub"] != nil) {
		t.Errorf("route: via %v hub %v, want %s %s", got["via"], got["hub"], via, hub)
	}
	for _, k := range []string{"via", "hub", "seconds", "mb_per_s", "link"} {
		delete(got, k)
	}
	return got
}

// firstLine is the error's first line without the link's figures (which
// only the command's own endpoint has).
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s, _, _ = strings.Cut(s, "; link figures: ")
	return s
}

// For the same failure the result reads the same through the hub and
// directly: a REMOTE_INVALID (an address the board does not map) and a
// TIMEOUT (the board stopped). A plain command through the hub says so on
// stderr.
func TestHubRouteSameErrors(t *testing.T) {
	f := startHubFixtureEdit(t, hubRouteBoard, windowRMEM, "")
	direct := []string{"--no-hub", "--timeout", "500ms"}
	for _, c := range []struct {
		name string
		addr string
		code int
		stop bool
	}{{"REMOTE_INVALID", "0x8000", 9, false}, {"TIMEOUT", "0x10", 8, true}} {
		t.Run(c.name, func(t *testing.T) {
			if c.stop {
				f.board.cmd.Process.Signal(syscall.SIGSTOP)
				defer f.board.cmd.Process.Signal(syscall.SIGCONT)
			}
			args := []string{"rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", c.addr}
			hubOut, hubErr, hubCode := f.runOn(t, append(args, "--json")...)
			dirOut, dirErr, dirCode := f.runOn(t, append(append(args, "--json"), direct...)...)
			if hubCode != 1 || dirCode != 1 {
				t.Fatalf("exit %d through the hub, %d directly; stderr:\n%s\n%s", hubCode, dirCode, hubErr, dirErr)
			}
			hubRes, dirRes := routeJSON(t, hubOut, "hub", f.sock), routeJSON(t, dirOut, "direct", "")
			if diff := cmp.Diff(dirRes, hubRes); diff != "" {
				t.Errorf("JSON through the hub differs from the direct path's (-direct +hub):\n%s", diff)
			}
			if hubRes["error_code"] != float64(c.code) {
				t.Errorf("error_code %v, want %d", hubRes["error_code"], c.code)
			}
			if !strings.Contains(hubErr, "oetp: note: through the hub at "+f.sock) {
				t.Errorf("no note of the route on stderr:\n%s", hubErr)
			}
			_, hubErr, _ = f.runOn(t, args...)
			_, dirErr, _ = f.runOn(t, append(args, direct...)...)
			hubLine := firstLine(hubErr[strings.Index(hubErr, "\n")+1:]) // after the route's note
			if dirLine := firstLine(dirErr); hubLine != dirLine {
				t.Errorf("text through the hub:\n%s\ndirectly:\n%s", hubLine, dirLine)
			}
		})
	}
}

// A hub killed (SIGKILL) during a DMA write leaves the write's outcome
// unknown, never "did not execute".
func TestHubKilledMidWrite(t *testing.T) {
	f := startHubFixtureWith(t, hubRouteBoard, "")
	cmd, out, stderr := startStalledHubWrite(t, f)
	if err := f.hub.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	got := lastLineJSON(t, out.String())
	if code := cmd.ProcessState.ExitCode(); code != 1 || got["ok"] != false || got["outcome_unknown"] != true || got["via"] != "hub" {
		t.Errorf("exit %d, result %v", code, got)
	}
	if s := stderr.String(); strings.Contains(s, "did not execute") || !strings.Contains(s, "may have executed") {
		t.Errorf("stderr:\n%s", s)
	}
}

// startStalledHubWrite stops f's board (until the test ends) and starts a
// dma write through f's hub; it returns once the write's session is open
// (its note of the route on stderr): the write's first fragment then waits
// for the stopped board.
func startStalledHubWrite(t *testing.T, f *hubFixture) (cmd *exec.Cmd, stdout *bytes.Buffer, stderr *noteWriter) {
	t.Helper()
	f.board.cmd.Process.Signal(syscall.SIGSTOP) // the hub's write waits for the board
	t.Cleanup(func() { f.board.cmd.Process.Signal(syscall.SIGCONT) })
	in := f.dir + "/blk.bin"
	writeFile(t, in, bytes.Repeat([]byte{7}, 20000))
	cmd = f.tn.Host(1).Command("env", "OETP_HUB="+f.sock, f.bin, "dma", "write", "--iface", "eth0", "--peer", netServer, "--addr", "0x100000", "--in", in, "--json")
	stdout = &bytes.Buffer{}
	stderr = &noteWriter{note: "through the hub", seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stderr.seen: // the session is open: the request follows
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no note of the route in 10s; stderr:\n%s", stderr.String())
	}
	return cmd, stdout, stderr
}

// noteWriter is a stderr that signals seen when note has been written.
type noteWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	note string
	seen chan struct{}
	done bool
}

func (w *noteWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.note) {
		w.done = true
		close(w.seen)
	}
	return n, err
}

func (w *noteWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A frozen hub (SIGSTOP) fails the Go and Python clients' operations
// within their deadline (the device's bound plus the margin), maybe
// executed; a CLI command through it ends on SIGINT within a second, exit
// 130.
func TestFrozenHub(t *testing.T) {
	f := startHubFixtureWith(t, hubRouteBoard, "")
	_, d := hubDevice(t, f.sock, "board1")
	if d.Bound != 500*time.Millisecond {
		t.Errorf("the device's bound %v, want its timeout 500ms", d.Bound)
	}
	// The Python client, connected, waits for a line to run its read.
	py := exec.Command("python3", "-c", `
import sys, time
sys.path.insert(0, sys.argv[1])
import oetp
dev = oetp.connect(sys.argv[2]).device("board1")
print("ready", flush=True)
sys.stdin.readline()
t0 = time.monotonic()
try:
    dev.read(0x10)
    print("ok")
except oetp.Timeout as e:
    print("timeout", e.maybe_executed, round(time.monotonic() - t0, 1), dev.deadline())
except Exception as e:
    print("other", type(e).__name__, e)
`, pythonDir(), f.sock)
	pyIn, _ := py.StdinPipe()
	pyOut := &noteWriter{note: "ready", seen: make(chan struct{})}
	py.Stdout, py.Stderr = pyOut, pyOut
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	defer py.Process.Kill()
	select {
	case <-pyOut.seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("python: %s", pyOut.String())
	}
	f.hub.cmd.Process.Signal(syscall.SIGSTOP)
	defer f.hub.cmd.Process.Signal(syscall.SIGCONT)
	waitStopped(t, f.hub.cmd.Process.Pid)
	pyIn.Write([]byte("go\n"))
	t0 := time.Now()
	_, err := d.Read(0x10)
	took := time.Since(t0)
	var oe *client.OpError
	if !errors.As(err, &oe) || oe.Code != wire.CodeTimeout || !oe.OutcomeUnknown || !errors.Is(err, client.ErrHub) {
		t.Errorf("Go read from a frozen hub: %v", err)
	}
	// A client without a deadline would wait as long as the hub is
	// frozen; the margin is for a loaded machine's scheduling.
	if dl := d.Deadline(0); took > dl+3*time.Second {
		t.Errorf("Go read failed after %v, deadline %v", took, dl)
	}
	py.Wait()
	if out := pyOut.String(); !strings.Contains(out, "timeout True") {
		t.Errorf("Python read from a frozen hub: %s", out)
	}
	t.Logf("Go: %v after %v; Python: %s", err, took, strings.TrimSpace(pyOut.String()))

	// The CLI: its write in progress (the board stopped), the hub frozen,
	// then SIGINT.
	f.hub.cmd.Process.Signal(syscall.SIGCONT)
	cmd, out, stderr := startStalledHubWrite(t, f)
	f.hub.cmd.Process.Signal(syscall.SIGSTOP)
	waitStopped(t, f.hub.cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGINT)
	t0 = time.Now()
	cmd.Wait()
	took = time.Since(t0)
	got := lastLineJSON(t, out.String())
	t.Logf("CLI through a frozen hub, SIGINT: %s", out.String())
	if code := cmd.ProcessState.ExitCode(); code != 130 || took > time.Second || got["outcome_unknown"] != true || got["via"] != "hub" {
		t.Errorf("CLI through a frozen hub, SIGINT: exit %d after %v, %v; stderr:\n%s", code, took, got, stderr.String())
	}
}

// waitStopped waits until process pid is stopped (state T): SIGSTOP takes
// effect when its threads next run, after kill returns.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the command name in parentheses.
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped: %s", pid, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// kill -9 of the hub under load from 8 clients, each writing increasing
// values to its own register and block: checked against the board's memory
// (read through a new hub), no write reported ok is missing and none
// reported "did not execute" happened.
func TestHubKilledUnderLoad(t *testing.T) {
	f := startHubFixtureWith(t, hubBoardConfig, "")
	const clients = 8
	type stream struct {
		lastOK  uint32 // the value of the last write reported ok (0: none)
		failed  uint32 // the value of the write that failed
		unknown bool   // its error said it may have executed
		err     error
	}
	block := func(i int, v uint32) []byte {
		b := make([]byte, 256)
		for j := 0; j < len(b); j += 4 {
			binary.LittleEndian.PutUint32(b[j:], v<<8|uint32(i))
		}
		return b
	}
	var (
		wg    sync.WaitGroup
		ops   atomic.Int64
		regs  [clients]stream
		blks  [clients]stream
		ready = make(chan struct{})
	)
	record := func(s *stream, v uint32, err error) bool {
		if err == nil {
			s.lastOK = v
			return true
		}
		s.failed, s.err = v, err
		var oe *client.OpError
		if !errors.As(err, &oe) {
			t.Errorf("write %d failed with %v (%T), not the engine's error with its outcome", v, err, err)
		}
		s.unknown = oe == nil || oe.MaybeExecuted()
		return false
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.Dial(f.sock)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			d, err := c.Device("board1")
			if err != nil {
				t.Error(err)
				return
			}
			for v := uint32(1); ; v++ {
				if !record(&regs[i], v, d.Write(0x1000+4*uint32(i), v, 0xFFFFFFFF)) {
					return
				}
				if !record(&blks[i], v, d.WriteBlock(0x100000+0x1000*uint32(i), block(i, v))) {
					return
				}
				if ops.Add(2) == 800 {
					close(ready)
				}
			}
		}()
	}
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("the clients made %d operations in 30s", ops.Load())
	}
	if err := f.hub.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// The clients see their connections close while the killed hub is
	// still exiting: its lock on the socket goes with the process.
	select {
	case <-f.hub.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed hub has not exited in 10s")
	}
	// A new hub reads the board back.
	f.hub = f.startHub(t)
	_, d := hubDevice(t, f.sock, "board1")
	check := func(what string, s stream, got uint32) {
		t.Helper()
		switch {
		case s.err == nil:
			// The client stopped at its other stream's failure.
			if got != s.lastOK {
				t.Errorf("%s: the board holds %d, the last write (reported ok) %d", what, got, s.lastOK)
			}
		case got < s.lastOK:
			t.Errorf("%s: write %d was reported ok, the board holds %d", what, s.lastOK, got)
		case got == s.failed && !s.unknown:
			t.Errorf("%s: write %d was reported as not executed, the board holds it (%v)", what, s.failed, s.err)
		case got != s.lastOK && got != s.failed:
			t.Errorf("%s: the board holds %d, after write %d ok and %d failed", what, got, s.lastOK, s.failed)
		}
	}
	unknown := 0
	for i := range clients {
		v, err := d.Read(0x1000 + 4*uint32(i))
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("client %d register", i), regs[i], v)
		b, err := d.ReadBlock(0x100000+0x1000*uint32(i), 256)
		if err != nil {
			t.Fatal(err)
		}
		bv := binary.LittleEndian.Uint32(b) >> 8
		if !bytes.Equal(b, block(i, bv)) {
			t.Errorf("client %d block: torn: % x", i, b[:16])
		}
		check(fmt.Sprintf("client %d block", i), blks[i], bv)
		for _, s := range []stream{regs[i], blks[i]} {
			if s.unknown {
				unknown++
			}
		}
	}
	t.Logf("%d operations before the kill; %d failures outcome-unknown", ops.Load(), unknown)
}
