//go:build linux

package bench

import (
	"fmt"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// vethUnavailable says why the veth scenario cannot run here, or "".
func vethUnavailable() string {
	if err := netns.Available(); err != nil {
		return err.Error()
	}
	return ""
}

// mcastGroup is the group address of the multicast scenario.
var mcastGroup = wire.MAC{0x03, 0x0e, 0x0c, 0x00, 0x00, 0xff}

// mcastBlock is the block size of a multicast write operation.
const mcastBlock = 1 << 20

// mcastSlaves is the number of hosts receiving the multicast writes.
const mcastSlaves = 3

// openLink opens an AF_PACKET link on h's interface, inside h's namespace,
// through package node, in the I/O mode named by io ("" or "poll": the
// network poller, "blocking"): several links share the bench's process, so
// a blocking receive does not keep its P. The engine takes the link's
// Link, which implements the optional interfaces it looks for.
func openLink(h *netns.Host, io string, busyPoll time.Duration) (*node.Link, error) {
	cfg := node.LinkConfig{Iface: h.IfName(), BusyPoll: busyPoll, IO: node.IOPoll}
	if io == "blocking" {
		cfg.IO = node.IOBlocking
	}
	var l *node.Link
	err := h.Do(func() (err error) {
		l, err = node.OpenLink(cfg)
		return err
	})
	return l, err
}

// openRawOn opens a baseline socket on h's interface, inside h's namespace.
func openRawOn(h *netns.Host) (*rawSock, error) {
	var s *rawSock
	err := h.Do(func() (err error) {
		s, err = openRaw(h.Index())
		return err
	})
	return s, err
}

// runVeth runs the engine over a veth pair between two namespaces (RMEM
// read, DMA writes and reads of every block size), each next to raw
// AF_PACKET ping-pongs of the same frame sizes on the same veth; then the
// same again on a fresh veth pair with busy-polling links and the engine
// free on any CPU (ScenarioVethBusy), unless o.BusyPoll is negative; then
// multicast writes to three hosts on a bridge next to a raw blast of the
// same frames.
func runVeth(o *Options) ([]Result, error) {
	v, err := newVethEnv(o.maxBlock(), o.LinkIO, 0)
	if err != nil {
		return nil, err
	}
	v.anyCPU = o.EngineAnyCPU
	out, err := runEnv(o, v)
	if err != nil {
		return out, err
	}
	if o.BusyPoll > 0 {
		o.report.Notes = append(o.report.Notes, fmt.Sprintf(
			"%s: the veth comparisons again on a fresh veth pair, the engine's links busy-polling (afpacket Config.BusyPoll %v; oetp serve, rmem and dma --busy-poll) and its threads free on any CPU (a loop spinning on the CPU its peer needs would starve it)",
			ScenarioVethBusy, o.BusyPoll))
		if v, err = newVethEnv(o.maxBlock(), o.LinkIO, o.BusyPoll); err != nil {
			return out, err
		}
		rs, err := runEnv(o, v)
		out = append(out, rs...)
		if err != nil {
			return out, err
		}
	}
	rs, err := runVethMulticast(o)
	return append(out, rs...), err
}

// vethEnv is two namespaces joined by a veth pair, with an engine pair on
// AF_PACKET links and the baseline's raw sockets.
type vethEnv struct {
	name   string // ScenarioVeth, or ScenarioVethBusy with busy-polling links
	n      *netns.Net
	p      *pair
	raw    *vethRaw
	cpu    int
	anyCPU bool // run the engine without pinning (Options.EngineAnyCPU)
}

// newVethEnv builds the veth medium for blocks up to maxBlock bytes, with
// the engine's links in I/O mode io. With a positive busyPoll the links
// busy-poll that long, the engine runs free on any CPU, and the results
// are reported as ScenarioVethBusy.
func newVethEnv(maxBlock int, io string, busyPoll time.Duration) (_ *vethEnv, err error) {
	n, err := netns.New(netns.Topology{Hosts: 2})
	if err != nil {
		return nil, err
	}
	v := &vethEnv{name: ScenarioVeth, n: n, cpu: lastCPU()}
	if busyPoll > 0 {
		v.name, v.anyCPU = ScenarioVethBusy, true
	}
	defer func() {
		if err != nil {
			v.close()
		}
	}()
	ha, hb := n.Host(0), n.Host(1)
	if v.raw, err = newVethRaw(ha, hb); err != nil {
		return nil, err
	}
	la, err := openLink(ha, io, busyPoll)
	if err != nil {
		return nil, err
	}
	lb, err := openLink(hb, io, busyPoll)
	if err != nil {
		la.Close()
		return nil, err
	}
	if v.p, err = newPair(la.Link, lb.Link, maxBlock); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *vethEnv) scenario() string { return v.name }

// bases returns the raw ping-pong with both threads on one CPU and with
// both free to run anywhere: which is faster depends on the machine (a
// wake-up across CPUs is dear in a VM), and the faster one is the limit.
func (v *vethEnv) bases(op string) []*step {
	return []*step{v.raw.step(v.name, op, v.cpu), v.raw.step(v.name, op, -1)}
}

// engine returns the engine's measurement of op, run with every thread of
// the process on the one-CPU baseline's CPU (unless anyCPU): the same
// placement as the baseline's faster variant, applied to the engine's
// threads (both endpoints' receive loops, the callers and the runtime's).
func (v *vethEnv) engine(op string, n int) *step {
	s := engineStep(v.name, v.p, op, n)
	if v.anyCPU {
		return s
	}
	round := s.round
	s.round = func(d time.Duration, maxOps int64) error {
		restore, err := pinProcess(v.cpu)
		if err != nil {
			return err
		}
		defer restore()
		return round(d, maxOps)
	}
	return s
}

func (v *vethEnv) close() error {
	if v.p != nil {
		v.p.close()
	}
	if v.raw != nil {
		v.raw.close()
	}
	return v.n.Close()
}

// vethRaw is the baseline on the veth pair: near pings, far echoes.
type vethRaw struct {
	near, far       *rawSock
	nearMAC, farMAC wire.MAC
	replies         map[wire.Cmd][]byte
}

// newVethRaw opens the baseline's sockets on the veth pair of hosts ha
// (near) and hb (far), with the echo's replies for every engine operation.
func newVethRaw(ha, hb *netns.Host) (*vethRaw, error) {
	v := &vethRaw{nearMAC: ha.MAC(), farMAC: hb.MAC(), replies: map[wire.Cmd][]byte{}}
	var err error
	if v.near, err = openRawOn(ha); err != nil {
		return nil, err
	}
	if v.far, err = openRawOn(hb); err != nil {
		v.near.close()
		return nil, err
	}
	for _, op := range engineOps {
		req, rsp := rawFrames(op, v.nearMAC, v.farMAC)
		v.replies[wire.Cmd(req[15])] = retype(rsp)
	}
	return v, nil
}

func (v *vethRaw) close() {
	v.near.close()
	v.far.close()
}

// step returns the raw ping-pong of op's frame sizes with both threads
// pinned to cpu, or free to run anywhere when cpu is negative, reported in
// scenario.
func (v *vethRaw) step(scenario, op string, cpu int) *step {
	req, rsp := rawFrames(op, v.nearMAC, v.farMAC)
	req = retype(req)
	where := "any CPU"
	if cpu >= 0 {
		where = "one CPU"
	}
	label := frameLabel(len(req), len(rsp))
	s := &step{m: newMeter(true)}
	s.res = Result{Scenario: scenario, Name: "raw " + label + " " + where, Frames: label, Baseline: true}
	s.round = func(d time.Duration, maxOps int64) error {
		e := startEcho(v.far, v.replies, cpu, false)
		// A fresh thread for each round.
		err := onThread(cpu, func() error {
			p := &rawPinger{s: v.near, req: req, rspLen: len(rsp), buf: make([]byte, 9216)}
			return s.m.runWarm(d, maxOps, 2, bytesPerOp(op), p.roundTrip)
		})
		if herr := e.halt(v.near, stopFrame(v.farMAC, v.nearMAC)); err == nil && herr != nil {
			err = fmt.Errorf("raw echo: %w", herr)
		}
		return err
	}
	return s
}

// runVethMulticast measures group DMA writes from one host to three on a
// bridge, next to a raw blast of the same 8192-byte frames to the group.
// Group writes have no replies; the figures are the sender's rate, and a
// note says what share of the fragments every receiver got.
func runVethMulticast(o *Options) (_ []Result, err error) {
	n, err := netns.New(netns.Topology{Hosts: 1 + mcastSlaves, Bridge: true})
	if err != nil {
		return nil, err
	}
	defer n.Close()
	hosts := n.Hosts()
	master := hosts[0]

	// The baseline: raw sockets on every host.
	rawM, err := openRawOn(master)
	if err != nil {
		return nil, err
	}
	defer rawM.close()
	var sinks []*rawSink
	defer func() {
		for _, k := range sinks {
			k.stop.Store(true)
		}
		_ = rawM.write(stopFrame(mcastGroup, master.MAC()))
		for _, k := range sinks {
			if e := <-k.done; e != nil && err == nil {
				err = fmt.Errorf("raw multicast sink: %w", e)
			}
			k.s.close()
		}
	}()
	for _, h := range hosts[1:] {
		s, err := openRawOn(h)
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, startSink(s))
	}

	// The engine: a master endpoint writing to the group, slaves accepting.
	lm, err := openLink(master, o.LinkIO, 0)
	if err != nil {
		return nil, err
	}
	cfg := endpoint.Config{DMATimeout: engineTimeout}
	mem, _ := memory.NewRAM(remoteBase, 4096)
	em, err := endpoint.New(lm.Link, mem, cfg)
	if err != nil {
		lm.Close()
		return nil, err
	}
	defer em.Close()
	if err := em.SetPeer(0, endpoint.Peer{MAC: mcastGroup, Mode: endpoint.ModeDMARead}); err != nil {
		return nil, err
	}
	var slaves []*endpoint.Endpoint
	defer func() {
		for _, e := range slaves {
			e.Close()
		}
	}()
	for _, h := range hosts[1:] {
		l, err := openLink(h, o.LinkIO, 0)
		if err != nil {
			return nil, err
		}
		ram, err := memory.NewRAM(remoteBase, mcastBlock)
		if err != nil {
			l.Close()
			return nil, err
		}
		c := cfg
		c.Group = mcastGroup
		e, err := endpoint.New(l.Link, ram, c)
		if err != nil {
			l.Close()
			return nil, err
		}
		slaves = append(slaves, e)
		if err := e.SetPeer(0, endpoint.Peer{MAC: master.MAC(), Mode: endpoint.ModeDMAWrite, WindowBase: remoteBase, WindowSize: mcastBlock}); err != nil {
			return nil, err
		}
	}

	// Raw blast: one 8192-byte DMA_WRITE_REQ-sized frame per write(2).
	frame, _ := rawFrames(opMcast, master.MAC(), mcastGroup)
	frame = retype(frame)
	base := &step{m: newMeter(true)}
	base.res = Result{Scenario: ScenarioVeth, Name: fmt.Sprintf("raw %d→%d hosts", len(frame), mcastSlaves),
		Frames: fmt.Sprintf("%d→group", len(frame)), Baseline: true}
	var rawSent int64
	rawGot := make([]int64, len(sinks))
	blast := func() error { return rawM.write(frame) }
	base.round = func(d time.Duration, maxOps int64) error {
		before := make([]int64, len(sinks))
		for i, k := range sinks {
			before[i] = k.frames.Load()
		}
		ops := base.m.ops
		err := onThread(-1, func() error { return base.m.run(d, maxOps, 1, wire.MaxFragment, blast) })
		time.Sleep(20 * time.Millisecond) // let the receivers drain
		rawSent += base.m.ops - ops
		for i, k := range sinks {
			rawGot[i] += k.frames.Load() - before[i]
		}
		return err
	}

	// Engine: 1 MiB group DMA writes, 129 fragments each.
	src := make([]byte, mcastBlock)
	for i := range src {
		src[i] = byte(i*13 + 5)
	}
	eng := &step{m: newMeter(true)}
	first := min(mcastBlock, wire.MaxFragment)
	eng.res = Result{Scenario: ScenarioVeth, Name: opMcast, Block: mcastBlock,
		Frames: fmt.Sprintf("%d→group", wire.FrameLen(wire.DMAWriteReq, uint32(first)))}
	frags := fragments(mcastBlock)
	var engSent int64
	engGot := make([]int64, len(slaves))
	write := func() error {
		_, err := em.DMAWrite(ctxBackground, 0, remoteBase, src)
		return err
	}
	warm := true
	eng.round = func(d time.Duration, maxOps int64) error {
		if warm {
			warm = false
			if err := newMeter(false).run(warmTime, 5, 0, 0, write); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
		before := make([]uint64, len(slaves))
		for i, e := range slaves {
			before[i] = e.Stats().ServedDMAWrite
		}
		ops := eng.m.ops
		err := eng.m.run(d, maxOps, frags, mcastBlock, write)
		time.Sleep(20 * time.Millisecond) // let the receivers drain
		engSent += (eng.m.ops - ops) * frags
		for i, e := range slaves {
			engGot[i] += int64(e.Stats().ServedDMAWrite - before[i])
		}
		return err
	}
	if err := runSteps(o, []*step{base, eng}); err != nil {
		return results([]*step{base, eng}), err
	}
	base.res.Note = deliveryNote(rawSent, rawGot)
	eng.res.Note = deliveryNote(engSent, engGot)
	eng.res.compareRate(&base.res, TargetDMARate)
	eng.res.Target, eng.res.Met = "", nil // best effort: reported, not a target
	return results([]*step{base, eng}), nil
}

// deliveryNote says what share of the sent frames or fragments each
// receiver got.
func deliveryNote(sent int64, got []int64) string {
	if sent == 0 {
		return "nothing sent"
	}
	lo := got[0]
	for _, g := range got {
		lo = min(lo, g)
	}
	return fmt.Sprintf("best-effort delivery: every one of %d receivers got at least %.1f%% of %d frames", len(got), 100*float64(lo)/float64(sent), sent)
}
