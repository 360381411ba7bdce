package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
