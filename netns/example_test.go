//go:build linux

package netns_test

import (
	"fmt"
	"log"
	"os"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
)

// Build two hosts, open a raw socket in one and run a program in the other.
// In a test, netns.NewPair(t) does the same and closes the network at the
// end of the test.
func Example() {
	tn, err := netns.New(netns.Topology{Hosts: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer tn.Close()
	h1, h2 := tn.Host(0), tn.Host(1)

	var l *afpacket.Link
	err = h1.Do(func() (err error) {
		l, err = afpacket.Open(h1.IfName(), afpacket.Config{})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	fmt.Println(h1.Name(), l.Addr(), "->", h2.Name(), h2.MAC())

	exe, _ := os.Executable()
	srv := h2.Command(exe, "serve", "--if", h2.IfName())
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Process.Kill()
}
