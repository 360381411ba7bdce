//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/afpacket/afpackettest"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// TestDumpLive runs `oetp dump --iface eth0 --count 6 --json --write FILE`
// on h2 while h1 sends requests to h2 and h2 sends tagged replies: the live
// view shows both directions, the VLAN tag, and nothing but oETP (an IPv4
// frame sent in between is filtered out), then stops after six frames; the
// pcapng file holds exactly the six frames as sent, tags included.
func TestDumpLive(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	cfg := afpacket.Config{AllEtherTypes: true}
	l1, l2 := afpackettest.OpenLink(t, h1, cfg), afpackettest.OpenLink(t, h2, cfg)
	m1, m2 := h1.MAC(), h2.MAC()
	done := make(chan struct{})
	var out, errOut string
	var code int
	capture := filepath.Join(t.TempDir(), "live.pcapng")
	go func() {
		defer close(done)
		h2.Do(func() error {
			out, errOut, code = runCLI(t, "", "dump", "--iface", "eth0", "--count", "6", "--json", "--promisc", "--write", capture)
			return nil
		})
	}()
	sent := map[uint32][]byte{} // by Request ID
	var sentMu sync.Mutex
	ip := append(append(append([]byte{}, m2[:]...), m1[:]...), 0x08, 0x00, 0x45, 0, 0, 20)
	for rid := uint32(0); ; rid += 2 {
		select {
		case <-done:
		case <-time.After(20 * time.Millisecond):
			l1.Write(ip)
			req := wire.AppendRMEMReadReq(nil, m2, m1, rid, 0x10)
			rsp := wire.AppendRMEMReadRsp(nil, m1, m2, rid+1, 0xC0FFEE00+rid)
			tagged := append(append(append([]byte{}, rsp[:12]...), 0x81, 0x00, 0x00, 0x64), rsp[12:]...)
			sentMu.Lock()
			sent[rid], sent[rid+1] = req, tagged
			sentMu.Unlock()
			l1.Write(req)
			l2.Write(tagged)
			if rid < 1000 {
				continue
			}
			t.Fatal("dump --iface did not stop after 6 frames")
		}
		break
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 6 {
		t.Fatalf("dump --iface: exit %d, %d lines, stderr %q\n%s", code, len(lines), errOut, out)
	}
	var prev uint32
	var rids []uint32
	for i, l := range lines {
		var rec struct {
			Cmd   string `json:"cmd"`
			Src   string `json:"src"`
			Dst   string `json:"dst"`
			RID   uint32 `json:"request_id"`
			Valid bool   `json:"valid"`
			VLANs []struct {
				ID uint16 `json:"id"`
			} `json:"vlans"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if i > 0 && rec.RID != prev+1 {
			t.Errorf("line %d: request id %d after %d: a frame is missing or out of order\n%s", i+1, rec.RID, prev, out)
		}
		prev = rec.RID
		in := rec.RID%2 == 0
		wantCmd, wantSrc, wantVLANs := "RMEM_READ_REQ", m1.String(), 0
		if !in {
			wantCmd, wantSrc, wantVLANs = "RMEM_READ_RSP", m2.String(), 1
		}
		if rec.Cmd != wantCmd || rec.Src != wantSrc || !rec.Valid || len(rec.VLANs) != wantVLANs || wantVLANs == 1 && rec.VLANs[0].ID != 100 {
			t.Errorf("line %d: %s", i+1, l)
		}
		rids = append(rids, rec.RID)
	}
	if want := "oetp: wrote 6 frame(s) to " + capture + "\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	// The pcapng file, read back with pcapgo: the six frames shown, in order,
	// byte for byte as sent.
	f, err := os.Open(capture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Errorf("link type %v", r.LinkType())
	}
	for i, rid := range rids {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("frame %d of the pcapng: %v", i+1, err)
		}
		sentMu.Lock()
		want := sent[rid]
		sentMu.Unlock()
		if !bytes.Equal(data, want) || ci.Length != len(want) || ci.Timestamp.IsZero() {
			t.Errorf("frame %d (request id %d): % x (length %d), want % x", i+1, rid, data, ci.Length, want)
		}
	}
	if _, _, err := r.ReadPacketData(); err != io.EOF {
		t.Errorf("after 6 frames: %v, want EOF", err)
	}
}
