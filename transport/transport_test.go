package transport

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// checkExactlyOnce fails unless each of the n reads executed once and its
// response (data 1: the first read of that word) arrived once.
func (m *sim) checkExactlyOnce(n int) {
	m.t.Helper()
	if len(m.responses) != n {
		m.t.Fatalf("%d of %d responses arrived (state %v, stats %+v / %+v)", len(m.responses), n, m.s.State(), m.s.Stats(), m.r.Stats())
	}
	for i := 0; i < n; i++ {
		if got := m.reads[uint32(i*4)]; got != 1 {
			m.t.Errorf("word %#x read %d times, want exactly 1", i*4, got)
		}
		if d := m.responses[uint32(i+1)]; d != 1 {
			m.t.Errorf("response to request %d carries %d reads, want 1", i+1, d)
		}
	}
	if m.dupRsp != 0 {
		m.t.Errorf("%d responses delivered twice to the v1 layer", m.dupRsp)
	}
	if got := m.r.Stats().Executed; got != uint64(n) {
		m.t.Errorf("Executed = %d, want %d", got, n)
	}
}

func TestHandshakeExact(t *testing.T) {
	m := newSim(t, Config{Depth: 16}, Config{Depth: 8, Credits: 6})
	m.logOn = true
	m.open(0x51, 100)
	want := []string{
		"A>B SYN psn=100 apsn=0 cr=0",
		"B>A ACK|SYN|RSP psn=0 apsn=100 cr=6",
	}
	if d := cmp.Diff(want, m.log); d != "" {
		t.Fatalf("wire (-want +got):\n%s", d)
	}
	if m.s.Depth() != 8 {
		t.Errorf("negotiated depth %d, want 8 (the smaller)", m.s.Depth())
	}
	if m.s.SRTT() != 20*time.Microsecond {
		t.Errorf("SRTT %v after the SYN's round trip, want 20µs", m.s.SRTT())
	}
}

func TestInOrderExactPSNs(t *testing.T) {
	m := newSim(t, Config{InitialCwnd: 8}, Config{})
	m.open(7, 1000)
	m.logOn = true
	m.runOps(3, time.Second)
	m.checkExactlyOnce(3)
	want := []string{
		"A>B DATA|ACK psn=1000 apsn=1000 cr=0",
		"A>B DATA|ACK psn=1001 apsn=1000 cr=0",
		"A>B DATA|ACK psn=1002 apsn=1000 cr=0",
		"B>A DATA|ACK|RSP psn=1000 apsn=1001 cr=32",
		"B>A DATA|ACK|RSP psn=1001 apsn=1002 cr=32",
		"B>A DATA|ACK|RSP psn=1002 apsn=1003 cr=32",
	}
	if d := cmp.Diff(want, m.log); d != "" {
		t.Fatalf("wire (-want +got):\n%s", d)
	}
	if m.s.Outstanding() != 0 {
		t.Errorf("%d outstanding after all responses", m.s.Outstanding())
	}
}

// A lost request: the next one reveals the gap, B sends one NAK with the
// PSN to resend from, A goes back N and B executes each once.
func TestLostRequestNAKGoBackN(t *testing.T) {
	m := newSim(t, Config{InitialCwnd: 8}, Config{})
	m.open(7, 10)
	m.logOn = true
	m.dropToB = func(n int, _ []byte) bool { return n == 2 } // frames to B after the SYN: #1 psn 10, #2 psn 11
	m.runOps(4, time.Second)
	m.checkExactlyOnce(4)
	want := []string{
		"A>B DATA|ACK psn=10 apsn=10 cr=0",
		"A>B DATA|ACK psn=11 apsn=10 cr=0 LOST",
		"A>B DATA|ACK psn=12 apsn=10 cr=0",
		"A>B DATA|ACK psn=13 apsn=10 cr=0",
		"B>A DATA|ACK|RSP psn=10 apsn=11 cr=32",
		"B>A ACK|NAK|RSP psn=0 apsn=11 cr=32", // one NAK for the gap; psn 13 is dropped silently
		"A>B DATA|ACK psn=11 apsn=10 cr=0",    // Go-Back-N from 11: the frames as first sent
		"A>B DATA|ACK psn=12 apsn=10 cr=0",
		"A>B DATA|ACK psn=13 apsn=10 cr=0",
		"B>A DATA|ACK|RSP psn=11 apsn=12 cr=32",
		"B>A DATA|ACK|RSP psn=12 apsn=13 cr=32",
		"B>A DATA|ACK|RSP psn=13 apsn=14 cr=32",
	}
	if d := cmp.Diff(want, m.log); d != "" {
		t.Fatalf("wire (-want +got):\n%s", d)
	}
	ss, rs := m.s.Stats(), m.r.Stats()
	if ss.NAKs != 1 || ss.Retransmitted != 3 || rs.NAKs != 1 || rs.Gaps != 2 || rs.Replays != 0 {
		t.Errorf("sender %+v receiver %+v", ss, rs)
	}
}

// A lost response: the next response reveals it, A resends that request
// alone, and B answers it from the replay cache without executing it again.
func TestLostResponseReplayCache(t *testing.T) {
	m := newSim(t, Config{InitialCwnd: 8}, Config{})
	m.open(7, 10)
	m.logOn = true
	m.dropToA = func(n int, _ []byte) bool { return n == 1 } // #0 SYN-ACK, #1 response 10
	m.runOps(3, time.Second)
	m.checkExactlyOnce(3)
	want := []string{
		"A>B DATA|ACK psn=10 apsn=10 cr=0",
		"A>B DATA|ACK psn=11 apsn=10 cr=0",
		"A>B DATA|ACK psn=12 apsn=10 cr=0",
		"B>A DATA|ACK|RSP psn=10 apsn=11 cr=32 LOST",
		"B>A DATA|ACK|RSP psn=11 apsn=12 cr=32",
		"B>A DATA|ACK|RSP psn=12 apsn=13 cr=32",
		"A>B DATA|ACK psn=10 apsn=10 cr=0",      // response 11 arrived first: fast retransmit of 10 only
		"B>A DATA|ACK|RSP psn=10 apsn=11 cr=32", // the cached response, byte for byte
	}
	if d := cmp.Diff(want, m.log); d != "" {
		t.Fatalf("wire (-want +got):\n%s", d)
	}
	if rs := m.r.Stats(); rs.Replays != 1 || rs.Executed != 3 {
		t.Errorf("receiver %+v, want 1 replay and 3 executions", rs)
	}
	if ss := m.s.Stats(); ss.FastRetransmits != 1 || ss.Timeouts != 0 {
		t.Errorf("sender %+v, want 1 fast retransmit and no timeout", ss)
	}
}

// The last request lost: nothing follows to reveal it, so the timer does.
func TestTailLossRTO(t *testing.T) {
	m := newSim(t, Config{MinRTO: time.Millisecond}, Config{})
	m.open(7, 10)
	m.dropToB = func(n int, _ []byte) bool { return n == 1 }
	start := m.now
	m.runOps(1, time.Second)
	m.checkExactlyOnce(1)
	ss := m.s.Stats()
	if ss.Timeouts != 1 || ss.Retransmitted != 1 {
		t.Errorf("sender %+v, want 1 timeout and 1 retransmission", ss)
	}
	// SRTT 20µs from the SYN: RTO = max(20µs + 4*10µs, MinRTO) = 1ms; the
	// response arrives one round trip after the retransmission.
	if got, want := m.now-start, time.Millisecond+20*time.Microsecond; got != want {
		t.Errorf("completed after %v, want %v", got, want)
	}
}

// Both directions lose 5 % of their frames; every read executes exactly
// once and every response arrives once.
func TestExactlyOnceUnderLoss(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			m := newSim(t, Config{MinRTO: time.Millisecond}, Config{})
			m.open(uint32(seed), uint32(seed)*0x9e3779b9)
			r := rng(seed)
			m.dropToB = func(int, []byte) bool { return r.Float64() < 0.05 }
			m.dropToA = func(int, []byte) bool { return r.Float64() < 0.05 }
			m.runOps(2000, time.Minute)
			m.checkExactlyOnce(2000)
			if m.s.Stats().Retransmitted == 0 || m.r.Stats().Replays == 0 {
				t.Errorf("no recovery exercised: %+v %+v", m.s.Stats(), m.r.Stats())
			}
		})
	}
}

// Corrupted frames are dropped silently and counted; recovery makes up.
func TestCorruptionSilentDrop(t *testing.T) {
	m := newSim(t, Config{MinRTO: time.Millisecond}, Config{})
	m.open(3, 3)
	r := rng(42)
	flips := 0
	flip := func(_ int, f []byte) {
		if r.Float64() < 0.05 {
			// Any bit from the Discriminator on; a flipped MAC or
			// EtherType would not reach the session at all.
			f[reliable.Offset+1+r.IntN(len(f)-reliable.Offset-1)] ^= 1 << r.IntN(8)
			flips++
		}
	}
	m.corruptToB, m.corruptToA = flip, flip
	m.runOps(2000, time.Minute)
	m.checkExactlyOnce(2000)
	crc := m.s.Stats().CRCDrops + m.r.Stats().CRCDrops
	if crc == 0 || flips == 0 {
		t.Fatalf("flips %d, CRC drops %d", flips, crc)
	}
	t.Logf("%d frames corrupted, %d counted as CRC drops (the rest failed a cheaper check first)", flips, crc)
}

func TestSynUnansweredFailsWithin3RTO(t *testing.T) {
	m := newSim(t, Config{InitialRTO: 50 * time.Millisecond}, Config{})
	m.dropToB = func(int, []byte) bool { return true } // a v1 device: never answers
	m.s.Open(0, 1, 1)
	m.flushA()
	var syns []time.Duration
	for m.s.State() == SynSent {
		before := m.s.Stats().Syns
		d, _ := m.s.Deadline()
		m.now = d
		if res := m.s.OnTimer(m.now); res.Event == EventFailed {
			break
		}
		m.flushA()
		if m.s.Stats().Syns > before {
			syns = append(syns, m.now)
		}
	}
	if m.s.State() != Failed || m.now != 150*time.Millisecond {
		t.Fatalf("state %v at %v, want failed at 150ms (3 RTOs)", m.s.State(), m.now)
	}
	if d := cmp.Diff([]time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, syns); d != "" {
		t.Errorf("SYN retransmissions (-want +got):\n%s", d)
	}
	if m.s.Stats().Syns != 3 {
		t.Errorf("%d SYNs, want 3", m.s.Stats().Syns)
	}
}

func TestRetriesExhaustedFails(t *testing.T) {
	m := newSim(t, Config{MaxRetries: 3, MinRTO: time.Millisecond, MaxRTO: 100 * time.Millisecond}, Config{})
	m.open(1, 1)
	m.dropToB = func(int, []byte) bool { return true }
	m.request(0)
	var res Result
	for i := 0; i < 10 && res.Event != EventFailed; i++ {
		d, ok := m.s.Deadline()
		if !ok {
			t.Fatal("no timer armed with a request outstanding")
		}
		m.now = d
		res = m.s.OnTimer(m.now)
		m.flushA()
	}
	if res.Event != EventFailed || m.s.State() != Failed {
		t.Fatalf("state %v", m.s.State())
	}
	if st := m.s.Stats(); st.Timeouts != 4 || st.Retransmitted != 3 {
		t.Errorf("stats %+v, want 4 timeouts and 3 retransmissions", st)
	}
	// Sent at 20µs (after the handshake); the timeouts double: 1, 2, 4, 8 ms.
	if m.now != 20*time.Microsecond+time.Millisecond+2*time.Millisecond+4*time.Millisecond+8*time.Millisecond {
		t.Errorf("failed at %v", m.now)
	}
}

func TestCreditsBoundWindow(t *testing.T) {
	m := newSim(t, Config{InitialCwnd: 32}, Config{Credits: 2})
	m.open(1, 1)
	if !m.request(0) || !m.request(4) {
		t.Fatal("two requests refused")
	}
	if m.s.CanSend() {
		t.Fatal("a third request allowed with 2 credits")
	}
	m.runUntil(func() bool { return m.s.CanSend() }, time.Second)
	if m.s.Outstanding() > 1 {
		t.Errorf("window reopened with %d outstanding", m.s.Outstanding())
	}
}

func TestCongestionWindow(t *testing.T) {
	m := newSim(t, Config{InitialCwnd: 2}, Config{})
	m.open(1, 1)
	if m.s.Cwnd() != 2 {
		t.Fatalf("cwnd %v", m.s.Cwnd())
	}
	m.runOps(40, time.Second)
	if m.s.Cwnd() != 32 {
		t.Errorf("cwnd %v after 40 lossless responses, want the depth 32 (slow start)", m.s.Cwnd())
	}
	// One loss halves it.
	lost := false
	m.dropToB = func(int, []byte) bool {
		if !lost {
			lost = true
			return true
		}
		return false
	}
	m.responses = map[uint32]uint32{}
	m.runOps(1, time.Second)
	if c := m.s.Cwnd(); c >= 32 || c < 1 {
		t.Errorf("cwnd %v after a loss, want it cut", c)
	}
}

func TestUnknownSessionRST(t *testing.T) {
	m := newSim(t, Config{}, Config{})
	m.open(1, 1)
	// B restarts: a new Receiver knows no session.
	r, _ := NewReceiver(Config{}, macB, macA)
	m.r = r
	m.logOn = true
	m.request(0)
	m.runUntil(func() bool { return m.s.State() != Established }, time.Second)
	if m.s.State() != Failed || m.s.Stats().Resets != 1 {
		t.Fatalf("state %v stats %+v", m.s.State(), m.s.Stats())
	}
	want := []string{"A>B DATA|ACK psn=1 apsn=1 cr=0", "B>A RST|RSP psn=1 apsn=0 cr=0"}
	if d := cmp.Diff(want, m.log); d != "" {
		t.Fatalf("wire (-want +got):\n%s", d)
	}
	// A new session works.
	m.s.Open(m.now, 2, 500)
	m.flushA()
	m.runUntil(func() bool { return m.s.State() == Established }, time.Second)
	m.responses = map[uint32]uint32{}
	m.reads = map[uint32]int{}
	m.rid = 0
	m.runOps(2, time.Second)
	m.checkExactlyOnce(2)
}

func TestPSNWrap(t *testing.T) {
	m := newSim(t, Config{}, Config{})
	m.open(9, 0xFFFFFFF0)
	r := rng(5)
	m.dropToB = func(int, []byte) bool { return r.Float64() < 0.1 }
	m.runOps(100, time.Minute)
	m.checkExactlyOnce(100)
	if m.r.Expected() != uint32(100-0x10) {
		t.Errorf("expected %#x", m.r.Expected())
	}
}

func TestRefusedRequestIsResent(t *testing.T) {
	m := newSim(t, Config{MinRTO: time.Millisecond}, Config{})
	m.open(1, 1)
	m.request(0)
	f := m.toB[0].f
	m.toB = nil
	h, _ := reliable.Parse(f, 8192)
	if d := m.r.OnFrame(f, h); d.Verdict != Execute {
		t.Fatalf("verdict %v", d.Verdict)
	}
	m.r.Refuse() // e.g. the responder was busy
	if m.r.Expected() != 1 {
		t.Fatalf("expected advanced to %d after a refusal", m.r.Expected())
	}
	m.runUntil(func() bool { return len(m.responses) == 1 }, time.Second)
	m.checkExactlyOnce(1)
	if st := m.s.Stats(); st.Timeouts != 1 {
		t.Errorf("sender %+v, want the timer to resend the refused request", st)
	}
}

// The steady state allocates nothing: a request, its execution and its
// response.
func TestZeroAllocs(t *testing.T) {
	s, _ := NewSender(Config{}, macA, macB)
	r, _ := NewReceiver(Config{}, macB, macA)
	s.Open(0, 1, 1)
	out := make([][]byte, 0, 64)
	out = s.Pending(0, out[:0])
	h, _ := reliable.Parse(out[0], 8192)
	d := r.OnFrame(out[0], h)
	h, _ = reliable.Parse(d.Control, 8192)
	s.OnFrame(0, d.Control, h)
	var now time.Duration
	allocs := testing.AllocsPerRun(1000, func() {
		now += time.Microsecond
		b := s.Buffer()
		b = wire.AppendRMEMReadReq(b, macB, macA, 1, 0x100)
		_, f := s.Push(now, b)
		h, _ := reliable.Parse(f, 8192)
		d := r.OnFrame(f, h)
		if d.Verdict != Execute {
			panic("not executed")
		}
		v1 := wire.Frame(reliable.Decapsulate(f, h))
		rb := r.ResponseBuffer()
		rb = wire.AppendRMEMReadRsp(rb, macA, macB, v1.RequestID(), 7)
		rsp := r.Respond(rb)
		h, _ = reliable.Parse(rsp, 8192)
		if s.OnFrame(now, rsp, h).Event != EventResponse {
			panic("no response")
		}
		out = s.Pending(now, out[:0])
		s.OnTimer(now)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request and response, want 0", allocs)
	}
}

// Requests queued before the handshake completes go out once it does, as
// far as the congestion window allows; the rest follow as responses open it.
func TestQueueBeforeEstablished(t *testing.T) {
	m := newSim(t, Config{InitialCwnd: 2}, Config{})
	m.s.Open(m.now, 1, 100)
	for i := 0; i < 5; i++ {
		if !m.s.Room() {
			t.Fatal("no room")
		}
		m.rid++
		m.s.Queue(wire.AppendRMEMReadReq(m.s.Buffer(), macB, macA, m.rid, uint32(i*4)))
	}
	m.logOn = true
	m.flushA()
	m.runUntil(func() bool { return len(m.responses) == 5 }, time.Second)
	m.checkExactlyOnce(5)
	if m.log[0] != "A>B SYN psn=100 apsn=0 cr=0" || m.log[2] != "A>B DATA|ACK psn=100 apsn=100 cr=0" || m.log[3] != "A>B DATA|ACK psn=101 apsn=100 cr=0" || m.log[4] != "B>A DATA|ACK|RSP psn=100 apsn=101 cr=32" {
		t.Errorf("wire:\n%s", strings.Join(m.log, "\n"))
	}
}

// A failed handshake leaves the queued requests to their owner.
func TestUnsentAfterFailedHandshake(t *testing.T) {
	m := newSim(t, Config{InitialRTO: time.Millisecond}, Config{})
	m.dropToB = func(int, []byte) bool { return true }
	m.s.Open(0, 1, 1)
	m.s.Queue(wire.AppendRMEMReadReq(m.s.Buffer(), macB, macA, 9, 0x40))
	m.flushA()
	for m.s.State() == SynSent {
		d, _ := m.s.Deadline()
		m.now = d
		m.s.OnTimer(m.now)
		m.flushA()
	}
	un := m.s.Unsent(nil)
	if m.s.State() != Failed || len(un) != 1 {
		t.Fatalf("state %v, %d unsent", m.s.State(), len(un))
	}
	h, _ := reliable.Parse(un[0], 8192)
	v1 := reliable.Decapsulate(un[0], h)
	if want := wire.AppendRMEMReadReq(nil, macB, macA, 9, 0x40); string(v1) != string(want) {
		t.Errorf("unsent v1 frame %x, want %x", v1, want)
	}
}

// Several requests execute at once (a batch handed to the v1 layer
// together): each response carries the cumulative ACK over every answered
// request; a refused one in the middle keeps the ACK at its PSN, executes
// when resent, and the answered one after it is replayed from the cache
// instead of executing again.
func TestSeveralExecuting(t *testing.T) {
	r, err := NewReceiver(Config{Depth: 8}, macB, macA)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(f []byte) reliable.Header {
		t.Helper()
		h, p := reliable.Parse(f, 8192)
		if p != reliable.OK {
			t.Fatalf("frame: %v", p)
		}
		return h
	}
	syn := reliable.AppendSyn(nil, macB, macA, reliable.Header{Flags: reliable.FlagSyn, Session: 3, PSN: 100},
		reliable.Syn{Depth: 8, Congestion: reliable.CongestionAIMD, MaxFrame: 8192})
	if d := r.OnFrame(syn, parse(syn)); d.Control == nil {
		t.Fatal("no SYN answer")
	}
	req := func(psn uint32) []byte {
		b := make([]byte, reliable.Headroom, 256)
		b = wire.AppendRMEMReadReq(b, macB, macA, psn, 4*psn)
		return reliable.Encapsulate(b, reliable.Header{Flags: reliable.FlagAck, Session: 3, PSN: psn, APSN: 100})
	}
	decide := func(psn uint32, want Verdict) Decision {
		t.Helper()
		f := req(psn)
		d := r.OnFrame(f, parse(f))
		if d.Verdict != want || (want != Drop && d.PSN != psn) {
			t.Fatalf("PSN %d: verdict %v psn %d, want %v", psn, d.Verdict, d.PSN, want)
		}
		return d
	}
	respond := func(psn, apsn uint32) {
		t.Helper()
		b := r.ResponseBufferPSN(psn)
		b = wire.AppendRMEMReadRsp(b, macA, macB, psn, psn)
		f := r.RespondPSN(psn, b)
		if f == nil {
			t.Fatalf("RespondPSN(%d): not executing", psn)
		}
		if h := parse(f); h.PSN != psn || h.APSN != apsn || h.Flags&reliable.FlagRsp == 0 {
			t.Fatalf("response to %d: psn %d apsn %d flags %v, want apsn %d", psn, h.PSN, h.APSN, h.Flags, apsn)
		}
	}
	for p := uint32(100); p < 104; p++ {
		decide(p, Execute)
	}
	if !r.Executing() || r.Expected() != 100 {
		t.Fatalf("executing %v, expected %d", r.Executing(), r.Expected())
	}
	decide(101, Drop) // a duplicate while it executes
	respond(100, 101)
	respond(101, 102)
	r.RefusePSN(102) // dropped by the v1 layer
	respond(103, 102)
	if r.Executing() || r.Expected() != 102 {
		t.Fatalf("executing %v, expected %d; want none and 102", r.Executing(), r.Expected())
	}
	if a := r.FlushAck(); a != nil {
		t.Errorf("an ACK (%v) with nothing owed", parse(a))
	}
	// After the refused one: it must not execute first; a NAK asks for
	// everything from 102.
	if d := decide(104, Drop); d.Control == nil || parse(d.Control).Flags&reliable.FlagNak == 0 || parse(d.Control).APSN != 102 {
		t.Fatalf("no NAK from 102 for the gap")
	}
	decide(102, Execute) // resent
	if d := decide(103, Replay); d.Control == nil || parse(d.Control).PSN != 103 {
		t.Fatal("103 not replayed from the cache")
	}
	respond(102, 104)
	decide(104, Execute)
	respond(104, 105)
	if st := r.Stats(); st.Executed != 5 || st.Replays != 1 || st.Refused != 1 || st.Gaps != 1 || st.NAKs != 1 {
		t.Errorf("stats %+v; want 5 executed, 1 replay, 1 refused, 1 gap, 1 NAK", st)
	}
}

// Exactly once with receive batches: B executes every request of a batch
// together and answers them afterwards, refusing some (a busy v1 layer),
// through loss in both directions.
func TestExactlyOnceBatches(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		m := newSim(t, Config{MinRTO: time.Millisecond, InitialCwnd: 32}, Config{})
		m.batchB = true
		r := rng(seed)
		m.refuseB = func() bool { return r.Float64() < 0.05 }
		m.open(uint32(seed), uint32(seed)*1000)
		m.dropToB = func(int, []byte) bool { return r.Float64() < 0.05 }
		m.dropToA = func(int, []byte) bool { return r.Float64() < 0.05 }
		m.runOps(400, time.Minute)
		m.checkExactlyOnce(400)
		if st := m.r.Stats(); st.Refused == 0 || st.Replays == 0 || m.maxRun < 8 {
			t.Errorf("seed %d: %+v, at most %d executing together; want refusals, replays and batches exercised", seed, st, m.maxRun)
		}
	}
}

// A stall, not a loss: B's first four responses arrive 2 ms late, past
// the 1 ms RTO. The timer resends the window (Go-Back-N) and B answers the
// copies from its replay cache; when the late originals arrive they are
// second responses to requests the timer resent, which shows their first
// transmissions had arrived: the timeout was spurious, and the congestion
// window's cut is undone (cwnd and ssthresh as before the timeout).
func TestSpuriousTimeoutUndo(t *testing.T) {
	m := newSim(t, Config{InitialCwnd: 8, MinRTO: time.Millisecond}, Config{})
	m.open(7, 10)
	m.logOn = true
	m.lateToA = func(n int) time.Duration { // #0 SYN-ACK, #1..#4 responses to 10..13
		if n >= 1 && n <= 4 {
			return 2 * time.Millisecond
		}
		return 0
	}
	before := m.s.Cwnd()
	m.runOps(4, time.Second)
	m.checkExactlyOnce(4)
	if ss := m.s.Stats(); ss.Timeouts != 1 || ss.SpuriousTimeouts != 0 || m.s.Cwnd() >= before {
		t.Fatalf("after the replays: sender %+v cwnd %v, want 1 timeout, none found spurious yet, cwnd cut below %v", ss, m.s.Cwnd(), before)
	}
	m.runUntil(func() bool { return len(m.toA) == 0 && len(m.toB) == 0 }, time.Second)
	want := []string{
		"A>B DATA|ACK psn=10 apsn=10 cr=0",
		"A>B DATA|ACK psn=11 apsn=10 cr=0",
		"A>B DATA|ACK psn=12 apsn=10 cr=0",
		"A>B DATA|ACK psn=13 apsn=10 cr=0",
		"B>A DATA|ACK|RSP psn=10 apsn=11 cr=32", // late
		"B>A DATA|ACK|RSP psn=11 apsn=12 cr=32",
		"B>A DATA|ACK|RSP psn=12 apsn=13 cr=32",
		"B>A DATA|ACK|RSP psn=13 apsn=14 cr=32",
		"A>B DATA|ACK psn=10 apsn=10 cr=0", // the timer: Go-Back-N from 10
		"A>B DATA|ACK psn=11 apsn=10 cr=0",
		"A>B DATA|ACK psn=12 apsn=10 cr=0",
		"A>B DATA|ACK psn=13 apsn=10 cr=0",
		"B>A DATA|ACK|RSP psn=10 apsn=11 cr=32", // replays, byte for byte; they arrive first
		"B>A DATA|ACK|RSP psn=11 apsn=12 cr=32",
		"B>A DATA|ACK|RSP psn=12 apsn=13 cr=32",
		"B>A DATA|ACK|RSP psn=13 apsn=14 cr=32",
	}
	if d := cmp.Diff(want, m.log); d != "" {
		t.Fatalf("wire (-want +got):\n%s", d)
	}
	ss, rs := m.s.Stats(), m.r.Stats()
	if ss.Timeouts != 1 || ss.SpuriousTimeouts != 1 || ss.Retransmitted != 4 || ss.Duplicates != 4 || ss.Responses != 4 || rs.Replays != 4 || rs.Executed != 4 {
		t.Errorf("sender %+v receiver %+v", ss, rs)
	}
	if got := m.s.Cwnd(); got != before {
		t.Errorf("cwnd %v after the undo, want %v (before the timeout)", got, before)
	}
	if got := m.s.RTO(); got != time.Millisecond {
		t.Errorf("RTO %v after the undo, want the backoff ended (1ms)", got)
	}
}

// Genuine losses are not undone: a lost request (one response to its
// retransmission), a lost response (one replay), and a request resent by
// two timeouts whose two responses both arrive (they may answer the two
// retransmissions: ambiguous).
func TestGenuineTimeoutNotUndone(t *testing.T) {
	for _, c := range []struct {
		name     string
		setup    func(m *sim)
		timeouts uint64
	}{
		{"request lost", func(m *sim) { m.dropToB = func(n int, _ []byte) bool { return n == 1 } }, 1},
		{"response lost", func(m *sim) { m.dropToA = func(n int, _ []byte) bool { return n == 1 } }, 1},
		{"resent twice", func(m *sim) {
			// The request is lost; the response to its first retransmission
			// comes after the second timeout, so two responses arrive.
			m.dropToB = func(n int, _ []byte) bool { return n == 1 }
			m.lateToA = func(n int) time.Duration {
				if n == 1 {
					return 3 * time.Millisecond
				}
				return 0
			}
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newSim(t, Config{InitialCwnd: 8, MinRTO: time.Millisecond}, Config{})
			m.open(7, 10)
			c.setup(m)
			m.runOps(1, time.Second)
			m.checkExactlyOnce(1)
			m.runUntil(func() bool { return len(m.toA) == 0 && len(m.toB) == 0 }, time.Second)
			ss := m.s.Stats()
			if ss.Timeouts != c.timeouts || ss.SpuriousTimeouts != 0 {
				t.Errorf("sender %+v, want %d timeouts, none spurious", ss, c.timeouts)
			}
			if got := m.s.Cwnd(); got >= 8 {
				t.Errorf("cwnd %v, want the timeout's cut kept (below 8)", got)
			}
		})
	}
}

// The same stall while the window keeps moving (a DMA block): the replays'
// responses let new requests into the slots of 10..13 before the late
// originals arrive, and the late originals still show the timeout was
// spurious.
func TestSpuriousTimeoutUndoSlotsReused(t *testing.T) {
	m := newSim(t, Config{Depth: 4, InitialCwnd: 4, MinRTO: time.Millisecond}, Config{Depth: 4})
	m.open(7, 10)
	m.lateToA = func(n int) time.Duration {
		if n >= 1 && n <= 4 {
			return 2 * time.Millisecond
		}
		return 0
	}
	before := m.s.Cwnd()
	m.runOps(12, time.Second)
	m.checkExactlyOnce(12)
	m.runUntil(func() bool { return len(m.toA) == 0 && len(m.toB) == 0 }, time.Second)
	ss := m.s.Stats()
	if ss.Timeouts != 1 || ss.SpuriousTimeouts != 1 || ss.Duplicates != 4 {
		t.Errorf("sender %+v, want 1 timeout found spurious by the 4 late originals", ss)
	}
	if got := m.s.Cwnd(); got < before {
		t.Errorf("cwnd %v after the undo, want at least %v (before the timeout)", got, before)
	}
}
