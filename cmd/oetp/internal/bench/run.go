package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/openenoc/oetp/node"
)

// Options bound and select a run. The zero value of each field selects its
// default.
type Options struct {
	// Scenarios to run, in any order; nil means all (proc, codec, mem,
	// veth).
	Scenarios []string
	// Binary is the oetp executable the proc scenario runs (`oetp bench`
	// gives its own); without it that scenario is skipped.
	Binary string
	// Duration is the time given to each measurement (one row of the
	// table), split over Rounds rounds; default DefaultDuration.
	Duration time.Duration
	// Rounds is how many times the measurements of one comparison take
	// turns; default DefaultRounds.
	Rounds int
	// MaxOps bounds the operations of each measurement; default
	// DefaultMaxOps.
	MaxOps int64
	// Blocks are the DMA block sizes in bytes; default DefaultBlocks.
	Blocks []int64
	// LinkIO selects the I/O mode of the engine's AF_PACKET links in the
	// veth scenario: "" (the link's default), "blocking" or "poll".
	LinkIO string
	// EngineAnyCPU runs the veth scenario's engine rows with the process's
	// threads free to run on any CPU. By default they run on the CPU of the
	// one-CPU baseline, the placement of the baseline's faster variant.
	EngineAnyCPU bool
	// BusyPoll is the spin window (afpacket Config.BusyPoll) of the
	// engine's links in the second part of the veth scenario, whose
	// results are reported as scenario ScenarioVethBusy: the same
	// comparisons on a fresh veth pair, with the engine's threads free on
	// any CPU (a loop spinning on the CPU its peer needs would starve it).
	// 0 means DefaultBusyPoll; a negative value leaves that part out. The
	// first part never spins.
	BusyPoll time.Duration
	// FloorWays adds to the proc scenario's floor rows, which do their
	// copies the cheapest way measured, a row on one CPU for every other
	// way (pread or a gather send from an mmap of the source; pwrite or
	// an mmap of the output; the echo's region with or without huge
	// pages, its read replies copied or gathered).
	FloorWays bool
	// Log, if not nil, receives one line per measurement as it starts.
	Log io.Writer

	report *Report // of the run, for scenario notes
}

// Defaults of Options.
const (
	DefaultDuration = 500 * time.Millisecond
	DefaultRounds   = 3
	DefaultMaxOps   = 2_000_000
	// DefaultBusyPoll is the spin window of the busy-polling veth part.
	DefaultBusyPoll = 100 * time.Microsecond
)

// DefaultBlocks are the DMA block sizes measured: 4 KiB to 64 MiB in steps
// of four.
var DefaultBlocks = []int64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}

// MaxBlock is the largest DMA block Options.Blocks may hold.
const MaxBlock = 256 << 20

// TargetBlock is the smallest block the DMA throughput target applies to:
// below it the block's final short fragment, or a block shorter than one
// fragment, moves fewer bytes per round trip than the full-fragment
// baseline by construction.
const TargetBlock = 1 << 20

// Targets of the engine, as ratios to the baselines.
const (
	TargetRMEMp50 = 1.10 // RMEM read p50 at most 1.10× the raw 24↔24 p50
	TargetDMARate = 0.95 // DMA MB/s at least 0.95× the raw ping-pong's
	// TargetProcDMARate is the DMA target of the proc scenario's rows:
	// separate processes with default flags, unpinned.
	TargetProcDMARate = 0.90
	// TargetMemDMARate is the DMA target of the mem scenario's rows: the
	// engine on the in-process switch.
	TargetMemDMARate = 0.80
)

func (o *Options) fill() error {
	if o.Scenarios == nil {
		o.Scenarios = Scenarios
	}
	for _, s := range o.Scenarios {
		if _, err := ParseScenarios(s); err != nil {
			return err
		}
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Duration < 0 {
		return fmt.Errorf("duration %v is negative", o.Duration)
	}
	if o.Rounds == 0 {
		o.Rounds = DefaultRounds
	}
	if o.Rounds < 1 || o.Rounds > 100 {
		return fmt.Errorf("%d rounds: use 1..100", o.Rounds)
	}
	if o.MaxOps == 0 {
		o.MaxOps = DefaultMaxOps
	}
	if o.MaxOps < int64(o.Rounds) {
		return fmt.Errorf("at most %d operations per measurement cannot fill %d rounds", o.MaxOps, o.Rounds)
	}
	if o.BusyPoll == 0 {
		o.BusyPoll = DefaultBusyPoll
	}
	if o.BusyPoll > node.MaxBusyPoll {
		return fmt.Errorf("busy-poll window %v: use at most %v, or a negative value for none", o.BusyPoll, node.MaxBusyPoll)
	}
	switch o.LinkIO {
	case "", "blocking", "poll":
	default:
		return fmt.Errorf("link I/O mode %q: use blocking or poll, or nothing for the link's default", o.LinkIO)
	}
	if o.Blocks == nil {
		o.Blocks = DefaultBlocks
	}
	for _, b := range o.Blocks {
		if b < 4 || b > MaxBlock || b%4 != 0 {
			return fmt.Errorf("block size %d: use multiples of 4 from 4 bytes to %s", b, SizeString(MaxBlock))
		}
	}
	return nil
}

func (o *Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

func (o *Options) maxBlock() int {
	m := int64(4096)
	for _, b := range o.Blocks {
		m = max(m, b)
	}
	return int(m)
}

// Run runs the selected scenarios one after the other and returns their
// results. A scenario that cannot run here (veth without root) is listed in
// Report.Skipped with the reason; a scenario that fails is listed there too
// and its error is returned, joined with the others, next to the report of
// everything that did run.
func Run(o Options) (*Report, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	defer holdGOMAXPROCS()()
	rep := &Report{Machine: thisMachine(), Duration: o.Duration, Started: time.Now()}
	o.report = rep
	var errs []error
	want := map[string]bool{}
	for _, s := range o.Scenarios {
		want[s] = true
	}
	for _, s := range Scenarios {
		if !want[s] {
			continue
		}
		var why string // the scenario cannot run here
		switch s {
		case ScenarioProc:
			why = procUnavailable(&o)
		case ScenarioVeth, ScenarioReliable:
			why = vethUnavailable()
		}
		if why != "" {
			rep.Skipped = append(rep.Skipped, Skip{Scenario: s, Reason: why})
			o.logf("%s: skipped: %s", s, why)
			continue
		}
		var rs []Result
		var err error
		switch s {
		case ScenarioCodec:
			o.logf("codec: %d functions, best of %d runs each", len(codecCases()), codecRounds)
			rs, err = runCodec(o.Duration)
		case ScenarioMem:
			rs, err = runMem(&o)
		case ScenarioProc:
			rs, err = runProc(&o)
		case ScenarioVeth:
			rs, err = runVeth(&o)
		case ScenarioReliable:
			rs, err = runReliable(&o)
		}
		rep.Results = append(rep.Results, rs...)
		if err != nil {
			rep.Skipped = append(rep.Skipped, Skip{Scenario: s, Reason: "failed: " + err.Error()})
			errs = append(errs, fmt.Errorf("%s: %w", s, err))
		}
	}
	rep.Took = time.Since(rep.Started)
	return rep, errors.Join(errs...)
}

// holdGOMAXPROCS keeps GOMAXPROCS at its current value until the returned
// function is called. Since Go 1.25 the runtime follows the process's CPU
// affinity: while the veth rows pin every thread to one CPU it lowers
// GOMAXPROCS to 1 after about a second, and raises it again about a second
// after they are released, so the rows after a pinned stretch (the
// veth-busy ones) ran with one P for two spinning receive loops, a quarter
// slower in every run that followed the pinned rows. Setting GOMAXPROCS
// explicitly stops those updates; the returned function gives the default
// back (automatic updates) unless the GOMAXPROCS environment variable set
// it.
func holdGOMAXPROCS() (release func()) {
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	return func() {
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.SetDefaultGOMAXPROCS()
		}
	}
}

// step is one measurement of a comparison: a baseline or an engine path.
// Each round adds to its meter.
type step struct {
	res   Result
	m     *meter
	round func(d time.Duration, maxOps int64) error
	after func() error // optional, after the last round
}

// runSteps runs the steps in turn for o.Rounds rounds and fills in their
// results.
func runSteps(o *Options, steps []*step) error {
	d := o.Duration / time.Duration(o.Rounds)
	n := o.MaxOps / int64(o.Rounds)
	for _, s := range steps {
		o.logf("%s: %s %s %s", s.res.Scenario, s.res.Name, sizeOrDash(s.res.Block), s.res.Frames)
	}
	for range o.Rounds {
		for _, s := range steps {
			if err := s.round(d, n); err != nil {
				return fmt.Errorf("%s %s: %w", s.res.Name, sizeOrDash(s.res.Block), err)
			}
		}
	}
	for _, s := range steps {
		s.res.fromMeter(s.m)
		if s.after != nil {
			if err := s.after(); err != nil {
				return err
			}
		}
	}
	return nil
}

// warmOps is how many operations warm a path up before it is measured,
// within warmTime.
const (
	warmOps  = 50
	warmTime = 50 * time.Millisecond
)

// engineStep measures op on p for blocks of n bytes (RMEM: n is ignored).
// Each round warms the path up first.
func engineStep(scenario string, p *pair, op string, n int) *step {
	s := &step{m: newMeter(true), res: engineResult(scenario, op, n)}
	frames, bytes := opCounts(op, n)
	f := p.op(op, n)
	s.round = func(d time.Duration, maxOps int64) error {
		if err := p.use(op); err != nil {
			return err
		}
		// Every round, like the baselines: the other measurements ran in
		// between. Busy-polling loops that start spinning again may share
		// a CPU until the kernel moves one (milliseconds); unwarmed, that
		// cost a fifth of the DMA rate in 167 ms rounds, and nothing in
		// 1 s rounds.
		return s.m.runWarm(d, maxOps, frames, bytes, f)
	}
	s.after = func() error {
		if op == opRMEMRead {
			return nil
		}
		if err := p.use(op); err != nil {
			return err
		}
		if err := f(); err != nil {
			return err
		}
		return p.verify(op, n)
	}
	return s
}

// engineResult is the empty result of op on blocks of n bytes (RMEM: n
// is ignored) in scenario, with its name, block and frame sizes.
func engineResult(scenario, op string, n int) Result {
	r := Result{Scenario: scenario, Name: op}
	if op == opRMEMRead {
		r.Frames = frameLabel(frameSizes(op))
		return r
	}
	r.Block = int64(n)
	first := min(n, 8160)
	req, rsp := frameSizes(op)
	if op == opDMAWrite {
		req = req - 8160 + 4*((first+3)/4)
	} else {
		rsp = rsp - 8160 + 4*((first+3)/4)
	}
	r.Frames = frameLabel(req, rsp)
	return r
}

// opCounts returns the frames (both directions) and payload bytes one
// operation of op on n bytes moves.
func opCounts(op string, n int) (frames, bytes int64) {
	if op == opRMEMRead {
		return 2, 4
	}
	return 2 * fragments(n), int64(n)
}

// compare sets the ratio and target of each engine step against the best
// of the baseline steps: the lowest p50 for an RMEM read, the highest MB/s
// for DMA. A DMA target applies from TargetBlock up.
func compare(op string, bases, engines []*step) {
	rate := TargetDMARate
	if len(engines) > 0 {
		switch engines[0].res.Scenario {
		case ScenarioProc:
			rate = TargetProcDMARate
		case ScenarioMem:
			rate = TargetMemDMARate
		}
	}
	var best *Result
	for _, b := range bases {
		r := &b.res
		switch {
		case best == nil:
			best = r
		case op == opRMEMRead && r.P50 > 0 && r.P50 < best.P50:
			best = r
		case op != opRMEMRead && r.MBps > best.MBps:
			best = r
		}
	}
	if best == nil {
		return
	}
	for _, e := range engines {
		r := &e.res
		if op == opRMEMRead {
			r.compareLatency(best, TargetRMEMp50)
		} else {
			r.compareRate(best, rate)
		}
		if r.Info || op != opRMEMRead && r.Block < TargetBlock {
			r.Target, r.Met = "", nil
		}
	}
}

func results(steps ...[]*step) []Result {
	var out []Result
	for _, ss := range steps {
		for _, s := range ss {
			out = append(out, s.res)
		}
	}
	return out
}

// env is a medium with an engine pair on it and a baseline of the same
// frame sizes: the in-process switch or the veth pair.
type env interface {
	scenario() string
	// bases returns the baseline measurements of op's frame sizes.
	bases(op string) []*step
	// engine returns the measurement of op on blocks of n bytes.
	engine(op string, n int) *step
	close() error
}

// extraEnv is an env with more engine rows of op than one per block, such
// as the proc scenario's commands with a terminal.
type extraEnv interface {
	extra(op string, blocks []int64) []*step
}

// comparerEnv is an env whose engine rows are compared with its baselines
// its own way (the reliable scenario's goals), instead of by compare.
type comparerEnv interface {
	compare(o *Options, op string, bases, engines []*step)
}

// postEnv is an env that annotates its rows once they are compared, such
// as the proc scenario's commands against its informational baselines.
type postEnv interface {
	post(op string, engines []*step)
}

// engineOps are the engine operations measured on every env, in order.
var engineOps = []string{opRMEMRead, opDMAWrite, opDMARead}

// runEnv measures every engine operation on e next to its baselines and
// closes e.
func runEnv(o *Options, e env) (out []Result, err error) {
	defer func() {
		if cerr := e.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	// Collect the previous scenario's garbage (hundreds of MiB of memory
	// and buffers) now rather than in the middle of a measurement.
	runtime.GC()
	for _, op := range engineOps {
		bases := e.bases(op)
		var engines []*step
		if op == opRMEMRead {
			engines = append(engines, e.engine(op, 4))
		} else {
			for _, b := range o.Blocks {
				engines = append(engines, e.engine(op, int(b)))
			}
		}
		if x, ok := e.(extraEnv); ok {
			engines = append(engines, x.extra(op, o.Blocks)...)
		}
		err := runSteps(o, append(append([]*step{}, bases...), engines...))
		if c, ok := e.(comparerEnv); ok {
			c.compare(o, op, bases, engines)
		} else {
			compare(op, bases, engines)
		}
		if x, ok := e.(postEnv); ok && err == nil {
			x.post(op, engines)
		}
		out = append(out, results(bases, engines)...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
