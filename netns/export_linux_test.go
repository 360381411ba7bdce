//go:build linux

package netns

import "golang.org/x/sys/unix"

// EnterOnMainThread is for the main-thread test: it runs, on the calling
// goroutine (locked to the main thread by the caller), what a Do function
// that enters h's namespace would run, and returns fn's error.
func EnterOnMainThread(h *Host) error {
	c := make(chan threadResult, 1)
	runLocked(func() error { return unix.Setns(h.ns.fd, unix.CLONE_NEWNET) }, c)
	return (<-c).err
}
