//go:build !unix

package memory

import (
	"errors"
	"runtime"
)

// OpenFile would map path as a shared Space; shared file mappings are only
// implemented on Unix systems, so it always fails here.
func OpenFile(path string, base uint32, size uint64) (*File, error) {
	return nil, errors.New("shared file regions are not supported on " + runtime.GOOS + "; use a RAM region (omit :PATH)")
}

// Sync does nothing: a File cannot be opened on this system.
func (f *File) Sync() error { return nil }

// Close does nothing: a File cannot be opened on this system.
func (f *File) Close() error { return nil }
