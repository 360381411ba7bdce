//go:build linux

package hub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/internal/hostile"
)

// In a socket directory an older oetp made 1777, another user (uid 65534)
// holds the hub's lock file, or plants a symbolic link where it goes: the
// hub starts, says what it removed, and touches neither the squatter's
// file nor the link's target.
func TestSocketLockSquatted(t *testing.T) {
	hostile.NeedRoot(t)
	base := hostile.Dir(t)
	dir := filepath.Join(base, "run")
	os.Mkdir(dir, 0o755)
	os.Chmod(dir, 0o777|os.ModeSticky)
	path := filepath.Join(dir, "hub.sock")
	lock := path + ".lock"
	hostile.Squat(t, lock)
	keep := filepath.Join(base, "kept")
	if err := os.Link(lock, keep); err != nil {
		t.Fatal(err)
	}
	l, err := hub.ListenUnix(path)
	if err != nil {
		t.Fatalf("squatted lock: %v", err)
	}
	r := l.(interface{ Replaced() string }).Replaced()
	if !strings.Contains(r, "uid 65534") || !strings.Contains(r, "process 4242") || !strings.Contains(r, lock) {
		t.Errorf("Replaced() = %q", r)
	}
	if b, _ := os.ReadFile(keep); string(b) != "4242\n" {
		t.Errorf("the squatter's file now holds %q", b)
	}
	if fi, _ := os.Lstat(dir); fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("socket directory left %v", fi.Mode())
	}
	l.Close()

	// A symbolic link to a victim file where the lock goes.
	os.Chmod(dir, 0o777|os.ModeSticky)
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o666)
	os.Symlink(victim, lock)
	os.Lchown(lock, hostile.UID, hostile.UID)
	l, err = hub.ListenUnix(path)
	if err != nil {
		t.Fatalf("planted symlink: %v", err)
	}
	defer l.Close()
	if r := l.(interface{ Replaced() string }).Replaced(); !strings.Contains(r, "symbolic link owned by uid 65534") {
		t.Errorf("Replaced() = %q", r)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("victim now holds %q", b)
	}
	if fi, err := os.Lstat(lock); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("lock file %v %v", fi.Mode(), err)
	}
}
