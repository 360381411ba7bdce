//go:build linux

package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/cmd/oetp/internal/atexit"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// The proc scenario measures what users run: `oetp serve` on one host of a
// veth pair and the one-shot commands (`oetp rmem read`, `oetp dma write`,
// `oetp dma read`) on the other, each a process of its own started for one
// operation, with default flags, unpinned, next to the raw ping-pongs of
// the same frame sizes on the same veth pair in the same run.

// procUnavailable says why the proc scenario cannot run here, or "".
func procUnavailable(o *Options) string {
	if why := vethUnavailable(); why != "" {
		return why
	}
	if o.Binary == "" {
		return "no oetp binary to run (Options.Binary; oetp bench runs itself)"
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return "needs nsenter (util-linux) to start processes in the namespaces"
	}
	return ""
}

// The MACs of the one-shot commands' endpoints: a v1 peer entry has one
// mode, so the server has one entry, and the initiators one --mac, per kind
// of operation (RMEM uses the interface's own address).
var (
	procWriterMAC = stationMAC(0x01, 0x01)
	procReaderMAC = stationMAC(0x02, 0x01)
	// The library rows' endpoints in the bench process, one per kind.
	procLibMACs = map[string]wire.MAC{
		opRMEMRead: {0x02, 0x0e, 0x0c, 0x00, 0x03, 0x01},
		opDMAWrite: {0x02, 0x0e, 0x0c, 0x00, 0x04, 0x01},
		opDMARead:  {0x02, 0x0e, 0x0c, 0x00, 0x05, 0x01},
	}
)

// procMinOps is the fewest processes a round of a process row runs, so
// that even short rounds give a median of several operations.
const procMinOps = 3

// procEnv is a veth pair with `oetp serve` running on host 2, the one-shot
// commands started on host 1, and the baseline's raw sockets.
type procEnv struct {
	bin     string
	n       *netns.Net
	near    *netns.Host // runs the one-shot commands
	raw     *vethRaw
	cpu     int
	dir     string
	undoDir func() // unregisters the removal of dir on a signal (atexit)
	srv     *exec.Cmd
	srvDone chan struct{}
	srvErr  *syncBuf
	// lib are the library rows' endpoints by operation, with their
	// source and destination blocks.
	lib            map[string]*endpoint.Endpoint
	libSrc, libDst []byte
	// floorWays: measure every way of the floor rows' copies
	// (Options.FloorWays).
	floorWays bool
	// written is the prefix of the server's memory that DMA writes have
	// overwritten with procPattern; beyond it the memory is zero.
	written int
}

// procPattern is byte i of every DMA write's source.
func procPattern(i int) byte { return byte(i*29 + 11) }

// newProcEnv builds the veth pair, starts `oetp serve` with maxBlock bytes
// of RAM and writes the DMA sources of every block size.
func newProcEnv(o *Options) (_ *procEnv, err error) {
	n, err := netns.New(netns.Topology{Hosts: 2})
	if err != nil {
		return nil, err
	}
	p := &procEnv{bin: o.Binary, n: n, near: n.Host(0), cpu: lastCPU(), floorWays: o.FloorWays}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	ha, hb := n.Host(0), n.Host(1)
	if p.raw, err = newVethRaw(ha, hb); err != nil {
		return nil, err
	}
	if p.dir, err = os.MkdirTemp("", "oetp-bench-proc-"); err != nil {
		return nil, err
	}
	dir := p.dir
	p.undoDir = atexit.Add(func() { os.RemoveAll(dir) })
	src := make([]byte, o.maxBlock())
	for i := range src {
		src[i] = procPattern(i)
	}
	for _, b := range o.Blocks {
		if err := os.WriteFile(p.srcPath(int(b)), src[:b], 0o600); err != nil {
			return nil, err
		}
	}
	// Default flags but for the memory and the peers, which a user gives.
	p.srvErr = &syncBuf{}
	p.srv = hb.Command(p.bin, "serve", "--iface", hb.IfName(),
		"--region", fmt.Sprintf("%#x:%d", remoteBase, o.maxBlock()),
		"--peer", ha.MAC().String()+",mode=rmem",
		"--peer", procWriterMAC.String()+",mode=dma-write",
		"--peer", procReaderMAC.String()+",mode=dma-read",
		"--peer", procLibMACs[opRMEMRead].String()+",mode=rmem",
		"--peer", procLibMACs[opDMAWrite].String()+",mode=dma-write",
		"--peer", procLibMACs[opDMARead].String()+",mode=dma-read")
	p.srv.Stderr = p.srvErr
	if err := startUnpinned(p.srv); err != nil {
		return nil, fmt.Errorf("starting oetp serve: %w", err)
	}
	p.srvDone = make(chan struct{})
	go func() { p.srv.Wait(); close(p.srvDone) }()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(p.srvErr.String(), "msg=ready") {
		select {
		case <-p.srvDone:
			return nil, fmt.Errorf("oetp serve exited before it was ready (%v): %s", p.srv.ProcessState, p.srvErr.String())
		case <-deadline:
			return nil, fmt.Errorf("oetp serve printed no ready line in 30s: %s", p.srvErr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := p.openLib(o.maxBlock()); err != nil {
		return nil, err
	}
	return p, nil
}

// openLib starts the library rows' initiating endpoints on the near host,
// in this process: AF_PACKET links with a blocking receive, as the
// commands open them, but without keeping the P (node.IOBlocking, not
// IOAuto: afpacket's HoldP lets only one receive of a process hold its P
// with GOMAXPROCS 2, and here three endpoints share the process).
func (p *procEnv) openLib(maxBlock int) error {
	p.lib = map[string]*endpoint.Endpoint{}
	far := p.n.Host(1).MAC()
	cfg := endpoint.Config{RMEMTimeout: engineTimeout, DMATimeout: engineTimeout}
	for op, mac := range procLibMACs {
		var l *node.Link
		err := p.near.Do(func() (err error) {
			l, err = node.OpenLink(node.LinkConfig{Iface: p.near.IfName(), MAC: mac, IO: node.IOBlocking})
			return err
		})
		if err != nil {
			return err
		}
		e, err := endpoint.New(l.Link, nil, cfg)
		if err != nil {
			l.Close()
			return err
		}
		p.lib[op] = e
		mode := map[string]endpoint.Mode{opRMEMRead: endpoint.ModeRMEM, opDMAWrite: endpoint.ModeDMARead, opDMARead: endpoint.ModeDMAWrite}[op]
		if err := e.SetPeer(0, endpoint.Peer{MAC: far, Mode: mode, WindowSize: 1 << 32}); err != nil {
			return err
		}
	}
	p.libSrc = make([]byte, maxBlock)
	for i := range p.libSrc {
		p.libSrc[i] = procPattern(i)
	}
	p.libDst = make([]byte, maxBlock)
	return nil
}

// library returns the measurement of op on n bytes by an endpoint in this
// process against the oetp serve process: two processes in steady state,
// without a command's start-up, its cold first operation or its exit.
func (p *procEnv) library(op string, n int) *step {
	s := &step{m: newMeter(true), res: engineResult(ScenarioProc, op, n)}
	s.res.Name = "engine→serve " + op
	e := p.lib[op]
	frames, bytes := opCounts(op, n)
	var f func() error
	switch op {
	case opRMEMRead:
		f = func() error { _, err := e.RMEMRead(ctxBackground, 0, remoteBase); return err }
	case opDMAWrite:
		src := p.libSrc[:n]
		f = func() error { _, err := e.DMAWrite(ctxBackground, 0, remoteBase, src); return err }
	case opDMARead:
		dst := p.libDst[:n]
		f = func() error { _, err := e.DMARead(ctxBackground, 0, remoteBase, dst); return err }
	}
	s.round = func(d time.Duration, maxOps int64) error { return s.m.runWarm(d, maxOps, frames, bytes, f) }
	s.after = func() error {
		switch op {
		case opDMAWrite:
			p.written = max(p.written, n)
		case opDMARead:
			for i := range n {
				want := byte(0)
				if i < p.written {
					want = procPattern(i)
				}
				if p.libDst[i] != want {
					return fmt.Errorf("%s of %d bytes: byte %d is %#x, the server holds %#x", op, n, i, p.libDst[i], want)
				}
			}
		}
		return nil
	}
	return s
}

func (p *procEnv) srcPath(n int) string { return filepath.Join(p.dir, fmt.Sprintf("src-%d.bin", n)) }

func (p *procEnv) scenario() string { return ScenarioProc }

// bases returns the raw ping-pong on one CPU and free, like the veth
// scenario's: the faster one is the limit.
func (p *procEnv) bases(op string) []*step {
	return []*step{p.raw.step(ScenarioProc, op, p.cpu), p.raw.step(ScenarioProc, op, -1)}
}

// post adds to the one-shot commands' rows how they compare with the
// informational baselines: the RMEM read with the raw round trip after
// idle (both are cold exchanges), the DMA transfers with the better raw
// ping-pong with its echo in another process (both are two processes).
func (p *procEnv) post(op string, engines []*step) {
	var idle, two *Result
	floors := map[int64]*Result{} // the better floor row of each block
	for _, e := range engines {
		r := &e.res
		switch {
		case strings.HasPrefix(r.Name, "floor "):
			if f := floors[r.Block]; f == nil || r.MBps > f.MBps {
				floors[r.Block] = r
			}
		case !r.Info:
		case strings.HasSuffix(r.Name, " after idle"):
			idle = r
		case two == nil || op == opRMEMRead && r.P50 > 0 && r.P50 < two.P50 || op != opRMEMRead && r.MBps > two.MBps:
			two = r
		}
	}
	for _, e := range engines {
		r := &e.res
		if r.Info || !strings.HasPrefix(r.Name, "oetp ") && !strings.HasPrefix(r.Name, "engine→serve ") {
			continue
		}
		var add string
		switch {
		case op == opRMEMRead && strings.HasPrefix(r.Name, "oetp ") && idle != nil && idle.P50 > 0:
			add = fmt.Sprintf("p50 %.2f× the %s", float64(r.P50)/float64(idle.P50), idle.Name)
		case op == opRMEMRead && two != nil && two.P50 > 0:
			add = fmt.Sprintf("p50 %.2f× the %s", float64(r.P50)/float64(two.P50), two.Name)
		case op != opRMEMRead && two != nil && two.MBps > 0:
			add = fmt.Sprintf("%.2f× the MB/s of the %s", r.MBps/two.MBps, two.Name)
		}
		// Only the commands move files, as the floor does: the
		// engine→serve rows move the bench process's memory.
		if f := floors[r.Block]; f != nil && f.MBps > 0 && op != opRMEMRead && strings.HasPrefix(r.Name, "oetp ") {
			if add != "" {
				add += "; "
			}
			add += fmt.Sprintf("%.2f× the MB/s of the %s row (%.0f MB/s, %.2f× the limit)", r.MBps/f.MBps, f.Name, f.MBps, f.Ratio)
		}
		if add == "" {
			continue
		}
		if r.Note != "" {
			r.Note += "; "
		}
		r.Note += add
	}
}

// procName is the row name of an engine operation run as a command.
func procName(op string) string {
	switch op {
	case opRMEMRead:
		return "oetp rmem read"
	case opDMAWrite:
		return "oetp dma write"
	case opDMARead:
		return "oetp dma read"
	}
	panic("bench: unknown engine operation " + op)
}

// engine returns the measurement of op as one-shot processes: each
// operation is one `oetp` process on the near host, and its time is the
// `seconds` the command reports with --json (the operation, from the call
// to its outcome, as a script sees it), not the process's start-up, which
// the row's note gives.
func (p *procEnv) engine(op string, n int) *step { return p.command(op, n, false) }

// extra returns the DMA rows of blocks from TargetBlock up once more with
// the command's standard error a terminal, as for a user at a shell: the
// command then draws a progress bar (endpoint.WithProgress), which must
// not slow the transfer.
func (p *procEnv) extra(op string, blocks []int64) []*step {
	// The raw ping-pong with its echo a process of its own (informational
	// baselines, see rawProcStep).
	out := []*step{p.rawProcStep(op, p.cpu, 0), p.rawProcStep(op, -1, 0)}
	if op == opRMEMRead {
		return append(out, p.rawProcStep(op, -1, procIdle), p.library(op, 4))
	}
	// The floors of the blocks the target applies to, on one CPU and
	// free (the better counts), and with FloorWays every other way of
	// their copies on one CPU.
	for _, b := range blocks {
		if b < TargetBlock {
			continue
		}
		w := floorCopies[op]
		out = append(out, p.floorStep(op, int(b), p.cpu, w), p.floorStep(op, int(b), -1, w))
		if p.floorWays {
			for _, x := range floorWays(op) {
				if x != w {
					out = append(out, p.floorStep(op, int(b), p.cpu, x))
				}
			}
		}
	}
	for _, b := range blocks {
		if b >= TargetBlock {
			out = append(out, p.command(op, int(b), true))
		}
	}
	for _, b := range blocks {
		out = append(out, p.library(op, int(b)))
	}
	return out
}

// command returns the measurement of op as one-shot processes, with a
// terminal for standard error if tty.
func (p *procEnv) command(op string, n int, tty bool) *step {
	s := &step{m: newMeter(true), res: engineResult(ScenarioProc, op, n)}
	s.res.Name = procName(op)
	if tty {
		s.res.Name += " (tty)"
	}
	s.m.noAllocs = true
	frames, bytes := opCounts(op, n)
	wall := newMeter(true)
	out := filepath.Join(p.dir, fmt.Sprintf("dst-%d.bin", n))
	args := p.args(op, n, out)
	s.round = func(d time.Duration, maxOps int64) error {
		start := time.Now()
		for i := int64(0); i < maxOps && (i < procMinOps || time.Since(start) < d); i++ {
			t0 := time.Now()
			r, err := p.oetp(tty, args...)
			wall.record(time.Since(t0), 0, 0)
			if err != nil {
				s.m.fail()
				if s.m.failed >= maxFail {
					return fmt.Errorf("%s: %w", s.res.Name, err)
				}
				continue
			}
			s.m.record(time.Duration(r.Seconds*float64(time.Second)), frames, bytes)
		}
		return nil
	}
	s.after = func() error {
		s.res.Note = fmt.Sprintf("the whole process (nsenter, start, operation, exit) took %v p50",
			wall.percentiles(50)[0].Round(10*time.Microsecond))
		if tty {
			s.res.Note += "; progress bar drawn on the terminal"
		}
		switch op {
		case opDMAWrite:
			p.written = max(p.written, n)
			// Read the block back through the server.
			r, err := p.oetp(false, p.args(opDMARead, n, out)...)
			if err != nil {
				return fmt.Errorf("reading back a %s of %d bytes: %w", op, n, err)
			}
			_ = r
			return p.check(out, n, "reads back as")
		case opDMARead:
			return p.check(out, n, "was read as")
		}
		return nil
	}
	return s
}

// check compares the first n bytes of the file path with the server's
// memory as the DMA writes left it.
func (p *procEnv) check(path string, n int, what string) error {
	err := checkFile(path, n, func(off int, b []byte) {
		for j := range b {
			b[j] = 0
			if off+j < p.written {
				b[j] = procPattern(off + j)
			}
		}
	})
	if m := (*fileMismatch)(nil); errors.As(err, &m) && m.Off < 0 {
		return fmt.Errorf("a DMA read of %d bytes wrote %d bytes", n, m.Size)
	} else if m != nil {
		return fmt.Errorf("DMA of %d bytes: byte %d %s %#x, the server holds %#x", n, m.Off, what, m.Got, m.Want)
	}
	return err
}

// args returns the command line of one operation of kind op on n bytes;
// a DMA read writes to out.
func (p *procEnv) args(op string, n int, out string) []string {
	far := p.n.Host(1).MAC().String()
	addr := fmt.Sprintf("%#x", remoteBase)
	iface := p.near.IfName()
	switch op {
	case opRMEMRead:
		return []string{"rmem", "read", "--iface", iface, "--peer", far, "--addr", addr, "--json"}
	case opDMAWrite:
		return []string{"dma", "write", "--iface", iface, "--mac", procWriterMAC.String(), "--peer", far, "--addr", addr, "--in", p.srcPath(n), "--json"}
	case opDMARead:
		return []string{"dma", "read", "--iface", iface, "--mac", procReaderMAC.String(), "--peer", far, "--addr", addr,
			"--length", fmt.Sprint(n), "--out", out, "--json"}
	}
	panic("bench: unknown engine operation " + op)
}

// procResult is the part of a one-shot command's JSON result the bench
// reads.
type procResult struct {
	OK      bool    `json:"ok"`
	Error   string  `json:"error"`
	Message string  `json:"message"`
	Seconds float64 `json:"seconds"`
}

// oetp runs one one-shot command on the near host and returns its result;
// an error unless it exited 0 with ok true.
func (p *procEnv) oetp(tty bool, args ...string) (procResult, error) {
	var r procResult
	cmd := p.near.Command(p.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var drained chan struct{}
	if tty {
		ptm, pts, err := openPTY()
		if err != nil {
			return r, err
		}
		defer ptm.Close()
		cmd.Stderr = pts
		// Read what the command draws, as a terminal would.
		drained = make(chan struct{})
		go func() {
			io.Copy(&stderr, ptm)
			close(drained)
		}()
		err = startUnpinned(cmd)
		pts.Close() // the child has its copy
		if err != nil {
			return r, err
		}
	} else if err := startUnpinned(cmd); err != nil {
		return r, err
	}
	err := cmd.Wait()
	if drained != nil {
		<-drained // EIO once the child has closed the terminal
		if !strings.Contains(stderr.String(), "dma") {
			return r, fmt.Errorf("oetp %s drew no progress bar on its terminal: %q", strings.Join(args[:2], " "), stderr.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &r); jerr != nil {
		return r, fmt.Errorf("oetp %s: %v, no JSON result (%v): %s", strings.Join(args[:2], " "), err, jerr, stderr.String())
	}
	if err != nil || !r.OK {
		return r, fmt.Errorf("oetp %s: %v: %s %s", strings.Join(args[:2], " "), err, r.Error, r.Message)
	}
	return r, nil
}

// openPTY opens a pseudo-terminal: the master side to read from and the
// slave side to hand to a child.
func openPTY() (ptm, pts *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening a terminal: %w", os.NewSyscallError("open /dev/ptmx", err))
	}
	ptm = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("unlocking a terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("naming a terminal: %w", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ptm.Close()
		return nil, nil, fmt.Errorf("opening a terminal: %w", err)
	}
	return ptm, pts, nil
}

// startUnpinned starts cmd from a thread with the CPUs the bench process
// started with: a child inherits the affinity of the thread that forks it,
// which may be pinned.
func startUnpinned(cmd *exec.Cmd) error {
	return onThread(-1, cmd.Start)
}

func (p *procEnv) close() error {
	var errs []error
	for _, e := range p.lib {
		e.Close()
	}
	if p.srv != nil && p.srv.Process != nil {
		_ = p.srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.srvDone:
		case <-time.After(10 * time.Second):
			_ = p.srv.Process.Kill()
			<-p.srvDone
			errs = append(errs, fmt.Errorf("oetp serve did not stop within 10s of SIGTERM"))
		}
	}
	if p.raw != nil {
		p.raw.close()
	}
	if p.dir != "" {
		errs = append(errs, os.RemoveAll(p.dir))
		p.undoDir()
	}
	errs = append(errs, p.n.Close())
	return errors.Join(errs...)
}

// runProc runs the proc scenario.
func runProc(o *Options) ([]Result, error) {
	p, err := newProcEnv(o)
	if err != nil {
		return nil, err
	}
	o.report.Notes = append(o.report.Notes, fmt.Sprintf(
		"%s: what users run: oetp serve on one host of a veth pair, each operation one oetp rmem read, dma write or dma read process on the other (default flags, unpinned; --json, and (tty) rows with standard error a terminal), timed as the command reports it (--json seconds); the engine→serve rows: an endpoint of the bench process (a blocking-receive AF_PACKET link as the commands open theirs, but without HoldP: three such endpoints share the bench process) against the same oetp serve, two processes in steady state; the raw ping-pongs on the same veth pair",
		ScenarioProc))
	return runEnv(o, p)
}

// syncBuf is a bytes.Buffer safe for a writing process and a reader.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
	// onWrite, if set before the first write, is called after each one
	// (a test's wait for a line).
	onWrite func()
}

func (s *syncBuf) Write(b []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(b)
	s.mu.Unlock()
	if s.onWrite != nil {
		s.onWrite()
	}
	return n, err
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
