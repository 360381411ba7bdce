//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/cmd/oetp/internal/serve"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/netns"
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
