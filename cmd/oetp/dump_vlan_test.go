package main

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/wire"
)

// TestDumpTagged: dump shows a VLAN-tagged frame as tagged, never as the
// oETP request inside it.
func TestDumpTagged(t *testing.T) {
	a, _ := wire.ParseMAC(macA)
	b, _ := wire.ParseMAC(macB)
	req := wire.AppendRMEMReadReq(nil, b, a, 7, 0x1000)
	tagged := append(append([]byte{}, req[:12]...), 0x81, 0x00, 0, 0)
	binary.BigEndian.PutUint16(tagged[14:], 2<<13|5)
	tagged = append(tagged, req[12:]...)
	file := filepath.Join(t.TempDir(), "tagged.pcap")
	writePcap(t, file, 0, time.Unix(0, 0), tagged)
	out, errOut, code := runCLI(t, "", "dump", file)
	want := " 02:0e:0c:00:00:0a > 02:0e:0c:00:00:0b raw ethertype 0x8100 802.1Q vid 5 pcp 2 inner ethertype 0x88b5 (tagged: not oETP v1), 28 bytes\n"
	if code != 0 || !strings.HasSuffix(out, want) || strings.Contains(out, "RMEM_READ_REQ") {
		t.Errorf("dump of a tagged frame: exit %d, stderr %q\n%s\nwant a line ending %q", code, errOut, out, want)
	}
	out, _, _ = runCLI(t, "", "dump", "--json", file)
	if !strings.Contains(out, `"vlan":[{"tpid":33024,"pcp":2,"dei":false,"vid":5}],"inner_ethertype":34997`) {
		t.Errorf("dump --json of a tagged frame: %s", out)
	}
}
