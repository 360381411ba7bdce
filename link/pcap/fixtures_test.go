package pcap_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/wire"
)

// The capture fixtures in testdata/ are real captures, written by tshark and
// tcpdump while fixtureFrames crossed a veth pair between two namespaces:
//
//	OETP_PCAP_FIXTURES=1 go test ./link/pcap -run TestMakeFixtures -v
//
// regenerates them (root, tshark and tcpdump needed). The tests that read
// them (TestFixtures) need none of that.
// noIP keeps the namespace's own IP traffic out (tshark's extcap probes,
// IPv6 neighbour discovery).
const noIP = "not ip and not ip6"

var fixtures = []struct {
	file string
	tool string
	args []string // after the tool; -w FILE is appended
}{
	{"tshark-en10mb.pcapng", "tshark", []string{"-i", "eth0", "-q", "-f", noIP}},
	{"tshark-any-sll.pcapng", "tshark", []string{"-i", "any", "-y", "LINUX_SLL", "-q", "-f", noIP}},
	{"tcpdump-en10mb.pcap", "tcpdump", []string{"-i", "eth0", "-U", noIP}},
	{"tcpdump-any-sll2.pcap", "tcpdump", []string{"-i", "any", "-y", "LINUX_SLL2", "-U", noIP}},
	{"tcpdump-any-sll.pcap", "tcpdump", []string{"-i", "any", "-y", "LINUX_SLL", "-U", noIP}},
}

// fixtureFrame is one frame of the fixtures: sent by host 1 (h1 to h2,
// seen "in" by the capturing h2) or by host 2 ("out").
type fixtureFrame struct {
	fromH2 bool
	frame  []byte
}

// fixtureFrames: an RMEM read and its reply, a masked RMEM write on VLAN 100
// with priority 5, a group DMA write, and a DMA write in two tags (802.1ad
// 200 outside, 802.1Q 300 inside).
func fixtureFrames() []fixtureFrame {
	h1, h2 := wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 1}, wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 2} // netns.HostMAC(1), (2)
	group := wire.MAC{0x03, 0x0e, 0x0c, 0, 0, 0x01}
	tag := func(f []byte, tags ...[4]byte) []byte {
		out := append([]byte{}, f[:12]...)
		for _, t := range tags {
			out = append(out, t[:]...)
		}
		return append(out, f[12:]...)
	}
	return []fixtureFrame{
		{false, wire.AppendRMEMReadReq(nil, h2, h1, 7, 0x1000)},
		{true, wire.AppendRMEMReadRsp(nil, h1, h2, 7, 0xC0FFEE01)},
		{false, tag(wire.AppendRMEMWriteReq(nil, h2, h1, 8, 0x1004, 0x0000FF00, 0x0000AB00), [4]byte{0x81, 0x00, 0xa0, 0x64})},
		{false, wire.AppendDMAWriteReq(nil, group, h1, 9, 0x100000, []byte("oETP group write"))},
		{true, tag(wire.AppendDMAWriteReq(nil, h1, h2, 10, 0x2000, []byte{1, 2, 3, 4, 5}), [4]byte{0x88, 0xa8, 0x00, 0xc8}, [4]byte{0x81, 0x00, 0x01, 0x2c})},
	}
}

// untag returns an Ethernet frame without its VLAN tags and their IDs.
func untag(frame []byte) ([]byte, []uint16) {
	var ids []uint16
	for len(frame) >= 18 && (frame[12] == 0x81 && frame[13] == 0x00 || frame[12] == 0x88 && frame[13] == 0xa8) {
		ids = append(ids, uint16(frame[14]&0x0f)<<8|uint16(frame[15]))
		frame = append(append([]byte{}, frame[:12]...), frame[16:]...)
	}
	return frame, ids
}

// TestFixtures reads the captures that tshark and tcpdump wrote (see
// TestMakeFixtures): every record must be the frame sent, in order,
// untagged, with the VLAN tags, the direction and the knowledge of the
// destination that its link type records. What libpcap kept of the tags
// differs by link type: EN10MB has both tags of the double-tagged frame,
// LINUX_SLL the outer one, LINUX_SLL2 none.
func TestFixtures(t *testing.T) {
	sent := fixtureFrames()
	vlans := map[pcap.LinkType][][]uint16{
		pcap.LinkTypeEthernet:  {nil, nil, {100}, nil, {200, 300}},
		pcap.LinkTypeLinuxSLL:  {nil, nil, {100}, nil, {200}},
		pcap.LinkTypeLinuxSLL2: {nil, nil, nil, nil, nil},
	}
	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			format, recs := pcaptest.ReadRecords(t, filepath.Join("testdata", fx.file))
			if want := filepath.Ext(fx.file) == ".pcapng"; (format == pcap.PcapNG) != want {
				t.Errorf("format %v", format)
			}
			if len(recs) != len(sent) {
				t.Fatalf("%d records, want %d", len(recs), len(sent))
			}
			var fr pcap.Frame
			for i, s := range sent {
				lt := recs[i].LinkType
				if err := pcap.Ethernet(lt, recs[i].Frame, &fr); err != nil {
					t.Fatalf("record %d: %v", i+1, err)
				}
				want, _ := untag(s.frame)
				cooked := lt != pcap.LinkTypeEthernet
				ptype, dir := "", pcap.DirUnknown
				if cooked {
					want = append(make([]byte, 6), want[6:]...)
					switch {
					case s.fromH2:
						ptype, dir = "outgoing", pcap.DirOut
					case s.frame[0]&1 == 1:
						ptype, dir = "multicast", pcap.DirIn
					default:
						ptype, dir = "host", pcap.DirIn
					}
				}
				var ids []uint16
				for _, v := range fr.VLANs {
					ids = append(ids, v.ID)
				}
				if !bytes.Equal(fr.Bytes, want) || fr.DstKnown == cooked || fr.PacketType != ptype || fr.Direction != dir ||
					fmt.Sprint(ids) != fmt.Sprint(vlans[lt][i]) {
					t.Errorf("%v record %d: % x known %v type %q dir %v vlans %v\nwant % x known %v type %q dir %v vlans %v",
						lt, i+1, fr.Bytes, fr.DstKnown, fr.PacketType, fr.Direction, ids, want, !cooked, ptype, dir, vlans[lt][i])
				}
				if lt == pcap.LinkTypeEthernet && i == 2 && (fr.VLANs[0].Priority != 5 || fr.VLANs[0].TPID != 0x8100) {
					t.Errorf("record 3 tag %+v, want TPID 0x8100 PCP 5", fr.VLANs[0])
				}
			}
		})
	}
}
