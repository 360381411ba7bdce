//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/atexit"
	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/conformance"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
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

// mistake is a command line a user gets wrong, or one that meets a fault,
// and what the built oetp must answer: the exit status, words its stderr
// (or, with --json, stdout) must hold, and words it must not hold (Go
// internals, false claims).
type mistake struct {
	name string
	tiny bool // needs the 64 KiB file system
	host int  // 0: the client's host, 1: the server's
	env  []string
	args []string
	code int
	want []string
	not  []string
}

// TestMistakes runs a table of mistakes against the built binary over a
// veth pair: h1 runs `oetp serve` with three peer entries (one per mode),
// h0 runs the one-shot commands and hubs. Placeholders in the arguments
// and words: {peer} serve's MAC, {own} h0's MAC, {w}/{r} the MACs serve
// lets write and read by DMA, {dir} a scratch directory.
func TestMistakes(t *testing.T) {
	bin := testutil.BuildCommand(t, ".")
	tn := netns.NewPair(t)
	cl, sv := tn.Host(0), tn.Host(1)
	dir := t.TempDir()
	const (
		writer = "02:0e:0c:00:00:a1"
		reader = "02:0e:0c:00:00:a2"
		group  = "03:0e:0c:00:00:01"
		nobody = "02:0e:0c:00:00:77"
	)
	// Registers at 0..32K in a 64K window; DDR at 0x100000 in a 2M window
	// (DECERR past 1M).
	ddr := filepath.Join(dir, "ddr.bin")
	// Its frames are at most 1024 bytes (fragments of 992): the client's
	// longer fragments overflow.
	srv := startServe(t, bin, sv, "--iface", sv.IfName(), "--max-frame", "1024", "--region", "0:32K", "--region", "0x100000:1M:"+ddr,
		"--peer", cl.MAC().String()+",mode=rmem,window=0:64K",
		"--peer", writer+",mode=dma-write,window=0x100000:2M",
		"--peer", reader+",mode=dma-read,window=0x100000:2M")
	in := filepath.Join(dir, "in.bin")
	writeFile(t, in, bytes.Repeat([]byte("0123456789abcdef"), 64))
	big := filepath.Join(dir, "big.bin")
	writeFile(t, big, bytes.Repeat([]byte("fedcba9876543210"), 1<<16))
	// A file system that holds 64 KiB, for a full disk (root only).
	tiny := filepath.Join(dir, "tiny")
	if err := os.Mkdir(tiny, 0o755); err != nil {
		t.Fatal(err)
	}
	tinyErr := syscall.Mount("tmpfs", tiny, "tmpfs", 0, "size=64k")
	if tinyErr == nil {
		t.Cleanup(func() { syscall.Unmount(tiny, 0) })
	}

	// A hub on h0 with the socket and the local MACs the hub rows collide
	// with, and a configuration whose address table is missing.
	hubConf := func(name, sock, table string) string {
		p := filepath.Join(dir, name)
		extra := ""
		if table != "" {
			extra = fmt.Sprintf("address_table = %q\n", table)
		}
		writeFile(t, p, []byte(fmt.Sprintf("socket = %q\n\n[[device]]\nname = \"board\"\niface = %q\nmac = %q\ntimeout = \"20s\"\n%s\n[device.local]\nrmem = \"02:0e:0c:00:05:01\"\n",
			sock, cl.IfName(), sv.MAC(), extra)))
		return p
	}
	hubA := hubConf("hubA.toml", filepath.Join(dir, "hubA.sock"), "")
	startReady(t, bin, cl, "hub", "--config", hubA)
	noTable := hubConf("notable.toml", filepath.Join(dir, "hubB.sock"), filepath.Join(dir, "missing.xml"))
	noIface := filepath.Join(dir, "noiface.toml")
	writeFile(t, noIface, []byte(fmt.Sprintf("socket = %q\n\n[[device]]\nname = \"board\"\niface = \"eth9\"\nmac = %q\n", filepath.Join(dir, "hubD.sock"), sv.MAC())))

	op := func(args ...string) []string {
		return append(args, "--iface", cl.IfName(), "--no-hub")
	}
	// A hostile TOML file (100 KB of nested arrays), and a capture whose
	// DMA read requests were never answered.
	file := func(name, body string) string { return dirFile(t, dir, name, body) }
	nested := file("nested.toml", "a = "+strings.Repeat("[", 50<<10)+strings.Repeat("]", 50<<10)+"\n")
	typed := file("typed.toml", "iface = 5\n")
	badDur := file("baddur.toml", "rmem_timeout = \"soon\"\n")
	broken := file("broken.toml", "garbage = [")
	hubTyped := file("hubtyped.toml", "socket = 5\n")
	badDUT := file("dut.toml", "max_frame = 5\n")
	typedTable := file("table.toml", "[[node]]\nname = 5\naddress = 0\n")
	// A socket nobody listens on (a hub that ended leaves one).
	dead := filepath.Join(dir, "dead.sock")
	ln, err := net.Listen("unix", dead)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	hubKey := func(name, key string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, []byte(fmt.Sprintf("socket = %q\n\n[[device]]\nname = \"board\"\niface = %q\nmac = %q\n%s\n",
			filepath.Join(dir, name+".sock"), cl.IfName(), sv.MAC(), key)))
		return p
	}
	hubRetries, hubBusy := hubKey("retries.toml", "retries = 5000"), hubKey("busy.toml", `busy_poll = "1s"`)
	late := filepath.Join(dir, "late.pcap")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	writePcapAt(t, late, []time.Time{t0, t0.Add(2 * frames.ReadMaxAge)},
		wire.AppendDMAReadReq(nil, sv.MAC(), cl.MAC(), 1, 0x1000, 64), wire.AppendDMAReadReq(nil, sv.MAC(), cl.MAC(), 2, 0x1000, 64))
	rows := []mistake{
		// Go internals in messages.
		{name: "missing interface", args: []string{"rmem", "read", "--iface", "eth9", "--peer", "{peer}", "--addr", "0"},
			code: 2, want: []string{"--iface eth9: no such network interface"}, not: []string{"route", "ip+net"}},
		{name: "not an Ethernet interface", args: []string{"rmem", "read", "--iface", "lo", "--no-hub", "--peer", "{peer}", "--addr", "0"},
			code: 2, want: []string{"--iface lo is not an Ethernet interface"}, not: []string{"afpacket"}},
		{name: "fragment out of range", args: op("dma", "write", "--peer", "{peer}", "--mac", writer, "--addr", "0x100000", "--in", in, "--fragment", "3"),
			code: 2, want: []string{"LOCAL_INVALID (1)", "--fragment 3 rounds down to 0"}, not: []string{"Config.", "MaxFragment"}},
		{name: "group rmem read", args: op("rmem", "read", "--peer", group, "--addr", "0"),
			code: 2, want: []string{"LOCAL_INVALID (1)", "--peer " + group + " is a group address"}, not: []string{"peer 0 has"}},
		{name: "group dma read", args: op("dma", "read", "--peer", group, "--addr", "0", "--length", "4", "--out", filepath.Join(dir, "g.bin")),
			code: 2, want: []string{"--peer " + group + " is a group address"}, not: []string{"peer 0 has"}},
		{name: "block past 4 GiB", args: op("dma", "read", "--peer", "{peer}", "--mac", reader, "--addr", "0xfffffff0", "--length", "64", "--out", filepath.Join(dir, "e.bin")),
			code: 2, want: []string{"LOCAL_INVALID (1)", "--addr 0xfffffff0 and --length 64 end past the 4 GiB address space (room for 16 bytes)"}, not: []string{"invalid operation", "remote range"}},
		{name: "group regs read", args: op("regs", "read", "--table", filepath.Join(pythonDir(), "tests", "board.xml"), "--peer", group, "status.id"),
			code: 2, want: []string{"LOCAL_INVALID (1)", "--peer " + group + " is a group address"}, not: []string{"peer 0 has", "invalid operation"}},
		{name: "timeout without a sample", args: op("rmem", "read", "--peer", nobody, "--addr", "0", "--timeout", "50ms"),
			code: 1, want: []string{"TIMEOUT (8)", "it may have executed"}, not: []string{"no sample"}},

		// Exit codes.
		{name: "directory as --in", args: op("dma", "write", "--peer", "{peer}", "--addr", "0x100000", "--in", dir),
			code: 2, want: []string{"--in " + dir + " is a directory"}},
		{name: "missing --in", args: op("dma", "write", "--peer", "{peer}", "--addr", "0x100000", "--in", filepath.Join(dir, "nope")),
			code: 2, want: []string{"--in"}},
		{name: "hub: missing address table", args: []string{"hub", "--config", noTable},
			code: 2, want: []string{"address_table", "missing.xml"}},
		{name: "hub: missing interface", args: []string{"hub", "--config", noIface},
			code: 2, want: []string{"iface eth9: no such network interface"}, not: []string{"--iface"}},
		{name: "hub: second hub on the socket", args: []string{"hub", "--config", hubA},
			code: 2, want: []string{"--socket", "hubA.sock"}},
		{name: "hub: second hub on the MACs", args: []string{"hub", "--config", hubA, "--socket", filepath.Join(dir, "hubC.sock")},
			code: 2, want: []string{"02:0e:0c:00:05:01", "is held by", "--config"}, not: []string{"--wait", "--mac"}},

		{name: "directory as --out", args: op("dma", "read", "--peer", "{peer}", "--mac", reader, "--addr", "0x100000", "--length", "64", "--out", dir),
			code: 2, want: []string{"--out " + dir + " is a directory"}},

		// --out names the user's file, not its temporary one.
		{name: "--out in a missing directory", args: op("dma", "read", "--peer", "{peer}", "--mac", reader, "--addr", "0x100000", "--length", "64", "--out", filepath.Join(dir, "nodir", "x.bin")),
			code: 2, want: []string{"--out " + filepath.Join(dir, "nodir", "x.bin")}, not: []string{".oetp-"}},

		// A full disk under --out: the OS's words, the user's path, and no
		// claim that the read did not execute.
		{name: "full disk under --out", tiny: true, args: op("dma", "read", "--peer", "{peer}", "--mac", reader, "--addr", "0x100000", "--length", "1M", "--fragment", "992", "--out", filepath.Join(tiny, "x.bin"), "--json"),
			code: 1, want: []string{"LOCAL_AXI_WR_SLVERR (6)", "no space left on device", "--out " + filepath.Join(tiny, "x.bin"), "the peer executed the reads"},
			not: []string{"did not execute", ".oetp-", `"bytes":0,`}},

		// The peer's answers.
		{name: "REMOTE_INVALID checklist", args: op("rmem", "read", "--peer", "{peer}", "--addr", "0x10000"),
			code: 1, want: []string{"REMOTE_INVALID (9)", "the window", "the peer mode", "the alignment", "the length", "oetp serve logs which check failed", "--peer {own},mode=rmem"}},
		{name: "REMOTE_INVALID: the entry's mode", args: op("dma", "read", "--peer", "{peer}", "--addr", "0x100000", "--length", "64", "--out", filepath.Join(dir, "m.bin")),
			code: 1, want: []string{"REMOTE_INVALID (9)", "that entry is in mode 3 (mode=dma-read)", "DMA ranges may be unaligned", "1..8160 bytes (--fragment)"}},
		{name: "DECERR of a valid DMA fragment", args: op("dma", "read", "--peer", "{peer}", "--mac", reader, "--addr", "0x280000", "--length", "64", "--out", filepath.Join(dir, "d.bin")),
			code: 1, want: []string{"REMOTE_AXI_RD_DECERR (13)", "damaged in transit", "0x00280000, 64 bytes", "the peer has no memory there"}},
		{name: "OVERFLOW of a valid DMA fragment", args: op("dma", "read", "--peer", "{peer}", "--mac", reader, "--addr", "0x100000", "--length", "4096", "--out", filepath.Join(dir, "o.bin")),
			code: 1, want: []string{"REMOTE_OVERFLOW (11)", "damaged in transit", "0x00100000, 4096 bytes", "fragment ceiling is below 4096 bytes (lower --fragment)"}},

		// --transport reliable toward an entry without transport=reliable.
		{name: "reliable toward a v1 entry", args: op("rmem", "read", "--peer", "{peer}", "--addr", "0", "--transport", "reliable", "--json"),
			code: 1, want: []string{"no request was sent", "transport=reliable", "--transport auto", `"outcome_unknown":false`, "it did not execute"},
			not: []string{"may have executed", `"outcome_unknown":true`, "no response within"}},

		// A file region its file system cannot hold is refused at start.
		{name: "file region larger than its file system", tiny: true, args: []string{"serve", "--iface", "lo", "--region", "0x10000000:1M:" + filepath.Join(tiny, "ddr.bin")},
			code: 2, want: []string{"--region 0x10000000:0x100000:" + filepath.Join(tiny, "ddr.bin"), "needs 1048576 bytes (1 MiB) of storage but its filesystem has", "no space left on device"}},
		// Hostile TOML is refused before it is parsed.
		{name: "nested TOML configuration", args: []string{"serve", "--config", nested},
			code: 2, want: []string{nested, "nested deeper than 16 levels"}, not: []string{"stack overflow", "goroutine"}},
		{name: "nested TOML address table", args: []string{"regs", "list", "--table", nested},
			code: 2, want: []string{nested, "nested deeper than 16 levels"}, not: []string{"stack overflow", "goroutine"}},
		// dump counts the read requests it forgot unanswered (the first: the
		// second is still outstanding when the capture ends).
		{name: "dump: unanswered reads", args: []string{"dump", late},
			code: 0, want: []string{"oetp: 1 DMA_READ_REQ(s) had no response within 1m0s"}},
		// --max-read-rate takes bytes per second.
		{name: "serve: bad --max-read-rate", args: []string{"serve", "--iface", "lo", "--max-read-rate", "fast"},
			code: 2, want: []string{"--max-read-rate"}},

		// Errors from below the command in the user's words: no package
		// names, no Go shapes (every row is checked against goWords).
		{name: "serve: file region in a missing directory", host: 1, args: []string{"serve", "--iface", sv.IfName(), "--region", "0x10000000:1M:" + filepath.Join(dir, "nodir", "ddr.bin")},
			code: 2, want: []string{"--region 0x10000000:0x100000:" + filepath.Join(dir, "nodir", "ddr.bin") + ": cannot create " + filepath.Join(dir, "nodir", "ddr.bin") + ": no such file or directory (its directory must exist)"}},
		{name: "serve: directory as file region", host: 1, args: []string{"serve", "--iface", sv.IfName(), "--region", "0x10000000:1M:" + dir},
			code: 2, want: []string{dir + " is a directory: give a file's path"}},
		{name: "serve: unaligned file region", host: 1, args: []string{"serve", "--iface", sv.IfName(), "--region", "0x10000002:1M:" + filepath.Join(dir, "u.bin")},
			code: 2, want: []string{"file region base 0x10000002 is not a multiple of 4"}},
		{name: "serve: overlapping regions", host: 1, args: []string{"serve", "--iface", sv.IfName(), "--region", "0:1M", "--region", "0x1000:4K"},
			code: 2, want: []string{"--region 0x1000:0x1000: [0x1000, 0x2000) overlaps region [0x0, 0x100000): regions and faults must not overlap"}},
		{name: "serve: empty region", host: 1, args: []string{"serve", "--iface", sv.IfName(), "--region", "0:0"},
			code: 2, want: []string{`--region "0:0": SIZE is 0`}},
		{name: "serve: a key of the wrong type", args: []string{"serve", "--config", typed},
			code: 2, want: []string{"--config " + typed + `: line 1 (key "iface"): the value is an integer; this key takes a string (in quotes)`}},
		{name: "serve: a duration that is none", args: []string{"serve", "--config", badDur},
			code: 2, want: []string{`rmem_timeout: "soon" is not a duration: write one such as "1s"`}},
		{name: "serve: TOML syntax", args: []string{"serve", "--config", broken},
			code: 2, want: []string{"--config " + broken + `: line 1 (key "garbage"): `}},
		{name: "hub: a key of the wrong type", args: []string{"hub", "--config", hubTyped},
			code: 2, want: []string{"hub config " + hubTyped + `: line 1 (key "socket"): the value is an integer; this key takes a string (in quotes)`}},
		{name: "hub: retries out of range", args: []string{"hub", "--config", hubRetries},
			code: 2, want: []string{"retries = 5000 is out of range: use 0 (one try) through 1000"}},
		{name: "hub: busy_poll out of range", args: []string{"hub", "--config", hubBusy},
			code: 2, want: []string{`busy_poll = "1s": use "0" (off) through 10ms`}},
		{name: "a lock directory that cannot be made", env: []string{"OETP_LOCK_DIR=" + filepath.Join(in, "locks")}, args: op("rmem", "read", "--peer", "{peer}", "--addr", "0"),
			code: 2, want: []string{"the role lock directory OETP_LOCK_DIR=" + filepath.Join(in, "locks") + ": cannot use the run-time directory " + filepath.Join(in, "locks") + ": not a directory"}},
		{name: "dump: not a capture", args: []string{"dump", in},
			code: 2, want: []string{in + ": not a pcap or pcapng file: the file starts with 30 31 32 33"}},
		{name: "dump: a directory", args: []string{"dump", dir},
			code: 2, want: []string{dir + " is a directory: give a capture file"}},
		{name: "dump: missing file", args: []string{"dump", filepath.Join(dir, "nope.pcap")},
			code: 2, want: []string{"cannot open " + filepath.Join(dir, "nope.pcap") + ": no such file or directory"}},
		{name: "--hub: no socket", args: []string{"rmem", "read", "--iface", cl.IfName(), "--hub", filepath.Join(dir, "nohub.sock"), "--peer", "{peer}", "--addr", "0"},
			code: 2, want: []string{"--hub " + filepath.Join(dir, "nohub.sock") + ": no oetp hub answers at " + filepath.Join(dir, "nohub.sock") + ": no such file or directory", "oetp hub --config FILE", "--no-hub"}},
		{name: "--hub: nobody listens", args: []string{"rmem", "read", "--iface", cl.IfName(), "--hub", "tcp://127.0.0.1:1", "--peer", "{peer}", "--addr", "0"},
			code: 2, want: []string{"no oetp hub answers at tcp://127.0.0.1:1: connection refused"}},
		{name: "OETP_HUB: a socket nobody serves", env: []string{"OETP_HUB=" + dead}, args: []string{"rmem", "read", "--iface", cl.IfName(), "--peer", nobody, "--addr", "0", "--json"},
			code: 1, want: []string{"no hub answers at " + dead + " (connection refused): this command runs its own endpoint", "TIMEOUT (8)"}},
		{name: "--hub: a file, not a socket", args: []string{"rmem", "read", "--iface", cl.IfName(), "--hub", in, "--peer", "{peer}", "--addr", "0"},
			code: 2, want: []string{"--hub " + in + ": " + in + " is not safe to use: it is a file"}, not: []string{"oetp hub: "}},
		{name: "hub status: a file, not a socket", args: []string{"hub", "status", "--hub", in},
			code: 2, want: []string{"--hub: " + in + " is not safe to use: it is a file"}, not: []string{"oetp hub: "}},
		{name: "hub status: no socket", args: []string{"hub", "status", "--hub", filepath.Join(dir, "nohub.sock")},
			code: 1, want: []string{"no oetp hub answers at " + filepath.Join(dir, "nohub.sock") + ": no such file or directory; start a hub there"}},
		{name: "conformance: bad DUT file", args: []string{"conformance", "run", "--iface", cl.IfName(), "--target", "{peer}", "--dut", badDUT},
			code: 2, want: []string{"--dut: " + badDUT + ": max_frame 5: use the device's MAX_RAW_FRAME_SIZE"}},
		{name: "conformance: missing DUT file", args: []string{"conformance", "run", "--iface", cl.IfName(), "--target", "{peer}", "--dut", filepath.Join(dir, "nodut.toml")},
			code: 2, want: []string{"--dut: cannot read " + filepath.Join(dir, "nodut.toml") + ": no such file or directory"}},
		{name: "regs: a key of the wrong type", args: []string{"regs", "list", "--table", typedTable},
			code: 2, want: []string{`line 2 (key "node.name"): the value is an integer; this key takes a string (in quotes)`}},
		{name: "--pcap a directory", args: op("rmem", "read", "--peer", "{peer}", "--addr", "0", "--pcap", dir),
			code: 2, want: []string{"--pcap " + dir + ": is a directory"}},
		{name: "--config missing", args: []string{"serve", "--config", filepath.Join(dir, "nope.toml")},
			code: 2, want: []string{"--config " + filepath.Join(dir, "nope.toml") + ": no such file or directory"}},
		{name: "--table missing", args: []string{"regs", "list", "--table", filepath.Join(dir, "nope.xml")},
			code: 2, want: []string{filepath.Join(dir, "nope.xml") + ": cannot read the address table: no such file or directory"}},
		{name: "retries: the link's figures", args: op("rmem", "read", "--peer", nobody, "--addr", "0", "--timeout", "20ms", "--retries", "1"),
			code: 1, want: []string{"TIMEOUT (8)", "; link figures: no round trip measured, 1 retries"}},
	}
	expand := strings.NewReplacer("{peer}", sv.MAC().String(), "{own}", cl.MAC().String(), "{dir}", dir)
	for _, m := range rows {
		t.Run(m.name, func(t *testing.T) {
			args := make([]string, len(m.args))
			for i, a := range m.args {
				args[i] = expand.Replace(a)
			}
			if m.tiny && tinyErr != nil {
				t.Skipf("no tmpfs for a full disk: %v", tinyErr)
			}
			h := cl
			if m.host == 1 {
				h = sv
			}
			out, errOut, code := oetpInEnv(t, bin, h, m.env, args...)
			all := out + errOut
			if code != m.code {
				t.Errorf("oetp %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, m.code, out, errOut)
			}
			for _, w := range m.want {
				if w = expand.Replace(w); !strings.Contains(all, w) {
					t.Errorf("oetp %s: output lacks %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), w, out, errOut)
				}
			}
			for _, w := range append(m.not, "context canceled", "oetp: oetp:") {
				if strings.Contains(all, w) {
					t.Errorf("oetp %s: output holds %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), w, out, errOut)
				}
			}
			if w := goWords(all); w != "" {
				t.Errorf("oetp %s: output holds %q, a package's name or Go's words\nstdout: %s\nstderr: %s", strings.Join(args, " "), w, out, errOut)
			}
			checkSuggestedFlags(t, args, errOut)
		})
	}

	// The failed handshake sends its documented number of SYNs, once.
	capture := filepath.Join(dir, "hs.pcapng")
	if _, errOut, code := oetpIn(t, bin, cl, op("rmem", "read", "--peer", sv.MAC().String(), "--addr", "0", "--transport", "reliable", "--pcap", capture)...); code != 1 {
		t.Fatalf("rmem read --transport reliable: exit %d: %s", code, errOut)
	}
	if n := framesFrom(t, capture, cl.MAC()); n != oneshot.HandshakeTries {
		t.Errorf("--transport reliable toward a v1 entry sent %d frames, want the %d SYNs of one handshake", n, oneshot.HandshakeTries)
	}
	// serve says which check a REMOTE_INVALID request failed, for which
	// peer.
	for _, w := range []string{"check=window", "peer_mac=" + cl.MAC().String(), "addr=0x00010000", "check=mode cmd=DMA_READ_REQ"} {
		if !strings.Contains(srv.stderr.String(), w) {
			t.Errorf("serve's log lacks %q:\n%s", w, srv.stderr.String())
		}
	}

	// Interrupted: SIGTERM while a read waits forever for a reply that
	// serve never sends (it has no entry for the MAC, and says so).
	stranger := "02:0e:0c:00:00:55"
	res := signalOetp(t, cl, bin, syscall.SIGTERM, func() bool { return strings.Contains(srv.stderr.String(), stranger) },
		op("rmem", "read", "--peer", sv.MAC().String(), "--mac", stranger, "--addr", "0", "--timeout", "0", "--json")...)
	if res.code != 143 || !strings.Contains(res.stderr, "interrupted by SIGTERM") || !strings.Contains(res.stdout, `"interrupted":"SIGTERM"`) ||
		!strings.Contains(res.stdout, `"outcome_unknown":true`) || strings.Contains(res.stdout+res.stderr, "context canceled") {
		t.Errorf("rmem read after SIGTERM: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	// The same through the hub: serve has no entry for the hub's RMEM MAC
	// and drops its request; the hub waits up to its device's 20s.
	res = signalOetp(t, cl, bin, os.Interrupt, func() bool { return strings.Contains(srv.stderr.String(), "02:0e:0c:00:05:01") },
		"rmem", "read", "--iface", cl.IfName(), "--hub", filepath.Join(dir, "hubA.sock"), "--peer", sv.MAC().String(), "--addr", "0", "--json")
	if res.code != 130 || !strings.Contains(res.stderr, "interrupted by SIGINT") || strings.Contains(res.stdout+res.stderr, "context canceled") {
		t.Errorf("rmem read through the hub after SIGINT: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	t.Logf("through the hub, after SIGINT: stdout %q, stderr %q", res.stdout, res.stderr)
	// SIGINT in the middle of a paced write: the bytes done and where it
	// failed are kept.
	res = signalOetp(t, cl, bin, os.Interrupt, func() bool {
		b, err := os.ReadFile(ddr)
		return err == nil && bytes.HasPrefix(b, []byte("fedcba9876543210"))
	}, op("dma", "write", "--peer", sv.MAC().String(), "--mac", writer, "--addr", "0x100000", "--in", big, "--fragment", "992", "--rate", "200K", "--json")...)
	if res.code != 130 || !strings.Contains(res.stderr, "interrupted by SIGINT") || !strings.Contains(res.stdout, `"interrupted":"SIGINT"`) ||
		!strings.Contains(res.stdout, `"failed_addr":`) || strings.Contains(res.stdout, `"bytes":0,`) || strings.Contains(res.stdout+res.stderr, "context canceled") {
		t.Errorf("dma write after SIGINT: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
}

// goWordsRe matches what a user must not read: a Go package's name as a
// message's prefix (at the start of a line or after another message's
// ": "), the shapes of Go's net, os ("open FILE: ...") and context errors, the
// names of Go types and struct fields, a runtime crash.
var goWordsRe = regexp.MustCompile(`(?:^|\n|: |; |\(|")(?:memory|memspec|pcap|link|afpacket|rlink|mem|endpoint|hub|node|addrtable|netns|toml|tomlin|conformance|transport|role|relay|client|rundir|devices|wire|reliable|placement|affinity|pace|bench|demo|proto|os|net|time|strconv): ` +
	`|context canceled|context deadline exceeded|route ip\+net|use of closed network connection|dial (?:unix|tcp|udp)|connect: |\bConfig\.[A-Z]|\b(?:u?int(?:8|16|32|64)|float64)\b|destination has type` +
	`|(?:^|: )EOF(?:$|[\n;])|goroutine \d|panic: |fatal error: ` +
	`|(?:^|: )(?:open|stat|lstat|read|write|mkdir) [^\s:]+: `)

// goWords returns the first thing in s a user must not read, or "". The
// hub's own name ("oetp hub: ...") is the program's, not a package's.
func goWords(s string) string {
	return goWordsRe.FindString(strings.ReplaceAll(s, "oetp hub: ", "oetp-hub "))
}

// oetpInEnv is oetpIn with extra environment variables.
func oetpInEnv(t testing.TB, bin string, h *netns.Host, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := h.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	return runExit(t, cmd)
}

type interruptResult struct {
	code           int
	stdout, stderr string
}

// signalOetp starts oetp args on h, sends sig once ready() holds, and
// checks that the process ends within a second of it.
func signalOetp(t *testing.T, h *netns.Host, bin string, sig os.Signal, ready func() bool, args ...string) interruptResult {
	t.Helper()
	return interruptCmd(t, h.Command(bin, args...), sig, func(*exec.Cmd, *syncBuffer) bool { return ready() })
}

// interruptCmd is signalOetp for a prepared command; ready also sees the
// process and its standard output.
func interruptCmd(t *testing.T, cmd *exec.Cmd, sig os.Signal, ready func(*exec.Cmd, *syncBuffer) bool) interruptResult {
	t.Helper()
	args := cmd.Args
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for !ready(cmd, &out) {
		select {
		case <-done:
			t.Fatalf("oetp %v ended before the signal: %v\nstdout: %s\nstderr: %s", args, cmd.ProcessState, out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("oetp %v: not ready in 20s\nstderr: %s", args, errOut.String())
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("oetp %v ended %v after %v, want within 1s", args, d, sig)
	}
	return interruptResult{cmd.ProcessState.ExitCode(), out.String(), errOut.String()}
}

// framesFrom counts the frames of a capture whose source is mac.
func framesFrom(t *testing.T, path string, mac wire.MAC) int {
	t.Helper()
	n := 0
	for _, fr := range pcaptest.ReadCapture(t, path) {
		if len(fr) >= 12 && bytes.Equal(fr[6:12], mac[:]) {
			n++
		}
	}
	return n
}

// checkSuggestedFlags checks that every flag a message suggests exists on
// the command that printed it, or on the command the message names beside
// it ("on oetp serve: --peer ...").
func checkSuggestedFlags(t *testing.T, args []string, msg string) {
	t.Helper()
	var ran bool
	root := newRoot(&ran)
	cmd, _, err := root.Find(args)
	if err != nil {
		t.Fatalf("oetp %v: %v", args, err)
	}
	for _, line := range strings.Split(msg, "\n") {
		for _, m := range flagToken.FindAllStringSubmatch(line, -1) {
			name := m[1]
			if name == "help" || cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil {
				continue
			}
			if other := namedCommand(root, line); other != nil && other.Flags().Lookup(name) != nil {
				continue
			}
			t.Errorf("oetp %s suggests --%s, which it does not have: %q", cmd.CommandPath(), name, line)
		}
	}
}

// TestReliableTimeoutBelowRTO: under the reliable transport, an operation
// whose --timeout leaves the transport's retransmission timeout no room
// says so and which flag to raise, instead of the checklist of a peer that
// never answers. The relay delays every frame 60 ms each way: the
// handshake completes (its SYN|ACK arrives after the second SYN), and a
// read with --timeout 100ms cannot be answered within it.
func TestReliableTimeoutBelowRTO(t *testing.T) {
	tn := netns.NewT(t, netns.Topology{Hosts: 2, Relay: true})
	h1, h2, rh := tn.Host(0), tn.Host(1), tn.Relay()
	bin := testutil.BuildCommand(t, ".")
	startServe(t, bin, h1, "--iface", "eth0", "--region", "0:4K", "--peer", h2.MAC().String()+",mode=rmem,transport=reliable")
	startRelay(t, bin, rh, "--delay", "60ms")
	out, errOut, code := oetpIn(t, bin, h2, "rmem", "read", "--iface", "eth0", "--no-hub", "--peer", h1.MAC().String(), "--addr", "0",
		"--transport", "reliable", "--timeout", "100ms")
	for _, w := range []string{"TIMEOUT (8)", "the reliable transport's retransmission timeout is", "raise --timeout (such as --timeout 10s)"} {
		if code != 1 || !strings.Contains(errOut, w) {
			t.Errorf("rmem read --transport reliable --timeout 100ms over a 120 ms round trip: exit %d, stderr lacks %q\nstdout: %s\nstderr: %s", code, w, out, errOut)
		}
	}
	if strings.Contains(errOut, "no response within") {
		t.Errorf("the answer is the transport's timer, not a silent peer: %s", errOut)
	}
	checkSuggestedFlags(t, []string{"rmem", "read"}, errOut)
}

// TestReliableLossTimeout: a DMA write of 2 MiB (1 KiB fragments) under the reliable
// transport through the project's relay losing 5 % of the frames each way
// either completes byte-exact or fails saying that the transport's
// retransmission timeout left --timeout no room and what to raise; never a
// TIMEOUT that blames the peer, never a success with other bytes. With the
// default --timeout 1s the transport finishes; with --timeout 15ms (below
// twice the transport's 10 ms floor) the write must end on the note.
// docs/reliable.md has the 64 MiB figures.
func TestReliableLossTimeout(t *testing.T) {
	tn := netns.NewT(t, netns.Topology{Hosts: 2, Relay: true})
	h1, h2, rh := tn.Host(0), tn.Host(1), tn.Relay()
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	in, mem := filepath.Join(dir, "in.bin"), filepath.Join(dir, "mem.bin")
	src := make([]byte, 2<<20)
	for i := range src {
		src[i] = byte(i*7 + i>>13)
	}
	writeFile(t, in, src)
	startServe(t, bin, h1, "--iface", "eth0", "--region", "0:2M:"+mem, "--peer", h2.MAC().String()+",mode=dma-write,transport=reliable")
	r := startRelay(t, bin, rh, "--loss", "5%", "--seed", "5")
	for _, c := range []struct {
		timeout  string
		mustFail bool
	}{{"1s", false}, {"15ms", true}} {
		if err := os.WriteFile(mem, make([]byte, len(src)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := oetpIn(t, bin, h2, "dma", "write", "--iface", "eth0", "--no-hub", "--peer", h1.MAC().String(), "--addr", "0", "--in", in,
			"--transport", "reliable", "--timeout", c.timeout, "--fragment", "1024")
		switch code {
		case 0:
			got, err := os.ReadFile(mem)
			if err != nil || !bytes.Equal(got, src) {
				t.Errorf("--timeout %s: exit 0 but the peer's memory differs from --in (%v)", c.timeout, err)
			}
			if c.mustFail {
				t.Errorf("--timeout %s: the write completed at 5%% loss; want the transport's note", c.timeout)
			}
		case 1:
			for _, w := range []string{"TIMEOUT (8)", "the reliable transport's retransmission timeout is", "raise --timeout (such as --timeout 10s)"} {
				if !strings.Contains(errOut, w) {
					t.Errorf("--timeout %s: exit 1 without %q\nstderr: %s", c.timeout, w, errOut)
				}
			}
			if strings.Contains(errOut, "no response within") {
				t.Errorf("--timeout %s: the peer is blamed for the transport's recovery:\n%s", c.timeout, errOut)
			}
			checkSuggestedFlags(t, []string{"dma", "write"}, errOut)
		default:
			t.Errorf("--timeout %s: exit %d\nstdout: %s\nstderr: %s", c.timeout, code, out, errOut)
		}
		t.Logf("--timeout %s: exit %d: %s%s", c.timeout, code, out, errOut)
	}
	if st := r.stop(t); st["p1->p2"]["dropped"] == 0 || st["p2->p1"]["dropped"] == 0 {
		t.Fatalf("relay %v: no loss, the test proves nothing", st)
	}
}

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
		// A device that never answers, as a hung board: the run waits for
		// each reply (--timeout), and is signalled once its first request
		// has arrived. Against serve the whole run takes about 0.1 s, and
		// a fast one finished before any sign of it could be seen.
		dev := newTestResponder(t, sv)
		dut := filepath.Join(t.TempDir(), "dut.toml")
		writeFile(t, dut, []byte(conformance.Template))
		res := interruptCmd(t, cl.Command(bin, "conformance", "run", "--iface", cl.IfName(), "--target", sv.MAC().String(), "--dut", dut, "--timeout", "5s"), os.Interrupt,
			func(*exec.Cmd, *syncBuffer) bool { return len(dev.reqs) > 0 })
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
