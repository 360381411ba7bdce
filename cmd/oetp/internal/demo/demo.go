// Package demo runs the oETP specification's replication example end to end
// on an embedded network: one master and N slaves, each one endpoint with one
// unicast MAC address, all slaves members of one multicast group.
//
// The specification gives every peer table entry a single mode: mode 1 for
// RMEM at both ends, mode 3 on the writing side and mode 2 on the receiving
// side of a DMA mirror. One MAC is one endpoint, and a receiver finds exactly
// one entry for a source MAC, so a master cannot hold an RMEM entry and a DMA
// entry for the same slave at the same time. The demo therefore runs in
// phases and rewrites the peer entries between them (Endpoint.SetPeer), just
// as software rewrites the peer CSRs of a board: registers with mode 1 at both
// ends, a unicast DMA write with master 3 / slave 2, its read-back with master
// 2 / slave 3, then replication to the group with master 3 / every slave 2,
// and finally two failures that show how errors are recorded on both sides.
//
// The network is the in-process switch of link/mem by default (no privileges,
// no NIC) or, with Options.NetNS, a Linux bridge of network namespaces reached
// through AF_PACKET links (root only).
package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

// Memory map of every slave, and the layout the demo uses.
const (
	// RegBase and RegSize are the slaves' register block, served to RMEM.
	RegBase = 0x0000_0000
	RegSize = 0x1000
	// DataBase is where the slaves' data memory, served to DMA, starts.
	DataBase = 0x0010_0000
	// UnicastSize is the largest unicast DMA write the demo makes.
	UnicastSize = 64 << 10
	// LostSize is the largest DMA write of the lost-frame step.
	LostSize = 4 << 10
)

// Limits of Options.
const (
	MaxSlaves = 200
	MaxSize   = 64 << 20
)

// Group is the shared multicast address of the slaves.
var Group = wire.MAC{0x03, 0x0e, 0x0c, 0x00, 0x00, 0x01}

// Options configure Run. The zero value of a field selects its default.
type Options struct {
	// Slaves is the number of slaves, 1..MaxSlaves; 0 means 3.
	Slaves int
	// Size is the number of bytes replicated to every slave by the
	// multicast DMA write, 1..MaxSize; 0 means 256 KiB. It is also the
	// size of each slave's data memory and DMA window.
	Size int
	// Loss is the probability, in [0, 1), that the network loses any frame.
	Loss float64
	// Seed seeds the data pattern and the loss draws.
	Seed uint64
	// Timeout is the RMEM and DMA response timeout of every endpoint;
	// 0 means 250ms.
	Timeout time.Duration
	// NetNS runs the demo over network namespaces instead of link/mem.
	NetNS bool
	// Log, if not nil, receives a description of the setup and one line
	// per phase as the demo runs.
	Log io.Writer
}

// OptionError is the error of an Options field that is out of range. Flag is
// the name of the oetp demo flag that sets it.
type OptionError struct {
	Flag   string
	Reason string
}

func (e *OptionError) Error() string { return e.Flag + ": " + e.Reason }

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Slaves == 0 {
		o.Slaves = 3
	}
	if o.Size == 0 {
		o.Size = 256 << 10
	}
	if o.Timeout == 0 {
		o.Timeout = 250 * time.Millisecond
	}
	switch {
	case o.Slaves < 1 || o.Slaves > MaxSlaves:
		return o, &OptionError{"--slaves", fmt.Sprintf("%d is out of range: use 1..%d", o.Slaves, MaxSlaves)}
	case o.Size < 1 || o.Size > MaxSize:
		return o, &OptionError{"--size", fmt.Sprintf("%d is out of range: use 1..%d bytes", o.Size, MaxSize)}
	case !(o.Loss >= 0 && o.Loss < 1):
		return o, &OptionError{"--loss", fmt.Sprintf("%v is out of range: use a probability from 0 up to (not including) 1", o.Loss)}
	case o.Timeout < 0:
		return o, &OptionError{"--timeout", "must not be negative: use a duration such as 250ms"}
	}
	return o, nil
}

// Step is the outcome of one step of the demo.
type Step struct {
	Phase int    `json:"phase"`
	Name  string `json:"step"`
	// Expect is the expected outcome: "ok", "equal", or the codes the
	// master and the slave must record, e.g. "9 / 1".
	Expect string `json:"expect"`
	// OK reports whether the expected outcome happened.
	OK bool `json:"ok"`
	// Detail says what happened when it was not the expected outcome, or
	// adds what was observed.
	Detail string `json:"detail,omitempty"`
	// Master is the code recorded in the master's peer entry the step used.
	Master wire.Code `json:"master_code"`
	// SlaveName names the slave whose record Slave is ("all" for a group).
	SlaveName string `json:"slave"`
	// Slave is the code recorded in that slave's entry for the master (for
	// a group step, the first nonzero one).
	Slave     wire.Code     `json:"slave_code"`
	Bytes     uint64        `json:"bytes"`
	Fragments int           `json:"fragments"`
	Elapsed   time.Duration `json:"-"`
	Seconds   float64       `json:"seconds"`
}

// Digest is the SHA-256 of one node's replicated data.
type Digest struct {
	Node   string `json:"node"`
	MAC    string `json:"mac"`
	SHA256 string `json:"sha256"`
	// Equal reports whether the digest equals the master's source digest.
	Equal bool `json:"equal"`
}

// Report is the result of Run.
type Report struct {
	OK      bool     `json:"ok"`
	Network string   `json:"network"`
	Master  string   `json:"master"`
	Group   string   `json:"group"`
	Slaves  []string `json:"slaves"`
	Size    int      `json:"size"`
	Loss    float64  `json:"loss"`
	Steps   []Step   `json:"steps"`
	Digests []Digest `json:"digests"`
	Seconds float64  `json:"seconds"`
}

// member is one endpoint of the demo with its stack and memory.
type member struct {
	name string
	mac  wire.MAC
	nd   *node.Node
	ep   *endpoint.Endpoint
	regs *memory.RAM
	data *memory.RAM
}

// demo is one run.
type demo struct {
	opt    Options
	fab    fabric
	master *member
	slaves []*member
	log    io.Writer
	rep    *Report
	phase  int
	src    []byte // the replicated data
	uni    []byte // the unicast data
}

// Peer table layout. On the master: entry 0 is the group, entry i the
// i-th slave (1-based). On every slave: entry 0 is the master.
const (
	masterGroupPeer = 0
	slaveMasterPeer = 0
)

// Run builds the network, runs every step and returns the report. The error
// is only for a demo that could not be set up (wrapping ErrNetNS when network
// namespaces are unavailable, or an *OptionError); the outcome of the steps is
// in the report, whose OK field is true only when every expected outcome
// happened.
func Run(ctx context.Context, opt Options) (*Report, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &demo{opt: opt, log: opt.Log}
	if d.log == nil {
		d.log = io.Discard
	}
	nodes := opt.Slaves + 1
	if opt.NetNS {
		d.fab, err = newNetnsFabric(nodes, opt.Loss, opt.Seed)
	} else {
		d.fab, err = newMemFabric(opt.Loss, opt.Seed)
	}
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := d.build(ctx, nodes); err != nil {
		d.shutdown()
		return nil, err
	}
	d.describe()
	d.run(ctx)
	// Closing the endpoints waits for their responder contexts, so every
	// memory write they made happens before the digests are taken.
	d.shutdown()
	d.verify()
	d.rep.Seconds = time.Since(start).Seconds()
	d.rep.OK = true
	for _, s := range d.rep.Steps {
		d.rep.OK = d.rep.OK && s.OK
	}
	return d.rep, nil
}

// build opens the nodes' stacks, their endpoints with empty peer tables.
func (d *demo) build(ctx context.Context, nodes int) error {
	rng := rand.New(rand.NewChaCha8(seed32(d.opt.Seed)))
	d.src = make([]byte, d.opt.Size)
	fill(rng, d.src)
	d.uni = make([]byte, min(d.opt.Size, UnicastSize))
	fill(rng, d.uni)

	d.rep = &Report{Network: d.fab.describe(), Master: nodeMAC(0).String(), Group: Group.String(), Size: d.opt.Size, Loss: d.opt.Loss}
	for i := range nodes {
		n := &member{name: "master"}
		if i > 0 {
			n.name = fmt.Sprintf("slave%d", i)
		}
		var err error
		if n.regs, err = memory.NewRAM(RegBase, RegSize); err != nil {
			return err
		}
		space := memory.NewMap()
		if err := space.Add(RegBase, RegSize, n.regs); err != nil {
			return err
		}
		cfg := endpoint.Config{RMEMTimeout: d.opt.Timeout, DMATimeout: d.opt.Timeout}
		if i > 0 {
			if n.data, err = memory.NewRAM(DataBase, uint64(d.opt.Size)); err != nil {
				return err
			}
			if err := space.Add(DataBase, uint64(d.opt.Size), n.data); err != nil {
				return err
			}
			cfg.Group = Group
			// Software endpoints may serve several requests at once; more
			// contexts keep a burst of group fragments from finding every
			// context busy (such a request is dropped, as in hardware).
			cfg.Contexts = 16
		}
		if n.nd, err = d.fab.open(ctx, i, node.Config{Endpoint: cfg, Memory: space}); err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
		n.ep, n.mac = n.nd.Endpoint, n.nd.Link.Addr()
		if i == 0 {
			d.master = n
		} else {
			d.slaves = append(d.slaves, n)
			d.rep.Slaves = append(d.rep.Slaves, n.mac.String())
		}
	}
	return nil
}

func seed32(s uint64) [32]byte {
	var b [32]byte
	for i := range 4 {
		for j := range 8 {
			b[i*8+j] = byte((s ^ uint64(i)*0x9e3779b97f4a7c15) >> (8 * j))
		}
	}
	return b
}

func fill(r *rand.Rand, p []byte) {
	for i := range p {
		p[i] = byte(r.Uint32())
	}
}

// shutdown closes every node (its endpoint and link), then the network.
func (d *demo) shutdown() {
	for _, n := range append([]*member{d.master}, d.slaves...) {
		if n != nil {
			n.nd.Close()
		}
	}
	d.fab.close()
}

// describe prints the setup.
func (d *demo) describe() {
	w := d.log
	fmt.Fprintf(w, "oetp demo: one master and %d slave(s) on %s\n", len(d.slaves), d.fab.describe())
	fmt.Fprintf(w, "  %-8s %s  peer 0 = group %s, peer i = slave i\n", "master", d.master.mac, Group)
	for _, s := range d.slaves {
		fmt.Fprintf(w, "  %-8s %s  group %s, peer 0 = master\n", s.name, s.mac, Group)
	}
	fmt.Fprintf(w, "  slave memory: registers 0x%08x+0x%x (RMEM window), data 0x%08x+0x%x (DMA window), holes answer DECERR\n",
		RegBase, RegSize, DataBase, d.opt.Size)
	fmt.Fprintf(w, "  timeouts %v; frame loss %g\n", d.opt.Timeout, d.opt.Loss)
	fmt.Fprintf(w, "  model: one MAC = one endpoint, and a peer entry has one mode, so the demo\n")
	fmt.Fprintf(w, "  rewrites the peer entries between phases, as software rewrites peer CSRs.\n")
}

// setPhase starts a phase: it prints its title and rewrites the peer entries.
func (d *demo) setPhase(title string, masterGroup endpoint.Mode, masterSlaves, slaveMaster []endpoint.Mode, window [2]uint64) {
	d.phase++
	fmt.Fprintf(d.log, "phase %d: %s\n", d.phase, title)
	whole := uint64(1) << 32
	must(d.master.ep.SetPeer(masterGroupPeer, endpoint.Peer{MAC: Group, Mode: masterGroup, WindowSize: whole}))
	for i, s := range d.slaves {
		must(d.master.ep.SetPeer(i+1, endpoint.Peer{MAC: s.mac, Mode: masterSlaves[i], WindowSize: whole}))
		must(s.ep.SetPeer(slaveMasterPeer, endpoint.Peer{MAC: d.master.mac, Mode: slaveMaster[i], WindowBase: uint32(window[0]), WindowSize: window[1]}))
	}
	fmt.Fprintf(d.log, "  master: group -> mode %d; %s\n", masterGroup, modeList(masterSlaves, "slave"))
	fmt.Fprintf(d.log, "  slaves' entry for the master: %s; window 0x%08x+0x%x\n", modeList(slaveMaster, "slave"), window[0], window[1])
}

func must(err error) {
	if err != nil {
		panic(err) // the demo's peer entries are valid by construction
	}
}

// modeList formats per-slave modes compactly: "slaves -> mode 3" when all
// equal, else "slave1 -> mode 2, slave2 -> mode 3, ...".
func modeList(modes []endpoint.Mode, prefix string) string {
	same := true
	for _, m := range modes {
		same = same && m == modes[0]
	}
	if same {
		return fmt.Sprintf("every %s -> mode %d", prefix, modes[0])
	}
	var b bytes.Buffer
	for i, m := range modes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s%d -> mode %d", prefix, i+1, m)
	}
	return b.String()
}

func repeat(m endpoint.Mode, n int) []endpoint.Mode {
	s := make([]endpoint.Mode, n)
	for i := range s {
		s[i] = m
	}
	return s
}

// pick returns the 1-based slave number k, or the last slave when there are
// fewer.
func (d *demo) pick(k int) int { return min(k, len(d.slaves)) }

// begin clears the records a step looks at and starts its clock.
func (d *demo) begin(name, expect string, masterPeer int, slaves ...*member) (*Step, time.Time) {
	d.master.ep.ClearError(masterPeer)
	for _, s := range slaves {
		s.ep.ClearError(slaveMasterPeer)
	}
	return &Step{Phase: d.phase, Name: name, Expect: expect}, time.Now()
}

// end stops the step's clock, reads the records on both sides and checks
// them against the expected codes.
func (d *demo) end(st *Step, t0 time.Time, masterPeer int, slaves []*member, wantMaster, wantSlave wire.Code) {
	st.Elapsed = time.Since(t0)
	st.Seconds = st.Elapsed.Seconds()
	st.Master = d.master.ep.PeerStatus(masterPeer).Code
	switch {
	case len(slaves) == 1:
		st.SlaveName = slaves[0].name
		st.Slave = slaves[0].ep.PeerStatus(slaveMasterPeer).Code
	default:
		st.SlaveName = "all"
		for _, s := range slaves {
			if c := s.ep.PeerStatus(slaveMasterPeer).Code; c != 0 && st.Slave == 0 {
				st.Slave = c
				st.SlaveName = s.name
			}
		}
	}
	if st.Master != wantMaster || st.Slave != wantSlave {
		st.OK = false
		st.addDetail(fmt.Sprintf("recorded master %s / %s %s, want %s / %s", st.Master, st.SlaveName, st.Slave, wantMaster, wantSlave))
	}
	d.rep.Steps = append(d.rep.Steps, *st)
}

func (st *Step) addDetail(s string) {
	if st.Detail != "" {
		st.Detail += "; "
	}
	st.Detail += s
}

// outcome records an operation's result in st: OK when the operation ended
// with want.
func (st *Step) outcome(err error, want wire.Code) {
	got := endpoint.CodeOf(err)
	st.OK = got == want
	if !st.OK {
		if err == nil {
			st.addDetail(fmt.Sprintf("succeeded, want %s", want))
		} else {
			st.addDetail(endpoint.Outcome(err))
		}
	}
}

// run executes the phases in order.
func (d *demo) run(ctx context.Context) {
	n := len(d.slaves)
	s1 := d.slaves[0]
	regWin := [2]uint64{RegBase, RegSize}
	dataWin := [2]uint64{DataBase, uint64(d.opt.Size)}

	d.setPhase("registers: RMEM, mode 1 at both ends", endpoint.ModeRMEM,
		repeat(endpoint.ModeRMEM, n), repeat(endpoint.ModeRMEM, n), regWin)
	d.rmemWriteRead(ctx, s1, 1, RegBase, 0xC0FFEE01, 0xFFFFFFFF, 0xC0FFEE01,
		fmt.Sprintf("rmem write+read %s 0x%x", s1.name, RegBase))
	d.rmemWriteRead(ctx, s1, 1, RegBase, 0x0000AB00, 0x0000FF00, 0xC0FFAB01,
		fmt.Sprintf("rmem masked write+read %s 0x%x", s1.name, RegBase))
	d.rmemGroup(ctx, RegBase+4, 0x600D0004)

	modes := repeat(endpoint.ModeDMARead, n)
	slaveModes := repeat(endpoint.ModeDMAWrite, n)
	d.setPhase("unicast DMA write: master mode 3, slaves mode 2", endpoint.ModeDMARead, modes, slaveModes, dataWin)
	d.dmaWriteUnicast(ctx)

	modes[0], slaveModes[0] = endpoint.ModeDMAWrite, endpoint.ModeDMARead
	d.setPhase("read back: master's entry for slave1 mode 2, slave1's entry for the master mode 3", endpoint.ModeDMARead, modes, slaveModes, dataWin)
	d.dmaReadBack(ctx)

	modes[0], slaveModes[0] = endpoint.ModeDMARead, endpoint.ModeDMAWrite
	d.setPhase("replication: master's group entry mode 3, every slave's entry for the master mode 2", endpoint.ModeDMARead, modes, slaveModes, dataWin)
	d.dmaGroup(ctx)

	d.setPhase("failures, recorded on both sides", endpoint.ModeDMARead, modes, slaveModes, dataWin)
	d.accessViolation(ctx, d.pick(2))
	d.lostFrame(ctx, d.pick(3))
}

// rmemWriteRead writes a register of s with mask, reads it back and expects
// want.
func (d *demo) rmemWriteRead(ctx context.Context, s *member, peer int, addr, data, mask, want uint32, name string) {
	st, t0 := d.begin(name, "ok", peer, s)
	err := d.master.ep.RMEMWrite(ctx, peer, addr, data, mask)
	var got uint32
	if err == nil {
		got, err = d.master.ep.RMEMRead(ctx, peer, addr)
	}
	st.outcome(err, wire.CodeNone)
	if err == nil {
		st.Bytes = 8
		if got != want {
			st.OK = false
			st.addDetail(fmt.Sprintf("read 0x%08x, want 0x%08x", got, want))
		} else {
			st.Detail = fmt.Sprintf("read 0x%08x", got)
		}
	}
	d.end(st, t0, peer, []*member{s}, wire.CodeNone, wire.CodeNone)
}

// settle is how long the demo waits for group writes to be applied by the
// slaves: delivery is best effort and nothing acknowledges it.
func (d *demo) settle() time.Duration { return max(time.Second, 4*d.opt.Timeout) }

// waitServed waits until every slave's counter (by stat) has reached want[i]
// or settle has passed, and returns how many reached it.
func (d *demo) waitServed(ctx context.Context, stat func(endpoint.Stats) uint64, want []uint64) int {
	deadline := time.Now().Add(d.settle())
	for {
		done := 0
		for i, s := range d.slaves {
			if stat(s.ep.Stats()) >= want[i] {
				done++
			}
		}
		if done == len(d.slaves) || time.Now().After(deadline) || ctx.Err() != nil {
			return done
		}
		time.Sleep(time.Millisecond)
	}
}

// rmemGroup writes one register of every slave with a group RMEM write, then
// reads it back from each slave.
func (d *demo) rmemGroup(ctx context.Context, addr, data uint32) {
	name := fmt.Sprintf("rmem group write 0x%x, read back", addr)
	st, t0 := d.begin(name, "ok", masterGroupPeer, d.slaves...)
	served := func(s endpoint.Stats) uint64 { return s.ServedRMEMWrite }
	want := d.baseline(served, 1)
	err := d.master.ep.RMEMWrite(ctx, masterGroupPeer, addr, data, 0xFFFFFFFF)
	st.outcome(err, wire.CodeNone)
	if err == nil {
		st.Bytes = 4
		if got := d.waitServed(ctx, served, want); got != len(d.slaves) {
			st.OK = false
			st.addDetail(fmt.Sprintf("%d of %d slaves applied the group write within %v", got, len(d.slaves), d.settle()))
		}
		good := 0
		for i, s := range d.slaves {
			v, err := d.master.ep.RMEMRead(ctx, i+1, addr)
			switch {
			case err != nil:
				st.OK = false
				st.addDetail(fmt.Sprintf("read back from %s: %s", s.name, endpoint.Outcome(err)))
			case v != data:
				st.OK = false
				st.addDetail(fmt.Sprintf("%s has 0x%08x", s.name, v))
			default:
				good++
			}
		}
		if st.OK {
			st.Detail = fmt.Sprintf("%d/%d slaves read 0x%08x", good, len(d.slaves), data)
		}
	}
	// The read-backs use the master's entries for the slaves; the group
	// entry holds the write's record.
	d.end(st, t0, masterGroupPeer, d.slaves, wire.CodeNone, wire.CodeNone)
	for i := range d.slaves {
		if c := d.master.ep.PeerStatus(i + 1).Code; c != 0 {
			last := &d.rep.Steps[len(d.rep.Steps)-1]
			last.OK = false
			last.addDetail(fmt.Sprintf("master recorded %s for slave%d", c, i+1))
		}
	}
}

// baseline returns each slave's counter plus add.
func (d *demo) baseline(stat func(endpoint.Stats) uint64, add uint64) []uint64 {
	want := make([]uint64, len(d.slaves))
	for i, s := range d.slaves {
		want[i] = stat(s.ep.Stats()) + add
	}
	return want
}

func (d *demo) dmaWriteUnicast(ctx context.Context) {
	s := d.slaves[0]
	name := fmt.Sprintf("dma write %s 0x%x", s.name, DataBase)
	st, t0 := d.begin(name, "ok", 1, s)
	tr, err := d.master.ep.DMAWrite(ctx, 1, DataBase, d.uni)
	st.Bytes, st.Fragments = tr.Bytes, tr.Fragments
	st.outcome(err, wire.CodeNone)
	if err == nil {
		st.Detail = fmt.Sprintf("%d fragments acknowledged", tr.Fragments)
	}
	d.end(st, t0, 1, []*member{s}, wire.CodeNone, wire.CodeNone)
}

func (d *demo) dmaReadBack(ctx context.Context) {
	s := d.slaves[0]
	name := fmt.Sprintf("dma read back %s 0x%x", s.name, DataBase)
	st, t0 := d.begin(name, "ok", 1, s)
	got := make([]byte, len(d.uni))
	tr, err := d.master.ep.DMARead(ctx, 1, DataBase, got)
	st.Bytes, st.Fragments = tr.Bytes, tr.Fragments
	st.outcome(err, wire.CodeNone)
	if err == nil {
		if !bytes.Equal(got, d.uni) {
			st.OK = false
			st.addDetail("the bytes read back differ from the bytes written")
		} else {
			st.Detail = "equal to the bytes written"
		}
	}
	d.end(st, t0, 1, []*member{s}, wire.CodeNone, wire.CodeNone)
}

func (d *demo) dmaGroup(ctx context.Context) {
	name := fmt.Sprintf("dma group write 0x%x", DataBase)
	st, t0 := d.begin(name, "ok", masterGroupPeer, d.slaves...)
	// The group write is paced as oetp dma write --member paces it: each
	// slave is probed with unicast writes of the first fragment (the
	// master's entries for the slaves are in mode 3 in this phase), and
	// the group's fragments go out at the slowest slave's pace, so a slave
	// whose receive queue is short loses nothing at any --size.
	src, err := memory.NewRAM(0, uint64(len(d.src)))
	if err == nil {
		src.WriteAt(d.src, 0)
	}
	peers := make([]int, len(d.slaves))
	for i := range d.slaves {
		peers[i] = i + 1
	}
	var pace *replicate.Pacing
	if err == nil {
		var probes []replicate.Probe
		if probes, err = replicate.ProbeMembers(ctx, d.master.ep, peers, DataBase, src, 0, uint64(len(d.src))); err == nil {
			pace = replicate.NewPacing(probes, peers)
		}
	}
	served := func(s endpoint.Stats) uint64 { return s.ServedDMAWrite }
	busy := func(s endpoint.Stats) uint64 { return s.DropResponderBusy }
	base := d.baseline(served, 0)
	busyBase := d.baseline(busy, 0)
	queueBase := make([]uint64, len(d.slaves))
	for i, s := range d.slaves {
		queueBase[i] = s.nd.Link.KernelDrops()
	}
	var tr endpoint.Transfer
	if err == nil {
		tr, err = pace.Write(ctx, d.master.ep, masterGroupPeer, DataBase, src, 0, uint64(len(d.src)), nil)
	}
	st.Bytes, st.Fragments = tr.Bytes, tr.Fragments
	st.outcome(err, wire.CodeNone)
	if err == nil {
		want := make([]uint64, len(base))
		for i := range base {
			want[i] = base[i] + uint64(tr.Fragments)
		}
		got := d.waitServed(ctx, served, want)
		if got != len(d.slaves) {
			st.OK = false
			for i, s := range d.slaves {
				stats := s.ep.Stats()
				if n := served(stats) - base[i]; n < uint64(tr.Fragments) {
					st.addDetail(fmt.Sprintf("%s applied %d of %d fragments (receive queue full: %d, every responder context busy: %d)",
						s.name, n, tr.Fragments, s.nd.Link.KernelDrops()-queueBase[i], busy(stats)-busyBase[i]))
				}
			}
		} else {
			st.Detail = fmt.Sprintf("completed locally, paced at %v a fragment; %d/%d slaves applied all %d fragments", pace.Interval.Round(time.Microsecond), got, len(d.slaves), tr.Fragments)
		}
	}
	d.end(st, t0, masterGroupPeer, d.slaves, wire.CodeNone, wire.CodeNone)
}

// accessViolation writes just past slave k's DMA window.
func (d *demo) accessViolation(ctx context.Context, k int) {
	s := d.slaves[k-1]
	addr := uint32(DataBase + d.opt.Size)
	name := fmt.Sprintf("dma write %s 0x%x, outside window", s.name, addr)
	st, t0 := d.begin(name, "9 / 1", k, s)
	tr, err := d.master.ep.DMAWrite(ctx, k, addr, []byte{0xde, 0xad, 0xbe, 0xef})
	st.Bytes, st.Fragments = tr.Bytes, tr.Fragments
	st.outcome(err, wire.CodeRemoteInvalid)
	d.end(st, t0, k, []*member{s}, wire.CodeRemoteInvalid, wire.CodeLocalInvalid)
}

// lostFrame makes the network lose the master's next frame to slave k and
// writes to it: the master times out, the slave records nothing. The bytes
// written are the replicated ones, so a delivered frame would not change the
// digests.
func (d *demo) lostFrame(ctx context.Context, k int) {
	s := d.slaves[k-1]
	n := min(len(d.src), LostSize)
	name := fmt.Sprintf("dma write %s 0x%x, request lost", s.name, DataBase)
	st, t0 := d.begin(name, "8 / 0", k, s)
	if err := d.fab.loseNext(d.master.mac, s.mac); err != nil {
		st.addDetail(err.Error())
		d.end(st, t0, k, []*member{s}, wire.CodeTimeout, wire.CodeNone)
		return
	}
	tr, err := d.master.ep.DMAWrite(ctx, k, DataBase, d.src[:n])
	st.Bytes, st.Fragments = tr.Bytes, tr.Fragments
	st.outcome(err, wire.CodeTimeout)
	if errors.Is(err, endpoint.ErrTimeout) {
		st.Detail = fmt.Sprintf("no response within %v", d.opt.Timeout)
	}
	d.end(st, t0, k, []*member{s}, wire.CodeTimeout, wire.CodeNone)
}

// verify takes the SHA-256 of the master's source data and of every slave's
// data memory; it runs after the endpoints are closed.
func (d *demo) verify() {
	want := sha256.Sum256(d.src)
	d.rep.Digests = append(d.rep.Digests, Digest{Node: "master", MAC: d.master.mac.String(), SHA256: hex.EncodeToString(want[:]), Equal: true})
	st := Step{Phase: d.phase + 1, Name: "sha-256 of every slave's data", Expect: "equal", OK: true, SlaveName: "all"}
	t0 := time.Now()
	equal := 0
	for _, s := range d.slaves {
		sum := sha256.Sum256(s.data.Bytes())
		dg := Digest{Node: s.name, MAC: s.mac.String(), SHA256: hex.EncodeToString(sum[:]), Equal: sum == want}
		if dg.Equal {
			equal++
		} else {
			st.OK = false
		}
		d.rep.Digests = append(d.rep.Digests, dg)
		st.Bytes += uint64(len(d.src))
	}
	st.Detail = fmt.Sprintf("%d/%d slaves equal to the master's source", equal, len(d.slaves))
	st.Elapsed = time.Since(t0)
	st.Seconds = st.Elapsed.Seconds()
	d.rep.Steps = append(d.rep.Steps, st)
}
