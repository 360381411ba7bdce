package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BuildCommand builds the Go command in dir (as `go build` takes it, such
// as "." or "../..") into a temporary directory of t and returns its path.
// It has the race detector when the test binary has it, so the build shares
// the tests' cache; without it, it is built as the release is (.ci/run):
// static, no cgo.
func BuildCommand(t testing.TB, dir string) string {
	t.Helper()
	return build(t, dir, Race)
}

// BuildCommandPlain builds the command in dir as BuildCommand does, never
// with the race detector: for a test of what the program itself does with
// memory or time, which the detector's shadow memory and slowdown hide.
func BuildCommandPlain(t testing.TB, dir string) string {
	t.Helper()
	return build(t, dir, false)
}

func build(t testing.TB, dir string, race bool) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), filepath.Base(abs))
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, dir)...)
	if !race {
		// The race detector needs cgo.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	return bin
}
