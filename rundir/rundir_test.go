//go:build unix

package rundir_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/rundir"
)

const other = 65534 // another user

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (to make files owned by another user, uid 65534)")
	}
}

// listen makes a socket at path.
func listen(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

func wantUntrusted(t *testing.T, err error, culprit string, uid int, words ...string) {
	t.Helper()
	var ue *rundir.UntrustedError
	if !errors.As(err, &ue) || ue.Culprit != culprit || ue.UID != uid {
		t.Fatalf("err = %v (%+v), want an UntrustedError for %s owned by %d", err, ue, culprit, uid)
	}
	for _, w := range append(words, rundir.TrustAnyOwnerEnv) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}

// CheckSocket: a socket of ours in a directory of ours passes; another
// user's socket, directory, or a directory others may write, a symbolic
// link to the socket, or another user's link above it are refused, naming
// the culprit and its owner.
func TestCheckSocket(t *testing.T) {
	needRoot(t)
	base := t.TempDir() // root's, 0700; /tmp above it is sticky
	dir := filepath.Join(base, "d")
	os.Mkdir(dir, 0o700)
	sock := filepath.Join(dir, "hub.sock")
	listen(t, sock)
	if err := rundir.CheckSocket(sock); err != nil {
		t.Fatalf("own socket: %v", err)
	}
	if err := rundir.CheckSocket(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing socket: %v", err)
	}

	// 0750 and 0755 are fine; group- or world-writable, even sticky, are not.
	for _, m := range []os.FileMode{0o750, 0o755} {
		os.Chmod(dir, m)
		if err := rundir.CheckSocket(sock); err != nil {
			t.Errorf("directory mode %o: %v", m, err)
		}
	}
	for _, m := range []os.FileMode{0o770, 0o777, 0o777 | os.ModeSticky} {
		os.Chmod(dir, m)
		wantUntrusted(t, rundir.CheckSocket(sock), dir, 0, "may be written by others", "chmod go-w "+dir)
	}
	os.Chmod(dir, 0o700)

	// Another user's socket; another user's directory.
	os.Lchown(sock, other, other)
	wantUntrusted(t, rundir.CheckSocket(sock), sock, other, "uid 65534", "not by root (you)")
	os.Lchown(sock, 0, 0)
	os.Chown(dir, other, other)
	wantUntrusted(t, rundir.CheckSocket(sock), dir, other, "uid 65534", "remove "+dir)
	os.Chown(dir, 0, 0)

	// A directory above that others may write is fine only if sticky.
	os.Chmod(base, 0o777)
	wantUntrusted(t, rundir.CheckSocket(sock), base, 0, "may be written by others")
	os.Chmod(base, 0o777|os.ModeSticky)
	if err := rundir.CheckSocket(sock); err != nil {
		t.Errorf("sticky directory above: %v", err)
	}
	os.Chmod(base, 0o700)

	// Links: the socket path itself never; a directory link of ours is
	// followed and its target checked; another user's link is refused.
	link := filepath.Join(base, "link.sock")
	os.Symlink(sock, link)
	wantUntrusted(t, rundir.CheckSocket(link), link, 0, "symbolic link")
	dlink := filepath.Join(base, "dlink")
	os.Symlink(dir, dlink)
	if err := rundir.CheckSocket(filepath.Join(dlink, "hub.sock")); err != nil {
		t.Errorf("through our own directory link: %v", err)
	}
	os.Chmod(dir, 0o777)
	wantUntrusted(t, rundir.CheckSocket(filepath.Join(dlink, "hub.sock")), dir, 0, "may be written by others")
	os.Chmod(dir, 0o700)
	os.Lchown(dlink, other, other)
	wantUntrusted(t, rundir.CheckSocket(filepath.Join(dlink, "hub.sock")), dlink, other, "uid 65534")

	// A regular file is not a socket.
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o600)
	wantUntrusted(t, rundir.CheckSocket(f), f, 0, "not a socket")
}

// Ensure creates a run-time directory 0700 (0755 for the system one),
// takes back one of ours that others may write, and refuses another user's
// directory or a symbolic link without touching it.
func TestEnsure(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	d := filepath.Join(base, "oetp-0")
	if err := rundir.Ensure(d); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(d); err != nil || fi.Mode() != os.ModeDir|0o700 {
		t.Fatalf("created %v %v, want drwx------", fi.Mode(), err)
	}
	os.Chmod(d, 0o777|os.ModeSticky)
	if err := rundir.Ensure(d); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(d); fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("mode %v after Ensure, want drwx------", fi.Mode())
	}
	if rundir.Mode(rundir.SystemDir) != 0o755 || rundir.Mode(d) != 0o700 {
		t.Errorf("Mode: %o %o", rundir.Mode(rundir.SystemDir), rundir.Mode(d))
	}

	// Planted by another user: refused, left as it is.
	theirs := filepath.Join(base, "theirs")
	os.Mkdir(theirs, 0o777)
	os.Chmod(theirs, 0o777)
	os.Chown(theirs, other, other)
	wantUntrustedDir(t, rundir.Ensure(theirs), theirs, other, "uid 65534")
	if fi, _ := os.Lstat(theirs); fi.Mode().Perm() != 0o777 {
		t.Errorf("their directory changed: %v", fi.Mode())
	}
	link := filepath.Join(base, "link")
	os.Symlink(d, link)
	os.Lchown(link, other, other)
	wantUntrustedDir(t, rundir.Ensure(link), link, other, "symbolic link")
}

func wantUntrustedDir(t *testing.T, err error, culprit string, uid int, word string) {
	t.Helper()
	var ue *rundir.UntrustedError
	if !errors.As(err, &ue) || ue.Culprit != culprit || ue.UID != uid || !strings.Contains(err.Error(), word) {
		t.Fatalf("err = %v, want an UntrustedError for %s owned by %d saying %q", err, culprit, uid, word)
	}
}
