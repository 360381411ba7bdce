//go:build linux

package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// The reliable scenario: the engine through the reliable transport
// (docs/reliable.md) over a veth pair, both stacks opened by package node
// as every stack is, next to the same engine through the same transport
// with the peer set to v1 (the plain v1 frames),
// the raw ping-pong, and TCP bulk transfers over the same veth pair in the
// same run.

// tcpAddrs are the addresses the reliable scenario gives the veth pair for
// its TCP baseline.
var tcpAddrs = [2]string{"10.213.0.1/30", "10.213.0.2/30"}

const tcpPort = 7213

type reliableEnv struct {
	bin      string // the oetp binary, for the windowed exchange's echo process ("": no such row)
	maxBlock int
	// cpu of the reliable DMA rows, by name and block: the process's CPU
	// time and the fragments moved.
	relCPU map[string]*cpuUse
	n      *netns.Net
	rel    *pair      // the endpoints of na and nb
	na     *node.Node // the initiator, peer reliable
	nb     *node.Node // the responder, peer reliable
	raw    *vethRaw
	tcp    *tcpPair
	cpu    int
}

func runReliable(o *Options) ([]Result, error) {
	e, err := newReliableEnv(o.maxBlock(), o.LinkIO)
	if err != nil {
		return nil, err
	}
	e.bin = o.Binary
	o.report.Notes = append(o.report.Notes, fmt.Sprintf(
		"%s: the engine through the reliable transport (link/rlink: PSN, ACK/NAK, CRC32C, replay cache; fragments of %d bytes, %d requests in flight) on a veth pair, next to the same engine and wrapper with the peer set to v1, the raw ping-pong and TCP bulk transfers (one connection, 10.213.0.0/30) over the same veth pair; every thread free on any CPU",
		ScenarioReliable, node.FragmentCeiling(wire.MaxFrameLen), node.Window))
	par, err := e.runParallel(o)
	if err != nil {
		e.close()
		return par, err
	}
	out, err := runEnv(o, e)
	out = append(par, out...)
	if err != nil {
		return out, err
	}
	fan, err := runFanIn(o)
	out = append(out, fan...)
	if err != nil || o.Binary == "" {
		return out, err
	}
	procs, err := runReliableProc(o)
	out = append(out, procs...)
	if err != nil {
		return out, err
	}
	hub, err := runHubReliable(o)
	return append(out, hub...), err
}

func newReliableEnv(maxBlock int, io string) (_ *reliableEnv, err error) {
	n, err := netns.New(netns.Topology{Hosts: 2})
	if err != nil {
		return nil, err
	}
	e := &reliableEnv{n: n, cpu: lastCPU(), maxBlock: maxBlock, relCPU: map[string]*cpuUse{}}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	ha, hb := n.Host(0), n.Host(1)
	e.raw = &vethRaw{nearMAC: ha.MAC(), farMAC: hb.MAC(), replies: map[wire.Cmd][]byte{}}
	if e.raw.near, err = openRawOn(ha); err != nil {
		return nil, err
	}
	if e.raw.far, err = openRawOn(hb); err != nil {
		return nil, err
	}
	for _, op := range engineOps {
		req, rsp := rawFrames(op, e.raw.nearMAC, e.raw.farMAC)
		e.raw.replies[wire.Cmd(req[15])] = retype(rsp)
	}
	ram, err := pairRAM(maxBlock)
	if err != nil {
		return nil, err
	}
	// The responder first, so that it answers the initiator's handshake
	// in Open.
	if e.nb, err = openReliable(hb, io, ram, endpoint.Peer{MAC: ha.MAC(), Mode: endpoint.ModeRMEM, WindowBase: remoteBase, WindowSize: ram.Size()}); err != nil {
		return nil, err
	}
	if e.na, err = openReliable(ha, io, nil, endpoint.Peer{MAC: hb.MAC(), Mode: endpoint.ModeRMEM}); err != nil {
		return nil, err
	}
	if !e.na.Reliable(hb.MAC()) {
		return nil, fmt.Errorf("the reliable transport's handshake: %v", e.na.Handshakes)
	}
	e.rel = newPairOf(e.na.Endpoint, e.nb.Endpoint, ha.MAC(), hb.MAC(), ram, maxBlock)
	if e.tcp, err = newTCPPair(ha, hb, maxBlock); err != nil {
		return nil, err
	}
	return e, nil
}

// openReliable opens a stack on h's interface (the rows' I/O mode) through
// package node with peer reached by the reliable transport: an initiator
// when ram is nil (node.Open runs the handshake), else a responder serving
// ram. Its endpoint has the rows' response timeouts, and the transport's
// fragment ceiling and window.
func openReliable(h *netns.Host, io string, ram *memory.RAM, peer endpoint.Peer) (*node.Node, error) {
	l, err := openLink(h, io, 0)
	if err != nil {
		return nil, err
	}
	cfg := node.Config{LinkConfig: node.LinkConfig{Link: l.Link}, Endpoint: pairConfig,
		Peers: []node.Peer{{Peer: peer, Transport: node.Reliable}}}
	if ram != nil {
		cfg.Memory = ram // a nil *RAM in Memory would not be a nil Space
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return node.Open(ctx, cfg)
}

func (e *reliableEnv) scenario() string { return ScenarioReliable }

// bases: the raw ping-pong free on any CPU, and for DMA TCP bulk
// transfers of the largest block and the raw one-way stream of 8 KiB
// frames in the direction of the fragments.
func (e *reliableEnv) bases(op string) []*step {
	out := []*step{e.raw.step(ScenarioReliable, op, -1)}
	if op != opRMEMRead {
		out = append(out, e.tcp.step(op, e.maxBlock), e.raw.stream(ScenarioReliable, op))
		if e.bin != "" {
			out = append(out, e.window(op))
		}
	}
	return out
}

// Targets of the reliable transport's DMA rows: MB/s against
// TCP bulk transfers and against the raw one-way stream of 8 KiB frames,
// both over the same veth pair in the same run.
const (
	TargetReliableVsTCP    = 1.0
	TargetReliableVsStream = 0.6
)

// compare: an RMEM read as everywhere (p50 against the raw ping-pong); a
// DMA row against TCP bulk (its ratio and target), with its ratio to the
// raw one-way stream in its note and in a note of the report. The v1 rows
// get the ratios without targets.
func (e *reliableEnv) compare(o *Options, op string, bases, engines []*step) {
	if op == opRMEMRead {
		compare(op, bases, engines)
		return
	}
	var tcp, stream, win *Result
	for _, b := range bases {
		switch {
		case strings.HasPrefix(b.res.Name, "tcp bulk"):
			tcp = &b.res
		case strings.HasPrefix(b.res.Name, "raw stream"):
			stream = &b.res
		case isWindowRow(&b.res):
			win = &b.res
		}
	}
	if win != nil && win.MBps > 0 {
		for _, s := range engines {
			r := &s.res
			if !strings.HasSuffix(r.Name, " reliable") {
				continue
			}
			x, goal := r.MBps/win.MBps, windowGoal(r.Block)
			verdict := "met"
			if x < goal {
				verdict = "missed"
			}
			cpu := ""
			if u := e.relCPU[fmt.Sprint(r.Name, r.Block)]; u != nil && u.frags > 0 {
				cpu = fmt.Sprintf("; CPU per fragment, both endpoints (the bench process): %.2f µs", float64(u.cpu)/float64(u.frags)/1e3)
			}
			o.report.Notes = append(o.report.Notes, fmt.Sprintf(
				"%s: %s %s: %.1f MB/s, %.3f× the windowed raw exchange (%.1f MB/s, goal ≥ %.1f: %s)%s",
				ScenarioReliable, r.Name, sizeOrDash(r.Block), r.MBps, x, win.MBps, goal, verdict, cpu))
		}
	}
	for _, s := range engines {
		r := &s.res
		reliable := strings.HasSuffix(r.Name, " reliable")
		if tcp != nil {
			r.compareRate(tcp, TargetReliableVsTCP)
			if !reliable {
				r.Target, r.Met = "", nil
			}
		}
		if stream == nil || stream.MBps <= 0 {
			continue
		}
		x := r.MBps / stream.MBps
		if reliable {
			r.Note = fmt.Sprintf("%.3f× the raw one-way stream (target ≥ %.2f)", x, TargetReliableVsStream)
			verdict := "met"
			if x < TargetReliableVsStream {
				verdict = "missed"
			}
			o.report.Notes = append(o.report.Notes, fmt.Sprintf(
				"%s: %s %s: %.1f MB/s, %.3f× TCP bulk (%.1f MB/s, target ≥ %.1f) and %.3f× the raw one-way stream (%.1f MB/s, target ≥ %.1f: %s)",
				ScenarioReliable, r.Name, sizeOrDash(r.Block), r.MBps, r.Ratio, tcp.MBps, TargetReliableVsTCP, x, stream.MBps, TargetReliableVsStream, verdict))
		} else {
			r.Note = fmt.Sprintf("%.3f× the raw one-way stream", x)
		}
	}
}

// engine measures op through the reliable transport; extra adds the same
// with the peer set to v1 through the same wrapper.
func (e *reliableEnv) engine(op string, n int) *step {
	s := engineStep(ScenarioReliable, e.rel, op, n)
	s.res.Name += " reliable"
	if op != opRMEMRead {
		// Both endpoints are this process: its CPU time per fragment.
		u := &cpuUse{}
		e.relCPU[fmt.Sprint(s.res.Name, s.res.Block)] = u
		round := s.round
		s.round = func(d time.Duration, maxOps int64) error {
			// The fragments the initiator sent, warm-up included, as
			// the CPU time is.
			c0, f0 := processCPU(), e.sent()
			err := round(d, maxOps)
			u.cpu += processCPU() - c0
			u.frags += int64(e.sent() - f0)
			return err
		}
	}
	return e.withMode(s, node.Reliable)
}

// sent is the requests the initiator's transport has sent.
func (e *reliableEnv) sent() uint64 {
	st, _ := e.na.Transport()
	return st.Sent
}

// cpuUse is CPU time and the fragments it moved.
type cpuUse struct {
	cpu   time.Duration
	frags int64
}

func (e *reliableEnv) extra(op string, blocks []int64) []*step {
	var out []*step
	add := func(n int) {
		s := engineStep(ScenarioReliable, e.rel, op, n)
		s.res.Name += " v1"
		out = append(out, e.withMode(s, node.V1))
	}
	if op == opRMEMRead {
		add(4)
		return out
	}
	for _, b := range blocks {
		add(int(b))
	}
	return out
}

// withMode sets both wrappers' peers to m around each round of s.
func (e *reliableEnv) withMode(s *step, m node.Transport) *step {
	round := s.round
	s.round = func(d time.Duration, maxOps int64) error {
		if err := e.setMode(m); err != nil {
			return err
		}
		return round(d, maxOps)
	}
	after := s.after
	s.after = func() error {
		if err := e.setMode(m); err != nil {
			return err
		}
		if after != nil {
			return after()
		}
		return nil
	}
	return s
}

func (e *reliableEnv) setMode(m node.Transport) error {
	ha, hb := e.n.Host(0), e.n.Host(1)
	if err := e.na.SetTransport(hb.MAC(), m); err != nil {
		return err
	}
	if err := e.nb.SetTransport(ha.MAC(), m); err != nil {
		return err
	}
	c := e.rel.a.Config()
	c.MaxFragment, c.Outstanding = node.FragmentCeiling(wire.MaxFrameLen), node.Window
	if m == node.V1 {
		c.MaxFragment, c.Outstanding = wire.MaxFragment, 1
	}
	if err := e.rel.a.SetConfig(c); err != nil {
		return err
	}
	if m == node.V1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ok, err := e.na.Handshake(ctx, hb.MAC()); !ok || err != nil {
		return fmt.Errorf("the reliable transport's handshake: %v", err)
	}
	return nil
}

func (e *reliableEnv) close() error {
	if e.tcp != nil {
		e.tcp.close()
	}
	// The nodes close their endpoints, transports and links.
	for _, nd := range []*node.Node{e.na, e.nb} {
		if nd != nil {
			nd.Close()
		}
	}
	if e.raw != nil {
		if e.raw.near != nil {
			e.raw.near.close()
		}
		if e.raw.far != nil {
			e.raw.far.close()
		}
	}
	return e.n.Close()
}

// tcpPair is one TCP connection over the veth pair: the near end writes
// blocks, the far end reads them and answers each with 8 bytes, so a
// block's time is its delivery and acknowledgement, like a DMA write's.
type tcpPair struct {
	c    net.Conn
	ln   net.Listener
	buf  []byte
	ack  [8]byte
	done chan error
}

func newTCPPair(ha, hb *netns.Host, maxBlock int) (*tcpPair, error) {
	for i, h := range []*netns.Host{ha, hb} {
		addr, _ := netlink.ParseAddr(tcpAddrs[i])
		if err := h.Do(func() error {
			l, err := netlink.LinkByName(h.IfName())
			if err != nil {
				return err
			}
			return netlink.AddrAdd(l, addr)
		}); err != nil {
			return nil, fmt.Errorf("address for TCP on %s: %w", h, err)
		}
	}
	t := &tcpPair{buf: make([]byte, maxBlock), done: make(chan error, 1)}
	farIP, _, _ := net.ParseCIDR(tcpAddrs[1])
	if err := hb.Do(func() (err error) {
		t.ln, err = net.Listen("tcp", fmt.Sprintf("%s:%d", farIP, tcpPort))
		return err
	}); err != nil {
		return nil, err
	}
	go t.serve()
	var err error
	deadline := time.Now().Add(3 * time.Second)
	for {
		err = ha.Do(func() (err error) {
			t.c, err = net.DialTimeout("tcp", fmt.Sprintf("%s:%d", farIP, tcpPort), time.Second)
			return err
		})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the address may still be tentative
	}
	if err != nil {
		t.ln.Close()
		return nil, fmt.Errorf("TCP over the veth pair: %w", err)
	}
	return t, nil
}

// serve reads framed blocks (an 8-byte length, then the bytes) and
// acknowledges each.
func (t *tcpPair) serve() {
	c, err := t.ln.Accept()
	if err != nil {
		t.done <- err
		return
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			t.done <- nil
			return
		}
		n := binary.LittleEndian.Uint64(hdr[:])
		for n > 0 {
			k, err := c.Read(buf[:min(uint64(len(buf)), n)])
			if err != nil {
				t.done <- err
				return
			}
			n -= uint64(k)
		}
		if _, err := c.Write(hdr[:]); err != nil {
			t.done <- err
			return
		}
	}
}

func (t *tcpPair) block(n int) error {
	binary.LittleEndian.PutUint64(t.ack[:], uint64(n))
	if _, err := t.c.Write(t.ack[:]); err != nil {
		return err
	}
	if _, err := t.c.Write(t.buf[:n]); err != nil {
		return err
	}
	var got [8]byte
	if _, err := io.ReadFull(t.c, got[:]); err != nil {
		return err
	}
	if binary.LittleEndian.Uint64(got[:]) != uint64(n) {
		return errors.New("TCP acknowledgement of another block")
	}
	return nil
}

// step measures TCP bulk transfers of n-byte blocks (a baseline).
func (t *tcpPair) step(op string, n int) *step {
	s := &step{m: newMeter(true)}
	// Block 0 and the size in the name, as for the other baselines; one
	// exchange is the block and its 8-byte acknowledgement.
	s.res = Result{Scenario: ScenarioReliable, Name: "tcp bulk " + SizeString(int64(n)), Frames: "stream↔8", Baseline: true}
	f := func() error { return t.block(n) }
	s.round = func(d time.Duration, maxOps int64) error {
		return s.m.run(d, maxOps, 2, int64(n), f)
	}
	return s
}

func (t *tcpPair) close() {
	t.c.Close()
	t.ln.Close()
	<-t.done
}

// fanInBlock is the DMA block each sender of the fan-in measurement writes
// over and over.
const fanInBlock = 1 << 20

// runFanIn measures three senders writing by DMA through the reliable
// transport into one receiver across a bridge, against one sender alone on
// the same bridge: the total rate, each sender's, and Jain's fairness index
// (sum x)^2 / (n * sum x^2) of the three rates. The rounds alternate: one
// alone, three together.
func runFanIn(o *Options) ([]Result, error) {
	const senders = 3
	n, err := netns.New(netns.Topology{Hosts: senders + 1, Bridge: true})
	if err != nil {
		return nil, err
	}
	defer n.Close()
	hosts := n.Hosts()
	recvHost := hosts[senders]
	lr, err := openLink(recvHost, o.LinkIO, 0)
	if err != nil {
		return nil, err
	}
	ram, err := memory.NewRAM(remoteBase, senders*fanInBlock)
	if err != nil {
		lr.Close()
		return nil, err
	}
	// The receiver's stack through package node: each sender a peer
	// reached by the reliable transport, with its own window.
	rcfg := node.Config{LinkConfig: node.LinkConfig{Link: lr.Link}, Memory: ram}
	for i := 0; i < senders; i++ {
		rcfg.Peers = append(rcfg.Peers, node.Peer{Transport: node.Reliable, Peer: endpoint.Peer{MAC: hosts[i].MAC(), Mode: endpoint.ModeDMAWrite,
			WindowBase: remoteBase + uint32(i*fanInBlock), WindowSize: fanInBlock}})
	}
	recv, err := node.Open(ctxBackground, rcfg)
	if err != nil {
		return nil, err
	}
	defer recv.Close()
	type sender struct {
		nd  *node.Node
		src []byte
	}
	var ss []sender
	defer func() {
		for _, s := range ss {
			s.nd.Close()
		}
	}()
	for i := 0; i < senders; i++ {
		h := hosts[i]
		l, err := openLink(h, o.LinkIO, 0)
		if err != nil {
			return nil, err
		}
		// A sender's stack as the one-shot commands open theirs (package
		// node): the transport's window and fragment ceiling, the
		// handshake before the first request.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		nd, err := node.Open(ctx, node.Config{LinkConfig: node.LinkConfig{Link: l.Link},
			Endpoint: endpoint.Config{DMATimeout: engineTimeout},
			Peers:    []node.Peer{{Peer: endpoint.Peer{MAC: recvHost.MAC(), Mode: endpoint.ModeDMARead}, Transport: node.Reliable}}})
		cancel()
		if err != nil {
			return nil, err
		}
		src := make([]byte, fanInBlock)
		for j := range src {
			src[j] = byte(j*7 + i)
		}
		ss = append(ss, sender{nd, src})
		if !nd.Reliable(recvHost.MAC()) {
			return nil, fmt.Errorf("fan-in handshake of sender %d: %v", i+1, nd.Handshakes)
		}
	}
	write := func(i int, until time.Time) (int64, error) {
		var b int64
		for time.Now().Before(until) {
			if _, err := ss[i].nd.Endpoint.DMAWrite(ctxBackground, 0, remoteBase+uint32(i*fanInBlock), ss[i].src); err != nil {
				return b, err
			}
			b += fanInBlock
		}
		return b, nil
	}
	d := o.Duration / time.Duration(o.Rounds)
	var alone, together time.Duration
	var aloneBytes int64
	each := make([]int64, senders)
	for round := 0; round < o.Rounds; round++ {
		start := time.Now()
		b, err := write(0, start.Add(d))
		if err != nil {
			return nil, err
		}
		alone += time.Since(start)
		aloneBytes += b
		start = time.Now()
		errs := make(chan error, senders)
		got := make([]int64, senders)
		for i := 0; i < senders; i++ {
			go func() {
				var err error
				got[i], err = write(i, start.Add(d))
				errs <- err
			}()
		}
		for i := 0; i < senders; i++ {
			if err := <-errs; err != nil {
				return nil, err
			}
		}
		together += time.Since(start)
		for i := range each {
			each[i] += got[i]
		}
	}
	rate := func(b int64, t time.Duration) float64 { return float64(b) / t.Seconds() / 1e6 }
	one := rate(aloneBytes, alone)
	var sum, sq float64
	var total int64
	parts := make([]string, senders)
	for i, b := range each {
		r := rate(b, together)
		sum += r
		sq += r * r
		total += b
		parts[i] = fmt.Sprintf("%.1f", r)
	}
	jain := sum * sum / (senders * sq)
	all := rate(total, together)
	// What the congestion control did: each sender's losses and its
	// congestion window at the end.
	var sent, retx, fast, timeouts, spurious, naks uint64
	recvStats, _ := recv.Transport()
	cwnds := make([]string, senders)
	for i, x := range ss {
		st, _ := x.nd.Transport()
		sent, retx, fast, timeouts, naks = sent+st.Sent, retx+st.Retransmitted, fast+st.FastRetransmits, timeouts+st.Timeouts, naks+st.NAKsReceived
		spurious += st.SpuriousTimeouts
		if pi, ok := x.nd.TransportPeer(recvHost.MAC()); ok {
			cwnds[i] = fmt.Sprintf("%.1f", pi.Cwnd)
		}
	}
	o.report.Notes = append(o.report.Notes, fmt.Sprintf(
		"%s: fan-in congestion control (AIMD): the senders sent %d requests, %d retransmitted (%d fast, %d timeouts in which %d episodes were found spurious and their window cut undone, %d NAKs received); the receiver saw %d gaps and its socket dropped %d frames (queue full); congestion windows at the end %s (Depth %d)",
		ScenarioReliable, sent, retx, fast, timeouts, spurious, naks, recvStats.Gaps, recv.Link.KernelDrops(), strings.Join(cwnds, ", "), node.Window))
	o.report.Notes = append(o.report.Notes, fmt.Sprintf(
		"%s: fan-in through a bridge, DMA writes of %s blocks through the reliable transport: one sender alone %.1f MB/s; three senders together %.1f MB/s in all (%.2f× alone), each %s MB/s, Jain's fairness index %.3f (targets: ≥ 0.8× alone, ≥ 0.9)",
		ScenarioReliable, SizeString(fanInBlock), one, all, all/one, strings.Join(parts, ", "), jain))
	res := []Result{
		{Scenario: ScenarioReliable, Name: "fan-in 1 sender", Block: fanInBlock, Baseline: true, MBps: one, Ops: aloneBytes / fanInBlock, Elapsed: alone},
		{Scenario: ScenarioReliable, Name: "fan-in 3 senders", Block: fanInBlock, MBps: all, Ops: total / fanInBlock, Elapsed: together,
			Versus: "fan-in 1 sender", Ratio: all / one},
	}
	return res, nil
}

// runParallel measures RMEM reads from parallelCallers goroutines through
// the reliable transport (Outstanding = its depth) against v1 one at a
// time from one caller, on the same pair, rounds interleaved: reads per
// second of each, and their ratio (target ≥ 10×).
func (e *reliableEnv) runParallel(o *Options) ([]Result, error) {
	p := e.rel
	if err := p.use(opRMEMRead); err != nil {
		return nil, err
	}
	d := o.Duration / time.Duration(o.Rounds)
	read := func(until time.Time) (int64, error) {
		var n int64
		for time.Now().Before(until) {
			if _, err := p.a.RMEMRead(ctxBackground, 0, remoteBase); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	req, _ := rawFrames(opRMEMRead, e.raw.nearMAC, e.raw.farMAC)
	pipe := &rawPipe{near: e.raw.near, far: e.raw.far, req: retype(req), rsp: e.raw.replies[wire.Cmd(req[15])],
		stop: stopFrame(e.raw.farMAC, e.raw.nearMAC)}
	var one, many, raw int64
	var tOne, tMany, tRaw time.Duration
	for round := 0; round < o.Rounds; round++ {
		nr, el, err := pipe.round(d)
		if err != nil {
			return nil, err
		}
		raw, tRaw = raw+nr, tRaw+el
		if err := e.setMode(node.V1); err != nil {
			return nil, err
		}
		start := time.Now()
		n, err := read(start.Add(d))
		if err != nil {
			return nil, err
		}
		one, tOne = one+n, tOne+time.Since(start)
		if err := e.setMode(node.Reliable); err != nil {
			return nil, err
		}
		start = time.Now()
		counts := make([]int64, parallelCallers)
		errs := make(chan error, parallelCallers)
		for i := range counts {
			go func() {
				var err error
				counts[i], err = read(start.Add(d))
				errs <- err
			}()
		}
		for range counts {
			if err := <-errs; err != nil {
				return nil, err
			}
		}
		tMany += time.Since(start)
		for _, c := range counts {
			many += c
		}
	}
	r1 := float64(one) / tOne.Seconds()
	rN := float64(many) / tMany.Seconds()
	rRaw := float64(raw) / tRaw.Seconds()
	o.report.Notes = append(o.report.Notes, fmt.Sprintf(
		"%s: RMEM reads from %d goroutines through the reliable transport (%d in flight): %.0f reads/s; v1, one at a time from one caller, on the same pair: %.0f reads/s; %.1f× (target ≥ 10×, %.0f reads/s); the raw pipelined exchange of the same frames with %d in flight (two locked threads, sendmmsg/recvmmsg batches, no protocol): %.0f exchanges/s, %.1f× v1, so the reliable rows reach %.2f× the medium's limit for this exchange",
		ScenarioReliable, parallelCallers, node.Window, rN, r1, rN/r1, 10*r1, pipeDepth, rRaw, rRaw/r1, rN/rRaw))
	return []Result{
		{Scenario: ScenarioReliable, Name: "parallel rmem-read v1 1 caller", Baseline: true, Ops: one, Elapsed: tOne, NsPerOp: float64(tOne.Nanoseconds()) / float64(max(one, 1))},
		{Scenario: ScenarioReliable, Name: rawParallelName, Baseline: true, Frames: "24↔24", Ops: raw, Elapsed: tRaw,
			NsPerOp: float64(tRaw.Nanoseconds()) / float64(max(raw, 1)), Versus: "parallel rmem-read v1 1 caller", Ratio: rRaw / r1,
			Note: fmt.Sprintf("the medium's limit for %d RMEM reads in flight: %d request frames kept in flight by one thread, answered by an echo thread, sendmmsg/recvmmsg batches", pipeDepth, pipeDepth)},
		{Scenario: ScenarioReliable, Name: fmt.Sprintf("parallel rmem-read reliable %d callers", parallelCallers), Ops: many, Elapsed: tMany,
			NsPerOp: float64(tMany.Nanoseconds()) / float64(max(many, 1)), Versus: "parallel rmem-read v1 1 caller", Ratio: rN / r1},
	}, nil
}
