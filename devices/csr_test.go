package devices

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/wire"
)

// TestPeerCSRs: the addresses are openENOC's register map (the endpoint
// interface at 0x2000_0800; with four entries peers.entry[0] at +0x100,
// seven words an entry) and the values its field layout.
func TestPeerCSRs(t *testing.T) {
	mac := func(s string) wire.MAC {
		m, err := wire.ParseMAC(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	local := [3]wire.MAC{mac("02:0e:0c:00:00:a0"), mac("02:0e:0c:00:00:a1"), mac("12:34:56:78:9a:bc")}
	got, err := PeerCSRs(CSRBase, CSRPeers, 1, local, &Window{Base: 0x100000, Size: 1 << 32})
	if err != nil {
		t.Fatal(err)
	}
	want := []CSRWrite{
		{"peers.entry[1].mac_address.lo_word", 0x2000091C, 0x0C0000A0, 0xFFFFFFFF, "02:0e:0c:00:00:a0"},
		{"peers.entry[1].mac_address.hi_word", 0x20000920, 0x020E, 0xFFFFFFFF, "02:0e:0c:00:00:a0"},
		{"peers.entry[1].local_address.base", 0x20000928, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[1].remote_address.base", 0x2000092C, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[1].size.bytes", 0x20000930, 0xFFFFFFFF, 0xFFFFFFFF, ""},
		{"peers.entry[1].dma.mode", 0x20000934, 1, 3, "rmem"},
		{"peers.entry[2].mac_address.lo_word", 0x20000938, 0x0C0000A1, 0xFFFFFFFF, "02:0e:0c:00:00:a1"},
		{"peers.entry[2].mac_address.hi_word", 0x2000093C, 0x020E, 0xFFFFFFFF, "02:0e:0c:00:00:a1"},
		{"peers.entry[2].local_address.base", 0x20000944, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[2].remote_address.base", 0x20000948, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[2].size.bytes", 0x2000094C, 0xFFFFFFFF, 0xFFFFFFFF, ""},
		{"peers.entry[2].dma.mode", 0x20000950, 2, 3, "dma-write"},
		{"peers.entry[3].mac_address.lo_word", 0x20000954, 0x56789ABC, 0xFFFFFFFF, "12:34:56:78:9a:bc"},
		{"peers.entry[3].mac_address.hi_word", 0x20000958, 0x1234, 0xFFFFFFFF, "12:34:56:78:9a:bc"},
		{"peers.entry[3].local_address.base", 0x20000960, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[3].remote_address.base", 0x20000964, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[3].size.bytes", 0x20000968, 0xFFFFFFFF, 0xFFFFFFFF, ""},
		{"peers.entry[3].dma.mode", 0x2000096C, 3, 3, "dma-read"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("PeerCSRs (-want +got):\n%s", d)
	}
	got, err = PeerCSRs(0, 3, 0, local, nil)
	if err != nil || len(got) != 9 || got[0].Addr != 0x100 || got[2].Addr != 0x118 || got[8].Addr != 0x100+2*0x1C+0x18 {
		t.Errorf("PeerCSRs(0, 3, 0, no window) = %+v, %v", got, err)
	}
	if _, err := PeerCSRs(0xFFFFFF00, 4, 0, local, nil); err == nil {
		t.Error("entries past the 32-bit space were accepted")
	}
	for _, tc := range []struct{ peers, first int }{{4, -1}, {4, 2}, {2, 0}, {3000, 0}} {
		if _, err := PeerCSRs(CSRBase, tc.peers, tc.first, local, nil); err == nil {
			t.Errorf("entries %d.. of a board of %d were accepted", tc.first, tc.peers)
		}
	}
}

// TestCSRPeersOffset: where regalign puts the peers register file, as
// openENOC's generated maps show it (0xA0 for one entry) and as the rule
// gives it for more.
func TestCSRPeersOffset(t *testing.T) {
	for n, want := range map[int]uint32{1: 0xA0, 2: 0xC0, 3: 0x100, 4: 0x100, 9: 0x100, 10: 0x200, 18: 0x200, 19: 0x400} {
		if got := CSRPeersOffset(n); got != want {
			t.Errorf("CSRPeersOffset(%d) = 0x%X, want 0x%X", n, got, want)
		}
	}
}
