package oserr

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

func TestReason(t *testing.T) {
	_, err := os.Open("/nonexistent/oserr")
	if got := Reason(err); got.Error() != "no such file or directory" || !errors.Is(got, fs.ErrNotExist) {
		t.Fatalf("Reason(%v) = %v; want the bare ENOENT", err, got)
	}
	plain := errors.New("plain")
	if got := Reason(plain); got != plain {
		t.Fatalf("Reason(plain) = %v; want it unchanged", got)
	}
}
