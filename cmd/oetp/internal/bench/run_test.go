package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/internal/testutil"
)

// shortOptions keep a test run to a fraction of a second per scenario.
func shortOptions(scenarios ...string) Options {
	return Options{Scenarios: scenarios, Duration: 40 * time.Millisecond, Rounds: 2, MaxOps: 2000,
		Blocks: []int64{4 << 10, 64 << 10}}
}

// checkResults checks that every result of a run is sane: operations were
// measured, figures are positive, engine rows are compared with a baseline
// that exists in the same scenario.
func checkResults(t *testing.T, rep *Report, scenario string) {
	t.Helper()
	n := 0
	for _, r := range rep.Results {
		if r.Scenario != scenario {
			continue
		}
		n++
		if r.Ops <= 0 || r.Elapsed <= 0 || r.NsPerOp <= 0 {
			t.Errorf("%s %s %d: ops %d, elapsed %v, ns/op %v; want all positive", r.Scenario, r.Name, r.Block, r.Ops, r.Elapsed, r.NsPerOp)
		}
		if r.Failed != 0 {
			t.Errorf("%s %s %d: %d failed operations", r.Scenario, r.Name, r.Block, r.Failed)
		}
		if r.AllocsPerFrame < 0 && (scenario != ScenarioProc || r.Baseline) {
			t.Errorf("%s %s %d: allocations not measured", r.Scenario, r.Name, r.Block)
		}
		if scenario == ScenarioCodec {
			continue
		}
		if r.P50 <= 0 || r.P50 > r.P90 || r.P90 > r.P99 || r.P99 > r.Max*2 {
			t.Errorf("%s %s %d: p50 %v p90 %v p99 %v max %v; want 0 < p50 <= p90 <= p99 (about max)", r.Scenario, r.Name, r.Block, r.P50, r.P90, r.P99, r.Max)
		}
		if r.Baseline {
			perOp := int64(2) // a round trip
			if r.Block > 0 {
				perOp = 2 * fragments(int(r.Block)) // a floor row's block
			}
			if r.FrameCount != perOp*r.Ops && !strings.Contains(r.Frames, "group") {
				t.Errorf("%s %s %d: %d frames for %d operations", r.Scenario, r.Name, r.Block, r.FrameCount, r.Ops)
			}
			continue
		}
		if r.Versus == "" || rep.Find(scenario, r.Versus, 0) == nil || r.Ratio <= 0 {
			t.Errorf("%s %s %d: compared with %q (ratio %v); want a baseline of the same run", r.Scenario, r.Name, r.Block, r.Versus, r.Ratio)
		}
		if r.Name != opRMEMRead && r.MBps <= 0 {
			t.Errorf("%s %s %d: %v MB/s", r.Scenario, r.Name, r.Block, r.MBps)
		}
	}
	if n == 0 {
		t.Fatalf("no %s results", scenario)
	}
}

func TestRunCodec(t *testing.T) {
	rep, err := Run(Options{Scenarios: []string{ScenarioCodec}, Duration: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, rep, ScenarioCodec)
	if len(rep.Results) != len(codecCases()) {
		t.Errorf("%d codec results, want %d", len(rep.Results), len(codecCases()))
	}
	for _, r := range rep.Results {
		if r.AllocsPerFrame != 0 {
			t.Errorf("codec %s: %v allocations per frame, want 0", r.Name, r.AllocsPerFrame)
		}
		if strings.Contains(r.Name, "DMA") && (r.Versus == "" || r.Target == "" || r.Met == nil) {
			t.Errorf("codec %s: versus %q target %q; want a copy baseline and the GB/s target", r.Name, r.Versus, r.Target)
		}
	}
}

func TestRunMem(t *testing.T) {
	o := shortOptions(ScenarioMem)
	var log bytes.Buffer
	o.Log = &log
	rep, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, rep, ScenarioMem)
	// One baseline and one engine row for RMEM, one baseline and an engine
	// and a floor row per block for each DMA direction.
	if want := 2 + 2*(1+2*len(o.Blocks)); len(rep.Results) != want {
		t.Errorf("%d results, want %d", len(rep.Results), want)
	}
	for _, op := range []string{opDMAWrite, opDMARead} {
		for _, b := range o.Blocks {
			f, e := rep.Find(ScenarioMem, "floor "+op, b), rep.Find(ScenarioMem, op, b)
			if f == nil || e == nil {
				t.Errorf("%s %d: floor row %v, engine row %v", op, b, f, e)
				continue
			}
			if !f.Baseline || !f.Info || f.Ratio <= 0 || f.Target != "" || !strings.Contains(f.Note, "the least any implementation") {
				t.Errorf("floor %s %d: %+v; want an informational baseline compared with the raw ping-pong, without a target", op, b, f)
			}
			if !strings.Contains(e.Note, "the MB/s of the floor "+op+" row") {
				t.Errorf("%s %d: note %q does not compare with the floor", op, b, e.Note)
			}
		}
	}
	for _, name := range []string{opRMEMRead, opDMAWrite, opDMARead} {
		if r := rep.Find(ScenarioMem, name, map[string]int64{opRMEMRead: 0}[name]+blockOf(name, o)); r == nil {
			t.Errorf("no mem %s result", name)
		}
	}
	if !strings.Contains(log.String(), "mem: rmem-read") {
		t.Errorf("progress log does not name the measurements:\n%s", log.String())
	}
}

func blockOf(name string, o Options) int64 {
	if name == opRMEMRead {
		return 0
	}
	return o.Blocks[0]
}

func TestRunVeth(t *testing.T) {
	if why := vethUnavailable(); why != "" {
		rep, err := Run(shortOptions(ScenarioVeth))
		if err != nil || len(rep.Skipped) != 1 || rep.Skipped[0].Reason != why {
			t.Fatalf("Run without the means for veth: %v, skipped %+v; want one skip saying %q", err, rep.Skipped, why)
		}
		t.Skip(why)
	}
	o := shortOptions(ScenarioVeth)
	o.Blocks = []int64{64 << 10}
	rep, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, rep, ScenarioVeth)
	checkResults(t, rep, ScenarioVethBusy)
	for _, want := range []struct{ scenario, name string }{
		{ScenarioVeth, opRMEMRead}, {ScenarioVeth, opDMAWrite}, {ScenarioVeth, opDMARead}, {ScenarioVeth, opMcast},
		{ScenarioVethBusy, opRMEMRead}, {ScenarioVethBusy, opDMAWrite}, {ScenarioVethBusy, opDMARead},
	} {
		found := false
		for _, r := range rep.Results {
			found = found || r.Scenario == want.scenario && r.Name == want.name
		}
		if !found {
			t.Errorf("no %s %s result", want.scenario, want.name)
		}
	}
	if len(rep.Notes) != 1 || !strings.HasPrefix(rep.Notes[0], "veth-busy: ") || !strings.Contains(rep.Notes[0], "Config.BusyPoll 100µs") {
		t.Errorf("notes %q, want one on veth-busy's 100µs window", rep.Notes)
	}

	// A negative BusyPoll leaves the busy-polling part out.
	o.BusyPoll = -1
	if rep, err = Run(o); err != nil {
		t.Fatal(err)
	}
	checkResults(t, rep, ScenarioVeth)
	for _, r := range rep.Results {
		if r.Scenario == ScenarioVethBusy {
			t.Fatalf("BusyPoll -1 gave a %s result: %+v", ScenarioVethBusy, r)
		}
	}
	if len(rep.Notes) != 0 {
		t.Errorf("BusyPoll -1: notes %q, want none", rep.Notes)
	}
}

// allocsMemEnv returns a mem scenario's environment for blocks up to 64
// KiB, closed by the test's cleanup, for a test that counts allocations:
// it skips under the race detector, which allocates on its own.
func allocsMemEnv(t *testing.T) *memEnv {
	t.Helper()
	if testutil.Race {
		t.Skip("the race detector allocates on its own")
	}
	e, err := newMemEnv(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.close() })
	return e
}

// TestEngineZeroAllocs checks that every engine path allocates nothing per
// operation once warm, on the in-process switch.
func TestEngineZeroAllocs(t *testing.T) {
	pairZeroAllocs(t, allocsMemEnv(t).p)
}

// pairZeroAllocs checks that p's engine paths allocate nothing per
// operation once warm, and that each operation's data arrived.
func pairZeroAllocs(t *testing.T, p *pair) {
	t.Helper()
	for _, c := range []struct {
		op string
		n  int
	}{{opRMEMRead, 4}, {opDMAWrite, 64 << 10}, {opDMARead, 64 << 10}, {opDMAWrite, 100}, {opDMARead, 100}} {
		if err := p.use(c.op); err != nil {
			t.Fatal(err)
		}
		f := p.op(c.op, c.n)
		for range 10 {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		if a := testing.AllocsPerRun(200, func() {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s of %d bytes: %v allocations per operation, want 0", c.op, c.n, a)
		}
		if err := p.verify(c.op, c.n); err != nil {
			t.Error(err)
		}
	}
}

// TestMemFloorZeroAllocs checks that the mem scenario's floor rows, like
// the raw ping-pong they extend, allocate nothing per block once warm.
func TestMemFloorZeroAllocs(t *testing.T) {
	e := allocsMemEnv(t)
	for _, op := range []string{opDMAWrite, opDMARead} {
		for _, n := range []int{100, 64 << 10} {
			s := e.floor.step(op, n)
			if err := s.round(time.Millisecond, 1); err != nil { // warms up too
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(50, func() {
				if err := s.round(time.Hour, 1); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("floor %s of %d bytes: %v allocations per block, want 0", op, n, a)
			}
			if err := s.after(); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []Options{
		{Scenarios: []string{"nope"}},
		{Duration: -time.Second},
		{Rounds: 101},
		{MaxOps: 2, Rounds: 3},
		{Blocks: []int64{3}},
		{Blocks: []int64{MaxBlock + 4}},
		{LinkIO: "fast"},
		{BusyPoll: 11 * time.Millisecond},
	} {
		if _, err := Run(o); err == nil {
			t.Errorf("Run(%+v) succeeded, want an error", o)
		}
	}
}

func TestParseScenarios(t *testing.T) {
	for in, want := range map[string]string{
		"all": "proc,codec,mem,veth,reliable", "veth,codec": "codec,veth", " MEM ": "mem", "codec,all": "proc,codec,mem,veth,reliable",
		"reliable,veth": "veth,reliable",
		"veth,proc":     "proc,veth",
	} {
		got, err := ParseScenarios(in)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("ParseScenarios(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "tcp", "codec,,x"} {
		if _, err := ParseScenarios(in); err == nil {
			t.Errorf("ParseScenarios(%q) succeeded", in)
		}
	}
}

// sampleReport is a small report with every kind of row.
func sampleReport() *Report {
	yes, no := true, false
	return &Report{
		Machine:  Machine{GOOS: "linux", GOARCH: "amd64", CPUs: 2, GOMAXPROCS: 2, Go: "go1.26"},
		Duration: time.Second,
		Results: []Result{
			{Scenario: ScenarioCodec, Name: copyOne, Baseline: true, Ops: 10, MBps: 30000, NsPerOp: 270},
			{Scenario: ScenarioCodec, Name: "encode DMA_WRITE_REQ", Ops: 10, MBps: 29000, Versus: copyOne, Ratio: 0.97, Target: "≥10 GB/s", Met: &yes},
			{Scenario: ScenarioVeth, Name: "raw 24↔24 one CPU", Baseline: true, Ops: 100, P50: 8500, P90: 9000, P99: 20000, Max: 30000},
			{Scenario: ScenarioVeth, Name: opRMEMRead, Ops: 100, P50: 9000, P90: 9500, P99: 21000, Max: 40000, Versus: "raw 24↔24 one CPU", Ratio: 1.06, Target: "≤1.10", Met: &yes},
			{Scenario: ScenarioVeth, Name: "raw 8192↔20 one CPU", Baseline: true, Ops: 100, MBps: 800, P50: 10000},
			{Scenario: ScenarioVeth, Name: opDMAWrite, Block: 64 << 10, Ops: 10, MBps: 500, P50: 100000, Versus: "raw 8192↔20 one CPU", Ratio: 0.62},
			{Scenario: ScenarioVeth, Name: opDMAWrite, Block: 1 << 20, Ops: 10, MBps: 700, P50: 1500000, Versus: "raw 8192↔20 one CPU", Ratio: 0.87, Target: "≥0.95", Met: &no, Failed: 1},
			{Scenario: ScenarioVethBusy, Name: "raw 8192↔20 one CPU", Baseline: true, Ops: 100, MBps: 790, P50: 10000},
			{Scenario: ScenarioVethBusy, Name: opDMAWrite, Block: 1 << 20, Ops: 10, MBps: 780, P50: 1300000, Versus: "raw 8192↔20 one CPU", Ratio: 0.987, Target: "≥0.95", Met: &yes},
		},
		Skipped: []Skip{{Scenario: ScenarioMem, Reason: "not asked for"}},
		Notes:   []string{"veth-busy: busy polling"},
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"scenario", "allocs/frame", "= raw 24↔24 one CPU", "1.060", "≤1.10 ok", "≥0.95 MISSED",
		"64KiB", "8.50µs", "skipped mem: not asked for", "1 operations failed",
		"veth-busy", "0.987", "note: veth-busy: busy polling\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	rep := sampleReport()
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Results) != len(rep.Results) || back.Results[3].P50 != 9000 || *back.Results[6].Met || back.Results[2].Met != nil {
		t.Errorf("JSON round trip lost figures:\n%s", b.String())
	}
}

func TestWriteSVG(t *testing.T) {
	for name, rep := range map[string]*Report{"sample": sampleReport(), "empty": {Machine: thisMachine()}} {
		var b bytes.Buffer
		if err := rep.WriteSVG(&b); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(&b)
		elems := map[string]int{}
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: SVG is not well-formed XML: %v", name, err)
			}
			if se, ok := tok.(xml.StartElement); ok {
				elems[se.Name.Local]++
			}
		}
		if elems["svg"] != 1 || elems["text"] == 0 {
			t.Errorf("%s: SVG elements %v", name, elems)
		}
		if name == "sample" && (elems["path"] == 0 || elems["rect"] < 4) {
			t.Errorf("sample: no throughput line or bars: %v", elems)
		}
	}
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{4096: "4KiB", 64 << 20: "64MiB", 8160: "8160B", 1536: "1536B", 4: "4B"} {
		if got := SizeString(n); got != want {
			t.Errorf("SizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
