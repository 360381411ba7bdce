package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/rlink"
)

func TestServePeerTransport(t *testing.T) {
	s, err := serveSettingsOf(t, "--iface", "eth0",
		"--peer", "02:0e:0c:00:00:02,mode=rmem,transport=reliable",
		"--peer", "02:0e:0c:00:00:03,transport=v1,mode=dma-write",
		"--peer", "02:0e:0c:00:00:04,mode=dma-read,TRANSPORT=auto")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]rlink.Mode{rlink.Reliable, rlink.V1, rlink.Auto}, s.PeerTransport); d != "" {
		t.Errorf("PeerTransport (-want +got):\n%s", d)
	}
	if s.Peers[1].Mode != endpoint.ModeDMAWrite || s.Peers[0].MAC != mustMAC(t, "02:0e:0c:00:00:02") {
		t.Errorf("peers %+v", s.Peers)
	}
	for _, bad := range []string{"02:0e:0c:00:00:02,mode=rmem,transport=tcp", "02:0e:0c:00:00:02,mode=rmem,transport=v1,transport=auto"} {
		_, err := serveSettingsOf(t, "--iface", "eth0", "--peer", bad)
		if err == nil || !strings.Contains(err.Error(), "transport") {
			t.Errorf("--peer %s: %v, want an error naming transport", bad, err)
		}
	}
	// Every peer v1: no transport at all.
	s, err = serveSettingsOf(t, "--iface", "eth0", "--peer", "02:0e:0c:00:00:02,mode=rmem,transport=v1")
	if err != nil || s.PeerTransport != nil {
		t.Errorf("all-v1 peers: %v %v", s.PeerTransport, err)
	}
	// The configuration file's [[peer]] transport key.
	dir := t.TempDir()
	f := filepath.Join(dir, "s.toml")
	if err := os.WriteFile(f, []byte("iface = \"eth0\"\n[[peer]]\nmac = \"02:0e:0c:00:00:02\"\nmode = \"rmem\"\ntransport = \"reliable\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = serveSettingsOf(t, "--config", f)
	if err != nil || len(s.PeerTransport) != 1 || s.PeerTransport[0] != rlink.Reliable {
		t.Errorf("file: %v %v", s, err)
	}
}

// decode and dump read reliable transport frames: the header, the CRC
// verdict and the v1 PDU inside, for every golden vector.
func TestDescribeReliableVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "wire", "reliable", "testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		Name     string `json:"name"`
		FrameHex string `json:"frame_hex"`
		MaxFrame int    `json:"max_frame"`
		Problem  string `json:"problem"`
		Inner    *struct {
			Cmd string `json:"cmd"`
		} `json:"inner"`
	}
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		frame, _ := hex.DecodeString(v.FrameHex)
		d := frames.Describe(frame, frames.Options{MaxFrame: v.MaxFrame})
		switch {
		case v.Problem == "not_ours":
			if d.Kind == "reliable" {
				t.Errorf("%s: described as reliable", v.Name)
			}
			continue
		case d.Kind != "reliable":
			t.Errorf("%s: kind %q", v.Name, d.Kind)
			continue
		}
		if (v.Problem == "ok") != d.Valid && v.Name != "group_ack" {
			t.Errorf("%s: valid %v, the codec says %s (%s)", v.Name, d.Valid, v.Problem, d.Problem)
		}
		if v.Inner != nil && d.Cmd != v.Inner.Cmd {
			t.Errorf("%s: cmd %q, want %q", v.Name, d.Cmd, v.Inner.Cmd)
		}
		if v.Problem == "crc" && (d.Transport == nil || d.Transport.CRCOK == nil || *d.Transport.CRCOK) {
			t.Errorf("%s: CRC not reported bad: %+v", v.Name, d.Transport)
		}
	}
}
