//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/cmd/oetp/internal/serve"
	"github.com/openenoc/oetp/conformance"
	"github.com/openenoc/oetp/devices"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/wire"
)

// MACs of the veth test: h1 serves, h2 initiates with its own MAC (an RMEM
// peer of h1) and with two extra MACs that are DMA peers of h1: a peer entry
// has one mode, so writing and reading back by DMA takes two peer entries,
// hence two initiator addresses.
const (
	netServer = "02:0e:0c:00:00:01"
	netClient = "02:0e:0c:00:00:02"
	netWriter = "02:0e:0c:00:00:a1"
	netReader = "02:0e:0c:00:00:a2"
	netGroup  = "03:0e:0c:00:00:01"
	netNobody = "02:0e:0c:00:00:77"
)

// serveConfig is the server's configuration file; %s is the directory of the
// shared DDR file.
const serveConfig = `# oetp serve test configuration
iface = "eth0"
group = "03:0e:0c:00:00:01"
contexts = 2
json_events = false  # overridden by --json-events

[[region]]           # registers
base = 0
size = "64K"

[[region]]           # DDR, a shared file mapping
base = 0x100000
size = "1M"
path = "%s/ddr.bin"

[[fault]]
base = 0x200000
size = 4096
resp = "slverr"

[[peer]]             # index 0: h2's own MAC, registers only
mac = "02:0e:0c:00:00:02"
mode = "rmem"
window = "0:64K"

[[peer]]             # index 1: may write DDR, the fault and a hole by DMA
mac = "02:0e:0c:00:00:a1"
mode = "dma-write"
window = "0x100000:2M"

[[peer]]             # index 2: may read DDR by DMA
mac = "02:0e:0c:00:00:a2"
mode = "dma-read"
window = "0x100000:1M"
`

// result checks an initiator's --json result: the exit status, then every
// field but the measured seconds and mb_per_s, which must be numbers.
func checkResult(t *testing.T, what, stdout, stderr string, code, wantCode int, want map[string]any) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: exit %d, want %d; stderr:\n%s", what, code, wantCode, stderr)
	}
	got := lastLineJSON(t, stdout)
	if _, ok := want["via"]; !ok {
		// The command's own endpoint (or none opened, after a usage error).
		if v, ok := got["via"]; (ok && v != "direct") || got["hub"] != nil {
			t.Errorf("%s: route via %v hub %v, want direct", what, v, got["hub"])
		}
		delete(got, "via")
	}
	for _, k := range []string{"seconds", "mb_per_s"} {
		if v, ok := got[k]; ok {
			if f, isNum := v.(float64); !isNum || f < 0 {
				t.Errorf("%s: %s = %v, want a non-negative number", what, k, v)
			}
			delete(got, k)
		}
	}
	if l, ok := got["link"]; ok {
		// The link's figures after a failed attempt vary with the run;
		// their shape does not.
		lm, isMap := l.(map[string]any)
		for _, k := range []string{"rtt_samples", "rtt_min_ms", "rtt_mean_ms", "rtt_max_ms", "srtt_ms", "rto_ms", "retries", "expired_tries", "timeouts"} {
			if v, isNum := lm[k].(float64); !isMap || !isNum || v < 0 {
				t.Errorf("%s: link %v: %s missing or negative", what, l, k)
			}
		}
		delete(got, "link")
	}
	if _, ok := want["bytes"]; ok {
		if _, ok := lastLineJSON(t, stdout)["mb_per_s"]; !ok {
			t.Errorf("%s: no mb_per_s in %s", what, stdout)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: JSON result (-want +got):\n%s", what, diff)
	}
}

// dmaRoundTrip writes data (100 KiB) to netServer at 0x100000 with dma
// write from netWriter through cli, reads it back with dma read from
// netReader, both with the flags extra, and checks both results (13
// fragments each) and the bytes read back. It returns the input file.
func dmaRoundTrip(t *testing.T, cli func(args ...string) (string, string, int), dir string, data []byte, extra ...string) string {
	t.Helper()
	in := filepath.Join(dir, "in.bin")
	writeFile(t, in, data)
	out, errOut, code := cli(append([]string{"dma", "write", "--mac", netWriter, "--peer", netServer, "--addr", "0x100000", "--in", in, "--json"}, extra...)...)
	checkResult(t, "dma write", out, errOut, code, 0, res(true, 0, "NONE", "dma write", netServer, 0x100000,
		"bytes", float64(len(data)), "fragments", float64(13)))
	back := filepath.Join(dir, "back.bin")
	out, errOut, code = cli(append([]string{"dma", "read", "--mac", netReader, "--peer", netServer, "--addr", "0x100000", "--length", "102400", "--out", back, "--json"}, extra...)...)
	checkResult(t, "dma read", out, errOut, code, 0, res(true, 0, "NONE", "dma read", netServer, 0x100000,
		"bytes", float64(len(data)), "fragments", float64(13)))
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes (err %v), want the %d bytes written", len(got), err, len(data))
	}
	return in
}

// res builds an expected result.
func res(ok bool, code int, mnemonic, op, peer string, addr uint32, extra ...any) map[string]any {
	m := map[string]any{"ok": ok, "error_code": float64(code), "error": mnemonic, "op": op, "peer": peer, "addr": float64(addr),
		"retries": float64(0)}
	if !ok {
		// A timeout was sent and not answered: it may have executed. Any
		// other failure here was refused, by this side or by the peer.
		m["outcome_unknown"] = code == 8
	}
	for i := 0; i < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func TestServeAndInitiatorsOverVeth(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.toml")
	writeFile(t, cfg, []byte(fmt.Sprintf(serveConfig, dir)))
	servePcap := filepath.Join(dir, "serve.pcap")
	srv := startServe(t, bin, h1, "--config", cfg, "--json-events", "--pcap", servePcap)
	if !strings.Contains(srv.stderr.String(), "mac="+netServer) {
		t.Errorf("ready line does not show the interface's MAC %s:\n%s", netServer, srv.stderr.String())
	}
	cli := func(args ...string) (string, string, int) {
		t.Helper()
		return oetpIn(t, bin, h2, append(args, "--iface", "eth0")...)
	}

	t.Run("rmem", func(t *testing.T) {
		out, errOut, code := cli("rmem", "write", "--peer", netServer, "--addr", "0x10", "--data", "0xC0FFEE01", "--json")
		checkResult(t, "rmem write", out, errOut, code, 0, res(true, 0, "NONE", "rmem write", netServer, 0x10))
		out, errOut, code = cli("rmem", "read", "--peer", netServer, "--addr", "16", "--json")
		checkResult(t, "rmem read", out, errOut, code, 0, res(true, 0, "NONE", "rmem read", netServer, 0x10, "data", float64(0xC0FFEE01)))
		out, errOut, code = cli("rmem", "write", "--peer", netServer, "--addr", "0x10", "--data", "0x0000AB00", "--mask", "0x0000FF00")
		if want := "rmem write 02:0e:0c:00:00:01 0x00000010 = 0x0000ab00 mask 0x0000ff00: ok\n"; code != 0 || out != want {
			t.Errorf("masked rmem write: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
		}
		out, errOut, code = cli("rmem", "read", "--peer", netServer, "--addr", "0x10")
		if want := "rmem read 02:0e:0c:00:00:01 0x00000010 = 0xc0ffab01\n"; code != 0 || out != want {
			t.Errorf("rmem read: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
		}
		// A group write completes locally; the server, a member of the
		// group, applies it (its entry for h2 is mode 1).
		out, errOut, code = cli("rmem", "write", "--peer", netGroup, "--addr", "0x20", "--data", "5", "--json")
		checkResult(t, "group rmem write", out, errOut, code, 0, res(true, 0, "NONE", "rmem write", netGroup, 0x20,
			"delivery", "unconfirmed", "frames_sent", float64(1)))
		out, errOut, code = cli("rmem", "read", "--peer", netServer, "--addr", "0x20", "--json")
		checkResult(t, "rmem read after group write", out, errOut, code, 0, res(true, 0, "NONE", "rmem read", netServer, 0x20, "data", float64(5)))
	})

	data := make([]byte, 100<<10)
	rand.NewChaCha8([32]byte{1, 2}).Read(data)
	t.Run("dma", func(t *testing.T) {
		// The initiator busy-polls (--busy-poll): same frames, same result.
		in := dmaRoundTrip(t, cli, dir, data, "--busy-poll", "200us")
		// The DDR region is a shared mapping of ddr.bin: the bytes are there.
		ddr, err := os.ReadFile(filepath.Join(dir, "ddr.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ddr) != 1<<20 || !bytes.Equal(ddr[:len(data)], data) {
			t.Errorf("ddr.bin (%d bytes) does not start with the 100 KiB written", len(ddr))
		}
		// --fragment 31 selects 28-byte fragments: 100 bytes take 4.
		writeFile(t, in, data[:100])
		out, errOut, code := cli("dma", "write", "--mac", netWriter, "--peer", netServer, "--addr", "0x100000", "--in", in, "--fragment", "31", "--json")
		checkResult(t, "dma write --fragment 31", out, errOut, code, 0, res(true, 0, "NONE", "dma write", netServer, 0x100000,
			"bytes", float64(100), "fragments", float64(4)))
		// Human output.
		back := filepath.Join(dir, "back.bin")
		out, errOut, code = cli("dma", "read", "--mac", netReader, "--peer", netServer, "--addr", "0x100000", "--length", "0x400", "--out", back)
		if re := regexp.MustCompile(`^dma read 02:0e:0c:00:00:01 0x00100000: 1024 bytes \(1 KiB\) in 1 fragment\(s\), \d+\.\d{3}s, \d+\.\d MB/s -> .*/back.bin\n$`); code != 0 || !re.MatchString(out) {
			t.Errorf("dma read: exit %d, stdout %q; stderr %s", code, out, errOut)
		}
	})

	t.Run("errors", func(t *testing.T) {
		in := filepath.Join(dir, "word.bin")
		writeFile(t, in, []byte{1, 2, 3, 4})
		cases := []struct {
			name string
			args []string
			want map[string]any
		}{
			{"slverr", []string{"dma", "write", "--mac", netWriter, "--peer", netServer, "--addr", "0x200000", "--in", in},
				res(false, 14, "REMOTE_AXI_WR_SLVERR", "dma write", netServer, 0x200000, "bytes", float64(0), "fragments", float64(0), "failed_addr", float64(0x200000),
					"message", "REMOTE_AXI_WR_SLVERR (14)")},
			{"hole", []string{"dma", "write", "--mac", netWriter, "--peer", netServer, "--addr", "0x201000", "--in", in},
				res(false, 15, "REMOTE_AXI_WR_DECERR", "dma write", netServer, 0x201000, "bytes", float64(0), "fragments", float64(0), "failed_addr", float64(0x201000),
					"message", "REMOTE_AXI_WR_DECERR (15)")},
			{"outside window", []string{"dma", "write", "--mac", netWriter, "--peer", netServer, "--addr", "0x300000", "--in", in},
				res(false, 9, "REMOTE_INVALID", "dma write", netServer, 0x300000, "bytes", float64(0), "fragments", float64(0), "failed_addr", float64(0x300000),
					"message", "REMOTE_INVALID (9)")},
			{"rmem outside window", []string{"rmem", "read", "--peer", netServer, "--addr", "0x10000"},
				res(false, 9, "REMOTE_INVALID", "rmem read", netServer, 0x10000, "message", "REMOTE_INVALID (9)")},
			{"timeout", []string{"rmem", "read", "--peer", netNobody, "--addr", "0", "--timeout", "200ms"},
				res(false, 8, "TIMEOUT", "rmem read", netNobody, 0, "message", "TIMEOUT (8): no response before the timeout")},
			{"fragment 3", []string{"dma", "write", "--mac", netWriter, "--peer", netServer, "--addr", "0x100000", "--in", in, "--fragment", "3"},
				res(false, 1, "LOCAL_INVALID", "dma write", netServer, 0x100000, "bytes", float64(0), "fragments", float64(0))},
		}
		for _, c := range cases {
			out, errOut, code := cli(append(c.args, "--json")...)
			if c.want["message"] == nil {
				// The local check's wording belongs to the engine.
				got := lastLineJSON(t, out)
				if msg, _ := got["message"].(string); !strings.HasPrefix(msg, "LOCAL_INVALID (1): ") {
					t.Errorf("%s: message %q, want LOCAL_INVALID (1): ...", c.name, msg)
				}
				c.want["message"] = got["message"]
			}
			// A local refusal (nothing sent) is bad usage: exit 2.
			wantCode := 1
			if c.want["error_code"] == float64(1) {
				wantCode = 2
			}
			checkResult(t, c.name, out, errOut, code, wantCode, c.want)
			if !strings.Contains(errOut, "failed: "+c.want["error"].(string)) {
				t.Errorf("%s: stderr %q does not name the failure", c.name, errOut)
			}
		}
		// The server recorded its own side of each failure and raised an
		// event: local codes 6 (write SLVERR), 7 (DECERR), 1 (invalid) for
		// peer 1, and 1 for peer 0's RMEM read.
		want := []serve.Event{
			{Event: "PEER_DMA_COMPLETE", Source: 0, Peer: 1, PeerMAC: netWriter, ErrorCode: 6, Error: "LOCAL_AXI_WR_SLVERR"},
			{Event: "PEER_DMA_COMPLETE", Source: 0, Peer: 1, PeerMAC: netWriter, ErrorCode: 7, Error: "LOCAL_AXI_WR_DECERR"},
			{Event: "PEER_DMA_COMPLETE", Source: 0, Peer: 1, PeerMAC: netWriter, ErrorCode: 1, Error: "LOCAL_INVALID",
				Invalid: &serve.InvalidReport{Check: "window", Cmd: "DMA_WRITE_REQ", Addr: "0x00300000", Length: 4}},
			{Event: "RMEM_ERROR", Source: 5, Peer: 0, PeerMAC: netClient, ErrorCode: 1, Error: "LOCAL_INVALID",
				Invalid: &serve.InvalidReport{Check: "window", Cmd: "RMEM_READ_REQ", Addr: "0x00010000", Length: 4}},
		}
		if diff := cmp.Diff(want, srv.events(t)); diff != "" {
			t.Errorf("server events (-want +got):\n%s", diff)
		}
	})

	t.Run("group read refused", func(t *testing.T) {
		before := srv.stats()
		p := filepath.Join(dir, "group-read.pcap")
		out, errOut, code := cli("rmem", "read", "--peer", netGroup, "--addr", "0", "--pcap", p, "--json")
		got := lastLineJSON(t, out)
		if code != 2 || got["error_code"] != float64(1) || got["error"] != "LOCAL_INVALID" || got["ok"] != false {
			t.Errorf("rmem read from a group: exit %d, %v; stderr %s", code, got, errOut)
		}
		out, errOut, code = cli("dma", "read", "--peer", netGroup, "--addr", "0x100000", "--length", "4", "--out", filepath.Join(dir, "g.bin"), "--pcap", p, "--json")
		got = lastLineJSON(t, out)
		if code != 2 || got["error_code"] != float64(1) || got["error"] != "LOCAL_INVALID" {
			t.Errorf("dma read from a group: exit %d, %v; stderr %s", code, got, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "g.bin")); !os.IsNotExist(err) {
			t.Errorf("a failed dma read left its --out file: %v", err)
		}
		// Nothing was sent: the capture of the last command is empty (or
		// was never opened) and the server received nothing.
		if _, err := os.Stat(p); err == nil {
			if n := len(pcaptest.ReadCapture(t, p)); n != 0 {
				t.Errorf("group read capture holds %d frames, want 0", n)
			}
		}
		after := srv.stats()
		if before["rx_frames"] != after["rx_frames"] {
			t.Errorf("server rx_frames went from %v to %v during refused group reads", before["rx_frames"], after["rx_frames"])
		}
	})

	t.Run("bad flags", func(t *testing.T) {
		_, errOut, code := cli("rmem", "read", "--peer", "zz", "--addr", "0")
		if code != 2 || !strings.Contains(errOut, `"--peer"`) {
			t.Errorf("bad --peer: exit %d, stderr %q", code, errOut)
		}
		_, errOut, code = cli("rmem", "read", "--peer", netServer, "--addr", "0", "--max-frame", "9000")
		if code != 2 || !strings.Contains(errOut, "--max-frame") {
			t.Errorf("--max-frame 9000: exit %d, stderr %q", code, errOut)
		}
		// An interface that cannot carry oETP is a configuration error,
		// refused before anything is sent; --json still ends with a result.
		out, errOut, code := oetpIn(t, bin, h2, "rmem", "read", "--iface", "lo", "--peer", netServer, "--addr", "0", "--json")
		got := lastLineJSON(t, out)
		if code != 2 || got["ok"] != false || got["error_code"] != float64(1) || !strings.Contains(fmt.Sprint(got["message"]), "lo") {
			t.Errorf("rmem read on lo: exit %d, %v; stderr %q", code, got, errOut)
		}
	})

	t.Run("dump a tcpdump capture", func(t *testing.T) {
		if _, err := exec.LookPath("tcpdump"); err != nil {
			t.Skip("tcpdump is not installed (apt-get install tcpdump; .ci/run installs it)")
		}
		// A server of its own, on another MAC, so that whether this
		// subtest runs or skips changes nothing the main server counts
		// or captures.
		tdMAC := "02:0e:0c:00:00:b2"
		tdSrv := startServe(t, bin, h1, "--iface", "eth0", "--mac", tdMAC, "--region", "0:64K", "--peer", netClient+",mode=rmem")
		defer tdSrv.stop()
		if _, errOut, code := cli("rmem", "write", "--peer", tdMAC, "--addr", "0x10", "--data", "0xc0ffab01"); code != 0 {
			t.Fatalf("rmem write: exit %d, %s", code, errOut)
		}
		capture := filepath.Join(dir, "tcpdump.pcap")
		td := h2.Command("tcpdump", "-i", "eth0", "-n", "-U", "--immediate-mode", "-w", capture, "ether", "proto", "0x88b5")
		var tdErr syncBuffer
		td.Stderr = &tdErr
		if err := td.Start(); err != nil {
			t.Fatal(err)
		}
		defer td.Process.Kill()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(tdErr.String(), "listening on"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("tcpdump did not start: %s", tdErr.String())
			}
		}
		if _, errOut, code := cli("rmem", "read", "--peer", tdMAC, "--addr", "0x10"); code != 0 {
			t.Fatalf("rmem read: exit %d, %s", code, errOut)
		}
		// Two records (24-byte file header, 16-byte record headers, two
		// 24-byte frames) are on disk before tcpdump is stopped.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if fi, err := os.Stat(capture); err == nil && fi.Size() >= 24+2*(16+24) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tcpdump wrote no two frames in 10s: %s", tdErr.String())
			}
		}
		td.Process.Signal(syscall.SIGINT)
		td.Wait()
		out, errOut, code := runBin(t, bin, "dump", capture)
		// The Request ID is random (a new process is a new endpoint
		// instance); the reply carries the request's.
		re := regexp.MustCompile(`^1 \S+ 02:0e:0c:00:00:02 > 02:0e:0c:00:00:b2 RMEM_READ_REQ rid=(\d+) addr=0x00000010, 24 bytes\n` +
			`2 \S+ 02:0e:0c:00:00:b2 > 02:0e:0c:00:00:02 RMEM_READ_RSP rid=(\d+) data=0xc0ffab01, 24 bytes\n$`)
		if m := re.FindStringSubmatch(out); code != 0 || m == nil || m[1] != m[2] {
			t.Errorf("dump of tcpdump's capture: exit %d, stderr %q\n%s\ntcpdump: %s", code, errOut, out, tdErr.String())
		}
	})

	t.Run("file region loses its backing", func(t *testing.T) {
		// A server of its own, so the main server's counters stay as
		// they are. Another process truncates the region's file under
		// the live mapping: a read of the lost pages answers
		// REMOTE_AXI_RD_SLVERR and the server keeps serving.
		fMAC := "02:0e:0c:00:00:b3"
		path := filepath.Join(dir, "lost.bin")
		fSrv := startServe(t, bin, h1, "--iface", "eth0", "--mac", fMAC, "--region", "0x100000:64K:"+path, "--peer", netReader+",mode=dma-read")
		defer fSrv.stop()
		out := filepath.Join(dir, "lost-back.bin")
		read := func() (map[string]any, int, string) {
			stdout, errOut, code := cli("dma", "read", "--mac", netReader, "--peer", fMAC, "--addr", "0x104000", "--length", "4096", "--out", out, "--json")
			return lastLineJSON(t, stdout), code, errOut
		}
		if got, code, errOut := read(); code != 0 {
			t.Fatalf("dma read before truncation: exit %d, %v, %s", code, got, errOut)
		}
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		if got, code, errOut := read(); code != 1 || got["error_code"] != float64(wire.CodeRemoteAXIRdSlverr) {
			t.Errorf("dma read of a truncated file region: exit %d, %v, %s; want exit 1 and REMOTE_AXI_RD_SLVERR (12)", code, got, errOut)
		}
		select {
		case <-fSrv.done:
			t.Fatalf("serve died on the lost backing: %v\n%s", fSrv.cmd.ProcessState, fSrv.stderr.String())
		default:
		}
		if err := os.Truncate(path, 64<<10); err != nil {
			t.Fatal(err)
		}
		if got, code, errOut := read(); code != 0 {
			t.Errorf("dma read once the file is long again: exit %d, %v, %s", code, got, errOut)
		}
	})

	t.Run("max read rate", func(t *testing.T) {
		// A server of its own bounds the DMA read data it sends to each
		// source to 8 KiB/s: a 64 KiB read gets its first fragments (the
		// 8 KiB burst), then no reply; serve counts and logs the drops.
		rMAC := "02:0e:0c:00:00:b4"
		rSrv := startServe(t, bin, h1, "--iface", "eth0", "--mac", rMAC, "--region", "0:64K", "--peer", netReader+",mode=dma-read", "--max-read-rate", "8K", "--json-events")
		defer rSrv.stop()
		if !strings.Contains(rSrv.stderr.String(), "max_read_rate=8192") {
			t.Errorf("ready line lacks max_read_rate=8192:\n%s", rSrv.stderr.String())
		}
		out, errOut, code := cli("dma", "read", "--mac", netReader, "--peer", rMAC, "--addr", "0", "--length", "64K", "--out", filepath.Join(dir, "rate.bin"), "--timeout", "200ms", "--json")
		if got := lastLineJSON(t, out); code != 1 || got["error_code"] != float64(wire.CodeTimeout) {
			t.Errorf("dma read over --max-read-rate: exit %d, %v, %s; want exit 1 and TIMEOUT", code, got, errOut)
		}
		if st := rSrv.stats(); st["drop_read_rate"] == nil || st["drop_read_rate"].(float64) < 1 {
			t.Errorf("serve stats drop_read_rate = %v, want at least 1", st["drop_read_rate"])
		}
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(rSrv.stderr.String(), "over --max-read-rate"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("serve logged no --max-read-rate drop:\n%s", rSrv.stderr.String())
			}
		}
		if !strings.Contains(rSrv.stderr.String(), "src="+netReader) {
			t.Errorf("the --max-read-rate warning does not name %s:\n%s", netReader, rSrv.stderr.String())
		}
	})

	t.Run("raw policy", func(t *testing.T) {
		// A second endpoint on h1 with its own MAC logs the non-oETP
		// frames addressed to it.
		rawMAC := "02:0e:0c:00:00:b1"
		raw := startServe(t, bin, h1, "--iface", "eth0", "--mac", rawMAC, "--raw-policy", "filtered", "--json-events")
		var l *afpacket.Link
		if err := h2.Do(func() (err error) {
			l, err = afpacket.Open("eth0", afpacket.Config{AllEtherTypes: true})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		dst, src := mustMAC(t, rawMAC), mustMAC(t, netClient)
		other := mustMAC(t, netNobody)
		frame := func(to wire.MAC) []byte {
			return append(append(append(append([]byte{}, to[:]...), src[:]...), 0x08, 0x00), make([]byte, 46)...)
		}
		// The frame to another MAC is filtered out; the one to rawMAC is
		// logged once.
		for _, f := range [][]byte{frame(other), frame(dst)} {
			if err := l.Write(f); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(raw.stdout.String(), `"event":"raw"`); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no raw event; stdout %s\nstderr %s", raw.stdout.String(), raw.stderr.String())
			}
		}
		if code := raw.stop(); code != 0 {
			t.Errorf("raw serve exit %d", code)
		}
		got := raw.lastJSON(`"event":"raw"`)
		delete(got, "time")
		want := map[string]any{"event": "raw", "dst": rawMAC, "src": netClient, "ethertype": float64(0x0800), "frame_len": float64(60)}
		if diff := cmp.Diff(want, got); diff != "" || strings.Count(raw.stdout.String(), `"event":"raw"`) != 1 {
			t.Errorf("raw event (-want +got):\n%s\nstdout:\n%s", diff, raw.stdout.String())
		}
		if st := raw.lastJSON(`"event":"stats"`); st["raw_received"] != float64(1) {
			t.Errorf("raw serve stats: raw_received %v, want 1", st["raw_received"])
		}
	})

	// Stop the server: it prints its counters and exits 0.
	if code := srv.stop(); code != 0 {
		t.Errorf("serve exit %d after SIGTERM; stderr:\n%s", code, srv.stderr.String())
	}
	if !strings.Contains(srv.stderr.String(), "msg=stats") || !strings.Contains(srv.stderr.String(), "msg=stopped") {
		t.Errorf("serve did not log its counters and stop:\n%s", srv.stderr.String())
	}
	final := srv.lastJSON(`"event":"stats"`)
	// rmem: 6 requests; dma: 13 + 13 + 4 + 1 fragments; errors: 4 + the
	// locally refused fragment-3 write sends nothing.
	for k, want := range map[string]float64{"served_rmem_read": 3, "served_rmem_write": 3, "served_dma_write": 17, "served_dma_read": 14} {
		if final[k] != want {
			t.Errorf("final stats %s = %v, want %v", k, final[k], want)
		}
	}

	t.Run("dump", func(t *testing.T) { checkDump(t, bin, servePcap) })
}

// checkDump decodes the server's capture with `oetp dump`.
func checkDump(t *testing.T, bin, path string) {
	out, errOut, code := runBin(t, bin, "dump", "--json", path)
	if code != 0 {
		t.Fatalf("dump --json: exit %d; stderr %s", code, errOut)
	}
	var cmds []string
	var rids []uint32 // of the requests
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct {
			Index int    `json:"index"`
			Time  string `json:"time"`
			Valid bool   `json:"valid"`
			Cmd   string `json:"cmd"`
			Prob  string `json:"problem"`
			RID   uint32 `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("dump line %d: %v: %s", i+1, err, line)
		}
		if rec.Index != i+1 || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$`).MatchString(rec.Time) || !rec.Valid {
			t.Errorf("dump line %d: index %d, time %q, valid %v (%s)", i+1, rec.Index, rec.Time, rec.Valid, rec.Prob)
		}
		cmds = append(cmds, rec.Cmd)
		if strings.HasSuffix(rec.Cmd, "_REQ") {
			rids = append(rids, rec.RID)
		}
	}
	// Every one-shot process starts at a random Request ID: the six RMEM
	// commands (six processes) did not all start at 0 or at one value
	// (a false alarm has odds of 2^-160), and the 13 fragments of the
	// first DMA write count up from their process's start.
	if len(rids) > 19 {
		distinct := map[uint32]bool{}
		for _, r := range rids[:6] {
			distinct[r] = true
		}
		if len(distinct) < 2 {
			t.Errorf("the RMEM requests of six processes carry Request IDs %v: not random per process", rids[:6])
		}
		for i := 1; i < 13; i++ {
			if rids[6+i] != rids[6]+uint32(i) {
				t.Errorf("DMA write fragment %d has Request ID %#x, want %#x", i, rids[6+i], rids[6]+uint32(i))
			}
		}
	}
	rep := func(n int, s ...string) []string {
		var out []string
		for range n {
			out = append(out, s...)
		}
		return out
	}
	var want []string
	// rmem: write, read, masked write, read, group write (no reply), read.
	want = append(want, "RMEM_WRITE_REQ", "RMEM_WRITE_RSP", "RMEM_READ_REQ", "RMEM_READ_RSP",
		"RMEM_WRITE_REQ", "RMEM_WRITE_RSP", "RMEM_READ_REQ", "RMEM_READ_RSP",
		"RMEM_WRITE_REQ", "RMEM_READ_REQ", "RMEM_READ_RSP")
	// dma: 13 write fragments, 13 read fragments, 4 small writes, 1 read.
	want = append(want, rep(13, "DMA_WRITE_REQ", "DMA_WRITE_RSP")...)
	want = append(want, rep(13, "DMA_READ_REQ", "DMA_READ_RSP")...)
	want = append(want, rep(4, "DMA_WRITE_REQ", "DMA_WRITE_RSP")...)
	want = append(want, rep(1, "DMA_READ_REQ", "DMA_READ_RSP")...)
	// errors: three DMA writes and one RMEM read answered by ERROR_RSP.
	want = append(want, rep(3, "DMA_WRITE_REQ", "ERROR_RSP")...)
	want = append(want, "RMEM_READ_REQ", "ERROR_RSP")
	// The tee keeps causal order: every reply right after its request.
	if diff := cmp.Diff(want, cmds); diff != "" {
		t.Errorf("dump commands (-want +got):\n%s", diff)
	}

	out, errOut, code = runBin(t, bin, "dump", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("dump: exit %d, %d lines, want %d; stderr %s", code, len(lines), len(want), errOut)
	}
	// Request IDs are random per process (see randomRequestID): the
	// lines are compared with rid=R.
	stripped := map[string]bool{}
	for _, l := range lines {
		l = regexp.MustCompile(`^\d+ \d\d:\d\d:\d\d\.\d{6} `).ReplaceAllString(l, "")
		stripped[regexp.MustCompile(`rid=\d+`).ReplaceAllString(l, "rid=R")] = true
	}
	for _, w := range []string{
		"02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 RMEM_WRITE_REQ rid=R addr=0x00000010 bit_enable=0xffffffff data=0xc0ffee01, 32 bytes",
		"02:0e:0c:00:00:01 > 02:0e:0c:00:00:02 RMEM_READ_RSP rid=R data=0xc0ffee01, 24 bytes",
		"02:0e:0c:00:00:02 > 03:0e:0c:00:00:01 RMEM_WRITE_REQ (group) rid=R addr=0x00000020 bit_enable=0xffffffff data=0x00000005, 32 bytes",
		"02:0e:0c:00:00:a2 > 02:0e:0c:00:00:01 DMA_READ_REQ rid=R addr=0x00117e80 len=4480, 28 bytes",
		"02:0e:0c:00:00:01 > 02:0e:0c:00:00:a2 DMA_READ_RSP rid=R len=4480, 4504 bytes",
		"02:0e:0c:00:00:01 > 02:0e:0c:00:00:02 ERROR_RSP rid=R error_code=1 (REMOTE_INVALID), 24 bytes",
	} {
		if !stripped[w] {
			t.Errorf("dump has no line\n%s\nin\n%s", w, out)
		}
	}
	if first := lines[0]; !regexp.MustCompile(`^1 \d\d:\d\d:\d\d\.\d{6} 02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 RMEM_WRITE_REQ `).MatchString(first) {
		t.Errorf("dump line 1 = %q", first)
	}
}

// serveVariants are the variants oetp serve shows where the specification
// leaves room: the openENOC RTL's behaviour.
var serveVariants = map[string]string{
	"oetp/access/7":  "mode-0 entry treated as unknown source",
	"oetp/access/10": "late framing cause 2 replaces the window's cause 1",
}

// TestConformanceAgainstServe: the conformance suite, run by the oetp binary
// on one host of a veth pair, against `oetp serve` on the other, programmed
// as the DUT template says: every case passes (with the RTL's variants where
// the specification leaves room), none is skipped. The JUnit
// file and the capture are written.
func TestConformanceAgainstServe(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	// A fifth entry shares the dma-write peer's MAC in mode rmem: the
	// lowest enabled entry (dma-write) serves that MAC.
	const dup = "02:0e:0c:00:00:a1,mode=rmem,window=0x100000:0x102000"
	srv := startServe(t, bin, h1, append(append([]string{"--iface", "eth0", "--json-events"}, conformance.TemplateServeArgs...), "--peer", dup)...)
	dut := filepath.Join(dir, "dut.toml")
	writeFile(t, dut, []byte(conformance.Template+"\n[[peer]]\nmac = \"02:0e:0c:00:00:a1\"\nmode = \"rmem\"\nwindow = \"0x100000:0x102000\"\n"))
	junit, capture := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "cases.pcap")
	start := time.Now()
	out, errOut, code := oetpIn(t, bin, h2, "conformance", "run", "--iface", "eth0", "--target", h1.MAC().String(),
		"--dut", dut, "--json", "--junit", junit, "--pcap", capture)
	t.Logf("oetp conformance run against oetp serve over veth: %v (the process, all %d cases)", time.Since(start), len(conformance.Cases()))
	var rep struct {
		Cases []struct {
			ID, Role, Verdict, Variant, Detail string
		} `json:"cases"`
		Passed, Variants, Failed, Skipped int
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("conformance run: exit %d, %v\nstdout %s\nstderr %s", code, err, out, errOut)
	}
	var bad []string
	initiator := 0
	for _, c := range rep.Cases {
		want, wantV := "pass", ""
		if v, ok := serveVariants[c.ID]; ok {
			want, wantV = "variant", v
		}
		if c.Role == "initiator" {
			// serve cannot be triggered: its initiator is oetp rmem/dma.
			initiator++
			want = "skip"
		} else if c.Role != "responder" {
			bad = append(bad, c.ID+": role "+c.Role)
		}
		if c.Verdict != want || c.Variant != wantV {
			bad = append(bad, c.ID+" "+c.Role+" "+c.Verdict+" "+c.Variant+": "+c.Detail)
		}
	}
	n := len(conformance.Cases())
	if code != 0 || rep.Failed != 0 || rep.Skipped != initiator || initiator == 0 || rep.Passed+rep.Variants+rep.Skipped != n || len(bad) > 0 {
		t.Errorf("against oetp serve: exit %d, %d passed, %d variants, %d failed, %d skipped of %d:\n%s\n%s", code, rep.Passed, rep.Variants, rep.Failed, rep.Skipped, n, strings.Join(bad, "\n"), errOut)
	}
	t.Logf("against oetp serve: %d passed, %d variants (%v), %d failed, %d skipped (initiator cases) of %d", rep.Passed, rep.Variants, serveVariants, rep.Failed, rep.Skipped, n)
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(x, &suites); err != nil || suites.Tests != n || suites.Failures != 0 {
		t.Errorf("JUnit file: %v, %d tests, %d failures", err, suites.Tests, suites.Failures)
	}
	if frames := len(pcaptest.ReadCapture(t, capture)); frames < 2*n {
		t.Errorf("the capture holds %d frames, fewer than two per case", frames)
	}

	// The runner holds the initiator role of each MAC it sends from: with
	// one of them held by another process (here the test, as an rmem would),
	// it waits --wait, then exits 2 naming the holder, and sends nothing.
	d, err := conformance.LoadDUT(dut)
	if err != nil {
		t.Fatal(err)
	}
	macs := conformance.ListenAddrs(d)
	heldMAC := macs[len(macs)-1]
	var held *role.Lock
	if err := h2.Do(func() (err error) {
		held, err = role.Acquire("eth0", heldMAC, role.Initiator, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := srv.stats()["rx_frames"]
	start = time.Now()
	out, errOut, code = oetpIn(t, bin, h2, "conformance", "run", "--iface", "eth0", "--target", h1.MAC().String(), "--dut", dut, "--wait", "300ms")
	el := time.Since(start)
	me := strconv.Itoa(os.Getpid())
	if code != 2 || el < 300*time.Millisecond || !strings.Contains(errOut, "initiator role of eth0 "+heldMAC.String()+" is held by process "+me) || out != "" {
		t.Errorf("conformance run with a peer MAC's initiator role held: exit %d after %v, stdout %q, stderr %q; want exit 2 after 300ms naming PID %s", code, el, out, errOut, me)
	}
	if after := srv.stats()["rx_frames"]; after != before || before == nil {
		t.Errorf("the refused run sent frames: serve rx_frames %v -> %v", before, after)
	}
	held.Release()
	if code := srv.stop(); code != 0 {
		t.Errorf("serve exit %d", code)
	}
}

// processMasks returns the affinity of every thread of process pid.
func processMasks(pid int) (map[int]unix.CPUSet, error) {
	names, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	out := map[int]unix.CPUSet{}
	for _, d := range names {
		tid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil {
			out[tid] = s
		}
	}
	return out, nil
}

// onOneCPU reports whether every thread of the process may run on one and
// the same CPU only.
func onOneCPU(masks map[int]unix.CPUSet) bool {
	var first *unix.CPUSet
	for _, s := range masks {
		if s.Count() != 1 || first != nil && s != *first {
			return false
		}
		first = &s
	}
	return first != nil
}

// TestPlacementOverVeth: with the default --placement auto, serve follows
// its client's CPU (every thread on that one CPU once a DMA write has
// come in, cpu_moves counted, placement=auto in the ready line) and a
// one-shot dma write keeps every thread on one CPU while it runs; with
// --placement off, or auto on the reliable transport (whose window keeps
// both sides busy at once), neither process changes any thread's affinity.
func TestPlacementOverVeth(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	if mine.Count() < 2 {
		t.Skipf("the test may run on %d CPU: nothing to place", mine.Count())
	}
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.bin")
	writeFile(t, in, make([]byte, 1<<20))
	for _, c := range []struct {
		name, place, transport string
		follow                 bool
	}{{"auto", "auto", "v1", true}, {"off", "off", "v1", false}, {"auto-reliable", "auto", "reliable", false}} {
		place := c.place
		t.Run(c.name, func(t *testing.T) {
			tn := netns.NewPair(t)
			h1, h2 := tn.Host(0), tn.Host(1)
			srv := startServe(t, bin, h1, "--iface", "eth0", "--region", "0:1M", "--peer", netClient+",mode=dma-write,transport="+c.transport,
				"--json-events", "--placement", place)
			inForce := map[bool]string{true: "auto", false: "off"}[c.follow]
			if !strings.Contains(srv.stderr.String(), "placement="+inForce) {
				t.Errorf("ready line does not say placement=%s:\n%s", inForce, srv.stderr.String())
			}
			start, err := processMasks(srv.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			// A paced write lasts about 0.5 s: long enough to look at
			// the one-shot's threads while it runs.
			cmd := h2.Command(bin, "dma", "write", "--iface", "eth0", "--peer", netServer, "--addr", "0", "--in", in,
				"--rate", "2M", "--json", "--placement", place, "--transport", c.transport)
			var out, errOut syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			client := map[int]unix.CPUSet{}
			clientPlaced := false
			for running := true; running; {
				select {
				case <-exited:
					running = false
				case <-time.After(5 * time.Millisecond):
					if m, err := processMasks(cmd.Process.Pid); err == nil && len(m) > 0 {
						if onOneCPU(m) {
							clientPlaced = true
						}
						for tid, s := range m {
							client[tid] = s
						}
					}
				}
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(out.String(), `"ok":true`) {
				t.Fatalf("dma write: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
			}
			masks, err := processMasks(srv.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			moves := srv.stats()["cpu_moves"]
			if c.follow {
				if !onOneCPU(masks) {
					t.Errorf("serve after a 1 MiB write: its threads are not all on one CPU: %v", masks)
				}
				if moves == nil || moves.(float64) < 1 {
					t.Errorf("serve's cpu_moves %v after the write, want at least 1", moves)
				}
				if !clientPlaced {
					t.Errorf("the dma write's threads were never all on one CPU while it ran: %v", client)
				}
				return
			}
			main := start[serveMain(start)]
			for tid, s := range masks {
				if s != main {
					t.Errorf("%s: serve thread %d may run on %d CPUs, its main thread on %d", c.name, tid, s.Count(), main.Count())
				}
			}
			if moves != float64(0) {
				t.Errorf("%s: cpu_moves %v, want 0", c.name, moves)
			}
			for tid, s := range client {
				if s.Count() < 2 {
					t.Errorf("%s: the dma write's thread %d ran on %d CPU", c.name, tid, s.Count())
				}
			}
		})
	}
}

// serveMain returns the lowest thread ID: the process's main thread.
func serveMain(m map[int]unix.CPUSet) int {
	low := -1
	for tid := range m {
		if low < 0 || tid < low {
			low = tid
		}
	}
	return low
}

// TestDevicesFileOverVeth: one devices file names the board for the CLI
// (rmem, regs, dma with --device, no hub), for `oetp devices peer-entries`
// (the serve standing in for the board takes its --peer lines), and for a
// hub (oetp hub --devices), through which the same --device commands then
// go with the same role MACs.
func TestDevicesFileOverVeth(t *testing.T) {
	tn := netns.NewPair(t)
	bin, h1, h2, dir := testutil.BuildCommand(t, "."), tn.Host(0), tn.Host(1), t.TempDir()
	regFile := filepath.Join(dir, "regs.bin")
	dumpRegion(t, regFile)
	writeFile(t, filepath.Join(dir, "board.xml"), []byte(dumpIPXACT))
	devFile := filepath.Join(dir, "devices.toml")
	writeFile(t, devFile, []byte(fmt.Sprintf("[device.board1]\niface = \"eth0\"\nmac = %q\nlocal_mac = \"02:0e:0c:00:01:00\"\ntimeout = \"2s\"\naddress_table = \"board.xml\"\n", netServer)))
	seed, _ := wire.ParseMAC("02:0e:0c:00:01:00")
	roles := [3]wire.MAC{devices.DeriveMAC(seed, "board1", 0), devices.DeriveMAC(seed, "board1", 1), devices.DeriveMAC(seed, "board1", 2)}

	run := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		return runExit(t, h2.Command("env", append(append(env, bin), args...)...))
	}
	// $OETP_DEVICES finds the file; no hub runs yet.
	env := []string{"OETP_DEVICES=" + devFile, "OETP_HUB=" + filepath.Join(dir, "hub.sock")}
	oetp := func(args ...string) (string, string, int) { t.Helper(); return run(env, args...) }

	out, errOut, code := oetp("devices", "peer-entries", "board1")
	want := fmt.Sprintf("--peer %v,mode=rmem\n--peer %v,mode=dma-write\n--peer %v,mode=dma-read\n", roles[0], roles[1], roles[2])
	if code != 0 || out != want {
		t.Fatalf("devices peer-entries: exit %d\n%s\nwant\n%s\nstderr %s", code, out, want, errOut)
	}
	// --csr: runnable RMEM writes at openENOC's CSR addresses, the
	// register names as comments; they are run against serve below.
	csrOut, errOut, code := oetp("devices", "peer-entries", "board1", "--csr", "--entry", "1", "--window", "0x100000:1M")
	var wantCSR strings.Builder
	wantCSR.WriteString("# openENOC peer entries 1..3 for board1; the endpoint interface's registers at 0x20000800, 4 peer entries\n")
	for r, m := range roles {
		e, n := 0x2000091C+uint32(r)*0x1C, r+1
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x%08x  # peers.entry[%d].mac_address.lo_word = 0x%x (%v)\n", e, devices.MACLo(m), n, devices.MACLo(m), m)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x%08x  # peers.entry[%d].mac_address.hi_word = 0x%x (%v)\n", e+4, devices.MACHi(m), n, devices.MACHi(m), m)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x00100000  # peers.entry[%d].local_address.base = 0x100000\n", e+0xC, n)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x00100000  # peers.entry[%d].remote_address.base = 0x100000\n", e+0x10, n)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x00100000  # peers.entry[%d].size.bytes = 0x100000\n", e+0x14, n)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x%08x --mask 0x00000003  # peers.entry[%d].dma.mode = 0x%x (%s)\n", e+0x18, r+1, n, r+1, devices.Role(r).BoardMode())
	}
	if code != 0 || csrOut != wantCSR.String() {
		t.Errorf("devices peer-entries --csr: exit %d\n%s\nwant\n%s\nstderr %s", code, csrOut, wantCSR.String(), errOut)
	}
	if m0, m2 := devices.MACLo(roles[0]), devices.MACHi(roles[2]); m0 != uint32(roles[0][2])<<24|uint32(roles[0][3])<<16|uint32(roles[0][4])<<8|uint32(roles[0][5]) || m2 != uint32(roles[2][0])<<8|uint32(roles[2][1]) {
		t.Errorf("MACLo/MACHi = 0x%08x/0x%04x for %v/%v", m0, m2, roles[0], roles[2])
	}
	out, _, code = oetp("devices", "--json")
	var list struct {
		Devices []map[string]any `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Devices) != 1 || list.Devices[0]["rmem_mac"] != roles[0].String() ||
		list.Devices[0]["address_table"] != filepath.Join(dir, "board.xml") || list.Devices[0]["timeout_s"] != 2.0 {
		t.Errorf("devices --json: exit %d, %s", code, out)
	}

	// The board's CSR block: every bit set, so that the masked mode writes
	// show they leave the other bits of dma alone.
	csrFile := filepath.Join(dir, "csr.bin")
	writeFile(t, csrFile, bytes.Repeat([]byte{0xFF}, 4096))
	serveArgs := append([]string{"--iface", "eth0", "--json-events", "--region", "0:4K:" + regFile, "--region", "0x20000000:4K:" + csrFile}, strings.Fields(want)...)
	srv := startServe(t, bin, h1, serveArgs...)
	word := func(addr uint32) uint32 { t.Helper(); return fileWord(t, regFile, addr) }

	// Direct: each command sends from the device's MAC for its role (the
	// board's entries admit only those).
	if out, errOut, code := oetp("regs", "write", "--device", "board1", "blk.ctrl.mode", "0xA"); code != 0 || out != "regs write 02:0e:0c:00:00:01 blk.ctrl.mode 0x00000100 mask 0x000000f0 = 0xa: ok\n" {
		t.Fatalf("regs write --device: exit %d, %q, %s", code, out, errOut)
	}
	if w := word(0x100); w != 0xA10000A1 {
		t.Errorf("word 0x100 = 0x%08X after blk.ctrl.mode = 0xA, want 0xA10000A1", w)
	}
	if _, errOut, code := oetp("regs", "write", "--device", "board1", "blk.ctrl.version", "1"); code != 2 || !strings.Contains(errOut, `node "blk.ctrl.version" is read-only`) {
		t.Errorf("write to a read-only IP-XACT field: exit %d, %s", code, errOut)
	}
	if out, errOut, code := oetp("regs", "read", "--device", "board1", "blk.ctrl.mode"); code != 0 || !strings.HasSuffix(out, " = 0xa\n") {
		t.Errorf("regs read --device: exit %d, %q, %s", code, out, errOut)
	}
	if out, errOut, code := oetp("rmem", "read", "--device", "board1", "--addr", "0x110"); code != 0 || !strings.Contains(out, "0x11111111") {
		t.Errorf("rmem read --device: exit %d, %q, %s", code, out, errOut)
	}
	in := filepath.Join(dir, "in.bin")
	writeFile(t, in, []byte("0123456789abcdef"))
	if _, errOut, code := oetp("dma", "write", "--device", "board1", "--addr", "0x800", "--in", in); code != 0 {
		t.Fatalf("dma write --device: exit %d, %s", code, errOut)
	}
	back := filepath.Join(dir, "back.bin")
	if _, errOut, code := oetp("dma", "read", "--device", "board1", "--addr", "0x800", "--length", "16", "--out", back); code != 0 {
		t.Fatalf("dma read --device: exit %d, %s", code, errOut)
	}
	if b, _ := os.ReadFile(back); string(b) != "0123456789abcdef" {
		t.Errorf("dma read back %q", b)
	}
	out, errOut, code = oetp("regs", "dump", "--device", "board1", "blk.scratch", "--json")
	wantDump := "{\"name\":\"blk.scratch[0]\",\"address\":272,\"value\":286331153,\"fields\":{}}\n{\"name\":\"blk.scratch[1]\",\"address\":276,\"value\":572662306,\"fields\":{}}\n"
	if code != 0 || out != wantDump {
		t.Errorf("regs dump --device: exit %d\n%s\nstderr %s", code, out, errOut)
	}
	if n := srv.stats()["served_rmem_write"].(float64); n != 1 {
		t.Errorf("the board served %v RMEM writes, want 1 (the refused read-only write sent nothing)", n)
	}

	// The --csr lines run as printed and write exactly the entries'
	// registers.
	for _, line := range strings.Split(strings.TrimSpace(csrOut), "\n")[1:] {
		cmdline, _, _ := strings.Cut(line, "#")
		args := strings.Fields(cmdline)
		if _, errOut, code := oetp(args[1:]...); code != 0 {
			t.Fatalf("%s: exit %d, %s", line, code, errOut)
		}
	}
	csr, err := os.ReadFile(csrFile)
	if err != nil {
		t.Fatal(err)
	}
	for r, m := range roles {
		e := 0x91C + r*0x1C
		for off, want := range map[int]uint32{0: devices.MACLo(m), 4: devices.MACHi(m), 8: 0xFFFFFFFF, 0xC: 0x100000, 0x10: 0x100000, 0x14: 0x100000, 0x18: 0xFFFFFFFC | uint32(r+1)} {
			if w := binary.LittleEndian.Uint32(csr[e+off:]); w != want {
				t.Errorf("CSR 0x%08x (peers.entry[%d] + 0x%x) = 0x%08x, want 0x%08x", 0x20000000+e+off, r+1, off, w, want)
			}
		}
	}
	for a := 0; a < 4096; a += 4 {
		if (a < 0x91C || a >= 0x91C+3*0x1C) && binary.LittleEndian.Uint32(csr[a:]) != 0xFFFFFFFF {
			t.Errorf("CSR 0x%08x outside the three entries was written", 0x20000000+a)
		}
	}

	// Python with no hub running: open_device starts a private hub for
	// the board (the same devices file, the same role MACs), and stops it.
	if py, err := exec.LookPath("python3"); err != nil {
		t.Log("python3 is not installed: the Python client's private hub is not run")
	} else {
		runDir := t.TempDir()
		cmd := h2.Command("env", "OETP_DEVICES="+devFile, "OETP_HUB="+filepath.Join(dir, "hub.sock"), "OETP_BIN="+bin,
			"XDG_RUNTIME_DIR="+runDir, "PYTHONDONTWRITEBYTECODE=1", py, filepath.Join(pythonDir(), "tests", "private_check.py"))
		if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("private_check: ok")) {
			t.Fatalf("python3 private_check.py: %v\n%s", err, out)
		}
		for addr, want := range map[uint32]uint32{0x100: 0xA10000A0, 0x110: 0x11111111, 0x114: 0x600DF00D, 0x120: 0xC0DE0001} {
			if w := word(addr); w != want {
				t.Errorf("after private_check.py: word 0x%x = 0x%08X, want 0x%08X", addr, w, want)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(runDir, "oetp-hub-*")); len(left) != 0 {
			t.Errorf("private hub directories left behind: %v", left)
		}
	}

	// Through a hub serving the same devices file: same names, same MACs.
	sock := filepath.Join(dir, "hub.sock")
	startReady(t, bin, h2, "hub", "--devices", devFile, "--socket", sock)
	c, d := hubDevice(t, sock, "board1")
	if d.Local != roles {
		t.Errorf("the hub's local MACs %v, want the devices file's %v", d.Local, roles)
	}
	r0, w0 := hubOps(t, c, "read"), hubOps(t, c, "write")
	if out, errOut, code := oetp("regs", "write", "--device", "board1", "blk.scratch[1]", "0x5A5A5A5A"); code != 0 || !strings.Contains(errOut, "through the hub at "+sock) {
		// The route is said: a plain command through a hub notes it on stderr.
		t.Errorf("regs write --device via hub: exit %d, %q, %s", code, out, errOut)
	}
	if w := word(0x114); w != 0x5A5A5A5A {
		t.Errorf("word 0x114 = 0x%08X, want 0x5A5A5A5A", w)
	}
	out, errOut, code = oetp("regs", "dump", "--device", "board1")
	if code != 0 || !strings.Contains(out, "blk.scratch[1]  0x00000114  0x5a5a5a5a") || !strings.Contains(out, "mode=0xa") {
		t.Errorf("regs dump --device via hub: exit %d\n%s\nstderr %s", code, out, errOut)
	}
	if n, m := hubOps(t, c, "read")-r0, hubOps(t, c, "write")-w0; n != 3 || m != 1 {
		t.Errorf("the hub ran %d reads and %d writes, want 3 (one dump batch) and 1", n, m)
	}

	// Python: the same devices file and hub; attribute access and a
	// PeakRDL-style model through oetp.peakrdl's callbacks.
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Log("python3 is not installed: the Python client's devices file is not run")
		return
	}
	// In the board's namespace, as a hub in another one is not used.
	cmd := h2.Command("env", "OETP_HUB="+sock, "OETP_DEVICES="+devFile, "PYTHONDONTWRITEBYTECODE=1", py, filepath.Join(pythonDir(), "tests", "names_check.py"))
	if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("names_check: ok")) {
		t.Fatalf("python3 names_check.py: %v\n%s", err, out)
	}
	for addr, want := range map[uint32]uint32{0x100: 0xA10000A0, 0x110: 0x12345678, 0x114: 0x5A5A5A5A, 0x118: 0x00007700} {
		if w := word(addr); w != want {
			t.Errorf("after names_check.py: word 0x%x = 0x%08X, want 0x%08X", addr, w, want)
		}
	}
}
