//go:build !unix

package rundir

import "os"

func userName(int) string { return "" }

// Ensure creates dir when missing; this system has no owners to check.
func Ensure(dir string) error { return os.MkdirAll(dir, Mode(dir)) }

// CheckSocket only checks that something is at path: this system has no
// owners to check.
func CheckSocket(path string) error {
	_, err := os.Lstat(path)
	return err
}
