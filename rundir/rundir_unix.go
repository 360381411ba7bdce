//go:build unix

package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/internal/oserr"
)

// userName returns " (name)" for a uid with a name, else "".
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return " (" + u.Username + ")"
	}
	return ""
}

// trusted reports whether uid may own what this process trusts: root, or
// the process's own effective user.
func trusted(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// Ensure makes dir this process's run-time directory: it creates it when
// missing (mode Mode(dir); its parents 0755), then checks that it is a
// directory, not a symbolic link, owned by this process's user or by root,
// and that no one else may write to it. A directory of this user's that
// others may write (an older oetp made /run/oetp mode 1777) gets Mode(dir)
// back. Anything else is refused with an *UntrustedError that says what
// to remove.
func Ensure(dir string) error {
	dir = filepath.Clean(dir)
	perm := Mode(dir)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return fmt.Errorf("cannot create the run-time directory %s: %w", dir, oserr.Reason(err))
		}
		if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cannot create the run-time directory %s: %w", dir, oserr.Reason(err))
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("cannot use the run-time directory %s: %w", dir, err)
	}
	mode := fileMode(uint32(st.Mode))
	switch {
	case mode&fs.ModeSymlink != 0:
		return &UntrustedError{Path: dir, Culprit: dir, UID: int(st.Uid), Mode: mode,
			Why: fmt.Sprintf("it is a symbolic link owned by %s, not a directory", owner(int(st.Uid))),
			Fix: "remove it (a run-time directory is never followed through a link)"}
	case !mode.IsDir():
		return &UntrustedError{Path: dir, Culprit: dir, UID: int(st.Uid), Mode: mode,
			Why: "it is not a directory", Fix: "remove it"}
	case !trusted(st.Uid):
		return &UntrustedError{Path: dir, Culprit: dir, UID: int(st.Uid), Mode: mode,
			Why: fmt.Sprintf("it is owned by %s, not by %s", owner(int(st.Uid)), trustedOwners()),
			Fix: "someone else made it: remove it (as root) and start again"}
	}
	if mode.Perm()&0o022 != 0 || mode&fs.ModeSticky != 0 {
		if int(st.Uid) != os.Geteuid() {
			return &UntrustedError{Path: dir, Culprit: dir, UID: int(st.Uid), Mode: mode,
				Why: fmt.Sprintf("others may write to it (mode %04o)", mode.Perm()|stickyBit(mode)),
				Fix: fmt.Sprintf("as root: chmod %04o %s", perm, dir)}
		}
		if err := os.Chmod(dir, perm); err != nil {
			return fmt.Errorf("run-time directory %s: others may write to it (mode %04o) and chmod failed: %w", dir, mode.Perm()|stickyBit(mode), err)
		}
	}
	return nil
}

func stickyBit(m fs.FileMode) fs.FileMode {
	if m&fs.ModeSticky != 0 {
		return 0o1000
	}
	return 0
}

// fileMode converts a stat mode to an fs.FileMode (type bits, permissions,
// sticky).
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFREG:
	default:
		mode |= fs.ModeIrregular
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// CheckSocket checks that the hub socket at path is one this process may
// trust: see the package documentation. It returns an error wrapping
// fs.ErrNotExist when nothing is at path, an *UntrustedError naming the
// path, the owner found and the fix when another user could have made or
// replaced it.
func CheckSocket(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(abs, &st); err != nil {
		return &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	mode := fileMode(uint32(st.Mode))
	if mode&fs.ModeSocket == 0 {
		what := "a file"
		if mode&fs.ModeSymlink != 0 {
			what = "a symbolic link"
		} else if mode.IsDir() {
			what = "a directory"
		}
		return untrusted(path, abs, st, fmt.Sprintf("it is %s owned by %s, not a socket", what, owner(int(st.Uid))),
			"give the socket's own path (links are not followed)")
	}
	if !trusted(st.Uid) {
		return untrusted(path, abs, st, fmt.Sprintf("the socket is owned by %s, not by %s: that user, not your hub, would answer", owner(int(st.Uid)), trustedOwners()),
			"remove it if it is not a hub you meant to use, and start the hub again")
	}
	return checkDirs(path, filepath.Dir(abs), true, 0)
}

// checkDirs checks dir and its parents: owned by root or this user, and
// writable by no one else (the socket's own directory, first) or sticky.
// Symbolic links are checked themselves and then followed.
func checkDirs(path, dir string, first bool, depth int) error {
	if depth > 40 {
		return fmt.Errorf("%s: too many levels of symbolic links", path)
	}
	for {
		var st unix.Stat_t
		if err := unix.Lstat(dir, &st); err != nil {
			return &os.PathError{Op: "lstat", Path: dir, Err: err}
		}
		mode := fileMode(uint32(st.Mode))
		if !trusted(st.Uid) {
			return untrusted(path, dir, st, fmt.Sprintf("%s is owned by %s, not by %s: that user could put another socket there", dir, owner(int(st.Uid)), trustedOwners()),
				fmt.Sprintf("remove %s if it is not yours and start the hub again", dir))
		}
		if mode&fs.ModeSymlink != 0 {
			target, err := os.Readlink(dir)
			if err != nil {
				return err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(dir), target)
			}
			// The link's own directory is checked by the loop below; its
			// target, and the target's parents, by this call.
			if err := checkDirs(path, filepath.Clean(target), first, depth+1); err != nil {
				return err
			}
		} else if mode.Perm()&0o022 != 0 && (first || mode&fs.ModeSticky == 0) {
			fix := fmt.Sprintf("chmod go-w %s (as its owner)", dir)
			if first {
				fix += ", or put the socket in a directory only you or root can write"
			}
			return untrusted(path, dir, st, fmt.Sprintf("%s may be written by others (mode %04o), who could replace the socket", dir, mode.Perm()|stickyBit(mode)), fix)
		}
		first = false
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

func untrusted(path, culprit string, st unix.Stat_t, why, fix string) error {
	fix += "; to use a socket shared on purpose, set " + TrustAnyOwnerEnv + "=1 (oetp: --hub-trust-any-owner), which lets whoever owns it or its directory answer in the hub's place"
	return &UntrustedError{Path: path, Culprit: culprit, UID: int(st.Uid), Mode: fileMode(uint32(st.Mode)), Why: why, Fix: fix}
}
