package hub_test

import (
	"testing"

	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
)

// The stream buffers' classes: powers of two from streamMin, each holding
// every block of its range, the largest holding proto.MaxBlock.
func TestStreamBufs(t *testing.T) {
	if hub.StreamMin<<(hub.StreamClasses-1) != proto.MaxBlock {
		t.Fatalf("%d classes from %d bytes do not end at proto.MaxBlock %d", hub.StreamClasses, hub.StreamMin, proto.MaxBlock)
	}
	for _, c := range []struct{ n, class int }{
		{hub.StreamMin, 0}, {hub.StreamMin + 1, 1}, {2 * hub.StreamMin, 1}, {2*hub.StreamMin + 1, 2},
		{64 << 20, 6}, {64<<20 + 4, 7}, {proto.MaxBlock, 8},
	} {
		if got := hub.StreamClass(c.n); got != c.class {
			t.Errorf("class of %d bytes: %d, want %d", c.n, got, c.class)
		}
		b := hub.GetStreamBuf(c.n)
		if len(b) != c.n || cap(b) != hub.StreamMin<<c.class {
			t.Errorf("buffer of %d bytes: len %d cap %d", c.n, len(b), cap(b))
		}
		hub.PutStreamBuf(b)
	}
}
