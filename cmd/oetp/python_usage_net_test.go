//go:build linux

package main

import (
	"os"
	"os/exec"
	"testing"
)

// TestPythonUsageErrors runs the Python client's range tests, which need no
// hub: out-of-range addresses, values and masks raise oetp.UsageError (a
// ValueError) before anything is sent, never a truncated write.
func TestPythonUsageErrors(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-m", "unittest", "-v", "tests.test_ranges")
	cmd.Dir = pythonDir()
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python3 -m unittest tests.test_ranges: %v\n%s", err, out)
	}
}
