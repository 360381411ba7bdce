//go:build linux

package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// The proc scenario's informational baselines: the raw ping-pong with its
// echo in a process of its own, as `oetp serve` is, so that the rows show
// what two processes cost on this machine with no protocol work at all
// (the limit stays the better of the in-process ping-pong on one
// CPU and free); and the same ping-pong with the two sides idle before
// every round trip, as a one-shot command finds a server that has waited
// since the previous command.

// RawEchoFlag is the hidden flag of `oetp bench` that runs RawEcho: the
// proc scenario starts the binary with it in the far namespace.
const RawEchoFlag = "raw-echo"

// procIdle is how long both sides of the "after idle" baseline wait before
// each round trip: about the time between two one-shot commands (a
// process start).
const procIdle = 20 * time.Millisecond

// RawEcho runs the far side of the raw ping-pong in this process, on
// interface ifname of its network namespace: a blocking AF_PACKET socket
// bound to the baseline's EtherType, answering each request with the
// prepared reply of its Cmd octet, addressed to the request's source. It
// writes "ready" to ready once the socket is bound, and returns at the
// stop frame, or within the read timeout once stdin reaches its end (the
// parent is gone).
func RawEcho(ifname string, stdin io.Reader, ready io.Writer) error {
	s, far, err := openEchoSock("raw echo", ifname)
	if err != nil {
		return err
	}
	defer s.close()
	replies := map[wire.Cmd][]byte{}
	for _, op := range engineOps {
		// The destination is patched from each request (echoLoop).
		req, rsp := rawFrames(op, wire.MAC{}, far)
		replies[wire.Cmd(req[15])] = retype(rsp)
	}
	e := startEcho(s, replies, -1, true)
	if _, err := fmt.Fprintln(ready, "ready"); err != nil {
		e.stop.Store(true)
		<-e.done
		return err
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		e.stop.Store(true)
	}()
	return <-e.done
}

// rawProc is a RawEcho process on the far host.
type rawProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
	out   *syncBuf // what it wrote after its ready line
}

// startRawEcho starts a RawEcho process on the far host, pinned to cpu, or
// with the CPUs the bench started with when cpu is negative, and waits
// until its socket is bound.
func (p *procEnv) startRawEcho(cpu int) (*rawProc, error) { return p.startEchoProc(cpu) }

// startEchoProc starts the raw echo process with more arguments (the
// floor echo's), as startRawEcho.
func (p *procEnv) startEchoProc(cpu int, args ...string) (*rawProc, error) {
	return startEchoCmd(p.bin, p.n.Host(1), cpu, append([]string{"--" + RawEchoFlag, p.n.Host(1).IfName()}, args...)...)
}

// startEchoCmd starts `bin bench ARGS` on host hb (an echo process that
// prints "ready" once its socket is bound), pinned to cpu or with the CPUs
// the bench started with when cpu is negative, and waits until it is ready.
func startEchoCmd(bin string, hb *netns.Host, cpu int, args ...string) (*rawProc, error) {
	cmd := hb.Command(bin, append([]string{"bench"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	if err := onThread(cpu, cmd.Start); err != nil {
		return nil, fmt.Errorf("starting the raw echo process: %w", err)
	}
	r := &rawProc{cmd: cmd, stdin: stdin, done: make(chan error, 1), out: &syncBuf{}}
	line := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		l, _ := br.ReadString('\n')
		line <- l
		_, _ = io.Copy(r.out, br)
		r.done <- cmd.Wait()
	}()
	select {
	case l := <-line:
		if strings.TrimSpace(l) == "ready" {
			return r, nil
		}
	case <-time.After(10 * time.Second):
	}
	stdin.Close()
	_ = cmd.Process.Kill()
	err = <-r.done
	return nil, fmt.Errorf("the raw echo process did not get ready (%v): %s", err, stderr.String())
}

// stop ends the echo process with the stop frame sent from the near
// socket (and its stdin closed, should the frame be lost).
func (r *rawProc) stop(from *rawSock, stop []byte) error {
	_ = from.write(stop)
	r.stdin.Close()
	select {
	case err := <-r.done:
		if err != nil {
			return fmt.Errorf("raw echo process: %w", err)
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		return errors.New("the raw echo process did not stop within 10s")
	}
}

// rawProcStep is the raw ping-pong of op's frame sizes with the echo a
// process of its own, both sides pinned to cpu or free (cpu negative);
// with idle > 0, both sides wait idle before every round trip (which is
// timed alone). It is a baseline that does not count as the limit: the
// scenario compares it with the limit, for information.
func (p *procEnv) rawProcStep(op string, cpu int, idle time.Duration) *step {
	v := p.raw
	req, rsp := rawFrames(op, v.nearMAC, v.farMAC)
	req = retype(req)
	label := frameLabel(len(req), len(rsp))
	where := "any CPU"
	if cpu >= 0 {
		where = "one CPU"
	}
	s := &step{m: newMeter(true)}
	name := "raw " + label + " echo process " + where
	if idle > 0 {
		name = "raw " + label + " after idle"
	}
	s.res = Result{Scenario: ScenarioProc, Name: name, Frames: label, Baseline: true, Info: true}
	s.round = func(d time.Duration, maxOps int64) error {
		echo, err := p.startRawEcho(cpu)
		if err != nil {
			return err
		}
		err = onThread(cpu, func() error {
			v.near.drain()
			pp := &rawPinger{s: v.near, req: req, rspLen: len(rsp), buf: make([]byte, 9216)}
			if idle == 0 {
				return s.m.runWarm(d, maxOps, 2, bytesPerOp(op), pp.roundTrip)
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mallocs := ms.Mallocs
			var err error
			start := time.Now()
			for i := int64(0); i < maxOps && (i < procMinOps || time.Since(start) < d); i++ {
				time.Sleep(idle)
				t0 := time.Now()
				if err = pp.roundTrip(); err != nil {
					s.m.fail()
					if s.m.failed >= maxFail {
						break
					}
					err = nil
					continue
				}
				s.m.record(time.Since(t0), 2, bytesPerOp(op))
			}
			runtime.ReadMemStats(&ms)
			s.m.mallocs += ms.Mallocs - mallocs
			return err
		})
		if serr := echo.stop(v.near, stopFrame(v.farMAC, v.nearMAC)); err == nil {
			err = serr
		}
		return err
	}
	if idle > 0 {
		s.after = func() error {
			s.res.Note = fmt.Sprintf("both sides idle %v before each round trip, which alone is timed: the cold exchange a one-shot command makes with a server that has waited", idle)
			return nil
		}
	} else {
		s.after = func() error {
			s.res.Note = "the echo is a process of its own, as oetp serve is: what two processes cost here with no protocol work (informational; the limit stays the in-process ping-pong)"
			return nil
		}
	}
	return s
}
