//go:build linux

package netns_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

func nsInode(t *testing.T) string {
	t.Helper()
	s, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func interfaceNames(t *testing.T) []string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	return names
}

func TestPair(t *testing.T) {
	before := strings.Join(interfaceNames(t), ",")
	tn := netns.NewPair(t)
	if got := len(tn.Hosts()); got != 2 {
		t.Fatalf("len(Hosts()) = %d, want 2", got)
	}
	seen := map[string]bool{}
	for i, h := range tn.Hosts() {
		wantName := []string{"h1", "h2"}[i]
		wantMAC := wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, byte(i + 1)}
		if h.Name() != wantName || h.IfName() != "eth0" || h.MAC() != wantMAC || h.Index() <= 1 {
			t.Errorf("host %d = %s %s %s index %d, want %s eth0 %s index > 1", i, h.Name(), h.IfName(), h.MAC(), h.Index(), wantName, wantMAC)
		}
		if tn.Host(i) != h {
			t.Errorf("Host(%d) != Hosts()[%d]", i, i)
		}
		err := h.Do(func() error {
			ino := nsInode(t)
			if seen[ino] {
				t.Errorf("%s shares namespace %s with another host", h, ino)
			}
			seen[ino] = true
			if got := strings.Join(interfaceNames(t), ","); got != "lo,eth0" {
				t.Errorf("%s interfaces = %s, want lo,eth0", h, got)
			}
			ifi, err := net.InterfaceByName("eth0")
			if err != nil {
				return err
			}
			mac := h.MAC()
			if ifi.MTU != 9000 || !bytes.Equal(ifi.HardwareAddr, mac[:]) || ifi.Index != h.Index() || ifi.Flags&net.FlagUp == 0 {
				t.Errorf("%s eth0 = %+v, want MTU 9000, MAC %s, index %d, up", h, ifi, h.MAC(), h.Index())
			}
			lo, err := net.InterfaceByName("lo")
			if err != nil {
				return err
			}
			if lo.Flags&net.FlagUp == 0 {
				t.Errorf("%s lo is down", h)
			}
			v6, err := os.ReadFile("/proc/sys/net/ipv6/conf/eth0/disable_ipv6")
			if err == nil && string(v6) != "1\n" {
				t.Errorf("%s eth0 disable_ipv6 = %q, want 1", h, v6)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen[nsInode(t)] {
		t.Error("a host shares the test's own namespace")
	}
	if after := strings.Join(interfaceNames(t), ","); after != before {
		t.Errorf("initial namespace interfaces changed: %s -> %s", before, after)
	}
	if err := tn.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tn.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	err := tn.Host(0).Do(func() error { return nil })
	if err == nil || err.Error() != "netns: h1 is closed" {
		t.Fatalf("Do after Close = %v, want netns: h1 is closed", err)
	}
}

// packetSocket opens a raw AF_PACKET socket for EtherType 0x88B5 on ifindex
// with a one-second receive timeout.
func packetSocket(t *testing.T, ifindex int) int {
	t.Helper()
	const proto = 0xb588 // htons(0x88B5)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		t.Fatal(err)
	}
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return fd
}

func frame(dst, src wire.MAC, payload string) []byte {
	f := append(append(dst[:], src[:]...), 0x88, 0xb5)
	return append(f, payload...)
}

func TestBridge(t *testing.T) {
	tn := netns.NewBridge(t, 3)
	fds := make([]int, 3)
	for i, h := range tn.Hosts() {
		if want := netns.HostMAC(i + 1); h.MAC() != want {
			t.Fatalf("%s MAC = %s, want %s", h, h.MAC(), want)
		}
		if err := h.Do(func() error { fds[i] = packetSocket(t, h.Index()); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	h1 := tn.Host(0)
	bc := frame(wire.Broadcast, h1.MAC(), "to everyone")
	if _, err := unix.Write(fds[0], bc); err != nil {
		t.Fatal(err)
	}
	uc := frame(tn.Host(2).MAC(), h1.MAC(), "to h3 only")
	if _, err := unix.Write(fds[0], uc); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 9100)
	for i := 1; i < 3; i++ {
		n, err := unix.Read(fds[i], buf)
		if err != nil {
			t.Fatalf("h%d read: %v", i+1, err)
		}
		if !bytes.Equal(buf[:n], bc) {
			t.Errorf("h%d got % x, want % x", i+1, buf[:n], bc)
		}
	}
	// The bridge learned h1 from the broadcast, but h3 is still unknown to
	// it, so the unicast is flooded; h3's own copy must be exact.
	n, err := unix.Read(fds[2], buf)
	if err != nil || !bytes.Equal(buf[:n], uc) {
		t.Errorf("h3 got % x, %v; want % x", buf[:n], err, uc)
	}
	// A 9014-byte frame crosses the bridge (MTU 9000 everywhere).
	big := frame(h1.MAC(), tn.Host(1).MAC(), strings.Repeat("j", 9000))
	if _, err := unix.Write(fds[1], big); err != nil {
		t.Fatal(err)
	}
	n, err = unix.Read(fds[0], buf)
	if err != nil || n != 9014 || !bytes.Equal(buf[:n], big) {
		t.Errorf("h1 got %d bytes, %v; want the 9014-byte frame", n, err)
	}
}

func TestDoPropagates(t *testing.T) {
	tn := netns.NewPair(t)
	h := tn.Host(1)
	sentinel := errors.New("sentinel")
	if err := h.Do(func() error { return sentinel }); err != sentinel {
		t.Errorf("Do error = %v, want sentinel", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want boom", r)
			}
		}()
		h.Do(func() error { panic("boom") })
		t.Error("Do returned after a panic in fn")
	}()
	// runtime.Goexit (t.SkipNow here) inside fn ends the caller's goroutine.
	done := make(chan bool)
	go func() {
		defer close(done)
		h.Do(func() error { runtime.Goexit(); return nil })
		done <- true
	}()
	if <-done {
		t.Error("Do returned after runtime.Goexit in fn")
	}
}

func TestCommand(t *testing.T) {
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Skip("needs nsenter (util-linux): apt-get install util-linux")
	}
	tn := netns.NewPair(t)
	for _, h := range tn.Hosts() {
		out, err := h.Command("ip", "-o", "link", "show").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", h, err, out)
		}
		s := string(out)
		if strings.Count(s, "\n") != 2 || !strings.Contains(s, "eth0@") || !strings.Contains(s, "mtu 9000") ||
			!strings.Contains(s, "link/ether "+h.MAC().String()) {
			t.Errorf("%s: ip link show =\n%s\nwant lo and eth0 with mtu 9000 and %s", h, s, h.MAC())
		}
	}
	cmd := tn.Host(0).Command("no-such-program-oetp")
	if err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "netns: h1:") || !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("Run of a missing program = %v, want netns: h1: ... executable file not found", err)
	}
}

func TestSetMTUAndLinkUp(t *testing.T) {
	tn := netns.NewPair(t)
	h := tn.Host(0)
	if err := h.SetMTU(1500); err != nil {
		t.Fatal(err)
	}
	if err := h.SetLinkUp(false); err != nil {
		t.Fatal(err)
	}
	err := h.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		if ifi.MTU != 1500 || ifi.Flags&net.FlagUp != 0 {
			t.Errorf("eth0 MTU %d flags %v, want MTU 1500 and down", ifi.MTU, ifi.Flags)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTopologyErrors(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		topo netns.Topology
		want string
	}{
		{netns.Topology{Hosts: 1}, "netns: Topology.Hosts is 1: use 2 through 254"},
		{netns.Topology{Hosts: 255}, "netns: Topology.Hosts is 255: use 2 through 254"},
		{netns.Topology{Hosts: 2, MTU: 67}, "netns: Topology.MTU is 67: use 68 through 65535, or 0 for 9000"},
		{netns.Topology{Hosts: 2, IfName: "a-very-long-ifname"}, `netns: Topology.IfName "a-very-long-ifname" is longer than 15 bytes`},
	} {
		n, err := netns.New(tc.topo)
		if err == nil {
			n.Close()
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) = %v, want %s", tc.topo, err, tc.want)
		}
	}
}

func TestCustomTopology(t *testing.T) {
	tn := netns.NewT(t, netns.Topology{Hosts: 2, Bridge: true, MTU: 1500, IfName: "oetp0"})
	var fds [2]int
	for i, h := range tn.Hosts() {
		if h.IfName() != "oetp0" {
			t.Fatalf("IfName = %s", h.IfName())
		}
		if err := h.Do(func() error { fds[i] = packetSocket(t, h.Index()); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	f := frame(tn.Host(1).MAC(), tn.Host(0).MAC(), strings.Repeat("x", 1500))
	if _, err := unix.Write(fds[0], f); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2000)
	n, err := unix.Read(fds[1], buf)
	if err != nil || !bytes.Equal(buf[:n], f) {
		t.Fatalf("h2 got %d bytes, %v; want the 1514-byte frame", n, err)
	}
	if _, err := unix.Write(fds[0], append(f, 'y')); !errors.Is(err, unix.EMSGSIZE) {
		t.Fatalf("write of 1515 bytes over MTU 1500 = %v, want EMSGSIZE", err)
	}
}

// TestMain doubles as the helper process of TestCommandGoBinary.
func TestMain(m *testing.M) {
	if os.Getenv("OETP_NETNS_HELPER") == "1" {
		ifs, err := net.Interfaces()
		if err != nil {
			os.Exit(2)
		}
		for _, i := range ifs {
			os.Stdout.WriteString(i.Name + " " + i.HardwareAddr.String() + " " + strings.Join(os.Args[1:], ",") + "\n")
		}
		os.Exit(0)
	}
	if os.Getenv("OETP_NETNS_MAIN_THREAD") == "1" {
		os.Exit(mainThreadHelper())
	}
	before, err := os.Readlink("/proc/self/ns/net")
	code := m.Run()
	// The main thread must end in the namespace it started in, even if Do
	// or New ran on it (the runtime never lets it exit).
	if after, err2 := os.Readlink("/proc/self/ns/net"); err != nil || err2 != nil || after != before {
		fmt.Fprintf(os.Stderr, "main thread namespace %s at start, %s at end (%v, %v)\n", before, after, err, err2)
		code = 1
	}
	os.Exit(code)
}

// TestCommandGoBinary runs a Go program (this test binary) inside a host,
// as the CLI tests will run `oetp serve` and `oetp rmem`.
func TestCommandGoBinary(t *testing.T) {
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Skip("needs nsenter (util-linux): apt-get install util-linux")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tn := netns.NewBridge(t, 3)
	h := tn.Host(2)
	cmd := h.Command(exe, "serve", "--flag=a b")
	cmd.Env = append(os.Environ(), "OETP_NETNS_HELPER=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "lo  serve,--flag=a b\neth0 02:0e:0c:00:00:03 serve,--flag=a b\n"
	if string(out) != want {
		t.Errorf("helper in h3 printed\n%s\nwant\n%s", out, want)
	}
}

// mainThreadHelper enters a host's namespace on the main thread the way a Do
// function scheduled there would, and checks that the thread is back in its
// own namespace afterwards. Exit code 3: not on the main thread.
func mainThreadHelper() int {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		return 3
	}
	before, _ := os.Readlink("/proc/self/ns/net")
	tn, err := netns.New(netns.Topology{Hosts: 2})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer tn.Close()
	if err := netns.EnterOnMainThread(tn.Host(0)); err != nil {
		fmt.Println(err)
		return 1
	}
	after, _ := os.Readlink("/proc/self/ns/net")
	fmt.Println(before == after, before, after)
	return 0
}

// TestMainThreadRestored: the runtime never lets the main thread exit, so a
// Do function that lands on it must leave it in its own namespace.
func TestMainThreadRestored(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "OETP_NETNS_MAIN_THREAD=1")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 3 {
		t.Skip("the child process's main goroutine was not on the main thread")
	}
	if err != nil || !strings.HasPrefix(string(out), "true ") {
		t.Fatalf("helper: %v: %s", err, out)
	}
}
