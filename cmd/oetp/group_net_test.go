//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/afpacket/afpackettest"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

// The group tests' master writes from netWriter and reads back from
// netReader; the members have an entry for each (mode dma-write, mode
// dma-read) and accept group writes to netGroup.
const groupBase = 0x100000

// groupMember starts `oetp serve` on h as a member: a 4 MiB region in a
// file of dir from groupBase, group netGroup, an entry for the writer and,
// with read, one for the reader. It returns the server and the region's file.
func groupMember(t *testing.T, bin string, h *netns.Host, dir string, read bool) (*server, string) {
	t.Helper()
	path := filepath.Join(dir, h.Name()+".bin")
	args := []string{"--iface", "eth0", "--group", netGroup, "--region", fmt.Sprintf("%#x:4M:%s", groupBase, path),
		"--peer", netWriter + ",mode=dma-write", "--json-events"}
	if read {
		args = append(args, "--peer", netReader+",mode=dma-read")
	}
	return startServe(t, bin, h, args...), path
}

// memberFile returns the n bytes at groupBase of a member's region file.
func memberFile(t *testing.T, path string, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// TestGroupWriteVerifyOverRelay: a 1 MiB group write to two serve members,
// h2 behind a relay that drops 1 % of the frames each way, h3 behind one
// that drops none. Paced from --member and read back with --verify, both
// members end byte-exact and the report names the fragments repaired on
// h2 (none on h3). A member without an entry for --verify-mac cannot be
// read back: exit 1, the member named.
func TestGroupWriteVerifyOverRelay(t *testing.T) {
	tn := netns.NewT(t, netns.Topology{Hosts: 3, Relay: true})
	h1, h2, h3, rh := tn.Host(0), tn.Host(1), tn.Host(2), tn.Relay()
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	s2, f2 := groupMember(t, bin, h2, dir, true)
	s3, f3 := groupMember(t, bin, h3, dir, true)
	data := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(25, 6))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	in := filepath.Join(dir, "image.bin")
	writeFile(t, in, data)
	m2, m3 := h2.MAC().String(), h3.MAC().String()
	write := func(extra ...string) (map[string]any, string, int) {
		t.Helper()
		args := append([]string{"dma", "write", "--iface", "eth0", "--mac", netWriter, "--peer", netGroup, "--addr", fmt.Sprint(groupBase),
			"--in", in, "--member", m2, "--member", m3, "--verify", "--verify-mac", netReader, "--json"}, extra...)
		out, errOut, code := oetpIn(t, bin, h1, args...)
		return lastLineJSON(t, out), errOut, code
	}

	lossy := startRelayOn(t, bin, rh, "p1", "p2", "--loss", "1%", "--seed", "3")
	clean := startRelayOn(t, bin, rh, "p1", "p3")
	got, errOut, code := write("--retries", "8", "--timeout", "200ms")
	st := lossy.stop(t)
	if code != 0 || got["ok"] != true || got["delivery"] != "verified" {
		t.Fatalf("dma write --verify: exit %d %v\n%s", code, got, errOut)
	}
	pacing, _ := got["pacing"].(map[string]any)
	if pacing["source"] != "members" || pacing["interval_us"].(float64) <= 0 {
		t.Fatalf("pacing %v", pacing)
	}
	members, _ := got["members"].([]any)
	if len(members) != 2 {
		t.Fatalf("members %v", got["members"])
	}
	frags := float64((len(data) + 8159) / 8160)
	for i, want := range []string{m2, m3} {
		m := members[i].(map[string]any)
		rep := m["repaired"].([]any)
		if m["member"] != want || m["fragments"] != frags || m["fragments_checked"] != frags || m["fragments_repaired"] != float64(len(rep)) {
			t.Fatalf("member %d: %v", i, m)
		}
		for _, r := range rep {
			r := r.(map[string]any)
			if idx := r["index"].(float64); r["addr"] != groupBase+idx*8160 || r["len"] != 8160.0 {
				t.Fatalf("member %s: repaired fragment %v is not the group write's fragment", want, r)
			}
		}
		wantState := "verified"
		if i == 0 {
			wantState = "repaired"
		}
		if m["state"] != wantState || (i == 0) != (len(rep) > 0) {
			t.Fatalf("member %s: state %v with %d fragments repaired, want %s (relay %v)", want, m["state"], len(rep), wantState, st)
		}
	}
	if st["p1->p2"]["dropped"] == 0 {
		t.Fatalf("relay %v dropped nothing", st)
	}
	for _, f := range []string{f2, f3} {
		if !bytes.Equal(memberFile(t, f, len(data)), data) {
			t.Fatalf("%s differs from the block written", f)
		}
	}
	t.Logf("h2: repaired %v; relay p1->p2 %v; pacing %v", members[0].(map[string]any)["repaired"], st["p1->p2"], pacing)
	if s := s2.stats(); s["drop_responder_busy"] != nil && s["drop_responder_busy"] != 0.0 {
		t.Fatalf("h2 dropped requests as busy: %v", s)
	}

	// h3 without an entry for the reader: it cannot be read back.
	lossy = startRelayOn(t, bin, rh, "p1", "p2")
	if code := s3.stop(); code != 0 {
		t.Fatalf("h3's serve exit %d", code)
	}
	groupMember(t, bin, h3, dir, false)
	got, errOut, code = write("--timeout", "200ms")
	if code != 1 || got["ok"] != false || got["delivery"] == "verified" {
		t.Fatalf("dma write --verify, h3 unreadable: exit %d %v\n%s", code, got, errOut)
	}
	members, _ = got["members"].([]any)
	if m := members[0].(map[string]any); m["state"] != "verified" {
		t.Fatalf("h2: %v", m)
	}
	m := members[1].(map[string]any)
	if m["state"] != "failed" || m["error_code"] != 8.0 || !strings.Contains(m["error"].(string), "--verify-mac "+netReader) {
		t.Fatalf("h3: %v", m)
	}
	if !strings.Contains(errOut, "member "+m3+" failed verification") || !strings.Contains(got["message"].(string), m3) {
		t.Fatalf("stderr %q / message %v do not name member %s", errOut, got["message"], m3)
	}
	lossy.stop(t)
	clean.stop(t)
}

// slowSpace is RAM whose bulk writes take a while, served by a responder
// context: with one context, a request that arrives while it is busy is
// dropped, as by an openENOC device.
// done counts the writes completed, so that the test reads the memory only
// once no write is in progress.
type slowSpace struct {
	*memory.RAM
	delay time.Duration
	done  *atomic.Uint64
}

func (s slowSpace) WriteAt(p []byte, addr uint32) memory.Resp {
	time.Sleep(s.delay)
	r := s.RAM.WriteAt(p, addr)
	s.done.Add(1)
	return r
}
func (s slowSpace) Immediate() bool { return false }

// TestGroupWritePacedOneContext: a member with one responder context that
// takes 5 ms per fragment loses fragments of an unpaced group write (the
// note on stderr says so), and none when the write names it with --member.
func TestGroupWritePacedOneContext(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := testutil.BuildCommand(t, ".")
	ram := endpointtest.NewRAM(t, groupBase, 1<<20)
	group, _ := wire.ParseMAC(netGroup)
	writer, _ := wire.ParseMAC(netWriter)
	var written atomic.Uint64
	ep := endpointtest.NewEndpoint(t, afpackettest.OpenLink(t, h2, afpacket.Config{}), slowSpace{ram, 5 * time.Millisecond, &written},
		endpoint.Config{Group: group, Contexts: 1})
	endpointtest.SetPeer(t, ep, 0, endpointtest.Window(writer, endpoint.ModeDMAWrite, groupBase, 1<<20))
	data := bytes.Repeat([]byte("one at a time!!!"), 64<<10/16) // 64 KiB: 9 fragments
	in := filepath.Join(t.TempDir(), "block.bin")
	writeFile(t, in, data)
	write := func(addr uint32, extra ...string) (map[string]any, string) {
		t.Helper()
		args := append([]string{"dma", "write", "--iface", "eth0", "--mac", netWriter, "--peer", netGroup, "--addr", fmt.Sprint(addr), "--in", in, "--json"}, extra...)
		out, errOut, code := oetpIn(t, bin, h1, args...)
		if code != 0 {
			t.Fatalf("dma write %v: exit %d\n%s%s", extra, code, out, errOut)
		}
		return lastLineJSON(t, out), errOut
	}
	// served counts the fragments taken or dropped, once every write
	// taken has completed.
	served := func() uint64 {
		s := ep.Stats()
		if written.Load() != s.ServedDMAWrite {
			return 0
		}
		return s.ServedDMAWrite + s.DropResponderBusy
	}

	got, errOut := write(groupBase)
	if !strings.Contains(errOut, "is not paced") || got["pacing"].(map[string]any)["source"] != "none" {
		t.Fatalf("unpaced write: %v; stderr %q", got, errOut)
	}
	testutil.Eventually(t, "the member took or dropped the 9 fragments", func() bool { return served() == 9 })
	lost := ep.Stats().DropResponderBusy
	back := make([]byte, len(data))
	ram.ReadAt(back, groupBase)
	if lost == 0 || bytes.Equal(back, data) {
		t.Fatalf("unpaced: %d fragments dropped as busy, memory equal %v: the test proves nothing", lost, bytes.Equal(back, data))
	}

	// Into memory still zero: the member's writes are its own.
	const second = groupBase + 0x80000
	got, errOut = write(second, "--member", h2.MAC().String())
	// Probes and one more: the only member is the slowest.
	testutil.Eventually(t, "the member took the probes and the 9 fragments", func() bool { return served() == 9+replicate.Probes+1+9 })
	if st := ep.Stats(); st.DropResponderBusy != lost {
		t.Fatalf("paced from --member: %d more fragments dropped as busy; %v", st.DropResponderBusy-lost, got)
	}
	ram.ReadAt(back, second)
	if !bytes.Equal(back, data) {
		t.Fatal("paced from --member: the member's memory differs from the block")
	}
	p := got["pacing"].(map[string]any)
	if p["source"] != "members" || p["slowest"] != h2.MAC().String() || p["interval_us"].(float64) < 5000 || strings.Contains(errOut, "not paced") {
		t.Fatalf("pacing %v; stderr %q", p, errOut)
	}
	t.Logf("pacing %v", p)
}

// TestHubGroupWrite: `oetp hub` on h1 owns two `oetp serve` devices (h2,
// h3) and the group "both" of them. The Python client's group_write with
// verify=True gets both members verified and reads them back exact; the Go
// client's GroupWrite too. A group whose member has no entry for its
// dma_read MAC fails TIMEOUT naming it.
func TestHubGroupWrite(t *testing.T) {
	tn := netns.NewBridge(t, 3)
	h1, h2, h3 := tn.Host(0), tn.Host(1), tn.Host(2)
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	sock := filepath.Join(dir, "hub.sock")
	const (
		groupLocal = "02:0e:0c:00:0a:01"
		badLocal   = "02:0e:0c:00:0a:02"
	)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "socket = %q\n", sock)
	for i, h := range []*netns.Host{h2, h3} {
		fmt.Fprintf(&cfg, "\n[[device]]\nname = \"b%d\"\niface = \"eth0\"\nmac = %q\ntimeout = \"300ms\"\n[device.local]\ndma_read = \"02:0e:0c:00:0b:0%d\"\n", i+2, h.MAC(), i+2)
	}
	fmt.Fprintf(&cfg, "\n[[group]]\nname = \"both\"\nmac = %q\ndevices = [\"b2\", \"b3\"]\nlocal = %q\n", netGroup, groupLocal)
	fmt.Fprintf(&cfg, "\n[[group]]\nname = \"bad\"\nmac = %q\ndevices = [\"b2\", \"b3\"]\nlocal = %q\n", netGroup, badLocal)
	config := filepath.Join(dir, "hub.toml")
	writeFile(t, config, []byte(cfg.String()))
	peers, errOut, code := oetpIn(t, bin, h1, "hub", "--config", config, "--print-peer-entries")
	if code != 0 || !strings.Contains(peers, "# group both") || !strings.Contains(peers, groupLocal) {
		t.Fatalf("--print-peer-entries: exit %d: %s%s", code, peers, errOut)
	}
	for i, h := range []*netns.Host{h2, h3} {
		args := []string{"--iface", "eth0", "--group", netGroup, "--region", "0x100000:1M",
			"--peer", groupLocal + ",mode=dma-write", "--peer", fmt.Sprintf("02:0e:0c:00:0b:0%d,mode=dma-read", i+2)}
		if i == 0 {
			args = append(args, "--peer", badLocal+",mode=dma-write") // h3 has none: "bad" cannot probe it
		}
		startServe(t, bin, h, args...)
	}
	startReady(t, bin, h1, "hub", "--config", config)

	if py, err := exec.LookPath("python3"); err != nil {
		t.Log("python3 is not installed: the Python client's group_write is not run")
	} else {
		cmd := exec.Command(py, filepath.Join(pythonDir(), "tests", "group_check.py"))
		cmd.Env = append(os.Environ(), "OETP_HUB="+sock, "OETP_TEST_GROUP=both", "OETP_TEST_MEMBERS=b2,b3", "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("group write verified on b2, b3")) {
			t.Fatalf("python3 group_check.py: %v\n%s", err, out)
		}
	}

	c := hubDial(t, sock)
	data := bytes.Repeat([]byte("group via hub.."), 4000)
	res, err := c.GroupWrite("both", 0x180000, data, true)
	if err != nil || res.Delivery != "verified" || len(res.Members) != 2 || res.Members[1].State != "verified" {
		t.Fatalf("GroupWrite both: %+v, %v", res, err)
	}
	for _, name := range []string{"b2", "b3"} {
		d, err := c.Device(name)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := d.ReadBlock(0x180000, len(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s read back: %v", name, err)
		}
	}
	_, err = c.GroupWrite("bad", 0x180000, data[:100], true)
	var oe *client.OpError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "member b3") || !strings.Contains(err.Error(), "no group frame was sent") {
		t.Fatalf("GroupWrite bad: %v", err)
	}
}
