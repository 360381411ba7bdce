//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// The reliable scenario's process rows: `oetp serve` on one host of a
// fresh veth pair with its peers set to transport=reliable, and on the
// other one `oetp dma write` or `oetp dma read --transport reliable`
// process per block, default flags, unpinned, as users run them. Each row
// is the median of the commands' own --json rates, with its ratio to the
// windowed raw exchange of the same run and the goal of the in-process
// rows from 1 MiB up.

// relReadMAC is the reading command's local MAC (one MAC, one mode).
var relReadMAC = stationMAC(0x0c, 0x02)

// relRMEMMAC is the local MAC of the engine→serve RMEM rows' endpoint.
var relRMEMMAC = stationMAC(0x0c, 0x03)

// procBed is where a row of oetp processes runs: a fresh veth pair, a
// temporary directory, and the largest block of the proc rows' pattern.
type procBed struct {
	n    *netns.Net
	dir  string
	data []byte
}

func newProcBed(o *Options, prefix string) (*procBed, error) {
	n, err := netns.New(netns.Topology{Hosts: 2})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		n.Close()
		return nil, err
	}
	b := &procBed{n: n, dir: dir, data: make([]byte, o.maxBlock())}
	for i := range b.data {
		b.data[i] = procPattern(i)
	}
	return b, nil
}

// file writes the first size bytes of the pattern to a file of the
// directory and returns its path.
func (b *procBed) file(size int) (string, error) {
	p := filepath.Join(b.dir, fmt.Sprintf("block-%d.bin", size))
	return p, os.WriteFile(p, b.data[:size], 0o600)
}

// serve starts oetp serve on the far host with the block's memory, the
// near host's MAC a reliable DMA writer, other a reliable peer in mode,
// and relRMEMMAC a reliable RMEM peer.
func (b *procBed) serve(o *Options, other wire.MAC, mode string) (*readyCmd, error) {
	hb := b.n.Host(1)
	return startReadyCmd(hb.Command(o.Binary, "serve", "--iface", hb.IfName(), "--region", fmt.Sprintf("0:%d", len(b.data)),
		"--peer", b.n.Host(0).MAC().String()+",mode=dma-write,transport=reliable",
		"--peer", other.String()+",mode="+mode+",transport=reliable",
		"--peer", relRMEMMAC.String()+",mode=rmem,transport=reliable"), "oetp serve")
}

func (b *procBed) close() {
	os.RemoveAll(b.dir)
	b.n.Close()
}

// windowTurns takes rounds of the windowed raw exchange on a procBed's
// veth pair in turns with the rounds of a row on the same pair (the raw
// frames have an EtherType of their own, which serve's socket does not
// receive), so that each row's ratio is to the limit measured beside it:
// the machine's speed drifts over a run by more than the rows differ.
type windowTurns struct {
	bin       string
	ha, hb    *netns.Host
	near, far *rawSock // far: the RMEM exchange's echo, opened on first use
}

func newWindowTurns(o *Options, bed *procBed) (*windowTurns, error) {
	ha := bed.n.Host(0)
	near, err := openRawOn(ha)
	if err != nil {
		return nil, err
	}
	return &windowTurns{bin: o.Binary, ha: ha, hb: bed.n.Host(1), near: near}, nil
}

func (w *windowTurns) close() {
	w.near.close()
	if w.far != nil {
		w.far.close()
	}
}

// roundRMEM runs the raw pipelined exchange of RMEM frames (pipeDepth in
// flight, the echo a thread of this process, as runParallel's) for about
// d and adds the exchanges to t.
func (w *windowTurns) roundRMEM(d time.Duration, t *turns) error {
	if w.far == nil {
		far, err := openRawOn(w.hb)
		if err != nil {
			return err
		}
		w.far = far
	}
	req, rsp := rawFrames(opRMEMRead, w.ha.MAC(), w.hb.MAC())
	pipe := &rawPipe{near: w.near, far: w.far, req: retype(req), rsp: retype(rsp), stop: stopFrame(w.hb.MAC(), w.ha.MAC())}
	_, _, err := pipe.round(turnWarm) // untimed, as before the windowed exchange's rounds
	var n int64
	var el time.Duration
	if err == nil {
		n, el, err = pipe.round(d)
	}
	if err != nil {
		return fmt.Errorf("bench: the raw pipelined exchange beside a row: %w", err)
	}
	t.n, t.el = t.n+n, t.el+el
	return nil
}

// round runs the windowed raw exchange in op's direction for about d, its
// echo a process of its own, and adds the exchanges to t.
func (w *windowTurns) round(op string, d time.Duration, t *turns) error {
	return w.exchange(op, nil, d, t)
}

// floorRound runs the windowed floor (WindowEcho) in op's direction with
// block as the near side's block and a region of its size in the echo,
// for about d, and adds the exchanges to t.
func (w *windowTurns) floorRound(op string, block []byte, d time.Duration, t *turns) error {
	return w.exchange(op, block, d, t)
}

// exchange is round, or floorRound with block set.
func (w *windowTurns) exchange(op string, block []byte, d time.Duration, t *turns) error {
	req, rsp := windowFrames(op, w.ha.MAC(), w.hb.MAC())
	pipe := &rawPipe{near: w.near, req: req, rsp: rsp, depth: windowDepth, external: true, floor: block}
	args := []string{"--" + WindowEchoFlag, w.hb.IfName()}
	what := "the windowed raw exchange"
	if block != nil {
		args = append(args, "--"+FloorFlag, strconv.Itoa(len(block)))
		what = "the windowed floor"
	}
	echo, err := startEchoCmd(w.bin, w.hb, -1, args...)
	if err != nil {
		return err
	}
	// An untimed moment first, as the rows run one block untimed after
	// each raw round.
	_, _, err = pipe.round(turnWarm)
	var n int64
	var el time.Duration
	if err == nil {
		n, el, err = pipe.round(d)
	}
	if serr := echo.stop(w.near, stopFrame(w.hb.MAC(), w.ha.MAC())); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("bench: %s beside a row: %w", what, err)
	}
	t.n, t.el = t.n+n, t.el+el
	return nil
}

// turnWarm is the untimed start of each raw round taken beside a row.
const turnWarm = 20 * time.Millisecond

// turns is what the rounds of the windowed raw exchange taken beside a row
// moved: exchanges and their time.
type turns struct {
	n  int64
	el time.Duration
}

// mbps is the windowed raw exchange's rate, counting a reliable fragment's
// payload per exchange as the window rows do; 0 without a round.
func (t turns) mbps() float64 {
	if t.el <= 0 {
		return 0
	}
	return float64(t.n) * float64(node.FragmentCeiling(wire.MaxFrameLen)) / t.el.Seconds() / 1e6
}

// beside is the note and report text of a row's ratio to the windowed raw
// exchange taken in turns with it (t), with the goal of a block of b bytes
// from 1 MiB up.
func beside(rate float64, t turns, b int64) (x float64, text string) {
	w := t.mbps()
	if w <= 0 {
		return 0, ""
	}
	x = rate / w
	goal := ""
	if b >= 1<<20 {
		verdict := "met"
		if x < windowGoal(b) {
			verdict = "missed"
		}
		goal = fmt.Sprintf(", goal ≥ %.1f: %s", windowGoal(b), verdict)
	}
	return x, fmt.Sprintf("%.3f× the windowed raw exchange measured in turns with it on the same veth pair (%.1f MB/s%s)", x, w, goal)
}

// besideFloor is the text of a rate's ratio to the windowed floor taken in
// turns with it (ft), and of the floor's own ratio to the windowed raw
// exchange (t); "" without a round of both.
func besideFloor(rate float64, t, ft turns) string {
	f, w := ft.mbps(), t.mbps()
	if f <= 0 || w <= 0 {
		return ""
	}
	return fmt.Sprintf("%.3f× the windowed floor measured in turns with it (%.1f MB/s, itself %.3f× the windowed raw exchange)", rate/f, f, f/w)
}

// floorRow is the row of the windowed floor taken in turns with an
// engine→serve DMA row of op and block b (ft), with its ratio to the
// windowed raw exchange taken in the same turns (t) and, from 1 MiB up,
// what that says of the row's goal; false without rounds.
func floorRow(o *Options, op string, b int64, t, ft turns) (Result, bool) {
	f, w := ft.mbps(), t.mbps()
	if f <= 0 || w <= 0 {
		return Result{}, false
	}
	req, rsp := windowFrames(op, wire.MAC{}, wire.MAC{})
	label := frameLabel(len(req), len(rsp))
	r := Result{Scenario: ScenarioReliable, Name: fmt.Sprintf("%s %s ×%d in flight", windowFloorRowPrefix, label, windowDepth), Block: b,
		Frames: label, Baseline: true, Info: true, Ops: ft.n, FrameCount: 2 * ft.n, Elapsed: ft.el, MBps: f, AllocsPerFrame: -1,
		NsPerOp: float64(ft.el.Nanoseconds()) / float64(max(ft.n, 1)), OpsPerSec: float64(ft.n) / ft.el.Seconds()}
	text := fmt.Sprintf("%.3f× the windowed raw exchange measured in turns with it and with engine→serve %s reliable %s", f/w, op, sizeOrDash(b))
	if b >= 1<<20 {
		verdict := "within the floor in this run"
		if f/w < windowGoal(b) {
			verdict = "above the floor in this run"
		}
		text += fmt.Sprintf(" (goal ≥ %.1f: %s)", windowGoal(b), verdict)
	}
	r.Note = fmt.Sprintf("the windowed raw exchange with the data work any implementation of the reliable transport must do: each %d-byte payload copied from a block of %s into its frame and the frame's CRC32C computed on the sending side, the CRC32C checked and the payload copied into a block of %s on the receiving side (the echo a process of its own); %s",
		windowFloorFrag, sizeOrDash(b), sizeOrDash(b), text)
	o.report.Notes = append(o.report.Notes, fmt.Sprintf("%s: %s %s: %.1f MB/s, %s", ScenarioReliable, r.Name, sizeOrDash(b), f, text))
	return r, true
}

func runReliableProc(o *Options) ([]Result, error) {
	bed, err := newProcBed(o, "oetp-bench-relproc-")
	if err != nil {
		return nil, err
	}
	defer bed.close()
	ha, hb := bed.n.Host(0), bed.n.Host(1)
	block, data := len(bed.data), bed.data
	out := filepath.Join(bed.dir, "out.bin")
	srcs := map[int]string{}
	for _, b := range append([]int64{int64(block)}, o.Blocks...) {
		if srcs[int(b)], err = bed.file(int(b)); err != nil {
			return nil, err
		}
	}
	src := func(size int) string { return srcs[size] }
	srv, err := bed.serve(o, relReadMAC, "dma-read")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	// The memory holds the source block once a write has run: every read
	// is checked against it.
	run := func(op string, size int) (float64, time.Duration, error) {
		args := []string{"dma", "write", "--iface", ha.IfName(), "--peer", hb.MAC().String(), "--addr", "0", "--in", src(size),
			"--transport", "reliable", "--no-hub", "--json"}
		if op == opDMARead {
			args = []string{"dma", "read", "--iface", ha.IfName(), "--mac", relReadMAC.String(), "--peer", hb.MAC().String(), "--addr", "0",
				"--length", fmt.Sprint(size), "--out", out, "--transport", "reliable", "--no-hub", "--json"}
		}
		cmd := ha.Command(o.Binary, args...)
		stdout, err := cmd.Output()
		var r struct {
			OK      bool    `json:"ok"`
			MBps    float64 `json:"mb_per_s"`
			Seconds float64 `json:"seconds"`
		}
		if jerr := json.Unmarshal(stdout, &r); jerr != nil || !r.OK {
			return 0, 0, fmt.Errorf("bench: oetp %s: %v %v %s", strings.Join(args[:2], " "), err, jerr, stdout)
		}
		if op == opDMARead {
			if err := checkFile(out, size, func(off int, b []byte) { copy(b, data[off:]) }); err != nil {
				return 0, 0, fmt.Errorf("bench: oetp dma read --transport reliable of %d bytes: the output is not the block written: %v", size, err)
			}
		}
		return r.MBps, time.Duration(r.Seconds * float64(time.Second)), nil
	}
	if _, _, err := run(opDMAWrite, block); err != nil { // warm-up, and the memory the reads check
		return nil, err
	}
	wt, err := newWindowTurns(o, bed)
	if err != nil {
		return nil, err
	}
	defer wt.close()
	rounds := max(o.Rounds, 3)
	var res []Result
	for _, op := range []string{opDMAWrite, opDMARead} {
		for _, b := range o.Blocks {
			var mbs []float64
			var el time.Duration
			var t turns
			for range rounds {
				if err := wt.round(op, o.Duration/time.Duration(rounds), &t); err != nil {
					return res, err
				}
				mb, d, err := run(op, int(b))
				if err != nil {
					return res, err
				}
				mbs, el = append(mbs, mb), el+d
			}
			r := Result{Scenario: ScenarioReliable, Name: "process " + op + " reliable", Block: b, Ops: int64(len(mbs)), Elapsed: el,
				NsPerOp: float64(el.Nanoseconds()) / float64(len(mbs)), MBps: median(mbs), AllocsPerFrame: -1}
			r.OpsPerSec = float64(len(mbs)) / el.Seconds()
			r.Note = fmt.Sprintf("one process per block against oetp serve, default flags; median of %d (%s MB/s)", len(mbs), rates(mbs))
			// Below 1 MiB a command's handshake and slow start weigh on
			// every block: no goal.
			if _, text := beside(r.MBps, t, b); text != "" {
				r.Note += "; " + text
				o.report.Notes = append(o.report.Notes, fmt.Sprintf("%s: %s %s (one oetp process per block against oetp serve): %.1f MB/s, %s",
					ScenarioReliable, r.Name, sizeOrDash(b), r.MBps, text))
			}
			res = append(res, r)
		}
	}
	lib, err := runReliableLib(o, bed, srv, wt)
	return append(res, lib...), err
}

// runReliableLib adds the library's rows to the process rows: an endpoint
// of this process, opened as the commands open theirs (package node, an
// AF_PACKET link with default flags, the peer on the reliable transport),
// moving blocks from memory against the same oetp serve process, in
// steady state: two processes without a command's start-up, its cold
// first block, its file or its exit, as a Go program or the hub keeps a
// session. CPU per fragment counts both processes.
func runReliableLib(o *Options, bed *procBed, srv *readyCmd, wt *windowTurns) ([]Result, error) {
	ha, hb := bed.n.Host(0), bed.n.Host(1)
	var res []Result
	for _, op := range []string{opDMAWrite, opDMARead} {
		mac, mode := ha.MAC(), endpoint.ModeDMARead
		if op == opDMARead {
			mac, mode = relReadMAC, endpoint.ModeDMAWrite
		}
		var nd *node.Node
		err := ha.Do(func() (err error) {
			ctx, cancel := context.WithTimeout(ctxBackground, 5*time.Second)
			defer cancel()
			nd, err = node.Open(ctx, node.Config{LinkConfig: node.LinkConfig{Iface: ha.IfName(), MAC: mac},
				Peers: []node.Peer{{Peer: endpoint.Peer{MAC: hb.MAC(), Mode: mode}, Transport: node.Reliable}}})
			return err
		})
		if err != nil {
			return res, fmt.Errorf("bench: the library's endpoint against oetp serve: %w", err)
		}
		if !nd.Reliable(hb.MAC()) {
			nd.Close()
			return res, fmt.Errorf("bench: the library's endpoint against oetp serve: no reliable session (%v)", nd.Handshakes)
		}
		for _, b := range o.Blocks {
			r, t, ft, err := libBlocks(o, nd, wt, op, int(b), bed.data, srv.cmd.Process.Pid)
			if err != nil {
				nd.Close()
				return res, err
			}
			if _, text := beside(r.MBps, t, b); text != "" {
				if ftext := besideFloor(r.MBps, t, ft); ftext != "" {
					text += "; " + ftext
				}
				r.Note += "; " + text
				o.report.Notes = append(o.report.Notes, fmt.Sprintf("%s: %s %s (an endpoint of the bench process against oetp serve, steady state): %.1f MB/s, %s",
					ScenarioReliable, r.Name, sizeOrDash(b), r.MBps, text))
			}
			res = append(res, r)
			if fr, ok := floorRow(o, op, b, t, ft); ok {
				res = append(res, fr)
			}
		}
		nd.Close()
	}
	rm, err := libRMEM(o, bed, srv.cmd.Process.Pid, wt)
	return append(res, rm...), err
}

// rmemConfig is one configuration of the engine→serve RMEM rows: the row's
// name after "32 callers" and the process's GOMAXPROCS (0: as it is).
type rmemConfig struct {
	suffix string
	procs  int
}

// rmemConfigs: as a Go program runs by default, then with GOMAXPROCS 1,
// which spares the Go scheduler's hand-offs of woken callers to a second
// thread, on the CPU serve needs.
var rmemConfigs = []rmemConfig{
	{},
	{suffix: ", GOMAXPROCS 1", procs: 1},
}

// libRMEM adds the engine→serve RMEM rows: reads of one word from
// parallelCallers goroutines of this process, through an endpoint opened
// as the commands open theirs, against oetp serve for o.Duration each,
// every value checked against the memory the DMA rows wrote, in each of
// rmemConfigs, each right after a round of the raw pipelined exchange of
// the same frames with as many in flight on the same veth pair (wt). The
// goal is the default configuration's.
func libRMEM(o *Options, bed *procBed, servePID int, wt *windowTurns) ([]Result, error) {
	var res []Result
	for _, c := range rmemConfigs {
		var t turns
		if err := wt.roundRMEM(o.Duration, &t); err != nil {
			return res, err
		}
		r, err := libRMEMRow(o, bed, servePID, c)
		if err != nil {
			return res, err
		}
		if t.el > 0 && t.n > 0 {
			raw := float64(t.n) / t.el.Seconds()
			r.Versus, r.Ratio = rawParallelName, r.OpsPerSec/raw
			goal := ""
			if c == (rmemConfig{}) {
				r.Target = fmt.Sprintf("≥%.2f", rmemGoal)
				met := r.Ratio >= rmemGoal
				r.Met = &met
				verdict := "met"
				if !met {
					verdict = "missed"
				}
				goal = fmt.Sprintf(", goal ≥ %.1f: %s", rmemGoal, verdict)
			}
			text := fmt.Sprintf("%.3f× the raw pipelined exchange measured in turns with it on the same veth pair (%.0f exchanges/s%s)", r.Ratio, raw, goal)
			r.Note += "; " + text
			o.report.Notes = append(o.report.Notes, fmt.Sprintf("%s: %s (an endpoint of the bench process against oetp serve): %.0f reads/s, %s",
				ScenarioReliable, r.Name, r.OpsPerSec, text))
		}
		res = append(res, r)
	}
	return res, nil
}

// libRMEMRow measures one configuration of libRMEM with an endpoint of its
// own, and puts the process's GOMAXPROCS back after it.
func libRMEMRow(o *Options, bed *procBed, servePID int, c rmemConfig) (Result, error) {
	ha, hb := bed.n.Host(0), bed.n.Host(1)
	name := fmt.Sprintf("engine→serve rmem-read reliable %d callers%s", parallelCallers, c.suffix)
	if c.procs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
	}
	var nd *node.Node
	err := ha.Do(func() (err error) {
		ctx, cancel := context.WithTimeout(ctxBackground, 5*time.Second)
		defer cancel()
		nd, err = node.Open(ctx, node.Config{LinkConfig: node.LinkConfig{Iface: ha.IfName(), MAC: relRMEMMAC},
			Peers: []node.Peer{{Peer: endpoint.Peer{MAC: hb.MAC(), Mode: endpoint.ModeRMEM}, Transport: node.Reliable}}})
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("bench: %s: the endpoint against oetp serve: %w", name, err)
	}
	defer nd.Close()
	if !nd.Reliable(hb.MAC()) {
		return Result{}, fmt.Errorf("bench: %s: no reliable session with oetp serve (%v)", name, nd.Handshakes)
	}
	want := binary.LittleEndian.Uint32(bed.data[:4])
	// reads runs the callers until until and returns the reads they made.
	reads := func(until time.Time) (int64, error) {
		counts := make([]int64, parallelCallers)
		errs := make(chan error, parallelCallers)
		for i := range counts {
			go func() {
				for time.Now().Before(until) {
					v, err := nd.Endpoint.RMEMRead(ctxBackground, 0, 0)
					if err == nil && v != want {
						err = fmt.Errorf("read %#08x at 0x0, want %#08x (the block the DMA rows wrote)", v, want)
					}
					if err != nil {
						errs <- err
						return
					}
					counts[i]++
				}
				errs <- nil
			}()
		}
		var first error
		for range counts {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		var n int64
		for _, c := range counts {
			n += c
		}
		return n, first
	}
	if _, err := reads(time.Now().Add(warmTime)); err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w", name, err)
	}
	c0, s0 := processCPU(), taskCPU(servePID)
	start := time.Now()
	n, err := reads(start.Add(o.Duration))
	el := time.Since(start)
	cpu := processCPU() - c0 + taskCPU(servePID) - s0
	if err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w", name, err)
	}
	r := Result{Scenario: ScenarioReliable, Name: name, Ops: n, FrameCount: 2 * n, Elapsed: el, AllocsPerFrame: -1}
	if n > 0 {
		r.NsPerOp = float64(el.Nanoseconds()) / float64(n)
		r.OpsPerSec = float64(n) / el.Seconds()
	}
	r.Note = fmt.Sprintf("an endpoint of the bench process (node.Open, default link flags) against oetp serve, %d goroutines reading one word each in turn; CPU per read, both processes: %.2f µs",
		parallelCallers, float64(cpu.Nanoseconds())/1e3/float64(max(n, 1)))
	if c.procs > 0 {
		r.Note += fmt.Sprintf("; this process's GOMAXPROCS %d", c.procs)
	}
	return r, nil
}

// libBlocks moves blocks of n bytes with nd's endpoint for o.Duration
// after a warm-up, in o.Rounds rounds taking turns with rounds of the
// windowed raw exchange (wt), checks the last block read against data, and
// returns the row and what the raw rounds moved.
func libBlocks(o *Options, nd *node.Node, wt *windowTurns, op string, n int, data []byte, servePID int) (Result, turns, turns, error) {
	buf := make([]byte, n)
	// The windowed floor's near block: the block the row writes, or one of
	// the size the row reads into, its pages faulted in as the row's are.
	fblock := data[:n]
	if op == opDMARead {
		fblock = make([]byte, n)
		for i := range fblock {
			fblock[i] = byte(i)
		}
	}
	var ft turns
	f := func() error { _, err := nd.Endpoint.DMAWrite(ctxBackground, 0, 0, data[:n]); return err }
	if op == opDMARead {
		f = func() error { _, err := nd.Endpoint.DMARead(ctxBackground, 0, 0, buf); return err }
	}
	m := newMeter(true)
	frames, nbytes := opCounts(op, n)
	var t turns
	if err := newMeter(false).run(warmTime, warmOps, 0, 0, f); err != nil {
		return Result{}, t, ft, fmt.Errorf("bench: engine→serve %s reliable %d bytes: %w", op, n, err)
	}
	rounds := max(o.Rounds, 1)
	d, maxOps := o.Duration/time.Duration(rounds), max(o.MaxOps/int64(rounds), 1) // as runSteps shares them
	var cpu time.Duration
	var sent, resent, expiries, spurious, fast, naks uint64 // over the timed rounds
	for range rounds {
		if err := wt.round(op, d, &t); err != nil {
			return Result{}, t, ft, err
		}
		if err := wt.floorRound(op, fblock, d, &ft); err != nil {
			return Result{}, t, ft, err
		}
		// One block untimed first: both processes idled through the raw
		// round, as the raw exchange's echo starts afresh for each.
		if err := f(); err != nil {
			return Result{}, t, ft, fmt.Errorf("bench: engine→serve %s reliable %d bytes: %w", op, n, err)
		}
		st0, _ := nd.Transport()
		c0, s0 := processCPU(), taskCPU(servePID)
		if err := m.run(d, maxOps, frames, nbytes, f); err != nil {
			return Result{}, t, ft, fmt.Errorf("bench: engine→serve %s reliable %d bytes: %w", op, n, err)
		}
		cpu += processCPU() - c0 + taskCPU(servePID) - s0
		st1, _ := nd.Transport()
		sent += st1.Sent - st0.Sent
		resent += st1.Retransmitted - st0.Retransmitted
		expiries += st1.Timeouts - st0.Timeouts
		spurious += st1.SpuriousTimeouts - st0.SpuriousTimeouts
		fast += st1.FastRetransmits - st0.FastRetransmits
		naks += st1.NAKsReceived - st0.NAKsReceived
	}
	if op == opDMARead && !bytes.Equal(buf, data[:n]) {
		return Result{}, t, ft, fmt.Errorf("bench: engine→serve dma-read reliable: the %d bytes read differ from the block written", n)
	}
	r := engineResult(ScenarioReliable, op, n)
	r.Name = "engine→serve " + op + " reliable"
	r.fromMeter(m)
	r.Note = "an endpoint of the bench process (node.Open, default link flags) against oetp serve, steady state"
	if sent > 0 && cpu > 0 {
		r.Note += fmt.Sprintf("; CPU per fragment, both processes: %.2f µs", float64(cpu.Nanoseconds())/1e3/float64(sent))
	}
	r.Note += fmt.Sprintf("; %d fragments resent (%d timer expiries, %d found spurious, %d fast, %d NAKs)",
		resent, expiries, spurious, fast, naks)
	return r, t, ft, nil
}

// taskCPU returns the CPU time of every thread of process pid
// (/proc/PID/task/*/schedstat, nanoseconds on the CPU); 0 if unreadable.
func taskCPU(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var t time.Duration
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var ns int64
		if _, err := fmt.Sscan(string(b), &ns); err == nil {
			t += time.Duration(ns)
		}
	}
	return t
}
