//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
)

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
