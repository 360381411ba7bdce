package node

import (
	"os"
	"os/exec"
	"sync"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/afpacket"
)

// closerCommand is the child that inherits the sockets: cat(1), looked up
// in PATH, reading a pipe that this process holds open, so that it exits
// (and closes the sockets) only once this process has exited and its end
// of the pipe is closed. Tests replace it.
var closerCommand = []string{"cat"}

// handOffPipes keeps the write ends of the children's pipes open until the
// process exits (an unreferenced os.File is closed by its finalizer).
var handOffPipes struct {
	sync.Mutex
	w []*os.File
}

// handOff gives the AF_PACKET sockets under l to a child process
// (closerCommand) that this process does not wait for, and returns the
// started child and the write end of its standard input, or nils when
// there is nothing to hand off or no child could start (the link then
// closes as usual). The last close of an AF_PACKET socket waits for an RCU
// grace period in the kernel (synchronize_net), longer than the rest of a
// one-shot command's run. The child holds the sockets until this process has exited, so
// the wait falls in its exit and delays no one: it has no standard output
// or error, so a shell reading the command's output sees the end when the
// command exits. The link receives nothing from here on
// (afpacket.Link.HandOff); Node.Close calls it, with
// Config.HandOffOnClose, before the endpoint closes.
func handOff(l link.Link) (*exec.Cmd, *os.File) {
	al, ok := link.Innermost(l).(*afpacket.Link)
	if !ok {
		return nil, nil
	}
	path, err := exec.LookPath(closerCommand[0])
	if err != nil {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil
	}
	defer r.Close()
	files, err := al.HandOff()
	if err != nil {
		w.Close()
		return nil, nil
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	cmd := exec.Command(path, closerCommand[1:]...)
	cmd.Stdin = r
	cmd.ExtraFiles = files
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, nil
	}
	return cmd, w
}

// keepHandOff hands off the sockets under l and keeps the child's pipe open
// until the process exits.
func keepHandOff(l link.Link) {
	if c, w := handOff(l); c != nil {
		handOffPipes.Lock()
		handOffPipes.w = append(handOffPipes.w, w)
		handOffPipes.Unlock()
	}
}
