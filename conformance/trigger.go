package conformance

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/openenoc/oetp/wire"
)

// Exec runs one trigger command line (placeholders already replaced) and
// returns what it printed on standard output and its exit status (0 when
// it succeeded). err is for a command that could not run or did not end
// within its context; a non-zero exit status alone is not an error.
type Exec func(ctx context.Context, cmdline string) (out string, status int, err error)

// ShellExec is the default Exec: sh -c cmdline in the runner's
// environment. Its standard error is appended to the output of a failing
// command, for the case's detail.
func ShellExec(ctx context.Context, cmdline string) (string, int, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
	// A child that outlives the killed shell keeps the pipes open: stop
	// waiting for them a second after the deadline.
	cmd.WaitDelay = time.Second
	var stderr strings.Builder
	cmd.Stderr = &limited{b: &stderr, n: 4096}
	outB, err := cmd.Output()
	out := string(outB)
	if len(out) > 1<<16 {
		out = out[:1<<16]
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return out + stderr.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return out, -1, fmt.Errorf("%v %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, 0, nil
}

// limited keeps the first n bytes written to it.
type limited struct {
	b *strings.Builder
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// expand replaces the placeholders {name} of line by vals.
func expand(line string, vals map[string]string) string {
	for k, v := range vals {
		line = strings.ReplaceAll(line, "{"+k+"}", v)
	}
	return line
}

func hex32(v uint32) string { return fmt.Sprintf("%#x", v) }

// outcome is what a trigger or status command reported.
type outcome struct {
	done, errFlag bool
	code          int // error_code, -1 when not printed
	data          uint32
	hasData       bool
	raw           string
}

// parseOutcome reads the key=value words of a command's output: done,
// error, error_code, rd_data. The last value of each key counts.
func parseOutcome(out string) outcome {
	o := outcome{code: -1, raw: strings.TrimSpace(out)}
	for _, w := range strings.Fields(out) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 0, 32)
		if err != nil {
			continue
		}
		switch k {
		case "done":
			o.done = n != 0
		case "error":
			o.errFlag = n != 0
		case "error_code":
			o.code = int(n)
		case "rd_data":
			o.data, o.hasData = uint32(n), true
		}
	}
	return o
}

// trigger runs the trigger line (a DUT [trigger] command) with vals in the
// background; the returned channel yields its outcome. When its output
// has no error_code and a status command is given, the status command
// reports it.
func (t *T) trigger(name, line string, vals map[string]string) <-chan triggerResult {
	ch := make(chan triggerResult, 1)
	run := t.r.exec
	wait := t.DUT().Trigger.Wait
	status := t.DUT().Trigger.Status
	cmdline := expand(line, vals)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		out, st, err := run(ctx, cmdline)
		res := triggerResult{cmdline: cmdline, status: st, err: err, o: parseOutcome(out)}
		if err == nil && res.o.code < 0 && status != "" {
			out, st, err = run(ctx, status)
			res.o, res.err = parseOutcome(out), err
			if err == nil && st != 0 && res.o.code < 0 {
				res.err = fmt.Errorf("status command %q exited %d: %s", status, st, strings.TrimSpace(out))
			}
		} else if err == nil && res.o.code < 0 && st != 0 {
			res.err = fmt.Errorf("exited %d: %s", st, strings.TrimSpace(out))
		}
		ch <- res
	}()
	return ch
}

type triggerResult struct {
	cmdline string
	status  int
	err     error
	o       outcome
}

// run runs a trigger command that configures the device (set_peer, setup,
// timeout_off, timeout_on) and fails the case unless it exits 0.
func (t *T) runConfig(name, line string, vals map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), t.DUT().Trigger.Wait)
	defer cancel()
	cmdline := expand(line, vals)
	out, st, err := t.r.exec(ctx, cmdline)
	if err != nil || st != 0 {
		t.Fatalf("[trigger] %s %q: exit %d, %v: %s", name, cmdline, st, err, strings.TrimSpace(out))
	}
}

// setPeerVals are the set_peer placeholders for entry i.
func setPeerVals(i int, p Peer) map[string]string {
	return map[string]string{"index": strconv.Itoa(i), "mac": p.MAC.String(), "mode": strconv.Itoa(int(p.Mode)),
		"base": hex32(p.Window.Base), "size": fmt.Sprintf("%#x", p.Window.Size)}
}

// duplicatePeer returns two entries with one MAC: low, the lowest enabled
// one, which serves the MAC's requests, and high, a later one in another
// mode; from the DUT file's table, or made with the set_peer trigger on
// the last entry (undo restores it).
func (t *T) duplicatePeer() (low, high Peer, undo func()) {
	d := t.DUT()
	for i, p := range d.Peers {
		if d.serving(p.MAC) != i || p.Mode == ModeNone {
			continue
		}
		for _, q := range d.Peers[i+1:] {
			if q.MAC == p.MAC && q.Mode != ModeNone && q.Mode != p.Mode {
				return p, q, func() {}
			}
		}
	}
	last := len(d.Peers) - 1
	for i, p := range d.Peers[:max(last, 0)] {
		if d.serving(p.MAC) != i || p.Mode == ModeNone {
			continue
		}
		h := Peer{MAC: p.MAC, Mode: ModeRMEM, Window: p.Window}
		if p.Mode == ModeRMEM {
			h.Mode = ModeDMAWrite
		}
		t.runConfig("set_peer", d.Trigger.SetPeer, setPeerVals(last, h))
		orig := d.Peers[last]
		return p, h, func() { t.runConfig("set_peer", d.Trigger.SetPeer, setPeerVals(last, orig)) }
	}
	t.Skipf("needs DUT key %s", KeyDuplicatePeer)
	return
}

// request names the request mode m permits.
func (m Mode) request() string {
	return map[Mode]string{ModeRMEM: "RMEM_READ_REQ", ModeDMAWrite: "DMA_WRITE_REQ", ModeDMARead: "DMA_READ_REQ"}[m]
}

func (m Mode) reply() wire.Cmd {
	return map[Mode]wire.Cmd{ModeRMEM: wire.RMEMReadRsp, ModeDMAWrite: wire.DMAWriteRsp, ModeDMARead: wire.DMAReadRsp}[m]
}

func (m Mode) replyPDU() int {
	return map[Mode]int{ModeRMEM: 10, ModeDMAWrite: 6, ModeDMARead: wire.PDULen(wire.DMAReadRsp, 4)}[m]
}

// requestFor builds the request p's mode permits, at addr: an RMEM read,
// a 4-byte DMA write or a 4-byte DMA read.
func (t *T) requestFor(p Peer, addr uint32) []byte {
	switch p.Mode {
	case ModeDMAWrite:
		return t.dmaWriteReq(p, t.RID(), addr, t.pattern(4))
	case ModeDMARead:
		return t.dmaReadReq(p, t.RID(), addr, 4)
	}
	return t.rmemReadReq(p, t.RID(), addr)
}

// hasScratch reports whether w holds n bytes of scratch memory.
func (t *T) hasScratch(w Range, n uint64, align uint32) bool {
	_, ok := t.findScratch(w, n, align)
	return ok
}

// since is a short duration for details.
func since(t0 time.Time) time.Duration { return time.Since(t0).Round(time.Millisecond) }
