//go:build linux

package hub_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/internal/hostile"
)

// TestAccessHelper is the client of TestAccessRules, run as another user:
// it tries each operation on board1 and prints one line per result.
func TestAccessHelper(t *testing.T) {
	sock := os.Getenv("OETP_TEST_ACCESS")
	if sock == "" {
		t.Skip("the other user's client of TestAccessRules")
	}
	c, err := client.Dial(sock)
	if err != nil {
		fmt.Printf("dial: %v\n", err)
		return
	}
	defer c.Close()
	d, err := c.Device("board1")
	if err != nil {
		fmt.Printf("open: %v\n", err)
		return
	}
	v, err := d.Read(0x10)
	fmt.Printf("read: %#x %v\n", v, err)
	fmt.Printf("write: %v\n", d.Write(0x10, 0x11111111, 0xFFFFFFFF))
	fmt.Printf("write_block: %v\n", d.WriteBlock(0x100000, bytes.Repeat([]byte{0x5A}, 4096)))
	fmt.Printf("streamed write_block: %v\n", d.WriteBlock(0x1000000, bytes.Repeat([]byte{0x5A}, 2<<20)))
	b := d.NewBatch()
	b.Read(0x10)
	b.Write(0x14, 1, 0xFFFFFFFF)
	fmt.Printf("batch: %v\n", b.Run())
	b = d.NewBatch()
	r := b.Read(0x10)
	err = b.Run()
	fmt.Printf("read batch: %#x %v\n", r.Value, err)
	v, err = d.Read(0x10)
	fmt.Printf("read after: %#x %v\n", v, err)
	// Large bodies announced and never sent: refused from the header (a
	// group write from its group's name), without waiting for the body.
	for _, r := range []struct {
		name   string
		typ    uint8
		handle uint16
		prefix []byte
	}{
		{"big batch", proto.Batch, 1, nil},
		{"big group_write", proto.GroupWrite, 0, append([]byte{0, 3, 0}, "all"...)},
	} {
		rc, err := net.Dial("unix", sock)
		if err != nil {
			fmt.Printf("%s: %v\n", r.name, err)
			continue
		}
		req := proto.AppendHeader(nil, r.typ, r.handle, 2)
		binary.LittleEndian.PutUint32(req, uint32(len(req)-4+8<<20))
		rc.Write(append(req, r.prefix...))
		rc.SetReadDeadline(time.Now().Add(3 * time.Second))
		hdr, body, _, err := proto.ReadMessage(rc, nil)
		if err != nil {
			fmt.Printf("%s: %v\n", r.name, err)
			rc.Close()
			continue
		}
		st, _, _ := proto.ParseReply(body)
		fmt.Printf("%s: tag %d %s: %s\n", r.name, hdr.Tag, proto.StatusName(st.Status), st.Message)
		rc.Close()
	}
}

// A device with read = ["nobody"] and write = ["@staff"]: uid 65534
// (nobody) reads, and its writes (single, block, streamed block, batch) are
// refused with DENIED naming the rule, on the same connection, and do not
// run; a user in neither list cannot open it; root and the hub's user may
// do anything. The socket's group (socket_group) lets the other users
// connect at all.
func TestAccessRules(t *testing.T) {
	hostile.NeedRoot(t)
	th := newTestHubConfig(t, func(c *hub.Config) {
		c.Devices[0].Access = hub.Access{Read: []string{"nobody"}, Write: []string{"@staff"}}
		c.Groups = []hub.GroupConfig{{Name: "all", MAC: groupMAC, Devices: []string{"board1"}}}
	})
	dir := hostile.Dir(t)
	sock := filepath.Join(dir, "run", "hub.sock")
	os.Mkdir(filepath.Dir(sock), 0o755)
	l, err := hub.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.SetSocketGroup(sock, "nogroup"); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(sock), 0o755)
	go th.h.Serve(l, false)
	self, _ := os.Executable()
	exe := filepath.Join(dir, "hub.test")
	if out, err := exec.Command("cp", self, exe).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	root := openDev(t, dial(t, th.path))
	if err := root.Write(0x10, 0xC0FFEE01, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	run := func(uid, gid uint32) string {
		cmd := exec.Command(exe, "-test.run=^TestAccessHelper$")
		cmd.Env = append(os.Environ(), "OETP_TEST_ACCESS="+sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper as uid %d: %v\n%s", uid, err, out)
		}
		return string(out)
	}
	out := run(hostile.UID, hostile.UID)
	t.Logf("as nobody:\n%s", out)
	rule := `is not in its write = ["@staff"]; nothing was run`
	for _, want := range []string{
		"read: 0xc0ffee01 <nil>",
		`write: oetp hub: DENIED: write on device "board1" refused: uid 65534 (nobody), pid `,
		"write_block: oetp hub: DENIED: write on device",
		"streamed write_block: oetp hub: DENIED: write on device",
		`batch: oetp hub: DENIED: BATCH with a write: write on device "board1" refused: uid 65534 (nobody)`,
		"read batch: 0xc0ffee01 <nil>",
		"read after: 0xc0ffee01 <nil>",
		`big batch: tag 2 DENIED: BATCH with a write: write on device "board1" refused: uid 65534 (nobody)`,
		`big group_write: tag 2 DENIED: group_write all: write on device "board1" refused: uid 65534 (nobody)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("as nobody: no %q", want)
		}
	}
	if strings.Count(out, rule) != 6 {
		t.Errorf("as nobody: %d refusals name the rule, want 6", strings.Count(out, rule))
	}
	// Nothing the refused writes asked for ran.
	if v, err := root.Read(0x10); err != nil || v != 0xC0FFEE01 {
		t.Errorf("0x10 = %#x %v after the refused write", v, err)
	}
	if v, err := root.Read(0x14); err != nil || v != 0 {
		t.Errorf("0x14 = %#x %v after the refused batch", v, err)
	}
	if b, err := root.ReadBlock(0x100000, 4); err != nil || !bytes.Equal(b, make([]byte, 4)) {
		t.Errorf("block = %x %v after the refused write_block", b, err)
	}
	if b, err := root.ReadBlock(0x1000000, 4); err != nil || !bytes.Equal(b, make([]byte, 4)) {
		t.Errorf("block = %x %v after the refused streamed write_block", b, err)
	}

	// The Python client, as nobody (the system's python3: one under
	// root's home is out of its reach).
	if py := "/usr/bin/python3"; exec.Command(py, "-c", "").Run() == nil {
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command(py, "-c", pyAccess, sock)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(filepath.Dir(file), "..", "python"), "PYTHONDONTWRITEBYTECODE=1")
		hostile.As(cmd)
		pout, err := cmd.CombinedOutput()
		out := string(pout)
		if err != nil || !strings.Contains(out, "read 0xc0ffee01") ||
			!strings.Contains(out, `write DENIED write on device "board1" refused: uid 65534 (nobody)`) || !strings.Contains(out, rule) ||
			!strings.Contains(out, "maybe_executed=False True") {
			t.Errorf("Python client as nobody: %v\n%s", err, out)
		}
	}

	// In neither list (but in the socket's group): not even OPEN.
	out = run(hostile.UID-1, hostile.UID)
	if !strings.Contains(out, `open: oetp hub: DENIED: OPEN of device "board1" refused: uid 65533, pid `) ||
		!strings.Contains(out, `read = ["nobody"] and write = ["@staff"]`) {
		t.Errorf("as uid 65533:\n%s", out)
	}
	// Root writes.
	if err := root.Write(0x14, 7, 0xFFFFFFFF); err != nil {
		t.Errorf("root: %v", err)
	}
	var he *client.HubError
	if err := root.Write(0x14, 7, 0xFFFFFFFF); errors.As(err, &he) && he.Status == proto.StatusDenied {
		t.Errorf("root denied: %v", err)
	}
}

// pyAccess reads and tries to write board1 through the socket argv[1].
const pyAccess = `
import sys, oetp
d = oetp.connect(sys.argv[1]).device("board1")
print("read %#x" % d.read(0x10))
try:
    d.write(0x10, 0x11111111)
    print("write ok")
except oetp.Denied as e:
    print("write %s %s maybe_executed=%s %s" % (e.name, e.message, e.maybe_executed, isinstance(e, oetp.Error)))
`

// Unknown names in a rule are configuration errors naming the key.
func TestAccessConfig(t *testing.T) {
	for _, c := range []struct {
		a    hub.Access
		want string
	}{
		{hub.Access{Read: []string{"no-such-user-oetp"}}, `read: no user "no-such-user-oetp"`},
		{hub.Access{Write: []string{"@no-such-group-oetp"}}, `write: no group "no-such-group-oetp"`},
	} {
		cfg := hub.Config{Devices: []hub.DeviceConfig{{Name: "b", Iface: "eth0", MAC: boardMAC, Access: c.a}}}
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.a, err, c.want)
		}
	}
}
