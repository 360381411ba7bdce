//go:build unix

// Package hostile gives tests a second local user, uid 65534 (nobody), to
// act as the hostile user of a shared lab host: its processes, a directory
// it can reach, and a lock it squats. The tests run as root and skip
// otherwise.
package hostile

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// UID is the hostile user's uid, and its group's gid.
const UID = 65534

// NeedRoot skips the test unless it runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (to act as a second user, uid 65534)")
	}
}

// As makes cmd run as the hostile user, in a process group of its own (so
// that Kill ends its children too).
func As(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: UID}, Setpgid: true}
	return cmd
}

// Kill ends a process started with As, and its children.
func Kill(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
}

// Dir returns a fresh directory of root's that every user may enter (mode
// 0755; a test's own t.TempDir is 0700), removed at the end of the test.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "oetp-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// Squat makes the hostile user hold an flock(2) on the file at path
// (creating it, with "4242\n" as its record, the PID it claims), until the
// end of the test. It returns once the lock is held; it skips the test
// without flock(1).
func Squat(t testing.TB, path string) {
	t.Helper()
	cmd := As(exec.Command("flock", "--nonblock", path, "sh", "-c", "echo 4242 > "+path+"; echo held; exec sleep 3600"))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("flock(1): %v", err)
	}
	t.Cleanup(func() { Kill(cmd) })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("squatting %s: the squatter said %q", path, line)
	}
}
