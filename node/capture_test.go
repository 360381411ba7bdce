package node_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// TestCreateCapture writes a frame through a Capture's writer in each
// format and reads it back; Close reports nothing twice. A file that cannot
// be created is a *node.ConfigError of --pcap naming it and the reason.
func TestCreateCapture(t *testing.T) {
	frame := wire.AppendRMEMReadReq(nil, peerMAC, ownMAC, 7, 0x10)
	for _, f := range []node.CaptureFormat{node.PcapNG, node.PcapClassic} {
		path := filepath.Join(t.TempDir(), "c")
		c, err := node.CreateCapture(path, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Writer().WritePacket(time.Now(), frame); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("%v: second Close: %v", f, err)
		}
		if got := pcaptest.ReadCapture(t, path); len(got) != 1 || !bytes.Equal(got[0], frame) {
			t.Errorf("%v: read back % x, want one frame % x", f, got, frame)
		}
	}
	dir := t.TempDir()
	_, err := node.CreateCapture(dir, node.PcapNG)
	var ce *node.ConfigError
	if want := "pcap " + dir + ": is a directory"; !errors.As(err, &ce) || err.Error() != want {
		t.Errorf("a directory: %v, want %q", err, want)
	}
}
