//go:build linux

package dmafile

import "golang.org/x/sys/unix"

// reserve allocates n bytes of disk for a regular --out's temporary file
// before the read (fallocate, FALLOC_FL_KEEP_SIZE: the size still grows
// as the fragments are written), so that writing each fragment does not
// allocate its blocks on the transfer's critical path. Best effort: a
// file system without fallocate, or without room, writes as before (and
// then fails as before).
func (o *Output) reserve(n int64) {
	if o.tmp == nil || n <= 0 {
		return
	}
	rc, err := o.tmp.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { _ = unix.Fallocate(int(fd), unix.FALLOC_FL_KEEP_SIZE, 0, n) })
}
