//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/link/netns"
	"github.com/openenoc/oetp/link/role"
)

// TestRolesOverVeth: one MAC, one endpoint, across processes. A second
// serve on the interface and MAC exits 2 at once naming the first one's
// PID; a one-shot rmem from the MAC serve answers on works beside it; an
// rmem whose MAC's initiator role is held waits for it (--wait), and exits
// 2 naming the holder when the wait ends.
func TestRolesOverVeth(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := buildOetp(t)
	srv1 := startServe(t, bin, h1, "--iface", "eth0", "--region", "0:64K", "--peer", netClient+",mode=rmem")
	startServe(t, bin, h2, "--iface", "eth0", "--region", "0:64K", "--peer", netServer+",mode=rmem")

	start := time.Now()
	out, errOut, code := oetpIn(t, bin, h1, "serve", "--iface", "eth0", "--region", "0:64K")
	pid := strconv.Itoa(srv1.cmd.Process.Pid)
	if code != 2 || !strings.Contains(errOut, "responder role of eth0 "+netServer+" is held by process "+pid+" (oetp serve") || time.Since(start) > 5*time.Second {
		t.Errorf("second serve: exit %d after %v, stdout %q, stderr %q; want exit 2 naming PID %s", code, time.Since(start), out, errOut, pid)
	}
	// A second serve on another MAC of the interface is another endpoint.
	startServe(t, bin, h1, "--iface", "eth0", "--mac", "02:0e:0c:00:00:b3").stop()

	// rmem from h1's serve MAC to h2's serve.
	if out, errOut, code := oetpIn(t, bin, h1, "rmem", "write", "--iface", "eth0", "--peer", netClient, "--addr", "8", "--data", "0x5a5a"); code != 0 {
		t.Errorf("rmem beside serve on one MAC: exit %d, %q %q", code, out, errOut)
	}
	if out, errOut, code := oetpIn(t, bin, h1, "rmem", "read", "--iface", "eth0", "--peer", netClient, "--addr", "8"); code != 0 || !strings.Contains(out, "= 0x00005a5a") {
		t.Errorf("rmem read beside serve on one MAC: exit %d, %q %q", code, out, errOut)
	}

	// The test holds h2's initiator role, as another rmem would.
	var held *role.Lock
	if err := h2.Do(func() (err error) {
		held, err = role.Acquire("eth0", mustMAC(t, netClient), role.Initiator, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	start = time.Now()
	_, errOut, code = oetpIn(t, bin, h2, "rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "8", "--wait", "300ms", "--json")
	el := time.Since(start)
	me := strconv.Itoa(os.Getpid())
	if code != 2 || el < 300*time.Millisecond || !strings.Contains(errOut, "initiator role of eth0 "+netClient+" is held by process "+me) || !strings.Contains(errOut, "after waiting 3") {
		t.Errorf("rmem with its role held: exit %d after %v, stderr %q; want exit 2 after 300ms naming PID %s", code, el, errOut, me)
	}
	time.AfterFunc(300*time.Millisecond, func() { held.Release() })
	start = time.Now()
	out, errOut, code = oetpIn(t, bin, h2, "rmem", "read", "--iface", "eth0", "--peer", netServer, "--addr", "8")
	if el := time.Since(start); code != 0 || el < 300*time.Millisecond {
		t.Errorf("rmem waiting for its role: exit %d after %v, %q %q; want success after the 300ms the role was held", code, el, out, errOut)
	}
}
