//go:build linux

package pcap_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/afpacket/afpackettest"
	"github.com/openenoc/oetp/netns"
)

func TestMakeFixtures(t *testing.T) {
	if os.Getenv("OETP_PCAP_FIXTURES") == "" {
		t.Skip("set OETP_PCAP_FIXTURES=1 to capture testdata/ again with tshark and tcpdump")
	}
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	cfg := afpacket.Config{AllEtherTypes: true}
	l1, l2 := afpackettest.OpenLink(t, h1, cfg), afpackettest.OpenLink(t, h2, cfg)
	dir, _ := filepath.Abs("testdata")
	var procs []*exec.Cmd
	var stderrs []*bytes.Buffer
	for _, f := range fixtures {
		path := filepath.Join(dir, f.file)
		os.Remove(path)
		args := append([]string{"-w", path}, f.args...)
		if f.tool == "tcpdump" { // the filter expression goes last
			args = append(append([]string{"-w", path}, f.args[:len(f.args)-1]...), f.args[len(f.args)-1])
		}
		cmd := h2.Command(f.tool, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, stderrs = append(procs, cmd), append(stderrs, &stderr)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			for _, p := range procs {
				p.Process.Signal(os.Interrupt)
				p.Wait()
			}
		})
	}
	defer stop()
	for i := range procs {
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(stderrs[i].String(), "istening on") && !strings.Contains(stderrs[i].String(), "Capturing on"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not start: %s", fixtures[i].tool, stderrs[i].String())
			}
		}
	}
	time.Sleep(time.Second)
	for _, f := range fixtureFrames() {
		l := l1
		if f.fromH2 {
			l = l2
		}
		if err := l.Write(f.frame); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	stop()
	for i, f := range fixtures {
		t.Logf("%s: %s", f.file, strings.TrimSpace(stderrs[i].String()))
	}
}
