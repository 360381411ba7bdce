//go:build unix

package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/internal/oserr"
)

// OpenFile maps the file at path read/write and shared as the Space
// [base, base+size). The file is created (mode 0644 before umask) if it
// does not exist and extended with zero bytes if it is shorter than size; a
// longer file is neither truncated nor changed beyond its first size bytes.
// On Linux the storage of the first size bytes is allocated at once
// (fallocate), so a filesystem that cannot hold them is refused here, with
// the free space in the error, rather than failing an access later; a file
// created by a refused OpenFile is removed.
// size must be at least 1 and base+size at most 2^32. base must be a
// multiple of 4: a file mapping starts on a page boundary, so only then are
// the words of the address space aligned in memory, which atomic word
// accesses need.
func OpenFile(path string, base uint32, size uint64) (*File, error) {
	if err := checkStorage("file region", base, size); err != nil {
		return nil, err
	}
	if base%4 != 0 {
		return nil, fmt.Errorf("file region base %#x is not a multiple of 4; a shared file mapping must start on a word boundary so word accesses stay atomic, e.g. base %#x", base, base&^3)
	}
	_, statErr := os.Stat(path)
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, openError(path, err)
	}
	defer fd.Close() // the mapping outlives the descriptor
	fi, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read the status of %s: %w", path, oserr.Reason(err))
	}
	if fi.Mode().IsRegular() {
		if err := allocate(fd, path, size, uint64(fi.Size())); err != nil {
			if errors.Is(statErr, fs.ErrNotExist) {
				os.Remove(path) // created here: leave nothing behind
			}
			return nil, err
		}
	}
	m, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("cannot map %s into memory: %w", path, err)
	}
	return &File{bytesSpace: bytesSpace{base: base, b: m[:size:size]}, path: path, mapped: m}, nil
}

// Sync flushes the mapping to the file's storage (msync with MS_SYNC). It
// is not needed for other processes to see writes, only for durability. It
// returns nil after Close.
func (f *File) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mapped == nil {
		return nil
	}
	if err := unix.Msync(f.mapped, unix.MS_SYNC); err != nil {
		return fmt.Errorf("cannot flush %s to its storage: %w", f.path, err)
	}
	return nil
}

// Close unmaps the file. The file itself stays. Close is idempotent.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mapped == nil {
		return nil
	}
	m := f.mapped
	f.mapped, f.b = nil, nil
	if err := unix.Munmap(m); err != nil {
		return fmt.Errorf("cannot unmap %s: %w", f.path, err)
	}
	return nil
}

// extend makes the regular file fd (now cur bytes long) at least size bytes
// long; the new bytes read as zero.
func extend(fd *os.File, path string, size, cur uint64) error {
	if cur >= size {
		return nil
	}
	if err := fd.Truncate(int64(size)); err != nil {
		return fmt.Errorf("cannot extend %s to %d bytes: %w", path, size, oserr.Reason(err))
	}
	return nil
}

// openError is the failure to open or create the file of a region, in the
// words of the path: the OS's reason and what to do.
func openError(path string, err error) error {
	reason := oserr.Reason(err)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot create %s: %w (its directory must exist)", path, reason)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot open %s for reading and writing: %w (give a file you may write, or a path in a directory of yours)", path, reason)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%s is a directory: give a file's path", path)
	}
	return fmt.Errorf("cannot open %s: %w", path, reason)
}

// sizeWords writes n bytes for a message: "67108864 bytes (64 MiB)".
func sizeWords(n uint64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift {
			if n%(1<<u.shift) == 0 {
				return fmt.Sprintf("%d bytes (%d %s)", n, n>>u.shift, u.name)
			}
			return fmt.Sprintf("%d bytes (%.1f %s)", n, float64(n)/float64(uint64(1)<<u.shift), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
