//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/internal/hostile"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/wire"
)

// The hub tests run the real binary: `oetp serve` on h1 stands in for the
// board, `oetp hub` on h2 owns it through eth0, and the clients (the Go
// package, the Python package, the one-shot commands) reach the hub through
// its Unix socket, which is a file and so reachable from any namespace.

// hubBoardConfig is the board's serve configuration without its peers;
// the test appends what `oetp hub --print-peer-entries` prints.
const hubBoardConfig = `iface = "eth0"
contexts = 4

[[region]]
base = 0
size = "64K"

[[region]]
base = 0x100000
size = "1M"

[[fault]]
base = 0x200000
size = 4096
resp = "slverr"

[[region]]
base = 0x800000
size = "4M"

`

// hubFixture is a board and a hub in two namespaces.
type hubFixture struct {
	bin    string
	dir    string
	sock   string
	config string
	tn     *netns.Net
	board  *server
	hub    *server
}

func hubConfigText(sock, extra string) string {
	return fmt.Sprintf(`socket = %q

[[device]]
name = "board1"
iface = "eth0"
mac = %q
timeout = "500ms"
%s
[device.local]
rmem = "02:0e:0c:00:01:01"
# dma_write and dma_read derived
`, sock, netServer, extra)
}

func startHubFixture(t testing.TB, extra string, hubArgs ...string) *hubFixture {
	t.Helper()
	return startHubFixtureWith(t, hubBoardConfig, extra, hubArgs...)
}

// startHubFixtureWith starts the board with boardConfig plus the hub's
// peer entries, and the hub with extra in its [[device]].
func startHubFixtureWith(t testing.TB, boardConfig, extra string, hubArgs ...string) *hubFixture {
	t.Helper()
	return startHubFixtureEdit(t, boardConfig, nil, extra, hubArgs...)
}

// startHubFixtureEdit is startHubFixtureWith with the hub's peer entries
// passed through edit (nil: as printed) before the board reads them.
func startHubFixtureEdit(t testing.TB, boardConfig string, edit func(string) string, extra string, hubArgs ...string) *hubFixture {
	t.Helper()
	tn := netns.NewPair(t)
	f := &hubFixture{bin: testutil.BuildCommand(t, "."), dir: t.TempDir(), tn: tn}
	f.sock = filepath.Join(f.dir, "hub.sock")
	f.config = filepath.Join(f.dir, "hub.toml")
	writeFile(t, f.config, []byte(hubConfigText(f.sock, extra)))
	peers, errOut, code := oetpIn(t, f.bin, tn.Host(1), "hub", "--config", f.config, "--print-peer-entries")
	if code != 0 {
		t.Fatalf("--print-peer-entries: exit %d: %s", code, errOut)
	}
	if edit != nil {
		peers = edit(peers)
	}
	boardCfg := filepath.Join(f.dir, "board.toml")
	writeFile(t, boardCfg, []byte(boardConfig+peers))
	f.board = startServe(t, f.bin, tn.Host(0), "--config", boardCfg)
	f.hub = f.startHub(t, hubArgs...)
	return f
}

// startHub starts `oetp hub` on h2 and waits for its ready line.
func (f *hubFixture) startHub(t testing.TB, args ...string) *server {
	t.Helper()
	return startReady(t, f.bin, f.tn.Host(1), "hub", append([]string{"--config", f.config}, args...)...)
}

func TestHubPrintPeerEntries(t *testing.T) {
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hub.toml")
	writeFile(t, cfg, []byte(hubConfigText(filepath.Join(dir, "s"), "")))
	out, errOut, code := runBin(t, bin, "hub", "--config", cfg, "--print-peer-entries")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// rmem as configured; the DMA MACs derived, stable and locally administered.
	for _, want := range []string{"# device board1 (02:0e:0c:00:00:01 on eth0)", "mac = \"02:0e:0c:00:01:01\"\nmode = \"rmem\"",
		"mode = \"dma-write\"", "mode = \"dma-read\""} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	again, _, _ := runBin(t, bin, "hub", "--config", cfg, "--print-peer-entries")
	if again != out {
		t.Errorf("derived MACs differ between runs:\n%s\n%s", out, again)
	}
	if _, err := os.Stat(filepath.Join(dir, "s")); err == nil {
		t.Errorf("--print-peer-entries created the socket")
	}
	// Bad config: the key is named.
	writeFile(t, cfg, []byte("[[device]]\nname = \"b\"\niface = \"eth0\"\nmac = \"02:00:00:00:00:01\"\nlocall = 1\n"))
	_, errOut, code = runBin(t, bin, "hub", "--config", cfg, "--print-peer-entries")
	if code != 2 || !strings.Contains(errOut, "locall") {
		t.Errorf("unknown key: exit %d, %s", code, errOut)
	}
}

// pythonDir is the repository's python/ directory.
// hubDial connects to the hub at sock; the test's cleanup closes the
// connection.
func hubDial(t testing.TB, sock string) *client.Client {
	t.Helper()
	c, err := client.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// hubDevice connects to the hub at sock and opens its device name.
func hubDevice(t testing.TB, sock, name string) (*client.Client, *client.Device) {
	t.Helper()
	c := hubDial(t, sock)
	d, err := c.Device(name)
	if err != nil {
		t.Fatal(err)
	}
	return c, d
}

func pythonDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "python")
}

func TestHubOverVeth(t *testing.T) {
	table := fmt.Sprintf("address_table = %q\n", filepath.Join(pythonDir(), "tests", "board.xml"))
	f := startHubFixture(t, table, "--metrics", "9464")
	// One device: Go code on one CPU (hubProcs), unless GOMAXPROCS says
	// otherwise.
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && !strings.Contains(f.hub.stderr.String(), " procs=1 ") {
		t.Errorf("ready line does not say procs=1:\n%s", f.hub.stderr.String())
	}
	c, d := hubDevice(t, f.sock, "board1")
	if err := d.Write(0x10, 0xC0FFEE01, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(0x10); err != nil || v != 0xC0FFEE01 {
		t.Fatalf("read %#x %v", v, err)
	}
	data := bytes.Repeat([]byte("oetp-hub"), 40000)
	if err := d.WriteBlock(0x100000, data); err != nil {
		t.Fatal(err)
	}
	if back, err := d.ReadBlock(0x100000, len(data)); err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read_block: %v", err)
	}
	_, err := d.Read(0x200000)
	var oe *client.OpError
	if !errors.As(err, &oe) || oe.Code != wire.CodeRemoteAXIRdSlverr {
		t.Errorf("slverr read: %v", err)
	}

	t.Run("python", func(t *testing.T) { runPythonTests(t, f, "OETP_TEST_TABLE=1") })

	t.Run("status", func(t *testing.T) {
		out, errOut, code := runBin(t, f.bin, "hub", "status", "--hub", f.sock)
		if code != 0 || !strings.Contains(out, "device board1: 02:0e:0c:00:00:01 on eth0") || !strings.Contains(out, "REMOTE_AXI_RD_SLVERR") {
			t.Errorf("hub status: exit %d\n%s%s", code, out, errOut)
		}
		out, _, code = runBin(t, f.bin, "hub", "status", "--hub", f.sock, "--json")
		if code != 0 || !strings.Contains(out, `"name":"board1"`) {
			t.Errorf("hub status --json: %s", out)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		var body string
		err := f.tn.Host(1).Do(func() error {
			nc, err := net.Dial("tcp", "127.0.0.1:9464")
			if err != nil {
				return err
			}
			defer nc.Close()
			fmt.Fprintf(nc, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
			b, err := io.ReadAll(nc)
			body = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`oetp_hub_operations_total{device="board1",op="read"}`,
			`oetp_hub_operation_errors_total{code="REMOTE_AXI_RD_SLVERR",device="board1",op="read"}`,
			`oetp_hub_operation_seconds_bucket{device="board1",op="read",le=`,
			`oetp_hub_kernel_drops_total{device="board1",kind="rmem",mac="02:0e:0c:00:01:01"} 0`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})

	t.Run("one-shot commands", func(t *testing.T) { testOneShotThroughHub(t, f) })

	t.Run("second hub refused", func(t *testing.T) {
		_, errOut, code := oetpIn(t, f.bin, f.tn.Host(1), "hub", "--config", f.config)
		if code == 0 || !strings.Contains(errOut, "another hub is serving this socket") {
			t.Errorf("second hub: exit %d: %s", code, errOut)
		}
		if _, err := d.Read(0x10); err != nil {
			t.Errorf("the first hub stopped serving: %v", err)
		}
	})

	t.Run("crash and restart", func(t *testing.T) {
		c.Close()
		f.hub.cmd.Process.Kill() // no cleanup: the socket file stays
		<-f.hub.done
		if _, err := os.Stat(f.sock); err != nil {
			t.Fatalf("the killed hub left no socket: %v", err)
		}
		f.hub = f.startHub(t)
		_, d2 := hubDevice(t, f.sock, "board1")
		if v, err := d2.Read(0x10); err != nil || v != 0xC0FFEE01 {
			t.Errorf("after restart: %#x %v", v, err)
		}
	})
}

// runPythonTests runs the Python package's unittest suite against the hub
// with the system python3.
func runPythonTests(t *testing.T, f *hubFixture, extraEnv string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	root := pythonDir()
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", filepath.Join(root, "tests"), "-t", root)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "OETP_HUB="+f.sock, "OETP_TEST_DEVICE=board1", "PYTHONDONTWRITEBYTECODE=1")
	if extraEnv != "" {
		cmd.Env = append(cmd.Env, extraEnv)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l := sc.Text(); strings.Contains(l, "wrong values") || strings.HasPrefix(l, "Ran ") {
			t.Log(l)
		}
	}
	if bytes.Contains(out, []byte("skipped")) {
		t.Errorf("python tests skipped:\n%s", out)
	}
}

// `pip install ./python` works offline: the build backend is the package's
// own (standard library only).
func TestPythonPackageInstalls(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
		t.Skip("pip is not installed for python3")
	}
	_, file, _, _ := runtime.Caller(0)
	src := t.TempDir()
	// Build from a copy: pip writes build files next to the sources.
	root := filepath.Join(filepath.Dir(file), "..", "..", "python")
	if out, err := exec.Command("cp", "-r", root+"/.", src).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	target := t.TempDir()
	cmd := exec.Command(py, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--target", target, src)
	cmd.Env = append(os.Environ(), "PIP_NO_INPUT=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip install ./python: %v\n%s", err, out)
	}
	check := exec.Command(py, "-c", "import oetp, sys; print(oetp.__file__, oetp.connect.__name__, oetp.OpError(12, 'x').name)")
	check.Dir = t.TempDir()
	check.Env = append(os.Environ(), "PYTHONPATH="+target)
	out, err := check.CombinedOutput()
	if err != nil || !strings.Contains(string(out), target) || !strings.Contains(string(out), "connect REMOTE_AXI_RD_SLVERR") {
		t.Fatalf("import after install: %v\n%s", err, out)
	}
}

// testOneShotThroughHub: rmem and dma go through the hub that serves their
// interface and peer, with results exactly as without it; --no-hub runs the
// command's own endpoint, which cannot take the hub's MACs.
func testOneShotThroughHub(t *testing.T, f *hubFixture) {
	h2 := f.tn.Host(1)
	env := "OETP_HUB=" + f.sock
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runExit(t, h2.Command("env", append([]string{env, f.bin}, args...)...))
	}
	c := hubDial(t, f.sock)
	readsBefore := hubOps(t, c, "read")
	out, errOut, code := run("rmem", "write", "--iface", "eth0", "--peer", netServer, "--addr", "0x30", "--data", "0xABCD1234", "--json")
	checkResult(t, "rmem write via hub", out, errOut, code, 0, res(true, 0, "NONE", "rmem write", netServer, 0x30, "via", "hub", "hub", f.sock))
	out, errOut, code = run("rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "0x30", "--json")
	checkResult(t, "rmem read via hub", out, errOut, code, 0, res(true, 0, "NONE", "rmem read", netServer, 0x30, "data", float64(0xABCD1234), "via", "hub", "hub", f.sock))
	out, _, code = run("rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "0x30")
	if want := "rmem read 02:0e:0c:00:00:01 0x00000030 = 0xabcd1234\n"; code != 0 || out != want {
		t.Errorf("human rmem read via hub: exit %d %q", code, out)
	}
	// The hub's local MAC given explicitly is still the hub's route.
	out, errOut, code = run("rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "0x30", "--mac", "02:0e:0c:00:01:01", "--json")
	checkResult(t, "rmem read via hub, --mac", out, errOut, code, 0, res(true, 0, "NONE", "rmem read", netServer, 0x30, "data", float64(0xABCD1234), "via", "hub", "hub", f.sock))
	if n := hubOps(t, c, "read") - readsBefore; n != 3 {
		t.Errorf("the hub ran %d reads for the 3 one-shot reads", n)
	}
	// Failures read as without the hub.
	out, errOut, code = run("rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "0x200000", "--json")
	checkResult(t, "slverr via hub", out, errOut, code, 1, res(false, 12, "REMOTE_AXI_RD_SLVERR", "rmem read", netServer, 0x200000, "message", "REMOTE_AXI_RD_SLVERR (12)", "via", "hub", "hub", f.sock))
	// DMA both ways.
	in := filepath.Join(f.dir, "blk.bin")
	blk := bytes.Repeat([]byte{1, 2, 3, 4, 5}, 4000)
	writeFile(t, in, blk)
	out, errOut, code = run("dma", "write", "--iface", "eth0", "--peer", netServer, "--addr", "0x100000", "--in", in, "--json")
	checkResult(t, "dma write via hub", out, errOut, code, 0, res(true, 0, "NONE", "dma write", netServer, 0x100000, "bytes", float64(len(blk)), "fragments", float64(3), "via", "hub", "hub", f.sock))
	back := filepath.Join(f.dir, "back.bin")
	out, errOut, code = run("dma", "read", "--iface", "eth0", "--peer", netServer, "--addr", "0x100000", "--length", "20000", "--out", back, "--json")
	checkResult(t, "dma read via hub", out, errOut, code, 0, res(true, 0, "NONE", "dma read", netServer, 0x100000, "bytes", float64(len(blk)), "fragments", float64(3), "via", "hub", "hub", f.sock))
	if got, _ := os.ReadFile(back); !bytes.Equal(got, blk) {
		t.Errorf("dma read via hub: %d bytes differ", len(got))
	}
	// A pipe in, standard output out.
	sh := func(script string) (string, string, int) {
		t.Helper()
		cmd := h2.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), env)
		return runExit(t, cmd)
	}
	out, errOut, code = sh(fmt.Sprintf("head -c 12345 /dev/zero | tr '\\0' 'z' | %s dma write --iface eth0 --peer %s --addr 0x108000 --in - --json", f.bin, netServer))
	checkResult(t, "dma write from a pipe via hub", out, errOut, code, 0, res(true, 0, "NONE", "dma write", netServer, 0x108000, "bytes", float64(12345), "fragments", float64(2), "via", "hub", "hub", f.sock))
	out, errOut, code = sh(fmt.Sprintf("%s dma read --iface eth0 --peer %s --addr 0x108000 --length 12345 --out -", f.bin, netServer))
	if code != 0 || out != strings.Repeat("z", 12345) {
		t.Errorf("dma read --out - via hub: exit %d, %d bytes; %s", code, len(out), errOut)
	}
	// --no-hub: the command's own endpoint, which may not initiate from the
	// hub's MAC: the hub holds its initiator role.
	_, errOut, code = run("rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "0x30", "--no-hub", "--mac", "02:0e:0c:00:01:01", "--wait", "0")
	if code != 2 || !strings.Contains(errOut, "initiator") || !strings.Contains(errOut, "hub") {
		t.Errorf("--no-hub on the hub's MAC: exit %d: %s", code, errOut)
	}
	// An explicit --hub that does not answer is an error, not a silent fallback.
	_, errOut, code = run("rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "0x30", "--hub", filepath.Join(f.dir, "nohub.sock"))
	if code != 2 || !strings.Contains(errOut, "--hub") {
		t.Errorf("--hub to nowhere: exit %d: %s", code, errOut)
	}
	// From another namespace (the board's), the same interface name is
	// another interface: the hub found by $OETP_HUB is not used. (Here the
	// command's own endpoint then refuses a --peer that is its own MAC.)
	cmd := f.tn.Host(0).Command("env", env, f.bin, "rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "0x30")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "own MAC") {
		t.Errorf("from another namespace: exit %d: %s", code, stderr.String())
	}
	// A peer the hub does not serve runs the command's own endpoint.
	_, errOut, code = run("rmem", "read", "--iface", "eth0", "--peer", netNobody, "--addr", "0", "--timeout", "100ms", "--json")
	if code != 1 || !strings.Contains(errOut, "TIMEOUT") {
		t.Errorf("unserved peer: exit %d: %s", code, errOut)
	}
}

func hubOps(t *testing.T, c *client.Client, op string) uint64 {
	t.Helper()
	st, _, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	return st.Devices[0].Ops[op].Count
}

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

// BenchmarkHub measures the hub's goals side by side over the veth pair of
// the hub tests, each client beside its baseline in the same run: an
// in-process Go endpoint on the hub's host (the library, no hub), the Go
// client, the Python client (the system python3), and the one-shot commands.
// Every row runs what users run: separate processes, default flags, no
// pinning. Run with
//
//	go test -run '^$' -bench BenchmarkHub -count 3 ./cmd/oetp
//
// (-count repeats the whole set, interleaving the rows and the baselines).
const benchBoardConfig = hubBoardConfig + `[[region]]  # 64 MiB for the block rows
base = 0x1000000
size = "64M"

[[peer]]    # the in-process Go endpoint of the baselines (RMEM)
mac = "02:0e:0c:00:02:01"
mode = "rmem"

[[peer]]    # the in-process endpoint's and 'oetp dma write --no-hub's DMA writes
mac = "02:0e:0c:00:02:02"
mode = "dma-write"

`

var (
	benchRMEMMAC = wire.MAC{0x02, 0x0e, 0x0c, 0, 0x02, 0x01}
	benchDMAMAC  = wire.MAC{0x02, 0x0e, 0x0c, 0, 0x02, 0x02}
)

func BenchmarkHub(b *testing.B) {
	f := startHubFixtureWith(b, benchBoardConfig, "")
	board, _ := wire.ParseMAC(netServer)
	// The in-process baselines: endpoints on the hub's host, same link.
	inproc := func(mac wire.MAC, mode endpoint.Mode) *endpoint.Endpoint {
		var ep *endpoint.Endpoint
		err := f.tn.Host(1).Do(func() error {
			l, err := afpacket.Open("eth0", afpacket.Config{Addr: mac})
			if err != nil {
				return err
			}
			ep, err = endpoint.New(l, nil, endpoint.Config{MAC: mac, RMEMTimeout: time.Second, DMATimeout: time.Second})
			if err != nil {
				return err
			}
			return ep.SetPeer(0, endpoint.Peer{MAC: board, Mode: mode, WindowSize: 1 << 32})
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ep.Close() })
		return ep
	}
	floorHello, floorProm, floorTeam := testutil.BuildCommandPlain(b, "./testdata/floor/hello"), testutil.BuildCommandPlain(b, "./testdata/floor/promlink"), testutil.BuildCommandPlain(b, "./testdata/floor/teamlibs")
	floorPingPong := testutil.BuildCommandPlain(b, "./testdata/floor/pingpong")
	rmemEP := inproc(benchRMEMMAC, endpoint.ModeRMEM)
	dmaEP := inproc(benchDMAMAC, endpoint.ModeDMARead)
	c, dev := hubDevice(b, f.sock, "board1")
	ctx := context.Background()
	py, pyErr := exec.LookPath("python3")
	python := func(b *testing.B, mode string, n int) float64 {
		if pyErr != nil {
			b.Skip("python3 is not installed")
		}
		cmd := exec.Command(py, filepath.Join(pythonDir(), "tests", "bench_hub.py"), mode, strconv.Itoa(n))
		cmd.Env = append(os.Environ(), "OETP_HUB="+f.sock, "OETP_TEST_DEVICE=board1")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("bench_hub.py %s: %v %s", mode, err, out)
		}
		var r struct {
			Ops     int     `json:"ops"`
			Seconds float64 `json:"seconds"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			b.Fatalf("bench_hub.py: %v: %s", err, out)
		}
		b.ReportMetric(r.Seconds*1e9/float64(n), "ns/op")
		b.ReportMetric(float64(r.Ops)/r.Seconds, "ops/s")
		return r.Seconds
	}
	opsPerSec := func(b *testing.B, perOp int) {
		b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "ops/s")
	}

	data := testutil.Pattern(64<<20, 0)
	in := filepath.Join(f.dir, "64m.bin")
	writeFile(b, in, data)
	mbps := func(b *testing.B, n int) {
		b.ReportMetric(float64(n)*float64(len(data))/b.Elapsed().Seconds()/1e6, "MB/s")
	}
	type row struct {
		name string
		fn   func(b *testing.B)
	}
	var rows []row
	run := func(name string, fn func(b *testing.B)) { rows = append(rows, row{name, fn}) }
	// The latest figures of the baselines and floors, for the ratios the
	// rows after them report.
	var inprocNS, hopNS, promLoop float64
	run("read/in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := rmemEP.RMEMRead(ctx, 0, 0x10); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b, 1)
		inprocNS = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	run("read/floor-unix-pingpong", func(b *testing.B) {
		hopNS = pingPong(b, floorPingPong, f.dir, max(b.N, 5000))
	})
	run("read/go-client", func(b *testing.B) {
		hubTime := func() (float64, uint64) {
			st, _, err := c.Status()
			if err != nil {
				b.Fatal(err)
			}
			o := st.Devices[0].Ops["read"]
			return o.MeanUS * float64(o.Count), o.Count
		}
		t0, n0 := hubTime()
		for b.Loop() {
			if _, err := dev.Read(0x10); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b, 1)
		// The part of each round trip spent in the hub's endpoint call.
		t1, n1 := hubTime()
		b.ReportMetric((t1-t0)*1e3/float64(n1-n0), "hub-endpoint-ns/op")
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if inprocNS > 0 {
			b.ReportMetric(ns/inprocNS, "x-in-process")
			if hopNS > 0 {
				// The ratio a hub that cost nothing beyond the hop would reach,
				// and what this one spends beyond the hop and the endpoint call
				// of the in-process row.
				b.ReportMetric((inprocNS+hopNS)/inprocNS, "floor-x-in-process")
				b.ReportMetric(ns-hopNS-inprocNS, "beyond-floor-ns/op")
			}
		}
	})
	run("read/python", func(b *testing.B) { python(b, "single", max(b.N, 2000)) })

	// A shell loop of one-shot reads: through the hub (found by $OETP_HUB),
	// and each command with its own endpoint (--no-hub).
	shellLoop := func(b *testing.B, command string) float64 {
		n := max(b.N, 20)
		isOetp := !strings.HasPrefix(command, "/")
		if isOetp {
			command = f.bin + " " + command
		}
		script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do %s >/dev/null || exit 1; i=$((i+1)); done`, n, command)
		cmd := f.tn.Host(1).Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "OETP_HUB="+f.sock)
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("shell loop: %v %s", err, out)
		}
		dt := time.Since(t0)
		b.ReportMetric(float64(dt.Nanoseconds())/float64(n), "ns/op")
		rate := float64(n) / dt.Seconds()
		b.ReportMetric(rate, "ops/s")
		if promLoop > 0 && isOetp {
			// oetp against the floor measured just before it in this round.
			b.ReportMetric(rate/promLoop, "x-floor-prom")
		}
		return rate
	}
	read := "rmem read --iface eth0 --peer " + netServer + " --addr 0x10"
	// The floors first: the same loop starting /bin/true (the shell's fork
	// and exec), a hello-world Go binary, a Go binary that links only
	// client_golang, and oetp for nothing else.
	run("shell-rmem-read/bin-true", func(b *testing.B) {
		promLoop = 0 // a new round: no floor yet
		shellLoop(b, "/bin/true")
	})
	run("shell-rmem-read/floor-go-hello", func(b *testing.B) { shellLoop(b, floorHello) })
	run("shell-rmem-read/floor-go-client_golang", func(b *testing.B) { promLoop = shellLoop(b, floorProm) })
	// All the libraries the team's rules name that oetp links (pcapgo,
	// cobra, toml, progressbar, netlink, x/sys and client_golang).
	run("shell-rmem-read/floor-go-team-libs", func(b *testing.B) {
		r := shellLoop(b, floorTeam)
		if promLoop > 0 {
			b.ReportMetric(r/promLoop, "x-floor-prom")
		}
	})
	run("shell-rmem-read/oetp-version", func(b *testing.B) { shellLoop(b, "version") })
	run("shell-rmem-read/hub", func(b *testing.B) { shellLoop(b, read) })
	run("shell-rmem-read/no-hub", func(b *testing.B) { shellLoop(b, read+" --no-hub --mac "+benchRMEMMAC.String()) })

	run("batch1000/in-process", func(b *testing.B) {
		for b.Loop() {
			for i := range 1000 {
				if _, err := rmemEP.RMEMRead(ctx, 0, uint32(4*(i%256))); err != nil {
					b.Fatal(err)
				}
			}
		}
		opsPerSec(b, 1000)
	})
	run("batch1000/go-client", func(b *testing.B) {
		for b.Loop() {
			bt := dev.NewBatch()
			for i := range 1000 {
				bt.Read(uint32(4 * (i % 256)))
			}
			if err := bt.Run(); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b, 1000)
	})
	run("batch1000/python", func(b *testing.B) { python(b, "batch", max(b.N, 5)) })

	run("write64MiB/in-process", func(b *testing.B) {
		for b.Loop() {
			if _, err := dmaEP.DMAWrite(ctx, 0, 0x1000000, data); err != nil {
				b.Fatal(err)
			}
		}
		mbps(b, b.N)
	})
	run("write64MiB/oetp-dma-write", func(b *testing.B) {
		for b.Loop() {
			out, errOut, code := oetpIn(b, f.bin, f.tn.Host(1), "dma", "write", "--iface", "eth0", "--mac", benchDMAMAC.String(),
				"--peer", netServer, "--addr", "0x1000000", "--in", in, "--timeout", "1s")
			if code != 0 {
				b.Fatalf("oetp dma write: %s %s", out, errOut)
			}
		}
		mbps(b, b.N)
	})
	run("write64MiB/go-client", func(b *testing.B) {
		for b.Loop() {
			if err := dev.WriteBlock(0x1000000, data); err != nil {
				b.Fatal(err)
			}
		}
		mbps(b, b.N)
	})
	run("write64MiB/python", func(b *testing.B) {
		// At least 3 blocks, as the Go rows' own loops time several (the
		// benchmark's first call, b.N = 1, timed one block: one sample).
		n := max(b.N, 3)
		secs := python(b, "write_block", n)
		b.ReportMetric(float64(n)*float64(len(data))/secs/1e6, "MB/s")
	})
	rounds := 1
	if v, err := strconv.Atoi(os.Getenv("OETP_BENCH_ROUNDS")); err == nil && v > 1 {
		rounds = v
	}
	for range rounds {
		for _, r := range rows {
			b.Run(r.name, r.fn)
		}
	}
}

// pingPong runs n round trips of testdata/floor/pingpong between two
// processes, reports them and returns the mean round trip in ns.
func pingPong(b *testing.B, bin, dir string, n int) float64 {
	sock := filepath.Join(dir, "pingpong.sock")
	os.Remove(sock)
	echo := exec.Command(bin, "echo", sock)
	stdout, err := echo.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	echo.Stderr = os.Stderr
	if err := echo.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { echo.Process.Kill(); echo.Wait() }()
	ready := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
		b.Fatalf("pingpong echo: %q %v", ready, err)
	}
	out, err := exec.Command(bin, "client", sock, strconv.Itoa(n)).Output()
	if err != nil {
		b.Fatalf("pingpong client: %v %s", err, out)
	}
	var r struct {
		Ops     int     `json:"ops"`
		Seconds float64 `json:"seconds"`
		P50     float64 `json:"p50_ns"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Ops != n {
		b.Fatalf("pingpong client: %v: %s", err, out)
	}
	ns := r.Seconds * 1e9 / float64(n)
	b.ReportMetric(ns, "ns/op")
	b.ReportMetric(r.P50, "p50-ns")
	return ns
}

// TestFloorPingPong runs BenchmarkHub's ping-pong floor for a few round
// trips, so the benchmark's floor program keeps building and answering.
func TestFloorPingPong(t *testing.T) {
	bin := testutil.BuildCommandPlain(t, "./testdata/floor/pingpong")
	sock := filepath.Join(t.TempDir(), "pp.sock")
	echo := exec.Command(bin, "echo", sock)
	stdout, err := echo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := echo.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make([]byte, 6)
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
		t.Fatalf("echo: %q %v", ready, err)
	}
	out, err := exec.Command(bin, "client", sock, "10").Output()
	if err != nil {
		t.Fatalf("client: %v %s", err, out)
	}
	var r struct {
		Ops     int     `json:"ops"`
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Ops != 10 || r.Seconds <= 0 {
		t.Fatalf("client printed %s (%v)", out, err)
	}
	// The echo exits by itself once its client has gone.
	if err := echo.Wait(); err != nil {
		t.Fatalf("echo: %v", err)
	}
}
