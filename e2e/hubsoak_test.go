package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
)

// The hub soak: 200 clients at once (Go, Python and CLI) on a real hub
// process serving 2 devices (oetp serve on two hosts of a bridge), each
// client writing and reading back addresses of its own, for $OETP_SOAK
// (a duration, default 10s: the goal's figure is 30s). Every operation
// must succeed, every read back must equal what was written, and the
// hub's peak resident memory (VmHWM) must stay under 200 MB.
//
// The hub and the boards are built without the race detector
// (testutil.BuildCommandPlain): its shadow memory multiplies a process's
// footprint, which would make the RSS figure meaningless.
const (
	soakGoClients  = 100
	soakPyProcs    = 4
	soakPyThreads  = 20 // per process: 80 Python clients
	soakCLILoops   = 20
	soakRSSLimitMB = 200
)

// The board's memory: each client has its own word (rmemBase + 4*i) and
// its own block (blockBase + blockSize*i) on each device.
const (
	soakRMEMBase  = 0x1000
	soakBlockBase = 0x40000
	soakBlockSize = 1024
)

func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv("OETP_SOAK")
	if s == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("OETP_SOAK=%q: give a duration such as 30s", s)
	}
	return d
}

// soakTally counts one kind of client's work.
type soakTally struct {
	ops, errs, mismatches atomic.Int64
	firstErr              atomic.Pointer[string]
}

func (s *soakTally) fail(format string, a ...any) {
	s.errs.Add(1)
	m := fmt.Sprintf(format, a...)
	s.firstErr.CompareAndSwap(nil, &m)
}

func (s *soakTally) String() string {
	e := ""
	if p := s.firstErr.Load(); p != nil {
		e = "; first: " + *p
	}
	return fmt.Sprintf("%d ops, %d errors, %d mismatches%s", s.ops.Load(), s.errs.Load(), s.mismatches.Load(), e)
}

func TestHubSoak(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	dur := soakDuration(t)
	net := netns.NewBridge(t, 3)
	bin := testutil.BuildCommandPlain(t, "../cmd/oetp")
	dir := t.TempDir()
	sock := filepath.Join(dir, "hub.sock")
	hubCfg := filepath.Join(dir, "hub.toml")
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "socket = %q\n", sock)
	for i := range 2 {
		fmt.Fprintf(&cfg, "\n[[device]]\nname = \"board%d\"\niface = \"eth0\"\nmac = %q\ntimeout = \"3s\"\n", i+1, net.Host(i).MAC())
	}
	writeSoakFile(t, hubCfg, cfg.String())
	hubHost := net.Host(2)
	peers, err := hubHost.Command(bin, "hub", "--config", hubCfg, "--print-peer-entries").Output()
	if err != nil {
		t.Fatalf("--print-peer-entries: %v", err)
	}
	for i := range 2 {
		board := filepath.Join(dir, fmt.Sprintf("board%d.toml", i+1))
		writeSoakFile(t, board, "iface = \"eth0\"\ncontexts = 4\n\n[[region]]\nbase = 0\nsize = \"1M\"\n\n"+string(peers))
		startSoakProcess(t, net.Host(i), bin, "serve", "--config", board)
	}
	hub := startSoakProcess(t, hubHost, bin, "hub", "--config", hubCfg)

	var goT, pyT, cliT soakTally
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	// Go clients: one connection each, half on each device.
	for i := range soakGoClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			soakGo(t, sock, i, deadline, &goT)
		}()
	}
	// Python clients: threads of a few processes, one connection each.
	pyOut := make([]bytes.Buffer, soakPyProcs)
	var pyCmds []*exec.Cmd
	for p := range soakPyProcs {
		cmd := exec.Command(py, "-c", soakPython, sock, strconv.Itoa(soakGoClients+p*soakPyThreads), strconv.Itoa(soakPyThreads), strconv.FormatFloat(dur.Seconds(), 'f', 3, 64))
		pyPath, _ := filepath.Abs(filepath.Join("..", "python"))
		cmd.Env = append(os.Environ(), "PYTHONPATH="+pyPath, "PYTHONDONTWRITEBYTECODE=1")
		cmd.Stdout, cmd.Stderr = &pyOut[p], &pyOut[p]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pyCmds = append(pyCmds, cmd)
	}
	// CLI clients: loops of one-shot commands, each a connection.
	for i := range soakCLILoops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			soakCLI(hubHost, bin, sock, soakGoClients+soakPyProcs*soakPyThreads+i, deadline, &cliT)
		}()
	}
	wg.Wait()
	for p, cmd := range pyCmds {
		if err := cmd.Wait(); err != nil {
			pyT.fail("python process %d: %v: %s", p, err, pyOut[p].String())
			continue
		}
		var r struct{ Ops, Errors, Mismatches int64 }
		if err := json.Unmarshal(lastLine(pyOut[p].Bytes()), &r); err != nil {
			pyT.fail("python process %d: %v: %s", p, err, pyOut[p].String())
			continue
		}
		pyT.ops.Add(r.Ops)
		pyT.mismatches.Add(r.Mismatches)
		if r.Errors > 0 {
			pyT.fail("python process %d: %d errors: %s", p, r.Errors, pyOut[p].String())
		}
	}
	hwm := vmHWM(t, hub.Process.Pid)
	t.Logf("%v, %d clients: Go %v; Python %v; CLI %v; hub VmHWM %.1f MB",
		dur, soakGoClients+soakPyProcs*soakPyThreads+soakCLILoops, &goT, &pyT, &cliT, float64(hwm)/1e6)
	for name, s := range map[string]*soakTally{"Go": &goT, "Python": &pyT, "CLI": &cliT} {
		if s.errs.Load() != 0 || s.mismatches.Load() != 0 || s.ops.Load() == 0 {
			t.Errorf("%s clients: %v", name, s)
		}
	}
	if hwm >= soakRSSLimitMB*1e6 {
		t.Errorf("the hub's peak RSS is %.1f MB, want < %d MB", float64(hwm)/1e6, soakRSSLimitMB)
	}
}

// soakGo is Go client i: a word and a block of its own, written and read
// back until the deadline.
func soakGo(t *testing.T, sock string, i int, deadline time.Time, s *soakTally) {
	c, err := client.Dial(sock)
	if err != nil {
		s.fail("Go client %d: %v", i, err)
		return
	}
	defer c.Close()
	d, err := c.Device(fmt.Sprintf("board%d", i%2+1))
	if err != nil {
		s.fail("Go client %d: %v", i, err)
		return
	}
	rng := rand.New(rand.NewPCG(uint64(i), 1))
	word := uint32(soakRMEMBase + 4*i)
	blk := uint32(soakBlockBase + soakBlockSize*i)
	buf := make([]byte, soakBlockSize)
	for n := 0; time.Now().Before(deadline); n++ {
		v := rng.Uint32()
		if err := d.Write(word, v, 0xFFFFFFFF); err != nil {
			s.fail("Go client %d: write: %v", i, err)
			return
		}
		got, err := d.Read(word)
		if err != nil {
			s.fail("Go client %d: read: %v", i, err)
			return
		}
		s.ops.Add(2)
		if got != v {
			s.mismatches.Add(1)
		}
		if n%8 == 0 {
			for k := range buf {
				buf[k] = byte(rng.Uint32())
			}
			if err := d.WriteBlock(blk, buf); err != nil {
				s.fail("Go client %d: write_block: %v", i, err)
				return
			}
			back, err := d.ReadBlock(blk, len(buf))
			if err != nil {
				s.fail("Go client %d: read_block: %v", i, err)
				return
			}
			s.ops.Add(2)
			if !bytes.Equal(back, buf) {
				s.mismatches.Add(1)
			}
		}
	}
}

// soakCLI is CLI client i: `oetp rmem write` then `oetp rmem read --json`
// of its own word, alternately on each device, until the deadline.
func soakCLI(h *netns.Host, bin, sock string, i int, deadline time.Time, s *soakTally) {
	rng := rand.New(rand.NewPCG(uint64(i), 2))
	for n := 0; time.Now().Before(deadline); n++ {
		peer := netns.HostMAC(n%2 + 1).String()
		addr := fmt.Sprintf("%#x", soakRMEMBase+4*i)
		v := rng.Uint32()
		common := []string{"--hub", sock, "--iface", "eth0", "--peer", peer, "--addr", addr}
		if out, err := h.Command(bin, append([]string{"rmem", "write", "--data", fmt.Sprintf("%#x", v)}, common...)...).CombinedOutput(); err != nil {
			s.fail("CLI client %d: rmem write: %v: %s", i, err, out)
			return
		}
		out, err := h.Command(bin, append([]string{"rmem", "read", "--json"}, common...)...).Output()
		if err != nil {
			s.fail("CLI client %d: rmem read: %v: %s", i, err, out)
			return
		}
		s.ops.Add(2)
		var r struct {
			OK   bool   `json:"ok"`
			Data uint32 `json:"data"`
			Via  string `json:"via"`
		}
		if err := json.Unmarshal(out, &r); err != nil || !r.OK || r.Via != "hub" {
			s.fail("CLI client %d: rmem read: %v: %s", i, err, out)
			return
		}
		if r.Data != v {
			s.mismatches.Add(1)
		}
	}
}

// soakPython runs argv[3] threads, clients argv[2].., each with its own
// connection, for argv[4] seconds, and prints a JSON line of its counts.
const soakPython = `
import json, os, sys, threading, time
import oetp
sock, first, n, dur = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
counts = {"ops": 0, "errors": 0, "mismatches": 0}
lock = threading.Lock()
end = time.monotonic() + dur
def client(i):
    ops = bad = errs = 0
    try:
        dev = oetp.connect(sock).device("board%d" % (i % 2 + 1))
        word, blk = 0x1000 + 4 * i, 0x40000 + 1024 * i
        n = 0
        while time.monotonic() < end:
            v = int.from_bytes(os.urandom(4), "little")
            dev.write(word, v)
            if dev.read(word) != v:
                bad += 1
            ops += 2
            if n % 8 == 0:
                data = os.urandom(1024)
                dev.write_block(blk, data)
                if dev.read_block(blk, len(data)) != data:
                    bad += 1
                ops += 2
            n += 1
    except oetp.Error as e:
        errs += 1
        print("client %d: %s: %s" % (i, type(e).__name__, e), file=sys.stderr, flush=True)
    with lock:
        counts["ops"] += ops
        counts["mismatches"] += bad
        counts["errors"] += errs
threads = [threading.Thread(target=client, args=(first + k,)) for k in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(counts), flush=True)
`

// startSoakProcess starts `oetp args...` on h, waits for its ready line
// and kills it at the end of the test.
func startSoakProcess(t *testing.T, h *netns.Host, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := h.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan struct{})
	var log bytes.Buffer
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			mu.Lock()
			if log.Len() < 1<<16 {
				log.WriteString(sc.Text() + "\n")
			}
			mu.Unlock()
			if !once && strings.Contains(sc.Text(), "msg=ready") {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("oetp %s printed no ready line in 20s:\n%s", strings.Join(args, " "), log.String())
	}
	return cmd
}

// vmHWM is process pid's peak resident set size in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

func writeSoakFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return lines[len(lines)-1]
}
