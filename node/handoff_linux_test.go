//go:build linux

package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
)

// TestHandOff: handOff starts the closer with the link's socket as its fd 3
// and /dev/null as its standard output and error, and the closer stays
// until the write end of its standard input closes (the process's exit).
func TestHandOff(t *testing.T) {
	tn := netns.NewPair(t)
	h := tn.Host(0)
	var l *afpacket.Link
	if err := h.Do(func() (err error) {
		l, err = afpacket.Open(h.IfName(), afpacket.Config{IO: afpacket.IOBlocking})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "fds")
	old := closerCommand
	defer func() { closerCommand = old }()
	closerCommand = []string{"sh", "-c", `echo "$(readlink /proc/$$/fd/1) $(readlink /proc/$$/fd/2) $(readlink /proc/$$/fd/3)" > ` + out + "; cat; echo exited >> " + out}
	cmd, w := handOff(l)
	if cmd == nil || w == nil {
		t.Fatal("handOff started no closer")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Still holding the pipe: the closer has not finished.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(out)
		if strings.Contains(string(b), "\n") {
			if strings.Contains(string(b), "exited") {
				t.Fatalf("the closer exited while the pipe was open: %q", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the closer wrote nothing in 10s: %q", b)
		}
		time.Sleep(time.Millisecond)
	}
	w.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("closer: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if f := strings.Fields(lines[0]); len(lines) != 2 || len(f) != 3 || f[0] != "/dev/null" || f[1] != "/dev/null" || !strings.HasPrefix(f[2], "socket:[") || lines[1] != "exited" {
		t.Errorf("closer saw %q; want fd 1, 2, 3 = /dev/null, /dev/null, the socket, then exited", lines)
	}
	// A link that is not AF_PACKET has nothing to hand off.
	if cmd, w := handOff(nil); cmd != nil || w != nil {
		t.Errorf("handOff(nil) started a closer")
	}
}
