package main

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestServeFileRegionNoSpace gives serve a file region larger than the
// small tmpfs mounted for the test (root only): serve exits 2 before it
// opens anything, naming the flag, the file, the size and the free space.
func TestServeFileRegionNoSpace(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("mounting a tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	path := filepath.Join(dir, "ddr.bin")
	out, errOut, code := runCLI(t, "", "serve", "--iface", "lo", "--region", "0x10000000:4M:"+path)
	for _, want := range []string{"--region 0x10000000:0x400000:" + path, "4194304 bytes (4 MiB)", "1048576 bytes (1 MiB) free", "no space left on device"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q does not contain %q", errOut, want)
		}
	}
	if code != exitUsage || out != "" {
		t.Errorf("serve with a region its filesystem cannot hold: exit %d, stdout %q; want exit 2", code, out)
	}
}
