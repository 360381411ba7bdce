//go:build unix && !linux

package memory

import "os"

// allocate extends the regular file fd (now cur bytes long) to size bytes
// if it is shorter. The extension is sparse: this system has no portable
// fallocate, so a full filesystem shows only when a page is first written,
// and that access answers SLVERR.
func allocate(fd *os.File, path string, size, cur uint64) error {
	return extend(fd, path, size, cur)
}
