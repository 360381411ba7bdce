package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

var (
	dutMAC    = endpointtest.MAC(0x01)
	runnerMAC = endpointtest.MAC(0xfe)
)

// templateDUT is the DUT of Template.
func templateDUT(t testing.TB) *DUT {
	t.Helper()
	d, err := ParseDUT(Template)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// engine is our endpoint programmed like `oetp serve` with
// TemplateServeArgs, on a port of a link/mem switch, behind a deviating
// link (a nil deviation deviates in nothing).
type engine struct {
	sw     *mem.Switch
	ep     *endpoint.Endpoint
	space  memory.Space
	runner *mem.Port
}

// standinTriggers is the [trigger] table that makes our engine a stand-in
// device for the initiator cases: engine.exec runs its commands.
const standinTriggers = `
[trigger]
set_peer = "set_peer {index} {mac} {mode} {base} {size}"
rmem_read = "rmem_read {addr}"
rmem_write = "rmem_write {addr} {data} {mask}"
dma_write = "dma_write {mac} {local} {length} {addr}"
dma_read = "dma_read {mac} {local} {length} {addr}"
setup = "timeouts 300ms"
timeout_off = "timeouts 0s"
timeout_on = "timeouts 300ms"
timeout_short = "timeouts 250ms"
timeout = "300ms"
wait = "10s"
`

// standinDUT is the template with standinTriggers.
func standinDUT(t testing.TB) *DUT {
	t.Helper()
	d, err := ParseDUT(Template + standinTriggers)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// exec runs a standinTriggers command on the engine: the engine's
// initiator starts the operation (entry 0 for RMEM, entry 9 for DMA) and
// the command prints its outcome as a device's trigger does.
func (e *engine) exec(ctx context.Context, line string) (string, int, error) {
	f := strings.Fields(line)
	num := func(i int) uint32 {
		v, err := strconv.ParseUint(f[i], 0, 64)
		if err != nil {
			panic(err)
		}
		return uint32(v)
	}
	mac := func(i int) wire.MAC {
		m, err := wire.ParseMAC(f[i])
		if err != nil {
			panic(err)
		}
		return m
	}
	result := func(err error, data uint32) (string, int, error) {
		code := endpoint.CodeOf(err)
		st := 0
		if err != nil {
			st = 1
		}
		return fmt.Sprintf("done=%d error=%d error_code=%d rd_data=%#x\n", 1-st, st, code, data), st, nil
	}
	switch f[0] {
	case "set_peer":
		size, _ := strconv.ParseUint(f[5], 0, 64)
		err := e.ep.SetPeer(int(num(1)), endpoint.Peer{MAC: mac(2), Mode: endpoint.Mode(num(3)), WindowBase: num(4), WindowSize: size, EventEnable: true})
		if err != nil {
			return err.Error(), 2, nil
		}
		return "ok=1\n", 0, nil
	case "timeouts":
		d, _ := time.ParseDuration(f[1])
		c := e.ep.Config()
		c.RMEMTimeout, c.DMATimeout = d, d
		if err := e.ep.SetConfig(c); err != nil {
			return err.Error(), 2, nil
		}
		return "ok=1\n", 0, nil
	case "rmem_read":
		v, err := e.ep.RMEMRead(ctx, 0, num(1))
		return result(err, v)
	case "rmem_write":
		return result(e.ep.RMEMWrite(ctx, 0, num(1), num(2), num(3)), 0)
	case "dma_write", "dma_read":
		mode := endpoint.ModeDMARead
		if f[0] == "dma_read" {
			mode = endpoint.ModeDMAWrite
		}
		if err := e.ep.SetPeer(9, endpoint.Peer{MAC: mac(1), Mode: mode}); err != nil {
			return err.Error(), 2, nil
		}
		var err error
		if f[0] == "dma_write" {
			_, err = e.ep.DMAWriteFrom(ctx, 9, num(4), e.space, num(2), num(3))
		} else {
			_, err = e.ep.DMAReadInto(ctx, 9, num(4), e.space, num(2), num(3))
		}
		return result(err, 0)
	}
	return "unknown command " + f[0], 2, nil
}

func newEngine(t testing.TB, d *DUT, dev *deviation) *engine {
	t.Helper()
	sw, err := mem.NewSwitch(mem.Config{QueueLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	port, err := sw.Attach(dutMAC)
	if err != nil {
		t.Fatal(err)
	}
	space := memory.NewMap()
	ram, _ := memory.NewRAM(0, 2<<20)
	slv, _ := memory.NewFault(0x200000, 4096, memory.SLVERR)
	dec, _ := memory.NewFault(0x201000, 4096, memory.DECERR)
	space.Add(0, 2<<20, ram)
	space.Add(0x200000, 4096, slv)
	space.Add(0x201000, 4096, dec)
	cfg := endpoint.Config{Group: d.Group, MaxFrame: d.MaxFrame, Events: endpoint.EventEnable{PeerDMAComplete: true, RMEMError: true}}
	peers := make([]endpoint.Peer, len(d.Peers))
	for i, p := range d.Peers {
		peers[i] = endpoint.Peer{MAC: p.MAC, Mode: endpoint.Mode(p.Mode), WindowBase: p.Window.Base, WindowSize: p.Window.Size, EventEnable: true}
	}
	dl := &devLink{Port: port, dev: dev, dut: d}
	if dev != nil && dev.config != nil {
		dev.config(&cfg, &peers, d)
	}
	if dev != nil && dev.promisc {
		port.SetPromiscuous(true)
	}
	ep, err := endpoint.New(dl, space, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range peers {
		if err := ep.SetPeer(i, p); err != nil {
			t.Fatal(err)
		}
	}
	// serve reads its events; so does this engine.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := ep.NextEvent(ctx); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); ep.Close() })
	r, err := sw.Attach(runnerMAC)
	if err != nil {
		t.Fatal(err)
	}
	return &engine{sw: sw, ep: ep, space: space, runner: r}
}

func runOn(t testing.TB, e *engine, d *DUT, only ...string) *Report {
	t.Helper()
	rep, err := Run(context.Background(), Options{Link: e.runner, Target: dutMAC, DUT: d, Only: only, Timeout: 2 * time.Second, Exec: e.exec})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// engineVariants are the variants our engine shows, where the specification
// leaves room: the openENOC RTL's behaviour.
var engineVariants = map[string]string{
	"oetp/access/7":  "mode-0 entry treated as unknown source",
	"oetp/access/10": "late framing cause 2 replaces the window's cause 1",
}

// checkVerdicts requires every case of rep to pass, except those of
// variants, which must show exactly that variant.
func checkVerdicts(t *testing.T, rep *Report, variants map[string]string) {
	t.Helper()
	var text strings.Builder
	rep.WriteText(&text)
	for _, c := range rep.Cases {
		want, wantV := Pass, ""
		if v, ok := variants[c.ID]; ok {
			want, wantV = Variant, v
		}
		if c.Verdict != want || c.Variant != wantV {
			t.Errorf("%s: %s %q, want %s %q", c.ID, c.Verdict, c.Variant, want, wantV)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", text.String())
	}
}

// engineSkips are the cases the stand-in skips: it cannot preset its
// Request ID counter (TestRequestIDWrap runs that case).
var engineSkips = map[string]string{"oetp/rid/3": "needs DUT key [trigger] set_request_id"}

// TestEnginePasses: our engine, programmed like the template, passes every
// case but engineSkips, with the RTL's variants where the specification
// leaves room.
func TestEnginePasses(t *testing.T) {
	d := standinDUT(t)
	e := newEngine(t, d, nil)
	var capture bytes.Buffer
	w, _ := pcap.NewWriter(&capture, 0)
	start := time.Now()
	rep, err := Run(context.Background(), Options{Link: e.runner, Target: dutMAC, DUT: d, Pcap: w, Timeout: 2 * time.Second, Exec: e.exec})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range rep.Cases {
		if why, ok := engineSkips[c.ID]; ok && c.Verdict == Skip && strings.Contains(c.Reason, why) {
			rep.Cases[i].Verdict = Pass
		}
	}
	checkVerdicts(t, rep, engineVariants)
	if rep.Failed != 0 || rep.Skipped != len(engineSkips) || rep.Passed+rep.Variants+rep.Skipped != len(Cases()) || rep.Variants != len(engineVariants) {
		t.Fatalf("against the engine: %s", rep.Summary())
	}
	t.Logf("%d cases in %v", len(rep.Cases), time.Since(start))
	// The capture holds every frame exchanged.
	r, err := pcap.NewReader(bytes.NewReader(capture.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, _, err := r.Next(); err != nil {
			break
		}
		n++
	}
	want := 0
	for _, c := range rep.Cases {
		want += len(c.Frames)
	}
	if n != want || n < 2*len(Cases()) {
		t.Errorf("capture holds %d frames, the cases exchanged %d", n, want)
	}
}

// TestSkipsNameTheKey: with a DUT file lacking keys, the cases that need
// them are skipped and the detail names the key; the others still pass.
func TestSkipsNameTheKey(t *testing.T) {
	full := templateDUT(t)
	e := newEngine(t, full, nil)
	d := *full
	d.Group, d.UnknownMAC, d.SlvErr, d.MaxFrame = wire.MAC{}, wire.MAC{}, nil, 0
	d.Peers = d.Peers[:1] // the rmem peer only
	rep := runOn(t, e, &d)
	if rep.Failed != 0 {
		var text strings.Builder
		rep.WriteText(&text)
		t.Fatalf("failures with a partial DUT file:\n%s", text.String())
	}
	skips := map[string]string{}
	for _, c := range rep.Cases {
		if c.Verdict == Skip {
			skips[c.ID] = c.Reason
		}
	}
	for id, key := range map[string]string{"oetp/addr/1": KeyGroup, "oetp/access/3": KeyUnknownMAC, "oetp/rmem/1": KeySlvErr, "oetp/cmd/3": KeyPeerDMAWrite, "oetp/cmd/4": KeyPeerDMARead, "oetp/access/7": KeyPeerNone} {
		if !strings.Contains(skips[id], key) {
			t.Errorf("%s: skip detail %q does not name %s", id, skips[id], key)
		}
	}
	if rep.Passed == 0 || rep.Skipped == 0 {
		t.Errorf("passed %d, skipped %d", rep.Passed, rep.Skipped)
	}
	d = *full
	d.MaxFrame = 0
	rep = runOn(t, newEngine(t, full, nil), &d, "oetp/cmd/11")
	if c := rep.Cases[0]; c.Verdict != Skip || c.Detail != "needs DUT key max_frame" || c.Reason != c.Detail {
		t.Errorf("oetp/cmd/11 without max_frame: %s %q %q", c.Verdict, c.Detail, c.Reason)
	}
}

// TestOnlyAndReports: --only selects by prefix, the JSON has exactly the
// issue's shape and the JUnit XML parses.
func TestOnlyAndReports(t *testing.T) {
	d := templateDUT(t)
	e := newEngine(t, d, nil)
	rep := runOn(t, e, d, "oetp/cmd/1", "oetp/scope/")
	var ids []string
	for _, c := range rep.Cases {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, " "); got != "oetp/scope/1 oetp/scope/2 oetp/scope/3 oetp/cmd/1" {
		t.Errorf("selected %s", got)
	}
	var js bytes.Buffer
	rep.WriteJSON(&js)
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) string {
		var k []string
		for key := range m {
			k = append(k, key)
		}
		return strings.Join(sorted(k), ",")
	}
	if got := keys(m); got != "cases,failed,passed,skipped,variants" {
		t.Errorf("JSON keys %s", got)
	}
	c0 := m["cases"].([]any)[0].(map[string]any)
	if got := keys(c0); got != "detail,id,role,rule,section,verdict" {
		t.Errorf("case keys %s", got)
	}
	if c0["verdict"] != "pass" || c0["role"] != "responder" || c0["id"] != "oetp/scope/1" || c0["section"] != "Implementation status and scope" {
		t.Errorf("first case %v", c0)
	}
	// A variant names itself, a skip its reason.
	vrep := runOn(t, newEngine(t, d, nil), d, "oetp/access/7")
	js.Reset()
	vrep.WriteJSON(&js)
	if !strings.Contains(js.String(), `"verdict":"variant","variant":"mode-0 entry treated as unknown source"`) || vrep.Variants != 1 {
		t.Errorf("variant JSON %s", js.String())
	}
	nd := *d
	nd.UnknownMAC = wire.MAC{}
	js.Reset()
	runOn(t, newEngine(t, d, nil), &nd, "oetp/access/3").WriteJSON(&js)
	if !strings.Contains(js.String(), `"verdict":"skip","reason":"needs DUT key unknown_mac"`) {
		t.Errorf("skip JSON %s", js.String())
	}
	var x bytes.Buffer
	if err := rep.WriteJUnit(&x); err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(x.Bytes(), &suites); err != nil {
		t.Fatalf("JUnit XML: %v\n%s", err, x.String())
	}
	if suites.Tests != len(rep.Cases) || len(suites.Suites) != 2 {
		t.Errorf("JUnit: %d tests in %d suites", suites.Tests, len(suites.Suites))
	}
	if _, err := Select([]string{"oetp/nope"}); err == nil {
		t.Error("a prefix that selects nothing is accepted")
	}
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestFailurePrintsFrames: a failed case shows its frames in hex.
func TestFailurePrintsFrames(t *testing.T) {
	d := templateDUT(t)
	e := newEngine(t, d, deviationByName(t, "pad-replies-64"))
	rep := runOn(t, e, d, "oetp/cmd/1")
	var text strings.Builder
	rep.WriteText(&text)
	out := text.String()
	if rep.Failed != 1 || !strings.Contains(out, "FAIL    oetp/cmd/1 ") || !strings.Contains(out, "        > "+Hex(dutMAC[:])) || !strings.Contains(out, "        < 02 0e 0c 00 00 a0 02 0e 0c 00 00 01 88 b5 0e 21") {
		t.Errorf("report of a failure:\n%s", out)
	}
}

// deviation is a way a responder can break the specification: the engine
// behind a link that rewrites, drops or answers frames, or a configuration
// that differs from the DUT file.
type deviation struct {
	name  string
	kills string // the case that must fail
	// in sees each frame before the engine does; it returns the frame's
	// new length (0 drops it) and may write frames of its own.
	in func(l *devLink, f []byte) int
	// out sees each frame the engine sends and returns what is sent.
	out     func(l *devLink, f []byte) [][]byte
	config  func(c *endpoint.Config, peers *[]endpoint.Peer, d *DUT)
	promisc bool
}

// devLink is the engine's link with a deviation.
type devLink struct {
	*mem.Port
	dev *deviation
	dut *DUT
}

func (l *devLink) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	for {
		n, err := l.Port.ReadBatch(bufs, sizes)
		if err != nil || l.dev == nil || l.dev.in == nil {
			return n, err
		}
		k := 0
		for i := range n {
			if m := l.dev.in(l, bufs[i][:sizes[i]]); m > 0 {
				bufs[k], bufs[i] = bufs[i], bufs[k]
				sizes[k] = m
				k++
			}
		}
		if k > 0 {
			return k, nil
		}
	}
}

// ReadLoop hides the port's link.Looper, whose frames would bypass the
// deviation: it loops over ReadBatch.
func (l *devLink) ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error {
	return link.ReadBatches(l, bufs, sizes, batch)
}

func (l *devLink) Write(f []byte) error {
	if l.dev == nil || l.dev.out == nil {
		return l.Port.Write(f)
	}
	for _, g := range l.dev.out(l, bytes.Clone(f)) {
		if err := l.Port.Write(g); err != nil {
			return err
		}
	}
	return nil
}

// WriteFill hides the port's link.FillWriter, whose frames would bypass the
// deviation: the data is filled into f, which takes Write's path.
func (l *devLink) WriteFill(f []byte, at, m int, fill func([]byte) bool) (bool, error) {
	if !fill(f[at : at+m]) {
		return false, nil
	}
	return true, l.Write(f)
}

func (l *devLink) WriteBatch(fs [][]byte) (int, error) {
	for i, f := range fs {
		if err := l.Write(f); err != nil {
			return i, err
		}
	}
	return len(fs), nil
}

// reply sends a frame from the engine's MAC to the source of f.
func (l *devLink) reply(f []byte, cmd wire.Cmd, params ...uint32) {
	l.Port.Write(frameOf(wire.Frame(f).Src(), dutMAC, byte(cmd), append([]uint32{wire.Frame(f).RequestID()}, params...)))
}

func isOETP(f []byte) bool { return len(f) >= 20 && f[12] == 0x88 && f[13] == 0xB5 && f[14] == 0x0E }

func cmdOf(f []byte) wire.Cmd { return wire.Frame(f).Cmd() }

// badEOD reports whether f is a DMA_WRITE_REQ whose EndOfData is wrong or
// missing (or whose length does not match its Length).
func badEOD(f []byte) bool {
	return isOETP(f) && cmdOf(f) == wire.DMAWriteReq && wire.Classify(f, 8192).Problem != wire.OK
}

func setParam(f []byte, i int, v uint32) { binary.LittleEndian.PutUint32(f[12+4*i:], v) }

func deviationByName(t testing.TB, name string) *deviation {
	for i := range deviations {
		if deviations[i].name == name {
			return &deviations[i]
		}
	}
	t.Fatalf("no deviation %s", name)
	return nil
}

var deviations = []deviation{
	{name: "tagged-frames-served", kills: "oetp/scope/1", in: func(l *devLink, f []byte) int {
		if len(f) > 18 && (f[12] == 0x81 && f[13] == 0x00 || f[12] == 0x88 && f[13] == 0xA8) {
			copy(f[12:], f[16:])
			return len(f) - 4
		}
		return len(f)
	}},
	{name: "tagged-writes-applied", kills: "oetp/frame/1", in: func(l *devLink, f []byte) int {
		if len(f) > 18 && f[12] == 0x81 && f[13] == 0x00 && f[19] == byte(wire.RMEMWriteReq) {
			copy(f[12:], f[16:])
			return len(f) - 4
		}
		return len(f)
	}},
	{name: "reply-header-shifted", kills: "oetp/frame/2", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.RMEMReadRsp {
			f[6] ^= 0x02 // a source other than the endpoint's MAC
		}
		return [][]byte{f}
	}},
	{name: "pad-replies-64", kills: "oetp/cmd/1", out: func(l *devLink, f []byte) [][]byte {
		return [][]byte{padTo(f, 64, 0)}
	}},
	{name: "read-returns-stale", kills: "oetp/cmd/2", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.RMEMReadRsp && wire.Frame(f).Param(2) == 0x11223344 {
			setParam(f, 2, 0xA1B2C3D4)
		}
		return [][]byte{f}
	}},
	{name: "dma-write-rsp-long", kills: "oetp/cmd/3", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteRsp {
			f = append(f, 0, 0, 0, 0) // a Length parameter
		}
		return [][]byte{f}
	}},
	{name: "dma-read-rsp-no-eod", kills: "oetp/cmd/4", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.DMAReadRsp {
			f = f[:len(f)-4]
		}
		return [][]byte{f}
	}},
	{name: "reserved-cmd-served", kills: "oetp/cmd/5", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == 0x12 {
			f[15] = 0x10
		}
		return len(f)
	}},
	{name: "odd-cmd-as-response", kills: "oetp/cmd/6", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == 0x13 {
			l.reply(f, wire.ErrorRsp, 1)
			return 0
		}
		return len(f)
	}},
	{name: "big-endian-data", kills: "oetp/param/1", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.RMEMReadRsp {
			binary.BigEndian.PutUint32(f[20:], wire.Frame(f).Param(2))
		}
		return [][]byte{f}
	}},
	{name: "bitenable-per-byte", kills: "oetp/cmd/7", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.RMEMWriteReq && len(f) >= 32 {
			m := wire.Frame(f).Param(3)
			var bm uint32
			for i := range 4 {
				if m>>(8*i)&0xFF != 0 {
					bm |= 0xFF << (8 * i)
				}
			}
			setParam(f, 3, bm)
		}
		return len(f)
	}},
	{name: "bitenable-top-bit-lost", kills: "oetp/param/2", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.RMEMWriteReq && len(f) >= 32 {
			setParam(f, 3, wire.Frame(f).Param(3)&0x7FFFFFFF)
		}
		return len(f)
	}},
	{name: "zero-mask-writes", kills: "oetp/cmd/8", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.RMEMWriteReq && len(f) >= 32 && wire.Frame(f).Param(3) == 0 {
			setParam(f, 3, 0xFFFFFFFF)
		}
		return len(f)
	}},
	{name: "zero-mask-always-ok", kills: "oetp/cmd/9", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.RMEMWriteReq && len(f) >= 32 && wire.Frame(f).Param(3) == 0 {
			l.reply(f, wire.RMEMWriteRsp)
			return 0
		}
		return len(f)
	}},
	{name: "zero-mask-touches-bus", kills: "oetp/cmd/10", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.RMEMWriteReq && len(f) >= 32 && wire.Frame(f).Param(3) == 0 && wire.Frame(f).Param(2) >= 0x200000 {
			setParam(f, 3, 1)
		}
		return len(f)
	}},
	{name: "dma-bytes-reversed", kills: "oetp/param/3", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteReq && wire.Classify(f, 8192).Problem == wire.OK {
			n := int(wire.Frame(f).Length())
			for i := 28; i+4 <= 28+n; i += 4 {
				f[i], f[i+1], f[i+2], f[i+3] = f[i+3], f[i+2], f[i+1], f[i]
			}
		}
		return len(f)
	}},
	{name: "word-padding-sent", kills: "oetp/param/4", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.DMAReadRsp && len(f) > 24 {
			f[len(f)-5] = 0xFF // the last word-padding byte when the length is not whole words
		}
		return [][]byte{f}
	}},
	{name: "word-padding-written", kills: "oetp/param/5", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteReq && len(f) >= 28 {
			if n := wire.Frame(f).Length(); n%4 != 0 && n < 8192 {
				setParam(f, 3, (n+3)&^3)
			}
		}
		return len(f)
	}},
	{name: "rid-not-echoed", kills: "oetp/param/6", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && wire.Frame(f).RequestID() == 0xFFFFFFFF {
			setParam(f, 1, 0)
		}
		return [][]byte{f}
	}},
	{name: "padded-frames-refused", kills: "oetp/length/1", in: func(l *devLink, f []byte) int {
		if isOETP(f) && len(f) == 60 && cmdOf(f) == wire.RMEMReadReq {
			return 0
		}
		return len(f)
	}},
	{name: "trailing-bytes-trimmed", kills: "oetp/length/2", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.RMEMReadReq && len(f) == 61 {
			return 24
		}
		return len(f)
	}},
	{name: "truncation-zero-filled", kills: "oetp/length/3", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.RMEMWriteReq && len(f) < 32 {
			g := f[:32]
			for i := len(f); i < 32; i++ {
				g[i] = 0
			}
			return 32
		}
		return len(f)
	}},
	{name: "excess-data-ignored", kills: "oetp/length/4", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteReq && len(f) >= 28 {
			if want := wire.FrameLen(wire.DMAWriteReq, wire.Frame(f).Length()); len(f) > want && want >= 60 {
				return want
			}
		}
		return len(f)
	}},
	{name: "padding-checked", kills: "oetp/length/5", in: func(l *devLink, f []byte) int {
		if isOETP(f) && len(f) == 60 && f[59] != 0 && cmdOf(f) == wire.DMAWriteReq {
			l.reply(f, wire.ErrorRsp, 2)
			return 0
		}
		return len(f)
	}},
	{name: "zero-padding-as-eod", kills: "oetp/length/6", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteReq && len(f) >= 28 {
			n := wire.Frame(f).Length()
			if at := 28 + 4*int(wire.DataWords(n)); n < 64 && at+4 <= len(f) && bytes.Equal(f[at:at+4], []byte{0, 0, 0, 0}) {
				copy(f[at:], eodBytes)
				return at + 4
			}
		}
		return len(f)
	}},
	{name: "eod-searched", kills: "oetp/length/7", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteReq && len(f) > 36 {
			if i := bytes.Index(f[28:len(f)-4], eodBytes); i >= 0 && i%4 == 0 {
				setParam(f, 3, uint32(i))
				if i == 0 {
					l.reply(f, wire.ErrorRsp, 1)
					return 0
				}
				return 28 + i + 4
			}
		}
		return len(f)
	}},
	{name: "read-rsp-eod-late", kills: "oetp/length/8", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.DMAReadRsp && len(f) > 24 && len(f) < 200 {
			f = append(f[:len(f)-4], 0, 0, 0, 0)
			f = append(f, eodBytes...)
		}
		return [][]byte{f}
	}},
	{name: "group-write-answered", kills: "oetp/addr/1", in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Dst().IsGroup() && cmdOf(f) == wire.RMEMWriteReq {
			l.reply(f, wire.RMEMWriteRsp)
		}
		return len(f)
	}},
	{name: "source-lookup-by-group", kills: "oetp/addr/7", in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Dst() == l.dut.Group && wire.Frame(f).Src() == l.dut.UnknownMAC {
			copy(f[6:12], l.dut.Peers[0].MAC[:])
		}
		return len(f)
	}},
	{name: "group-read-answered", kills: "oetp/addr/2", in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Dst().IsGroup() && cmdOf(f) == wire.RMEMReadReq {
			copy(f[0:6], dutMAC[:])
		}
		return len(f)
	}},
	{name: "group-dma-read-answered", kills: "oetp/addr/3", in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Dst().IsGroup() && cmdOf(f) == wire.DMAReadReq {
			copy(f[0:6], dutMAC[:])
		}
		return len(f)
	}},
	{name: "broadcast-accepted", kills: "oetp/addr/4", in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Dst().IsBroadcast() {
			copy(f[0:6], l.dut.Group[:])
		}
		return len(f)
	}},
	{name: "any-group-accepted", kills: "oetp/addr/5", promisc: true, in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Dst().IsGroup() && !wire.Frame(f).Dst().IsBroadcast() {
			copy(f[0:6], l.dut.Group[:])
		}
		return len(f)
	}},
	{name: "any-unicast-accepted", kills: "oetp/addr/6", promisc: true, in: func(l *devLink, f []byte) int {
		if isOETP(f) && !wire.Frame(f).Dst().IsGroup() {
			copy(f[0:6], dutMAC[:])
		}
		return len(f)
	}},
	{name: "group-error-answered", kills: "oetp/access/2", in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Dst().IsGroup() && cmdOf(f) == wire.RMEMWriteReq && wire.Frame(f).Address()%4 != 0 {
			l.reply(f, wire.ErrorRsp, 1)
		}
		return len(f)
	}},
	{name: "other-magic-served", kills: "oetp/access/1", in: func(l *devLink, f []byte) int {
		if len(f) >= 16 && f[12] == 0x88 && f[13] == 0xB5 && f[14] == 0x0F {
			f[14] = 0x0E
		}
		return len(f)
	}},
	{name: "unknown-source-served", kills: "oetp/access/3", config: func(c *endpoint.Config, peers *[]endpoint.Peer, d *DUT) {
		*peers = append(*peers, endpoint.Peer{MAC: d.UnknownMAC, Mode: endpoint.ModeRMEM, WindowSize: 1 << 32})
	}},
	{name: "mode-ignored-rmem", kills: "oetp/access/4", in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Src() == l.dut.Peers[0].MAC && cmdOf(f) == wire.DMAReadReq {
			l.reply(f, wire.ErrorRsp, 3)
			return 0
		}
		return len(f)
	}},
	{name: "mode-error-cause-2", kills: "oetp/access/5", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.ErrorRsp && wire.Frame(f).Dst() == l.dut.Peers[1].MAC && wire.Frame(f).ErrorCode() == 1 {
			setParam(f, 2, 2)
		}
		return [][]byte{f}
	}},
	{name: "dma-read-peer-writes", kills: "oetp/access/6", config: func(c *endpoint.Config, peers *[]endpoint.Peer, d *DUT) {
		(*peers)[2].Mode = endpoint.ModeDMAWrite
	}},
	{name: "mode-none-rmem", kills: "oetp/access/7", config: func(c *endpoint.Config, peers *[]endpoint.Peer, d *DUT) {
		(*peers)[3].Mode = endpoint.ModeRMEM
	}},
	{name: "window-ignored", kills: "oetp/access/8", config: func(c *endpoint.Config, peers *[]endpoint.Peer, d *DUT) {
		(*peers)[0].WindowBase, (*peers)[0].WindowSize = 0, 1<<32
	}},
	{name: "framing-before-mode", kills: "oetp/access/9", in: func(l *devLink, f []byte) int {
		if badEOD(f) {
			l.reply(f, wire.ErrorRsp, 2)
			return 0
		}
		return len(f)
	}},
	{name: "framing-before-length", kills: "oetp/access/10", in: func(l *devLink, f []byte) int {
		if badEOD(f) && wire.Frame(f).Length() == 0 {
			l.reply(f, wire.ErrorRsp, 2)
			return 0
		}
		return len(f)
	}},
	{name: "framing-before-ceiling", kills: "oetp/access/11", in: func(l *devLink, f []byte) int {
		if badEOD(f) && wire.Frame(f).Length() > 8160 {
			l.reply(f, wire.ErrorRsp, 2)
			return 0
		}
		return len(f)
	}},
	{name: "incomplete-write-cause-10", kills: "oetp/txn/1", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.ErrorRsp && wire.Frame(f).ErrorCode() == 2 {
			setParam(f, 2, 10)
		}
		return [][]byte{f}
	}},
	{name: "responses-answered", kills: "oetp/txn/2", in: func(l *devLink, f []byte) int {
		if isOETP(f) && (cmdOf(f) == wire.RMEMReadRsp || cmdOf(f) == wire.DMAWriteRsp) {
			l.reply(f, wire.ErrorRsp, 1)
		}
		return len(f)
	}},
	{name: "error-rsp-answered", kills: "oetp/txn/3", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.ErrorRsp && len(f) != 24 {
			l.reply(f, wire.ErrorRsp, 2)
		}
		return len(f)
	}},
	{name: "duplicates-suppressed", kills: "oetp/rid/1", in: func() func(l *devLink, f []byte) int {
		seen := map[uint32]bool{} // a replay cache of Request IDs
		return func(l *devLink, f []byte) int {
			if isOETP(f) && cmdOf(f) == wire.RMEMReadReq {
				rid := wire.Frame(f).RequestID()
				if seen[rid] {
					return 0
				}
				seen[rid] = true
			}
			return len(f)
		}
	}()},
	{name: "write-rsp-before-write", kills: "oetp/txn/4", in: func() func(l *devLink, f []byte) int {
		return func(l *devLink, f []byte) int {
			if isOETP(f) && cmdOf(f) == wire.RMEMWriteReq && wire.Frame(f).Data() == 0x00C0FFEE {
				l.reply(f, wire.RMEMWriteRsp)
				return 0 // acknowledged, never written
			}
			return len(f)
		}
	}()},
	{name: "unaligned-rmem-aligned", kills: "oetp/cmd/17", in: func(l *devLink, f []byte) int {
		if isOETP(f) && (cmdOf(f) == wire.RMEMReadReq || cmdOf(f) == wire.RMEMWriteReq) && wire.Frame(f).Address()%4 != 0 && wire.Frame(f).Dst() == dutMAC {
			setParam(f, 2, wire.Frame(f).Address()&^3)
		}
		return len(f)
	}},
	{name: "unaligned-dma-refused", kills: "oetp/cmd/18", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteReq && wire.Frame(f).Address()%4 != 0 {
			l.reply(f, wire.ErrorRsp, 1)
			return 0
		}
		return len(f)
	}},
	{name: "address-wraps", kills: "oetp/cmd/14", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAReadReq && wire.Frame(f).Address() == 0xFFFFFFFC {
			setParam(f, 2, 0x100000)
		}
		return len(f)
	}},
	{name: "zero-length-write-ok", kills: "oetp/cmd/16", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteReq && wire.Frame(f).Length() == 0 && wire.Classify(f, 8192).Problem == wire.OK {
			l.reply(f, wire.DMAWriteRsp)
			return 0
		}
		return len(f)
	}},
	{name: "write-window-ignored", kills: "oetp/cmd/15", config: func(c *endpoint.Config, peers *[]endpoint.Peer, d *DUT) {
		(*peers)[1].WindowBase, (*peers)[1].WindowSize = 0, 1<<32
	}},
	{name: "no-read-ceiling", kills: "oetp/cmd/12", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAReadReq && wire.Frame(f).Length() == 8161 {
			setParam(f, 3, 8160)
		}
		return len(f)
	}},
	{name: "ceiling-too-small", kills: "oetp/cmd/11", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAReadReq && wire.Frame(f).Length() > 4096 {
			l.reply(f, wire.ErrorRsp, 3)
			return 0
		}
		return len(f)
	}},
	{name: "group-dma-write-answered", kills: "oetp/cmd/13", in: func(l *devLink, f []byte) int {
		if isOETP(f) && wire.Frame(f).Dst().IsGroup() && cmdOf(f) == wire.DMAWriteReq {
			l.reply(f, wire.ErrorRsp, 2)
		}
		return len(f)
	}},
	{name: "read-split", kills: "oetp/cmd/19", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.DMAReadRsp && len(f) > 2048 {
			a := append(append([]byte{}, f[:20+1024]...), eodBytes...)
			b := append(append([]byte{}, f[:20]...), f[20+1024:]...)
			return [][]byte{a, b}
		}
		return [][]byte{f}
	}},
	{name: "cpuif-decerr-as-5", kills: "oetp/rmem/2", in: func(l *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.RMEMReadReq && wire.Frame(f).Address() >= 0x201000 && wire.Frame(f).Address() < 0x202000 {
			l.reply(f, wire.ErrorRsp, 5)
			return 0
		}
		return len(f)
	}},
	{name: "rmem-slverr-as-axi", kills: "oetp/rmem/1", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.ErrorRsp && wire.Frame(f).ErrorCode() == 6 && wire.Frame(f).Dst() == l.dut.Peers[0].MAC {
			setParam(f, 2, 7)
		}
		return [][]byte{f}
	}},
	{name: "read-decerr-as-slverr", kills: "oetp/error/1", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.ErrorRsp && wire.Frame(f).ErrorCode() == 5 {
			setParam(f, 2, 4)
		}
		return [][]byte{f}
	}},
	{name: "write-decerr-as-slverr", kills: "oetp/error/2", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.ErrorRsp && wire.Frame(f).ErrorCode() == 7 {
			setParam(f, 2, 6)
		}
		return [][]byte{f}
	}},
	{name: "framing-over-memory-error", kills: "oetp/error/3", in: func(l *devLink, f []byte) int {
		if badEOD(f) {
			l.reply(f, wire.ErrorRsp, 2)
			return 0
		}
		return len(f)
	}},
}

// TestMutations: each deviation fails the case that names it; the whole
// suite runs against each, and the score is the share of deviations it
// kills (fails at least one case). -v logs how many cases each deviation
// fails.
func TestMutations(t *testing.T) {
	d := templateDUT(t)
	killed := 0
	for i := range deviations {
		dev := &deviations[i]
		e := newEngine(t, d, dev)
		rep, err := Run(context.Background(), Options{Link: e.runner, Target: dutMAC, DUT: d, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		named := false
		for _, c := range rep.Cases {
			if c.ID == dev.kills && c.Verdict == Fail {
				named = true
			}
		}
		if rep.Failed > 0 {
			killed++
		}
		t.Logf("%-26s fails %2d cases, %s among them: %v", dev.name, rep.Failed, dev.kills, named)
		if !named {
			var text strings.Builder
			rep.WriteText(&text)
			t.Errorf("deviation %s does not fail %s:\n%s", dev.name, dev.kills, text.String())
		}
	}
	t.Logf("mutation score: %d of %d deviations killed (%.0f%%)", killed, len(deviations), 100*float64(killed)/float64(len(deviations)))
	if killed != len(deviations) {
		t.Errorf("%d deviations survive the suite", len(deviations)-killed)
	}
}

// TestSilentDevice: a device that stops answering after 17 error replies,
// as an openENOC RTL does when nobody services its interrupt claims, is
// detected: the case during which it went silent fails, the later cases
// fail as not run (none passes on silence), and the report's note names the
// interrupt queue as a cause.
func TestSilentDevice(t *testing.T) {
	d := templateDUT(t)
	var errs atomic.Int32
	dev := &deviation{name: "irq-queue-full",
		in: func(l *devLink, f []byte) int {
			if errs.Load() >= 17 {
				return 0
			}
			return len(f)
		},
		out: func(l *devLink, f []byte) [][]byte {
			if isOETP(f) && cmdOf(f) == wire.ErrorRsp {
				errs.Add(1)
			}
			return [][]byte{f}
		}}
	e := newEngine(t, d, dev)
	rep, err := Run(context.Background(), Options{Link: e.runner, Target: dutMAC, DUT: d, Timeout: 100 * time.Millisecond, Only: []string{"oetp/access"}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	if !strings.Contains(rep.Silent, "after 17 ERROR_RSP(s)") || !strings.Contains(rep.Silent, "interrupt") || !strings.Contains(text.String(), "NOTE: the device stopped answering") {
		t.Errorf("silent note %q", rep.Silent)
	}
	notRun := 0
	silentSeen := false
	for _, c := range rep.Cases {
		if strings.HasPrefix(c.Detail, "not run: the device answers no request") {
			notRun++
		}
		if silentSeen && c.Verdict != Fail && c.Verdict != Skip {
			t.Errorf("%s: %s after the device went silent", c.ID, c.Verdict)
		}
		if strings.Contains(c.Detail, "the device answers no request") {
			silentSeen = true
		}
	}
	if notRun == 0 || rep.Failed == 0 {
		t.Errorf("no case reported as not run:\n%s", text.String())
	}
}

// TestInitiatorDeviations: a stand-in device whose initiator breaks the
// specification fails the initiator case that checks it; with no [trigger]
// the initiator cases are skipped, naming the key.
func TestInitiatorDeviations(t *testing.T) {
	d := standinDUT(t)
	// A device that reports the wire cause as its code (no 8 + c).
	e := newEngine(t, d, nil)
	rep, err := Run(context.Background(), Options{Link: e.runner, Target: dutMAC, DUT: d, Timeout: time.Second, Only: []string{"oetp/error/4"},
		Exec: func(ctx context.Context, line string) (string, int, error) {
			out, st, err := e.exec(ctx, line)
			return strings.Replace(out, "error_code=9 ", "error_code=1 ", 1), st, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Cases[0]; c.Verdict != Fail || c.Role != Initiator || !strings.Contains(c.Detail, "ERROR_RSP cause 0x1: the device reports error_code 1, want 9") {
		t.Errorf("wrong cause mapping: %s %s %q", c.Verdict, c.Role, c.Detail)
	}
	// A device whose DMA writes lack EndOfData.
	dev := &deviation{name: "dma-write-no-eod", out: func(l *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteReq {
			f = f[:len(f)-4]
		}
		return [][]byte{f}
	}}
	e = newEngine(t, d, dev)
	rep = runOn(t, e, d, "oetp/txn/9")
	if c := rep.Cases[0]; c.Verdict != Fail || !strings.Contains(c.Detail, "malformed DMA_WRITE_REQ") {
		t.Errorf("DMA write without EndOfData: %s %q", c.Verdict, c.Detail)
	}
	// No triggers: skipped, named.
	d = templateDUT(t)
	rep = runOn(t, newEngine(t, d, nil), d, "oetp/txn/5", "oetp/txn/9", "oetp/seq/4")
	for i, key := range []string{KeyTrigRMEMRead, KeyTrigDMAWrite, KeyTrigDMAWrite} {
		if c := rep.Cases[i]; c.Verdict != Skip || c.Reason != "needs DUT key "+key || c.Role != Initiator {
			t.Errorf("%s without triggers: %s %s %q", c.ID, c.Verdict, c.Role, c.Reason)
		}
	}
}

// TestRequestIDWrap: a device whose counter is 40 requests before the wrap
// passes the wrap case; one that skips 0 after 0xffffffff fails it; one
// whose counter is far from the wrap, with no [trigger] set_request_id, is
// skipped, naming the key.
func TestRequestIDWrap(t *testing.T) {
	d := standinDUT(t)
	near := func(first uint32) *deviation {
		return &deviation{name: "near-wrap", config: func(c *endpoint.Config, _ *[]endpoint.Peer, _ *DUT) { c.InitialRequestID = first }}
	}
	rep := runOn(t, newEngine(t, d, near(0xFFFF_FFFF-40)), d, "oetp/rid/3")
	if c := rep.Cases[0]; c.Verdict != Pass || !strings.Contains(c.Detail, "0xffffffd7 through 0xffffffff, then 0 and 1") {
		t.Errorf("near the wrap: %s %q", c.Verdict, c.Detail)
	}
	skip0 := near(0xFFFF_FFFF - 3)
	skip0.out = func(_ *devLink, f []byte) [][]byte {
		if isOETP(f) && cmdOf(f) == wire.RMEMReadReq && wire.Frame(f).RequestID() == 0 {
			f[wire.ParamOffset] = 1
		}
		return [][]byte{f}
	}
	rep = runOn(t, newEngine(t, d, skip0), d, "oetp/rid/3")
	if c := rep.Cases[0]; c.Verdict != Fail || !strings.Contains(c.Detail, "after Request ID 0xffffffff the device sent 0x00000001, want 0x00000000") {
		t.Errorf("a device that skips 0: %s %q", c.Verdict, c.Detail)
	}
	rep = runOn(t, newEngine(t, d, nil), d, "oetp/rid/3")
	if c := rep.Cases[0]; c.Verdict != Skip || !strings.Contains(c.Reason, "needs DUT key [trigger] set_request_id") {
		t.Errorf("far from the wrap: %s %q", c.Verdict, c.Reason)
	}
}

// TestTimerStartFails: a device that times out although the runner
// answers each DMA_WRITE_REQ at once (the stand-in never takes the
// DMA_WRITE_RSP, as if its timer had expired before the request's last
// byte) fails oetp/seq/5 after three tries, naming the cause.
func TestTimerStartFails(t *testing.T) {
	d, err := ParseDUT(Template + strings.Replace(standinTriggers, `timeout_short = "timeouts 250ms"`, `timeout_short = "timeouts 50ms"`, 1))
	if err != nil {
		t.Fatal(err)
	}
	deaf := &deviation{name: "deaf-to-dma-write-rsp", in: func(_ *devLink, f []byte) int {
		if isOETP(f) && cmdOf(f) == wire.DMAWriteRsp {
			return 0
		}
		return len(f)
	}}
	rep := runOn(t, newEngine(t, d, deaf), d, "oetp/seq/5")
	if c := rep.Cases[0]; c.Verdict != Fail || !strings.Contains(c.Detail, "ended in TIMEOUT with timeout_short: the device's response timer seems to start before the request's last byte") {
		t.Errorf("a device that times out: %s %q", c.Verdict, c.Detail)
	}
}
