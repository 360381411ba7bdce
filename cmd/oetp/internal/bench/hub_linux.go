//go:build linux

package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The hub's reliable rows (part of the reliable scenario): the largest
// block written by `oetp dma write --transport reliable` from its own
// endpoint, and by the same command through `oetp hub` serving the board
// as a device with transport = "reliable": the command streams the block to
// the hub, whose endpoint sends it. Both against one `oetp serve` over a
// veth pair, alternately, in the same run; each figure is the median of
// the command's own --json rate.

// TargetHubVsDirect is the goal of the hub's reliable DMA write: its
// MB/s against the command's own reliable endpoint.
const TargetHubVsDirect = 0.8

// The hub's local MACs.
var (
	hubRMEMMAC  = stationMAC(0x0b, 0x01)
	hubWriteMAC = stationMAC(0x0b, 0x02)
	hubReadMAC  = stationMAC(0x0b, 0x03)
)

func runHubReliable(o *Options) ([]Result, error) {
	bed, err := newProcBed(o, "oetp-bench-hub-")
	if err != nil {
		return nil, err
	}
	defer bed.close()
	ha, hb, dir := bed.n.Host(0), bed.n.Host(1), bed.dir
	block := len(bed.data)
	src, err := bed.file(block)
	if err != nil {
		return nil, err
	}
	srv, err := bed.serve(o, hubWriteMAC, "dma-write")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	sock := filepath.Join(dir, "hub.sock")
	cfg := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("socket = %q\n\n[[device]]\nname = \"board\"\niface = %q\nmac = %q\ntransport = \"reliable\"\n\n[device.local]\nrmem = %q\ndma_write = %q\ndma_read = %q\n",
		sock, ha.IfName(), hb.MAC(), hubRMEMMAC, hubWriteMAC, hubReadMAC)), 0o600); err != nil {
		return nil, err
	}
	hub, err := startReadyCmd(ha.Command(o.Binary, "hub", "--config", cfg), "oetp hub")
	if err != nil {
		return nil, err
	}
	defer hub.stop()
	write := func(via string, args ...string) (float64, time.Duration, error) {
		cmd := ha.Command(o.Binary, append([]string{"dma", "write", "--iface", ha.IfName(), "--peer", hb.MAC().String(),
			"--addr", "0", "--in", src, "--json"}, args...)...)
		out, err := cmd.Output()
		var r struct {
			OK      bool    `json:"ok"`
			MBps    float64 `json:"mb_per_s"`
			Seconds float64 `json:"seconds"`
			Via     string  `json:"via"`
			Message string  `json:"message"`
		}
		if jerr := json.Unmarshal(out, &r); jerr != nil || !r.OK || r.Via != via {
			return 0, 0, fmt.Errorf("bench: oetp dma write %s (%s): %v %v %s", strings.Join(args, " "), via, err, jerr, out)
		}
		return r.MBps, time.Duration(r.Seconds * float64(time.Second)), nil
	}
	// One warm-up write each (the file's pages, the board's memory, the
	// hub's first block), then the measured rounds.
	if _, _, err := write("direct", "--no-hub", "--transport", "reliable"); err != nil {
		return nil, err
	}
	if _, _, err := write("hub", "--hub", sock); err != nil {
		return nil, err
	}
	rounds := max(o.Rounds, 3)
	var direct, viaHub []float64
	var dEl, hEl time.Duration
	for range rounds {
		mb, el, err := write("direct", "--no-hub", "--transport", "reliable")
		if err != nil {
			return nil, err
		}
		direct, dEl = append(direct, mb), dEl+el
		if mb, el, err = write("hub", "--hub", sock); err != nil {
			return nil, err
		}
		viaHub, hEl = append(viaHub, mb), hEl+el
	}
	row := func(name string, rates []float64, el time.Duration) Result {
		r := Result{Scenario: ScenarioReliable, Name: name, Block: int64(block), Ops: int64(len(rates)), Elapsed: el,
			NsPerOp: float64(el.Nanoseconds()) / float64(len(rates)), MBps: median(rates), AllocsPerFrame: -1}
		r.OpsPerSec = float64(len(rates)) / el.Seconds()
		return r
	}
	d := row("oetp dma write reliable", direct, dEl)
	d.Baseline, d.Info = true, true
	d.Note = fmt.Sprintf("the command's own endpoint, --transport reliable; median of %d processes' --json rate (%s MB/s)", rounds, rates(direct))
	h := row("oetp dma write via hub reliable", viaHub, hEl)
	h.compareRate(&d, TargetHubVsDirect)
	h.Note = fmt.Sprintf("the same command through oetp hub (its device transport = \"reliable\"): the block streams to the hub, whose endpoint sends it; median of %d (%s MB/s)", rounds, rates(viaHub))
	return []Result{d, h}, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func rates(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(s, ", ")
}

// readyCmd is a started oetp serve or hub.
type readyCmd struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startReadyCmd starts cmd and waits for its ready line.
func startReadyCmd(cmd *exec.Cmd, what string) (*readyCmd, error) {
	errOut := &syncBuf{}
	cmd.Stderr = errOut
	if err := startUnpinned(cmd); err != nil {
		return nil, fmt.Errorf("bench: starting %s: %w", what, err)
	}
	r := &readyCmd{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(r.done) }()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(errOut.String(), "msg=ready") {
		select {
		case <-r.done:
			return nil, fmt.Errorf("bench: %s exited before it was ready (%v): %s", what, cmd.ProcessState, errOut.String())
		case <-deadline:
			r.stop()
			return nil, fmt.Errorf("bench: %s printed no ready line in 30s: %s", what, errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return r, nil
}

func (r *readyCmd) stop() {
	r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-r.done
	}
}
