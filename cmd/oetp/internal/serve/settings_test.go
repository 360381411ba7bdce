package serve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

func TestParsePeer(t *testing.T) {
	m, _ := wire.ParseMAC("02:0e:0c:00:00:02")
	for _, c := range []struct {
		in   string
		want endpoint.Peer
	}{
		{"02:0e:0c:00:00:02,mode=rmem", endpoint.Peer{MAC: m, Mode: 1, WindowSize: 1 << 32, EventEnable: true}},
		{"02-0e-0c-00-00-02,mode=none", endpoint.Peer{MAC: m, Mode: 0, WindowSize: 1 << 32, EventEnable: true}},
		{"020e0c000002, mode=DMA_WRITE ,window=0x100000:1M", endpoint.Peer{MAC: m, Mode: 2, WindowBase: 0x100000, WindowSize: 1 << 20, EventEnable: true}},
		{"02:0e:0c:00:00:02,window=0:0x100000000,mode=3,events=off", endpoint.Peer{MAC: m, Mode: 3, WindowSize: 1 << 32}},
		{"02:0e:0c:00:00:02,mode=dma-read,events=on", endpoint.Peer{MAC: m, Mode: 3, WindowSize: 1 << 32, EventEnable: true}},
	} {
		got, err := ParsePeer(c.in)
		if err != nil {
			t.Errorf("ParsePeer(%q): %v", c.in, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("ParsePeer(%q) (-want +got):\n%s", c.in, diff)
		}
		if back, err := ParsePeer(FormatPeer(got)); err != nil || back != got {
			t.Errorf("ParsePeer(FormatPeer(%+v)) = %+v, %v", got, back, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"zz,mode=rmem", "the first field must be the peer's MAC"},
		{"00:00:00:00:00:00,mode=rmem", "unused entry"},
		{"02:0e:0c:00:00:02", "mode is missing"},
		{"02:0e:0c:00:00:02,mode=4", `mode "4" is not none, rmem, dma-write, dma-read or 0..3`},
		{"02:0e:0c:00:00:02,mode=rmem,mode=rmem", "mode given twice"},
		{"02:0e:0c:00:00:02,mode=rmem,speed=1", `unknown key "speed"`},
		{"02:0e:0c:00:00:02,mode=rmem,window", `"window" is not KEY=VALUE`},
		{"02:0e:0c:00:00:02,mode=rmem,window=64K", "is not BASE:SIZE"},
		{"02:0e:0c:00:00:02,mode=rmem,window=0:0", "SIZE"},
		{"02:0e:0c:00:00:02,mode=rmem,window=0xffffff00:4K", "SIZE"},
		{"02:0e:0c:00:00:02,mode=rmem,events=maybe", `"maybe" is not on or off`},
	} {
		_, err := ParsePeer(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParsePeer(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}
