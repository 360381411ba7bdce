package transport

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

var (
	macA = wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x0a} // initiator
	macB = wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x0b} // responder
)

// sim joins a Sender (A) and a Receiver (B) by two queues of frames, with
// a deterministic clock and a v1 responder whose memory counts the reads
// of every word: RMEM_READ_RSP returns the number of reads of that
// address so far, so a request executed twice shows.
type sim struct {
	t     *testing.T
	now   time.Duration
	delay time.Duration // one-way delay of every frame
	s     *Sender
	r     *Receiver

	toB, toA []inflight
	// drop decides the fate of the n-th frame sent in each direction
	// (counted from 0 separately); nil keeps every frame.
	dropToB, dropToA func(n int, f []byte) bool
	// corrupt, when set, may change a frame in flight.
	corruptToB, corruptToA func(n int, f []byte)
	// lateToA, when set, adds a delay to the n-th frame to A (a stalled
	// host: the frame arrives, late).
	lateToA func(n int) time.Duration
	nB, nA  int

	reads     map[uint32]int    // address -> executions
	responses map[uint32]uint32 // Request ID -> data of the response delivered to A
	dupRsp    int               // responses delivered to A twice
	rid       uint32
	log       []string // wire log: "A>B ..." lines, for exact sequence tests
	logOn     bool

	// batchB makes B take every frame due at once as one receive batch:
	// all its requests execute together and are answered afterwards, in
	// PSN order, each refused instead when refuseB says so (rlink's
	// batches beneath an endpoint).
	batchB  bool
	refuseB func() bool
	maxRun  int // the most requests executing together in one batch
}

type inflight struct {
	at time.Duration
	f  []byte
}

func newSim(t *testing.T, scfg, rcfg Config) *sim {
	t.Helper()
	s, err := NewSender(scfg, macA, macB)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(rcfg, macB, macA)
	if err != nil {
		t.Fatal(err)
	}
	return &sim{t: t, s: s, r: r, delay: 10 * time.Microsecond, reads: map[uint32]int{}, responses: map[uint32]uint32{}}
}

func describe(f []byte) string {
	h, p := reliable.Parse(f, 1<<16)
	if p != reliable.OK {
		return "bad(" + p.Name() + ")"
	}
	return h.Flags.String() + " psn=" + itoa(h.PSN) + " apsn=" + itoa(h.APSN) + " cr=" + itoa(uint32(h.Credits))
}

func itoa(v uint32) string {
	if v > 1<<31 {
		return "-" + itoa(-v)
	}
	var b [12]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}

func (m *sim) sendToB(f []byte) {
	c := bytes.Clone(f)
	n := m.nB
	m.nB++
	if m.dropToB != nil && m.dropToB(n, c) {
		if m.logOn {
			m.log = append(m.log, "A>B "+describe(c)+" LOST")
		}
		return
	}
	if m.corruptToB != nil {
		m.corruptToB(n, c)
	}
	if m.logOn {
		m.log = append(m.log, "A>B "+describe(c))
	}
	m.toB = append(m.toB, inflight{m.now + m.delay, c})
}

func (m *sim) sendToA(f []byte) {
	c := bytes.Clone(f)
	n := m.nA
	m.nA++
	if m.dropToA != nil && m.dropToA(n, c) {
		if m.logOn {
			m.log = append(m.log, "B>A "+describe(c)+" LOST")
		}
		return
	}
	if m.corruptToA != nil {
		m.corruptToA(n, c)
	}
	at := m.now + m.delay
	if m.lateToA != nil {
		at += m.lateToA(n)
	}
	if m.logOn {
		m.log = append(m.log, "B>A "+describe(c))
	}
	// In arrival order: a late frame is overtaken.
	i := len(m.toA)
	for i > 0 && m.toA[i-1].at > at {
		i--
	}
	m.toA = append(m.toA, inflight{})
	copy(m.toA[i+1:], m.toA[i:])
	m.toA[i] = inflight{at, c}
}

// flushA hands the Sender's pending frames to the wire.
func (m *sim) flushA() {
	for _, f := range m.s.Pending(m.now, nil) {
		m.sendToB(f)
	}
}

// open runs the handshake and fails the test unless it completes.
func (m *sim) open(session, isn uint32) {
	m.t.Helper()
	m.s.Open(m.now, session, isn)
	m.flushA()
	m.runUntil(func() bool { return m.s.State() != SynSent }, time.Second)
	if m.s.State() != Established {
		m.t.Fatalf("handshake: state %v", m.s.State())
	}
}

// request sends an RMEM read of addr if the window allows; it returns false
// when it does not.
func (m *sim) request(addr uint32) bool {
	if !m.s.CanSend() {
		return false
	}
	b := m.s.Buffer()
	m.rid++
	b = wire.AppendRMEMReadReq(b, macB, macA, m.rid, addr)
	_, f := m.s.Push(m.now, b)
	m.sendToB(f)
	return true
}

// deliverB runs B on one frame.
func (m *sim) deliverB(f []byte) {
	h, p := reliable.Parse(f, 8192)
	if p != reliable.OK {
		return
	}
	d := m.r.OnFrame(f, h)
	switch d.Verdict {
	case Execute:
		v1 := wire.Frame(reliable.Decapsulate(f, h))
		if wire.Classify(v1, 8192).Problem != wire.OK || v1.Cmd() != wire.RMEMReadReq {
			m.t.Fatalf("B got a bad v1 frame %x", []byte(v1))
		}
		m.reads[v1.Address()]++
		b := m.r.ResponseBuffer()
		b = wire.AppendRMEMReadRsp(b, macA, macB, v1.RequestID(), uint32(m.reads[v1.Address()]))
		m.sendToA(m.r.Respond(b))
	case Replay, Drop:
		if d.Control != nil {
			m.sendToA(d.Control)
		}
	}
	if a := m.r.FlushAck(); a != nil {
		m.sendToA(a)
	}
}

// deliverBBatch runs B on a receive batch: every frame's decision first,
// then the answers of the requests to execute, in order.
func (m *sim) deliverBBatch(batch []inflight) {
	type exec struct {
		psn uint32
		v1  wire.Frame
	}
	var run []exec
	for _, in := range batch {
		f := in.f
		h, p := reliable.Parse(f, 8192)
		if p != reliable.OK {
			continue
		}
		d := m.r.OnFrame(f, h)
		switch d.Verdict {
		case Execute:
			run = append(run, exec{d.PSN, wire.Frame(bytes.Clone(reliable.Decapsulate(f, h)))})
		case Replay, Drop:
			if d.Control != nil {
				m.sendToA(d.Control)
			}
		}
	}
	m.maxRun = max(m.maxRun, len(run))
	for _, e := range run {
		if !m.r.ExecutingPSN(e.psn) {
			m.t.Fatalf("PSN %d not executing when answered", e.psn)
		}
		if m.refuseB != nil && m.refuseB() {
			m.r.RefusePSN(e.psn)
			continue
		}
		m.reads[e.v1.Address()]++
		b := m.r.ResponseBufferPSN(e.psn)
		b = wire.AppendRMEMReadRsp(b, macA, macB, e.v1.RequestID(), uint32(m.reads[e.v1.Address()]))
		m.sendToA(m.r.RespondPSN(e.psn, b))
	}
	if a := m.r.FlushAck(); a != nil {
		m.sendToA(a)
	}
}

// deliverA runs A on one frame.
func (m *sim) deliverA(f []byte) {
	h, p := reliable.Parse(f, 8192)
	if p != reliable.OK {
		return
	}
	res := m.s.OnFrame(m.now, f, h)
	if res.Event == EventResponse {
		v1 := wire.Frame(reliable.Decapsulate(f, h))
		if _, dup := m.responses[v1.RequestID()]; dup {
			m.dupRsp++
		}
		m.responses[v1.RequestID()] = v1.Data()
	}
	m.flushA()
}

// step advances to the next event (a frame arrival or a timer) and runs
// it. It returns false when nothing is left.
func (m *sim) step() bool {
	next := time.Duration(-1)
	pick := func(t time.Duration) {
		if next < 0 || t < next {
			next = t
		}
	}
	if len(m.toB) > 0 {
		pick(m.toB[0].at)
	}
	if len(m.toA) > 0 {
		pick(m.toA[0].at)
	}
	if d, ok := m.s.Deadline(); ok {
		pick(d)
	}
	if next < 0 {
		return false
	}
	if next > m.now {
		m.now = next
	}
	switch {
	case len(m.toB) > 0 && m.toB[0].at <= m.now && m.batchB:
		k := 0
		for k < len(m.toB) && m.toB[k].at <= m.now {
			k++
		}
		batch := m.toB[:k]
		m.toB = m.toB[k:]
		m.deliverBBatch(batch)
	case len(m.toB) > 0 && m.toB[0].at <= m.now:
		f := m.toB[0].f
		m.toB = m.toB[1:]
		m.deliverB(f)
	case len(m.toA) > 0 && m.toA[0].at <= m.now:
		f := m.toA[0].f
		m.toA = m.toA[1:]
		m.deliverA(f)
	default:
		m.s.OnTimer(m.now)
		m.flushA()
	}
	return true
}

func (m *sim) runUntil(done func() bool, limit time.Duration) {
	m.t.Helper()
	end := m.now + limit
	for !done() && m.now <= end {
		if !m.step() {
			return
		}
	}
}

// runOps issues n reads of distinct addresses, keeping the window full,
// and runs until every response arrived or the session failed.
func (m *sim) runOps(n int, limit time.Duration) {
	m.t.Helper()
	issued := 0
	end := m.now + limit
	for len(m.responses) < n && m.s.State() == Established && m.now <= end {
		for issued < n && m.request(uint32(issued*4)) {
			issued++
		}
		if !m.step() {
			break
		}
	}
}

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
