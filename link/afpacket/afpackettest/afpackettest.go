// Package afpackettest opens AF_PACKET links in the namespaces tests
// create (package netns).
package afpackettest

import (
	"testing"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
)

// OpenLink opens an AF_PACKET link on h's interface inside h's namespace;
// the test's cleanup closes it (closing twice does nothing).
func OpenLink(t testing.TB, h *netns.Host, cfg afpacket.Config) *afpacket.Link {
	t.Helper()
	var l *afpacket.Link
	if err := h.Do(func() (err error) { l, err = afpacket.Open(h.IfName(), cfg); return err }); err != nil {
		t.Fatalf("%s: %v", h, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
