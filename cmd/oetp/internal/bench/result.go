package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Scenario names, as accepted by Options.Scenarios.
const (
	ScenarioCodec = "codec"
	ScenarioMem   = "mem"
	ScenarioVeth  = "veth"
	// ScenarioVethBusy names the results of the veth scenario's second
	// part, with busy-polling links (Options.BusyPoll); it is selected with
	// ScenarioVeth, not on its own.
	ScenarioVethBusy = "veth-busy"
	// ScenarioProc is what users run: `oetp serve` and the one-shot
	// commands as separate processes over a veth pair, default flags,
	// unpinned (Options.Binary).
	ScenarioProc = "proc"
	// ScenarioReliable is the engine through the reliable transport
	// (link/rlink) over a veth pair, next to v1 through the same wrapper,
	// the raw ping-pong and TCP bulk transfers on the same pair.
	ScenarioReliable = "reliable"
)

// Scenarios lists every scenario in the order a run executes them: the
// processes users run first.
var Scenarios = []string{ScenarioProc, ScenarioCodec, ScenarioMem, ScenarioVeth, ScenarioReliable}

// Result is one measured figure: an engine path, a codec function or a
// baseline.
type Result struct {
	// Scenario is codec, mem or veth.
	Scenario string `json:"scenario"`
	// Name says what was measured, e.g. "rmem-read", "dma-write",
	// "raw 24↔24" or "encode DMA_WRITE_REQ 8160B".
	Name string `json:"name"`
	// Block is the DMA block size in bytes; 0 when not a block transfer.
	Block int64 `json:"block,omitempty"`
	// Frames is the frame sizes of one exchange, request↔response, e.g.
	// "8192↔20".
	Frames string `json:"frames,omitempty"`
	// Baseline is true for a baseline (no protocol work at all).
	Baseline bool `json:"baseline,omitempty"`
	// Info marks a baseline shown for information only: compared with
	// the limit, never the limit itself and without a target (the proc
	// scenario's raw ping-pong with its echo in another process).
	Info bool `json:"info,omitempty"`

	// Ops is the number of operations measured (round trips, blocks or
	// codec iterations).
	Ops int64 `json:"ops"`
	// FrameCount is the number of wire frames the operations moved, both
	// directions.
	FrameCount int64 `json:"frame_count,omitempty"`
	// Elapsed is the measured time.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Failed counts operations that failed (timeouts, errors); they are
	// excluded from every figure.
	Failed int64 `json:"failed,omitempty"`

	// P50, P90 and P99 are operation latency percentiles.
	P50 time.Duration `json:"p50_ns,omitempty"`
	P90 time.Duration `json:"p90_ns,omitempty"`
	P99 time.Duration `json:"p99_ns,omitempty"`
	// Max is the longest operation.
	Max time.Duration `json:"max_ns,omitempty"`
	// NsPerOp is the mean time per operation in nanoseconds.
	NsPerOp float64 `json:"ns_per_op"`
	// OpsPerSec is the operation rate.
	OpsPerSec float64 `json:"ops_per_sec,omitempty"`
	// MBps is the payload rate in MB/s (10^6 bytes per second): memory
	// bytes for DMA, the 4-byte word for RMEM, frame payload for codecs.
	MBps float64 `json:"mb_per_sec,omitempty"`
	// AllocsPerFrame is heap allocations per frame (codec: per op), or -1
	// when not measured.
	AllocsPerFrame float64 `json:"allocs_per_frame"`

	// Versus names the baseline this figure is compared with.
	Versus string `json:"versus,omitempty"`
	// Ratio is the figure divided by its baseline's: p50 latency for RMEM,
	// MB/s for DMA and codecs.
	Ratio float64 `json:"ratio,omitempty"`
	// Target is the goal for Ratio (or for MBps on codecs), e.g. "≤1.10".
	Target string `json:"target,omitempty"`
	// Met says whether Target is met; absent without a target.
	Met *bool `json:"met,omitempty"`
	// Note is a remark, e.g. the delivery rate of a multicast write.
	Note string `json:"note,omitempty"`
}

// fromMeter fills the figures of r from m.
func (r *Result) fromMeter(m *meter) {
	r.Ops = m.ops
	r.FrameCount = m.frames
	r.Elapsed = m.elapsed
	r.Failed = m.failed
	if m.ops > 0 {
		r.NsPerOp = float64(m.elapsed.Nanoseconds()) / float64(m.ops)
	}
	r.OpsPerSec = m.opsPerSec()
	r.MBps = m.mbps()
	r.AllocsPerFrame = m.allocsPerFrame()
	p := m.percentiles(50, 90, 99)
	r.P50, r.P90, r.P99 = p[0], p[1], p[2]
	r.Max = m.max
}

// compareLatency sets r's ratio to its p50 over base's, with the target
// ratio ≤ max.
func (r *Result) compareLatency(base *Result, max float64) {
	r.Versus = base.Name
	if base.P50 > 0 {
		r.Ratio = float64(r.P50) / float64(base.P50)
	}
	r.Target = fmt.Sprintf("≤%.2f", max)
	met := r.Ratio > 0 && r.Ratio <= max
	r.Met = &met
}

// compareRate sets r's ratio to its MB/s over base's, with the target ratio
// ≥ min.
func (r *Result) compareRate(base *Result, min float64) {
	r.Versus = base.Name
	if base.MBps > 0 {
		r.Ratio = r.MBps / base.MBps
	}
	r.Target = fmt.Sprintf("≥%.2f", min)
	met := r.Ratio >= min
	r.Met = &met
}

// Skip records a scenario that did not run and why.
type Skip struct {
	Scenario string `json:"scenario"`
	Reason   string `json:"reason"`
}

// Machine describes where a run happened.
type Machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
	Kernel     string `json:"kernel,omitempty"`
	CPU        string `json:"cpu,omitempty"`
}

func thisMachine() Machine {
	return Machine{
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go:         runtime.Version(),
		Kernel:     kernelRelease(),
		CPU:        cpuModel(),
	}
}

// Report is the outcome of a run.
type Report struct {
	Machine  Machine       `json:"machine"`
	Duration time.Duration `json:"duration_ns"`
	Started  time.Time     `json:"started"`
	Took     time.Duration `json:"took_ns"`
	Results  []Result      `json:"results"`
	Skipped  []Skip        `json:"skipped,omitempty"`
	// Notes say how a scenario ran where its rows cannot, e.g. the
	// placement and spin window of the busy-polling rows.
	Notes []string `json:"notes,omitempty"`
}

// Find returns the first result of scenario with the given name and block
// size, or nil.
func (rep *Report) Find(scenario, name string, block int64) *Result {
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Scenario == scenario && r.Name == name && r.Block == block {
			return r
		}
	}
	return nil
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(rep)
}

// WriteTable writes the report as an aligned text table, one row per
// result, followed by the skipped scenarios.
func (rep *Report) WriteTable(w io.Writer) error {
	m := rep.Machine
	fmt.Fprintf(w, "oetp bench: %s/%s, %d CPUs (GOMAXPROCS %d), %s, kernel %s, %s per measurement\n",
		m.GOOS, m.GOARCH, m.CPUs, m.GOMAXPROCS, m.Go, orDash(m.Kernel), rep.Duration)
	if m.CPU != "" {
		fmt.Fprintf(w, "cpu: %s\n", m.CPU)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tpath\tblock\tframes\tops\tp50\tp90\tp99\tmax\tMB/s\tallocs/frame\tvs\tratio\ttarget\t")
	for _, r := range rep.Results {
		name := r.Name
		if r.Baseline {
			name = "= " + name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Scenario, name, sizeOrDash(r.Block), orDash(r.Frames), r.Ops,
			durOrDash(r.P50), durOrDash(r.P90), durOrDash(r.P99), durOrDash(r.Max),
			rateOrDash(r.MBps), allocsOrDash(r.AllocsPerFrame),
			orDash(r.Versus), ratioOrDash(r.Ratio), targetCell(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Results {
		if r.Failed > 0 {
			fmt.Fprintf(w, "note: %s %s %s: %d operations failed and are excluded from the figures\n",
				r.Scenario, r.Name, sizeOrDash(r.Block), r.Failed)
		}
		if r.Note != "" {
			fmt.Fprintf(w, "note: %s %s %s: %s\n", r.Scenario, r.Name, sizeOrDash(r.Block), r.Note)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Scenario, s.Reason)
	}
	_, err := fmt.Fprintf(w, "took %s\n", rep.Took.Round(time.Millisecond))
	return err
}

func targetCell(r Result) string {
	if r.Target == "" {
		return "-"
	}
	if r.Met != nil && *r.Met {
		return r.Target + " ok"
	}
	return r.Target + " MISSED"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func durOrDash(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	switch {
	case d < 10*time.Microsecond:
		return fmt.Sprintf("%.2fµs", float64(d)/1e3)
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func rateOrDash(v float64) string {
	if v <= 0 {
		return "-"
	}
	if v >= 10000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func allocsOrDash(v float64) string {
	if v < 0 {
		return "-"
	}
	if v == 0 {
		return "0"
	}
	if v < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", v)
}

func ratioOrDash(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}

// sizeOrDash formats a byte count with binary units: 4KiB, 64MiB, 8160B.
func sizeOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return SizeString(n)
}

// SizeString formats n bytes as 4KiB, 64MiB, or 8160B when n is not a whole
// number of KiB.
func SizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// ParseScenarios turns a comma-separated list (proc,codec,mem,veth or all) into
// scenario names in run order.
func ParseScenarios(s string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case "":
		case "all":
			for _, n := range Scenarios {
				want[n] = true
			}
		case ScenarioProc, ScenarioCodec, ScenarioMem, ScenarioVeth, ScenarioReliable:
			want[f] = true
		default:
			return nil, fmt.Errorf("unknown scenario %q: use proc, codec, mem, veth, reliable or all, separated by commas", f)
		}
	}
	var out []string
	for _, n := range Scenarios {
		if want[n] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario in %q: use proc, codec, mem, veth, reliable or all, separated by commas", s)
	}
	return out, nil
}
