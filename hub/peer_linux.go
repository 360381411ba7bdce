//go:build linux

package hub

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peerOf reads the credentials of a Unix socket's peer (SO_PEERCRED, and
// its supplementary groups, SO_PEERGROUPS); a TCP connection is a token
// holder.
func peerOf(nc net.Conn) *peer {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return &peer{tcp: true}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return &peer{}
	}
	p := &peer{}
	raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			return
		}
		p.known, p.pid, p.uid, p.gid = true, cred.Pid, cred.Uid, cred.Gid
		groups := make([]uint32, 64)
		for range 2 {
			n := uint32(len(groups) * 4)
			_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_PEERGROUPS,
				uintptr(unsafe.Pointer(&groups[0])), uintptr(unsafe.Pointer(&n)), 0)
			if e == unix.ERANGE {
				groups = make([]uint32, n/4+1)
				continue
			}
			if e == 0 {
				p.groups = groups[:n/4]
			}
			break
		}
	})
	return p
}
