//go:build linux

package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/internal/hostile"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/rundir"
)

// hostileExe copies the test binary into a directory every user may
// enter, for the hostile user's processes (the build's own directory is
// root's, 0700).
func hostileExe(t *testing.T) (dir, exe string) {
	t.Helper()
	dir = hostile.Dir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, "impostor.test")
	if out, err := exec.Command("cp", self, exe).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dir, exe
}

// startImpostor starts, as the hostile user, a process that listens on the
// Unix socket sock (creating its directory, mode 0777, if missing) and
// answers every hub request with success: a read gets 0xBAD0BAD0. It
// returns once the socket is listening.
func startImpostor(t *testing.T, exe, sock string) {
	t.Helper()
	cmd := hostile.As(exec.Command(exe, "-test.run=^TestHubImpostorHelper$"))
	cmd.Env = append(os.Environ(), "OETP_TEST_IMPOSTOR="+sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostile.Kill(cmd) })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "listening\n" {
		t.Fatalf("impostor: %q %v", line, err)
	}
}

// TestHubImpostorHelper is the impostor hub of startImpostor; it runs only
// when OETP_TEST_IMPOSTOR names its socket.
func TestHubImpostorHelper(t *testing.T) {
	sock := os.Getenv("OETP_TEST_IMPOSTOR")
	if sock == "" {
		t.Skip("the impostor hub of the hostile-user tests")
	}
	os.MkdirAll(filepath.Dir(sock), 0o777)
	os.Chmod(filepath.Dir(sock), 0o777)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o777)
	os.Stdout.WriteString("listening\n")
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go impostorServe(c)
	}
}

// impostorServe answers every request with success.
func impostorServe(c net.Conn) {
	defer c.Close()
	var buf []byte
	for {
		var hdr proto.Header
		var err error
		hdr, _, buf, err = proto.ReadMessage(c, buf)
		if err != nil {
			return
		}
		out := proto.AppendReplyHeader(nil, hdr, proto.StatusOK, 0, "")
		switch hdr.Type {
		case proto.Hello:
			out = binary.LittleEndian.AppendUint16(out, proto.Version)
			out = binary.LittleEndian.AppendUint32(out, proto.MaxMessage)
			out = binary.LittleEndian.AppendUint16(out, 1)
			out = binary.LittleEndian.AppendUint64(out, 0)
		case proto.Open:
			out = append(out, 1, 0, 0, 0)
			for range 4 {
				out = append(out, 2, 0, 0, 0, 0, 9)
			}
			out = proto.AppendStr16(out, "board1")
			out = proto.AppendStr16(out, "lo")
		case proto.Read:
			out = binary.LittleEndian.AppendUint32(out, 0xBAD0BAD0)
		case proto.WriteBlock, proto.ReadBlock:
			out = binary.LittleEndian.AppendUint32(out, 0)
			out = binary.LittleEndian.AppendUint32(out, 0)
		}
		if _, err := c.Write(proto.Finish(out, 0)); err != nil {
			return
		}
	}
}

// inPrivateMounts runs fn on a thread of its own with a private mount
// namespace in which /run is an empty tmpfs, so that the system socket
// path can be planted without touching the host's /run. Processes fn
// starts inherit the namespace; other goroutines never see it.
func inPrivateMounts(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its namespace
		defer func() { done <- recover() }()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Errorf("mount --make-rprivate /: %v", err)
			return
		}
		if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"); err != nil {
			t.Errorf("mount tmpfs /run: %v", err)
			return
		}
		fn()
	}()
	if r := <-done; r != nil {
		panic(r)
	}
}

// clientEnv is the environment of a client that finds the hub by itself.
func clientEnv(tmp string) []string {
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		switch k {
		case "OETP_HUB", "XDG_RUNTIME_DIR", "TMPDIR", rundir.TrustAnyOwnerEnv:
			continue
		}
		env = append(env, e)
	}
	return append(env, "TMPDIR="+tmp, "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+pythonDir())
}

// pyConnect is a Python client that connects to the default socket (or
// argv[1]) and says how it went.
const pyConnect = `
import sys, oetp
try:
    h = oetp.connect(sys.argv[1] if len(sys.argv) > 1 else None)
    print("CONNECTED", h.device("board1").read(0x10))
except oetp.UntrustedSocketError as e:
    print("REFUSED uid=%d %s" % (e.uid, e))
    sys.exit(3)
`

// An impostor's socket planted by another user where a client looks for the
// hub (the system path in a directory an older oetp made 1777, and the
// per-user fallback $TMPDIR/oetp-0 that root uses when XDG_RUNTIME_DIR is
// unset) is refused by the CLI (exit 2, nothing reported ok), the Go
// client and the Python client; the CLI's --hub-trust-any-owner shows what
// the check prevents.
func TestHubImpostorRefused(t *testing.T) {
	hostile.NeedRoot(t)
	bin := testutil.BuildCommand(t, ".")
	dir, exe := hostileExe(t)
	py, pyErr := exec.LookPath("python3")
	tmp := filepath.Join(dir, "tmp") // as /tmp: root's, 1777
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(tmp, 0o1777)
	for _, tc := range []struct{ name, sock string }{
		{"system", "/run/oetp/hub.sock"},
		{"fallback", filepath.Join(tmp, "oetp-0", "hub.sock")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inPrivateMounts(t, func() {
				if tc.name == "system" {
					// What an older oetp made: a world-writable /run/oetp.
					os.Mkdir("/run/oetp", 0o777)
					os.Chmod("/run/oetp", 0o1777)
				}
				startImpostor(t, exe, tc.sock)
				env := clientEnv(tmp)
				run := func(args ...string) (string, string, int) {
					cmd := exec.Command(bin, args...)
					cmd.Env = env
					return runExit(t, cmd)
				}
				write := []string{"rmem", "write", "--iface", "lo", "--peer", "02:0e:0c:00:00:09", "--addr", "0x10", "--data", "0x11111111", "--json"}
				out, errOut, code := run(write...)
				t.Logf("rmem write: exit %d: %s", code, errOut)
				if code != 2 || strings.Contains(out, `"ok":true`) || !strings.Contains(errOut, tc.sock) ||
					!strings.Contains(errOut, "uid 65534") || !strings.Contains(errOut, "--hub-trust-any-owner") {
					t.Errorf("rmem write with an impostor at %s: exit %d\nstdout: %s\nstderr: %s", tc.sock, code, out, errOut)
				}
				out, errOut, code = run("rmem", "read", "--iface", "lo", "--peer", "02:0e:0c:00:00:09", "--addr", "0x10", "--hub", tc.sock)
				if code != 2 || strings.Contains(out, "bad0bad0") || !strings.Contains(errOut, "uid 65534") {
					t.Errorf("rmem read --hub %s: exit %d\nstdout: %s\nstderr: %s", tc.sock, code, out, errOut)
				}
				out, errOut, code = run("hub", "status", "--hub", tc.sock)
				if code != 2 || !strings.Contains(errOut, "uid 65534") {
					t.Errorf("hub status --hub %s: exit %d\nstdout: %s\nstderr: %s", tc.sock, code, out, errOut)
				}
				// What the check prevents: told to trust any owner, the
				// command believes the impostor.
				out, errOut, code = run(append(write, "--hub-trust-any-owner")...)
				if code != 0 || !strings.Contains(out, `"ok":true`) {
					t.Errorf("--hub-trust-any-owner: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
				}

				// The Go client, finding the socket by itself.
				t.Setenv("OETP_HUB", "")
				t.Setenv("XDG_RUNTIME_DIR", "")
				t.Setenv("TMPDIR", tmp)
				t.Setenv(rundir.TrustAnyOwnerEnv, "")
				c, err := client.DialOptions(client.Options{})
				var ue *rundir.UntrustedError
				if !errors.As(err, &ue) || ue.UID != hostile.UID || ue.Path != tc.sock {
					t.Errorf("Go client: %v (%+v)", err, ue)
				}
				if c != nil {
					c.Close()
				}

				if pyErr != nil {
					t.Log("python3 is not installed: the Python client is not tried")
					return
				}
				cmd := exec.Command(py, "-c", pyConnect)
				cmd.Env = env
				pout, _ := cmd.CombinedOutput()
				if cmd.ProcessState.ExitCode() != 3 || !strings.Contains(string(pout), "REFUSED uid=65534 "+tc.sock) {
					t.Errorf("Python client: exit %d: %s", cmd.ProcessState.ExitCode(), pout)
				}
			})
		})
	}
}

// A socket whose file looks right (root's, in root's directory) but whose
// serving process runs as another user is refused after connecting: the
// kernel's SO_PEERCRED names the listener.
func TestHubImpostorPeerRefused(t *testing.T) {
	hostile.NeedRoot(t)
	dir, exe := hostileExe(t)
	planted := filepath.Join(dir, "own", "hub.sock")
	os.Mkdir(filepath.Dir(planted), 0o700)
	os.Chown(filepath.Dir(planted), hostile.UID, hostile.UID)
	startImpostor(t, exe, planted)
	trusted := t.TempDir() // root's, 0700
	sock := filepath.Join(trusted, "hub.sock")
	if err := os.Rename(planted, sock); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(sock, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := rundir.CheckSocket(sock); err != nil {
		t.Fatalf("the file checks pass: %v", err)
	}
	_, err := client.DialOptions(client.Options{Path: sock})
	var ue *rundir.UntrustedError
	if !errors.As(err, &ue) || ue.UID != hostile.UID || !strings.Contains(err.Error(), "the process serving it (pid ") {
		t.Errorf("Go client: %v", err)
	}
	if c, err := client.DialOptions(client.Options{Path: sock, TrustAnyOwner: true}); err != nil {
		t.Errorf("TrustAnyOwner: %v", err)
	} else {
		c.Close()
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-c", pyConnect, sock)
	cmd.Env = clientEnv(dir)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 3 || !strings.Contains(string(out), "REFUSED uid=65534") || !strings.Contains(string(out), "the process serving it (pid ") {
		t.Errorf("Python client: exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
}

// `oetp serve` in a lock directory an older oetp made 1777, where another
// user's process holds the file of serve's responder role: serve starts,
// warns what it removed, and leaves the squatter's file alone.
func TestServeLockSquatted(t *testing.T) {
	hostile.NeedRoot(t)
	bin := testutil.BuildCommand(t, ".")
	tn := netns.NewPair(t)
	base := hostile.Dir(t)
	dir := filepath.Join(base, "locks")
	os.Mkdir(dir, 0o755)
	t.Setenv(role.DirEnv, dir)
	h := tn.Host(0)
	var lock string
	if err := h.Do(func() error {
		l, err := role.Acquire(h.IfName(), h.MAC(), role.Responder, 0)
		if err == nil {
			lock = l.Path()
			l.Release()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777|os.ModeSticky)
	hostile.Squat(t, lock)
	keep := filepath.Join(base, "kept")
	if err := os.Link(lock, keep); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "serve.toml")
	writeFile(t, cfg, []byte("iface = \""+h.IfName()+"\"\n\n[[region]]\nbase = 0\nsize = \"64K\"\n"))
	s := startServe(t, bin, h, "--config", cfg)
	if e := s.stderr.String(); !strings.Contains(e, "warning: removed "+lock) || !strings.Contains(e, "uid 65534") {
		t.Errorf("serve's stderr does not say what it removed:\n%s", e)
	}
	if b, _ := os.ReadFile(keep); string(b) != "4242\n" {
		t.Errorf("the squatter's file now holds %q", b)
	}
}

// procKiB reads a "Key:   N kB" line of /proc/PID/status.
func procKiB(t *testing.T, pid int, key string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, key)
	return 0
}

// TCP needs a token, loopback included; 8 connections without it, each
// announcing a 256 MiB BATCH and sending its body as fast as the hub takes
// it, are refused from their headers: the real hub's peak RSS grows by
// less than 64 MiB (it grew by 1.6 GB when bodies were read first).
func TestHubTCPNeedsToken(t *testing.T) {
	hostile.NeedRoot(t)
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hub.toml")
	writeFile(t, cfg, []byte(hubConfigText(filepath.Join(dir, "hub.sock"), "")))
	_, errOut, code := runBin(t, bin, "hub", "--config", cfg, "--listen", "7700")
	if code != 2 || !strings.Contains(errOut, "token is required, loopback included") {
		t.Errorf("--listen without a token: exit %d: %s", code, errOut)
	}
	token := filepath.Join(dir, "hub.token")
	os.WriteFile(token, []byte("s3cret\n"), 0o644)
	_, errOut, code = runBin(t, bin, "hub", "--config", cfg, "--listen", "7700", "--token-file", token)
	if code != 2 || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("a world-readable token file: exit %d: %s", code, errOut)
	}
	os.Chmod(token, 0o600)

	f := startHubFixture(t, "", "--listen", "0", "--token-file", token)
	_, addr, ok := strings.Cut(f.hub.stderr.String(), " listen=")
	addr, _, _ = strings.Cut(addr, " ")
	if !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("no listen address in the ready line:\n%s", f.hub.stderr.String())
	}
	pid := f.hub.cmd.Process.Pid
	before := procKiB(t, pid, "VmRSS")
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak RSS: %v", err)
	}
	huge := make([]byte, proto.HeaderLen)
	binary.LittleEndian.PutUint32(huge, proto.MaxMessage)
	huge[4] = proto.Batch
	const conns = 8
	errs := make(chan error, conns)
	for range conns {
		var nc net.Conn
		if err := f.tn.Host(1).Do(func() (err error) { nc, err = net.Dial("tcp", addr); return }); err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		go func() {
			nc.Write(huge)
			junk := make([]byte, 1<<20)
			for range 32 {
				if _, err := nc.Write(junk); err != nil {
					break
				}
			}
		}()
		go func() {
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, body, _, err := proto.ReadMessage(nc, nil)
			if err == nil {
				var st proto.ReplyStatus
				if st, _, err = proto.ParseReply(body); err == nil && st.Status != proto.StatusAuth {
					err = fmt.Errorf("status %s: %s", proto.StatusName(st.Status), st.Message)
				}
			}
			errs <- err
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Errorf("unauthenticated BATCH: %v, want an AUTH refusal", err)
		}
	}
	peak := procKiB(t, pid, "VmHWM")
	t.Logf("hub RSS %d KiB before, peak %d KiB during %d unauthenticated 256 MiB BATCHes: +%d KiB", before, peak, conns, peak-before)
	if peak-before >= 64<<10 {
		t.Errorf("the hub grew by %d KiB, want < 64 MiB", peak-before)
	}
	// With the token, TCP serves.
	t.Setenv("OETP_HUB_TOKEN", "s3cret")
	var c *client.Client
	if err := f.tn.Host(1).Do(func() (err error) { c, err = client.Dial("tcp://" + addr); return }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Device("board1"); err != nil {
		t.Error(err)
	}
}

// Through a real hub whose device has read = ["nobody"] and write =
// ["@staff"], the one-shot commands run by uid 65534 (nobody) read, and
// their write is refused naming the rule, without running.
func TestHubReadOnlyUser(t *testing.T) {
	hostile.NeedRoot(t)
	dir := hostile.Dir(t)
	sock := filepath.Join(dir, "run", "hub.sock")
	os.Mkdir(filepath.Dir(sock), 0o755)
	f := startHubFixture(t, "read = [\"nobody\"]\nwrite = [\"@staff\"]\n", "--socket", sock)
	if err := os.Chown(sock, -1, hostile.UID); err != nil { // as socket_group = "nogroup"
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "oetp")
	if out, err := exec.Command("cp", f.bin, bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	_, d := hubDevice(t, sock, "board1")
	if err := d.Write(0x10, 0xC0FFEE01, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		cmd := hostile.As(exec.Command(bin, append(args, "--hub", sock, "--iface", "eth0", "--peer", netServer)...))
		cmd.Env = clientEnv(dir)
		return runExit(t, cmd)
	}
	out, errOut, code := run("rmem", "read", "--addr", "0x10", "--json")
	if code != 0 || !strings.Contains(out, `"ok":true`) || !strings.Contains(out, fmt.Sprintf(`"data":%d`, 0xC0FFEE01)) {
		t.Errorf("read as nobody: exit %d\n%s%s", code, out, errOut)
	}
	// A write refused by the rules: DENIED naming the rule, nothing
	// executed, exit 2 (a permission: nothing was sent), the same words in
	// JSON and text, for RMEM and DMA.
	const rule = `write on device \"board1\" refused: uid 65534 (nobody), pid `
	in := filepath.Join(dir, "block.bin")
	if err := os.WriteFile(in, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"rmem", "write", "--addr", "0x10", "--data", "0x11111111"}, {"dma", "write", "--addr", "0x100000", "--in", in}} {
		out, errOut, code = run(append(args, "--json")...)
		r := deniedResult(t, args[0], out, errOut)
		if code != 2 || !r.denied() ||
			!strings.HasPrefix(r.Message, "DENIED: "+strings.ReplaceAll(rule, `\"`, `"`)) || !strings.Contains(r.Message, `is not in its write = ["@staff"]`) {
			t.Errorf("%s write as nobody: exit %d\n%s%s", args[0], code, out, errOut)
		}
		out, errOut, code = run(args...)
		pid := regexp.MustCompile(`pid [0-9]+`)
		if code != 2 || out != "" || !strings.Contains(pid.ReplaceAllString(errOut, "pid N"), "failed: "+pid.ReplaceAllString(r.Message, "pid N")) ||
			strings.Contains(errOut, "execute") || strings.Contains(errOut, "--help") {
			t.Errorf("%s write as nobody, text: exit %d\n%s%s", args[0], code, out, errOut)
		}
		t.Logf("%s write as nobody: exit %d: %s", args[0], code, errOut)
	}
	if v, err := d.Read(0x10); err != nil || v != 0xC0FFEE01 {
		t.Errorf("0x10 = %#x %v after the refused write", v, err)
	}
	// A user in neither list is refused at OPEN: the same DENIED result
	// as a refused operation, not a usage error.
	if code := f.hub.stop(); code != 0 {
		t.Fatalf("hub exit %d", code)
	}
	writeFile(t, f.config, []byte(hubConfigText(f.sock, "read = [\"root\"]\nwrite = [\"root\"]\n")))
	f.hub = f.startHub(t, "--socket", sock)
	if err := os.Chown(sock, -1, hostile.UID); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"rmem", "read", "--addr", "0x10"}, {"dma", "write", "--addr", "0x100000", "--in", in}} {
		out, errOut, code = run(append(args, "--json")...)
		r := deniedResult(t, args[0], out, errOut)
		if code != 2 || !r.denied() ||
			!strings.HasPrefix(r.Message, `DENIED: OPEN of device "board1" refused: uid 65534 (nobody), pid `) ||
			!strings.Contains(r.Message, `is not in its read = ["root"] and write = ["root"]`) {
			t.Errorf("%s as nobody at OPEN: exit %d\n%s%s", args[0], code, out, errOut)
		}
		out, errOut, code = run(args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "failed: DENIED: OPEN of device") || strings.Contains(errOut, "--help") {
			t.Errorf("%s as nobody at OPEN, text: exit %d\n%s%s", args[0], code, out, errOut)
		}
	}
}

// deniedJSON is the part of a command's JSON result that a DENIED refusal
// sets.
type deniedJSON struct {
	OK             bool `json:"ok"`
	Code           int  `json:"error_code"`
	Error, Message string
	OutcomeUnknown *bool `json:"outcome_unknown"`
	Via            string
}

// denied says whether r is a DENIED refusal through the hub: not ok, code
// 136, and the operation known not to have executed.
func (r deniedJSON) denied() bool {
	return !r.OK && r.Code == 136 && r.Error == "DENIED" && r.OutcomeUnknown != nil && !*r.OutcomeUnknown && r.Via == "hub"
}

// deniedResult decodes the JSON result out of command cmd.
func deniedResult(t *testing.T, cmd, out, errOut string) deniedJSON {
	t.Helper()
	var r deniedJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%s as nobody: %v\n%s%s", cmd, err, out, errOut)
	}
	return r
}
