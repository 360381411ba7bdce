package memory

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// allocate reserves the storage of the first size bytes of the regular file
// fd (now cur bytes long), extending it to size if it is shorter, so that no
// page of the mapping is a hole that a full filesystem cannot back later.
// A filesystem without fallocate gets the file extended sparse, as on other
// systems.
func allocate(fd *os.File, path string, size, cur uint64) error {
	err := unix.Fallocate(int(fd.Fd()), 0, 0, int64(size))
	for errors.Is(err, unix.EINTR) {
		err = unix.Fallocate(int(fd.Fd()), 0, 0, int64(size))
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS):
		return extend(fd, path, size, cur)
	case errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG):
		var st unix.Statfs_t
		free := "an unknown amount"
		if unix.Fstatfs(int(fd.Fd()), &st) == nil {
			free = sizeWords(uint64(st.Bavail) * uint64(st.Bsize))
		}
		return fmt.Errorf("%s: the region needs %s of storage but its filesystem has %s free (%v); free space there, give a smaller SIZE, or put the file on a larger filesystem", path, sizeWords(size), free, err)
	}
	return fmt.Errorf("cannot allocate the storage of %s: %w", path, err)
}
