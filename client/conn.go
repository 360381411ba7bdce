//go:build linux

package client

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/rundir"
)

// dialUnixBlocking connects to a Unix socket whose reads and writes are
// plain blocking system calls rather than the runtime's network poller: the
// kernel wakes the reading thread itself when the reply arrives, which
// saves a scheduler hop on every round trip of a request-reply protocol.
//
// With checkPeer, the process serving the socket must run as root or as
// this process's user (SO_PEERCRED; rundir.CheckPeer).
func dialUnixBlocking(path string, checkPeer bool) (conn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "connect", Path: path, Err: err}
	}
	if checkPeer {
		cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err == nil {
			err = rundir.CheckPeer(path, int(cred.Pid), int(cred.Uid))
		}
		if err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return &blockingConn{f: os.NewFile(uintptr(fd), path), fd: fd}, nil
}

type blockingConn struct {
	f  *os.File
	fd int
}

func (c *blockingConn) Read(p []byte) (int, error)  { return c.f.Read(p) }
func (c *blockingConn) Write(p []byte) (int, error) { return c.f.Write(p) }
func (c *blockingConn) shutdown()                   { unix.Shutdown(c.fd, unix.SHUT_RDWR) }

func (c *blockingConn) Close() error {
	// Shut the socket down first so that a read blocked in another
	// goroutine returns.
	unix.Shutdown(c.fd, unix.SHUT_RDWR)
	return c.f.Close()
}

// SetDeadline bounds the blocking calls with SO_RCVTIMEO and SO_SNDTIMEO
// (zero: none).
func (c *blockingConn) SetDeadline(t time.Time) error {
	var tv unix.Timeval
	if !t.IsZero() {
		d := max(time.Until(t), time.Millisecond)
		tv = unix.NsecToTimeval(d.Nanoseconds())
	}
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	return unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
}
