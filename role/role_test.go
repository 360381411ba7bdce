//go:build unix

package role_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/internal/hostile"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/wire"
)

var (
	macA = endpointtest.MAC(0x01)
	macB = endpointtest.MAC(0x02)
)

// lockDir points the package at a fresh directory.
func lockDir(t *testing.T) string {
	d := t.TempDir()
	t.Setenv(role.DirEnv, d)
	return d
}

func acquire(t *testing.T, iface string, mac wire.MAC, r role.Role) *role.Lock {
	t.Helper()
	l, err := role.Acquire(iface, mac, r, 0)
	if err != nil {
		t.Fatalf("Acquire(%s, %v, %v): %v", iface, mac, r, err)
	}
	t.Cleanup(func() { l.Release() })
	return l
}

// wantHeld checks a refusal: a *HeldError naming pid, matching ErrHeld.
func wantHeld(t *testing.T, err error, r role.Role, pid int) *role.HeldError {
	t.Helper()
	var he *role.HeldError
	if !errors.As(err, &he) || !errors.Is(err, role.ErrHeld) {
		t.Fatalf("err = %v, want a *role.HeldError", err)
	}
	if he.PID != pid || he.Role != r || !strings.Contains(err.Error(), "process "+strconv.Itoa(pid)) {
		t.Fatalf("HeldError %+v (%q), want role %v held by PID %d", he, err, r, pid)
	}
	return he
}

// TestRoles: each (interface, MAC, role) has one holder; the two roles of
// one address, and other MACs and interfaces, are independent; Release lets
// the next holder in and removes the file.
func TestRoles(t *testing.T) {
	d := lockDir(t)
	ini := acquire(t, "eth0", macA, role.Initiator)
	acquire(t, "eth0", macA, role.Responder)
	acquire(t, "eth0", macB, role.Initiator)
	acquire(t, "eth1", macA, role.Initiator)
	for _, r := range []role.Role{role.Initiator, role.Responder} {
		start := time.Now()
		_, err := role.Acquire("eth0", macA, r, 0)
		he := wantHeld(t, err, r, os.Getpid())
		if time.Since(start) > time.Second || he.Waited != 0 || !strings.Contains(err.Error(), "at once") {
			t.Errorf("wait 0 took %v (Waited %v): %v", time.Since(start), he.Waited, err)
		}
		if !strings.Contains(he.Command, "role.test") || filepath.Dir(he.Path) != d {
			t.Errorf("HeldError command %q, path %q", he.Command, he.Path)
		}
	}
	if err := ini.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ini.Path()); !os.IsNotExist(err) {
		t.Errorf("released lock file still there: %v", err)
	}
	if err := ini.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	acquire(t, "eth0", macA, role.Initiator)
}

// TestWait: a waiting Acquire gets the role as soon as it is released, and
// one whose wait ends says how long it waited.
// TestRoleNames: each role has its name; another value says what it is.
func TestRoleNames(t *testing.T) {
	for r, want := range map[role.Role]string{role.Initiator: "initiator", role.Responder: "responder", 0: "Role(0)", 3: "Role(3)"} {
		if got := r.String(); got != want {
			t.Errorf("Role(%d).String() = %q, want %q", uint8(r), got, want)
		}
	}
}

func TestWait(t *testing.T) {
	lockDir(t)
	l := acquire(t, "eth0", macA, role.Initiator)
	start := time.Now()
	_, err := role.Acquire("eth0", macA, role.Initiator, 150*time.Millisecond)
	he := wantHeld(t, err, role.Initiator, os.Getpid())
	if el := time.Since(start); el < 150*time.Millisecond || he.Waited < 140*time.Millisecond || !strings.Contains(err.Error(), "after waiting") {
		t.Errorf("refused after %v (Waited %v): %v", el, he.Waited, err)
	}
	time.AfterFunc(100*time.Millisecond, func() { l.Release() })
	l2, err := role.Acquire("eth0", macA, role.Initiator, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l2.Release()
}

func TestBadArguments(t *testing.T) {
	lockDir(t)
	for _, c := range []struct {
		iface string
		mac   wire.MAC
		r     role.Role
	}{
		{"", macA, role.Initiator},
		{"a/b", macA, role.Initiator},
		{"eth0", wire.MAC{}, role.Initiator},
		{"eth0", wire.MAC{0x03, 0, 0, 0, 0, 1}, role.Responder},
		{"eth0", macA, role.Role(0)},
	} {
		if l, err := role.Acquire(c.iface, c.mac, c.r, 0); err == nil || errors.Is(err, role.ErrHeld) {
			l.Release()
			t.Errorf("Acquire(%q, %v, %v) = %v, want an argument error", c.iface, c.mac, c.r, err)
		}
	}
}

// TestDir: $OETP_LOCK_DIR is created 0700 and used; one others may write
// is taken back (if ours) or refused (if another user's).
func TestDir(t *testing.T) {
	d := filepath.Join(t.TempDir(), "locks")
	t.Setenv(role.DirEnv, d)
	if got, err := role.Dir(); err != nil || got != d {
		t.Fatalf("Dir = %q, %v, want %s", got, err, d)
	}
	if fi, err := os.Lstat(d); err != nil || fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("lock directory %v (%v), want drwx------", fi.Mode(), err)
	}
	os.Chmod(d, 0o777|os.ModeSticky)
	if _, err := role.Dir(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(d); fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("our world-writable lock directory stays %v, want drwx------", fi.Mode())
	}
	if os.Geteuid() == 0 {
		os.Chown(d, hostile.UID, hostile.UID)
		if _, err := role.Acquire("eth0", macA, role.Initiator, 0); err == nil || !strings.Contains(err.Error(), "uid 65534") || !strings.Contains(err.Error(), role.DirEnv) {
			t.Errorf("another user's lock directory: %v", err)
		}
	}
	if !strings.Contains(role.DirHelp, role.SystemDir) || !strings.Contains(role.DirHelp, "XDG_RUNTIME_DIR") {
		t.Errorf("DirHelp does not name the directories: %s", role.DirHelp)
	}
}

// holderEnv makes the test binary a process that takes a role, reports
// "held", and sleeps until killed.
const holderEnv = "ROLE_TEST_HOLDER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(holderEnv); spec != "" {
		r := role.Initiator
		if spec == "responder" {
			r = role.Responder
		}
		if _, err := role.Acquire("eth0", macA, r, 0); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		fmt.Println("held")
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// TestAcrossProcesses: a role held by another process is refused with that
// process's PID, and is free again the moment the process is killed (no
// Release: the kernel drops the flock).
func TestAcrossProcesses(t *testing.T) {
	lockDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"=responder")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 100)
	if n, _ := out.Read(buf); !strings.HasPrefix(string(buf[:n]), "held") {
		t.Fatalf("holder said %q", buf[:n])
	}
	acquire(t, "eth0", macA, role.Initiator) // the other role is free
	_, err = role.Acquire("eth0", macA, role.Responder, 0)
	wantHeld(t, err, role.Responder, cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	acquire(t, "eth0", macA, role.Responder)
}

// TestNamespaces: interface names are per network namespace, so the same
// (interface, MAC) in two namespaces are two addresses; in one namespace it
// is one.
func TestNamespaces(t *testing.T) {
	lockDir(t)
	tn := netns.NewPair(t)
	var locks []*role.Lock
	defer func() {
		for _, l := range locks {
			l.Release()
		}
	}()
	for _, h := range []*netns.Host{tn.Host(0), tn.Host(1)} {
		if err := h.Do(func() error {
			l, err := role.Acquire("eth0", macA, role.Responder, 0)
			locks = append(locks, l)
			return err
		}); err != nil {
			t.Fatalf("%s: %v", h, err)
		}
	}
	err := tn.Host(0).Do(func() error {
		_, err := role.Acquire("eth0", macA, role.Responder, 0)
		return err
	})
	wantHeld(t, err, role.Responder, os.Getpid())
}

// TestSweep: an Acquire removes the lock files no process holds (left by
// killed processes), and leaves held ones and other files alone.
func TestSweep(t *testing.T) {
	d := lockDir(t)
	stale := filepath.Join(d, "eth9_020e0c000009_initiator_net1.lock")
	other := filepath.Join(d, "README")
	hubLock := filepath.Join(d, "hub.sock.lock") // another protocol's lock
	for _, p := range []string{stale, other, hubLock} {
		if err := os.WriteFile(p, []byte("4242\noetp rmem read\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	held := acquire(t, "eth0", macA, role.Responder)
	acquire(t, "eth0", macB, role.Responder)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale lock file still there: %v", err)
	}
	for _, p := range []string{other, hubLock, held.Path()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	_, err := role.Acquire("eth0", macA, role.Responder, 0)
	wantHeld(t, err, role.Responder, os.Getpid())
}

// TestHeldByAnotherUser: a refusal names the holder's user when it is not
// the caller's.
func TestHeldByAnotherUser(t *testing.T) {
	err := &role.HeldError{Iface: "eth0", MAC: macA, Role: role.Responder, PID: 77, Command: "oetp serve", UID: hostile.UID, Path: "/x.lock"}
	if s := err.Error(); !strings.Contains(s, "process 77 (oetp serve) of uid 65534") {
		t.Errorf("%s", s)
	}
}

// TestSquatAndSymlink: in a lock directory an older oetp made 1777, another
// user's lock file (held by its process) and another user's symbolic link
// to a victim file stand where the roles' files go. Acquire takes the
// roles, removes those names and says so; the squatter's file and the
// victim are not touched.
func TestSquatAndSymlink(t *testing.T) {
	hostile.NeedRoot(t)
	base := hostile.Dir(t)
	d := filepath.Join(base, "run-oetp")
	os.Mkdir(d, 0o755)
	os.Chmod(d, 0o777|os.ModeSticky)
	t.Setenv(role.DirEnv, d)
	// The lock files' names, learnt by taking the roles once.
	ini, resp := acquire(t, "eth0", macA, role.Initiator), acquire(t, "eth0", macA, role.Responder)
	iniPath, respPath := ini.Path(), resp.Path()
	ini.Release()
	resp.Release()
	os.Chmod(d, 0o777|os.ModeSticky) // as it was

	// The squatter: uid 65534 holds an flock on the responder's file.
	hostile.Squat(t, respPath)
	keep := filepath.Join(base, "squat-kept")
	if err := os.Link(respPath, keep); err != nil { // to look at the squatter's file afterwards
		t.Fatal(err)
	}
	// The symlink: uid 65534 points the initiator's name at a victim file.
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o666)
	os.Chown(victim, hostile.UID, hostile.UID)
	os.Symlink(victim, iniPath)
	os.Lchown(iniPath, hostile.UID, hostile.UID)

	l1, err := role.Acquire("eth0", macA, role.Responder, 0)
	if err != nil {
		t.Fatalf("responder with a squatter: %v", err)
	}
	defer l1.Release()
	if !strings.Contains(l1.Replaced, "uid 65534") || !strings.Contains(l1.Replaced, "process 4242") {
		t.Errorf("Replaced = %q, want the squatter's uid and pid", l1.Replaced)
	}
	l2, err := role.Acquire("eth0", macA, role.Initiator, 0)
	if err != nil {
		t.Fatalf("initiator with a planted symlink: %v", err)
	}
	defer l2.Release()
	if !strings.Contains(l2.Replaced, "symbolic link owned by uid 65534") {
		t.Errorf("Replaced = %q", l2.Replaced)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
		t.Errorf("victim file now %q %v", b, err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "4242\n" {
		t.Errorf("squatter's file now %q %v", b, err)
	}
	for _, p := range []string{l1.Path(), l2.Path()} {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v %v, want a regular 0644 file", p, fi.Mode(), err)
		}
	}
	if fi, _ := os.Lstat(d); fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("lock directory left %v, want drwx------", fi.Mode())
	}
}
