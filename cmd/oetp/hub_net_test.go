//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
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
