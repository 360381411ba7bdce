//go:build linux

package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/conformance"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/role"
)

// serveVariants are the variants oetp serve shows where the specification
// leaves room: the openENOC RTL's behaviour.
var serveVariants = map[string]string{
	"oetp/access/7":  "mode-0 entry treated as unknown source",
	"oetp/access/10": "late framing cause 2 replaces the window's cause 1",
}

// TestConformanceAgainstServe: the conformance suite, run by the oetp binary
// on one host of a veth pair, against `oetp serve` on the other, programmed
// as the DUT template says: every case passes (with the RTL's variants where
// the specification leaves room), none is skipped. The JUnit
// file and the capture are written.
func TestConformanceAgainstServe(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	// A fifth entry shares the dma-write peer's MAC in mode rmem: the
	// lowest enabled entry (dma-write) serves that MAC.
	const dup = "02:0e:0c:00:00:a1,mode=rmem,window=0x100000:0x102000"
	srv := startServe(t, bin, h1, append(append([]string{"--iface", "eth0", "--json-events"}, conformance.TemplateServeArgs...), "--peer", dup)...)
	dut := filepath.Join(dir, "dut.toml")
	writeFile(t, dut, []byte(conformance.Template+"\n[[peer]]\nmac = \"02:0e:0c:00:00:a1\"\nmode = \"rmem\"\nwindow = \"0x100000:0x102000\"\n"))
	junit, capture := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "cases.pcap")
	start := time.Now()
	out, errOut, code := oetpIn(t, bin, h2, "conformance", "run", "--iface", "eth0", "--target", h1.MAC().String(),
		"--dut", dut, "--json", "--junit", junit, "--pcap", capture)
	t.Logf("oetp conformance run against oetp serve over veth: %v (the process, all %d cases)", time.Since(start), len(conformance.Cases()))
	var rep struct {
		Cases []struct {
			ID, Role, Verdict, Variant, Detail string
		} `json:"cases"`
		Passed, Variants, Failed, Skipped int
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("conformance run: exit %d, %v\nstdout %s\nstderr %s", code, err, out, errOut)
	}
	var bad []string
	initiator := 0
	for _, c := range rep.Cases {
		want, wantV := "pass", ""
		if v, ok := serveVariants[c.ID]; ok {
			want, wantV = "variant", v
		}
		if c.Role == "initiator" {
			// serve cannot be triggered: its initiator is oetp rmem/dma.
			initiator++
			want = "skip"
		} else if c.Role != "responder" {
			bad = append(bad, c.ID+": role "+c.Role)
		}
		if c.Verdict != want || c.Variant != wantV {
			bad = append(bad, c.ID+" "+c.Role+" "+c.Verdict+" "+c.Variant+": "+c.Detail)
		}
	}
	n := len(conformance.Cases())
	if code != 0 || rep.Failed != 0 || rep.Skipped != initiator || initiator == 0 || rep.Passed+rep.Variants+rep.Skipped != n || len(bad) > 0 {
		t.Errorf("against oetp serve: exit %d, %d passed, %d variants, %d failed, %d skipped of %d:\n%s\n%s", code, rep.Passed, rep.Variants, rep.Failed, rep.Skipped, n, strings.Join(bad, "\n"), errOut)
	}
	t.Logf("against oetp serve: %d passed, %d variants (%v), %d failed, %d skipped (initiator cases) of %d", rep.Passed, rep.Variants, serveVariants, rep.Failed, rep.Skipped, n)
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(x, &suites); err != nil || suites.Tests != n || suites.Failures != 0 {
		t.Errorf("JUnit file: %v, %d tests, %d failures", err, suites.Tests, suites.Failures)
	}
	if frames := len(pcaptest.ReadCapture(t, capture)); frames < 2*n {
		t.Errorf("the capture holds %d frames, fewer than two per case", frames)
	}

	// The runner holds the initiator role of each MAC it sends from: with
	// one of them held by another process (here the test, as an rmem would),
	// it waits --wait, then exits 2 naming the holder, and sends nothing.
	d, err := conformance.LoadDUT(dut)
	if err != nil {
		t.Fatal(err)
	}
	macs := conformance.ListenAddrs(d)
	heldMAC := macs[len(macs)-1]
	var held *role.Lock
	if err := h2.Do(func() (err error) {
		held, err = role.Acquire("eth0", heldMAC, role.Initiator, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := srv.stats()["rx_frames"]
	start = time.Now()
	out, errOut, code = oetpIn(t, bin, h2, "conformance", "run", "--iface", "eth0", "--target", h1.MAC().String(), "--dut", dut, "--wait", "300ms")
	el := time.Since(start)
	me := strconv.Itoa(os.Getpid())
	if code != 2 || el < 300*time.Millisecond || !strings.Contains(errOut, "initiator role of eth0 "+heldMAC.String()+" is held by process "+me) || out != "" {
		t.Errorf("conformance run with a peer MAC's initiator role held: exit %d after %v, stdout %q, stderr %q; want exit 2 after 300ms naming PID %s", code, el, out, errOut, me)
	}
	if after := srv.stats()["rx_frames"]; after != before || before == nil {
		t.Errorf("the refused run sent frames: serve rx_frames %v -> %v", before, after)
	}
	held.Release()
	if code := srv.stop(); code != 0 {
		t.Errorf("serve exit %d", code)
	}
}
