package devices

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/wire"
)

// TestPeerCSRs: the addresses are openENOC's register map (the endpoint
// interface at 0x2000_0800, peers.entry[0] at +0xA0, seven words an entry)
// and the values its field layout.
func TestPeerCSRs(t *testing.T) {
	mac := func(s string) wire.MAC {
		m, err := wire.ParseMAC(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	local := [3]wire.MAC{mac("02:0e:0c:00:00:a0"), mac("02:0e:0c:00:00:a1"), mac("12:34:56:78:9a:bc")}
	got, err := PeerCSRs(CSRBase, 1, local, &Window{Base: 0x100000, Size: 1 << 32})
	if err != nil {
		t.Fatal(err)
	}
	want := []CSRWrite{
		{"peers.entry[1].mac_address.lo_word", 0x200008BC, 0x0C0000A0, 0xFFFFFFFF, "02:0e:0c:00:00:a0"},
		{"peers.entry[1].mac_address.hi_word", 0x200008C0, 0x020E, 0xFFFFFFFF, "02:0e:0c:00:00:a0"},
		{"peers.entry[1].local_address.base", 0x200008C8, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[1].remote_address.base", 0x200008CC, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[1].size.bytes", 0x200008D0, 0xFFFFFFFF, 0xFFFFFFFF, ""},
		{"peers.entry[1].dma.mode", 0x200008D4, 1, 3, "rmem"},
		{"peers.entry[2].mac_address.lo_word", 0x200008D8, 0x0C0000A1, 0xFFFFFFFF, "02:0e:0c:00:00:a1"},
		{"peers.entry[2].mac_address.hi_word", 0x200008DC, 0x020E, 0xFFFFFFFF, "02:0e:0c:00:00:a1"},
		{"peers.entry[2].local_address.base", 0x200008E4, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[2].remote_address.base", 0x200008E8, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[2].size.bytes", 0x200008EC, 0xFFFFFFFF, 0xFFFFFFFF, ""},
		{"peers.entry[2].dma.mode", 0x200008F0, 2, 3, "dma-write"},
		{"peers.entry[3].mac_address.lo_word", 0x200008F4, 0x56789ABC, 0xFFFFFFFF, "12:34:56:78:9a:bc"},
		{"peers.entry[3].mac_address.hi_word", 0x200008F8, 0x1234, 0xFFFFFFFF, "12:34:56:78:9a:bc"},
		{"peers.entry[3].local_address.base", 0x20000900, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[3].remote_address.base", 0x20000904, 0x100000, 0xFFFFFFFF, ""},
		{"peers.entry[3].size.bytes", 0x20000908, 0xFFFFFFFF, 0xFFFFFFFF, ""},
		{"peers.entry[3].dma.mode", 0x2000090C, 3, 3, "dma-read"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("PeerCSRs (-want +got):\n%s", d)
	}
	got, err = PeerCSRs(0, 0, local, nil)
	if err != nil || len(got) != 9 || got[0].Addr != 0xA0 || got[2].Addr != 0xB8 || got[8].Addr != 0xA0+2*0x1C+0x18 {
		t.Errorf("PeerCSRs(0, 0, no window) = %+v, %v", got, err)
	}
	if _, err := PeerCSRs(0xFFFFFF80, 0, local, nil); err == nil {
		t.Error("entries past the 32-bit space were accepted")
	}
	if _, err := PeerCSRs(CSRBase, -1, local, nil); err == nil {
		t.Error("a negative entry was accepted")
	}
}
