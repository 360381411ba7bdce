package frames

import (
	"time"

	"github.com/openenoc/oetp/wire"
)

// Bounds of the DMA_READ_REQ lengths dump remembers for their responses. A
// response comes within the initiator's timeout (1 s by default, at most a
// few retries), so a request unanswered after ReadMaxAge of capture time
// will not be answered; ReadMaxOutstanding bounds a flood of requests
// nobody answers (each costs about 100 bytes).
const (
	ReadMaxAge         = 60 * time.Second
	ReadMaxOutstanding = 1 << 16
)

// readKey identifies an outstanding DMA_READ_REQ as its response will carry
// it: the response's source is the request's destination. Cooked captures
// do not record destinations: their key has zero MACs.
type readKey struct {
	requester, responder wire.MAC
	rid                  uint32
}

// readEntry is a remembered request length; seq tells it from a later
// request with the same key.
type readEntry struct {
	length   uint32
	seq      uint64
	answered bool
}

// readItem is one request in arrival order: its two keys (the full key and
// the Request ID alone, for cooked captures) and its capture time.
type readItem struct {
	full readKey
	seq  uint64
	at   time.Time
}

// readTable remembers DMA_READ_REQ lengths within ReadMaxAge and
// ReadMaxOutstanding, forgetting the oldest first, and counts the requests
// it forgot unanswered.
type readTable struct {
	m       map[readKey]readEntry
	ring    []readItem // arrival order; len(ring) == maxN once full
	head, n int
	seq     uint64
	maxAge  time.Duration
	maxN    int
	aged    uint64 // requests forgotten without a response
}

func newReadTable(maxAge time.Duration, maxN int) *readTable {
	return &readTable{m: map[readKey]readEntry{}, ring: make([]readItem, maxN), maxAge: maxAge, maxN: maxN}
}

// request remembers a DMA_READ_REQ seen at ts.
func (t *readTable) request(requester, responder wire.MAC, rid, length uint32, ts time.Time) {
	t.expire(ts)
	if t.n == t.maxN {
		t.forget()
	}
	t.seq++
	full := readKey{requester, responder, rid}
	t.m[full] = readEntry{length: length, seq: t.seq}
	t.m[readKey{rid: rid}] = readEntry{length: length, seq: t.seq}
	t.ring[(t.head+t.n)%t.maxN] = readItem{full: full, seq: t.seq, at: ts}
	t.n++
}

// response returns the length of the request key answers, if remembered,
// and marks it answered.
func (t *readTable) response(key readKey, ts time.Time) (uint32, bool) {
	t.expire(ts)
	e, ok := t.m[key]
	if !ok {
		return 0, false
	}
	e.answered = true
	t.m[key] = e
	return e.length, true
}

// expire forgets the requests older than maxAge at ts. Capture times that
// go backwards (merged files) expire nothing.
func (t *readTable) expire(ts time.Time) {
	for t.n > 0 && ts.Sub(t.ring[t.head].at) > t.maxAge {
		t.forget()
	}
}

// forget drops the oldest request, counting it if no response matched it.
func (t *readTable) forget() {
	it := t.ring[t.head]
	t.ring[t.head] = readItem{}
	t.head = (t.head + 1) % t.maxN
	t.n--
	answered := false
	for _, k := range []readKey{it.full, {rid: it.full.rid}} {
		if e, ok := t.m[k]; ok && e.seq == it.seq {
			answered = answered || e.answered
			delete(t.m, k)
		}
	}
	if !answered {
		t.aged++
	}
}
