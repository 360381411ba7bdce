package endpoint

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/openenoc/oetp/wire"
)

// EventSource is the interrupt source number of an Event.
type EventSource uint8

// The two event sources of the engine.
const (
	// PeerDMAComplete (source 0) reports the completion of a locally
	// initiated DMA block, successful (Code NONE) or not, and the failure
	// of a received DMA request.
	PeerDMAComplete EventSource = 0
	// RMEMError (source 5) reports a failed RMEM operation, initiated or
	// received.
	RMEMError EventSource = 5
)

// String returns the source's name, e.g. "PEER_DMA_COMPLETE".
func (s EventSource) String() string {
	switch s {
	case PeerDMAComplete:
		return "PEER_DMA_COMPLETE"
	case RMEMError:
		return "RMEM_ERROR"
	}
	return fmt.Sprintf("EventSource(%d)", uint8(s))
}

// Event is one notification, the analogue of an interrupt claim.
type Event struct {
	Source EventSource
	Peer   int       // the local peer index
	Code   wire.Code // the completion or failure code; the latest one when coalesced
	// Coalesced is how many further events of the same source and peer
	// were merged into this one while the queue was full (0 for none).
	Coalesced int
}

type pendingEvent struct {
	code  wire.Code
	count int
	set   bool
	resp  bool // a responder event is among those merged here
}

// eventQueue is a bounded FIFO of events. When it is full, new events wait
// in one pending slot per (source, peer), where repeated events coalesce;
// pending slots are promoted in the order they were created as the queue
// drains. Pushing never blocks.
type eventQueue struct {
	mu    sync.Mutex
	ring  []Event
	head  int
	n     int
	pend  [2][MaxPeers]pendingEvent
	order []int // pending keys src*MaxPeers+peer, oldest first
	sig   chan struct{}
	// respPending counts the pending slots holding a responder event:
	// while it is not zero the responder defers (drops) new requests.
	respPending atomic.Int32
}

func newEventQueue(n int) *eventQueue {
	return &eventQueue{ring: make([]Event, n), order: make([]int, 0, 2*MaxPeers), sig: make(chan struct{}, 1)}
}

func srcIndex(s EventSource) int {
	if s == RMEMError {
		return 1
	}
	return 0
}

// push queues ev; responder says it was raised by the responder for a
// received request.
func (q *eventQueue) push(ev Event, responder bool) {
	q.mu.Lock()
	if len(q.order) == 0 && q.n < len(q.ring) {
		q.ring[(q.head+q.n)%len(q.ring)] = ev
		q.n++
	} else {
		s := srcIndex(ev.Source)
		p := &q.pend[s][ev.Peer]
		if p.set {
			p.code = ev.Code
			p.count++
		} else {
			*p = pendingEvent{code: ev.Code, set: true}
			q.order = append(q.order, s*MaxPeers+ev.Peer)
		}
		if responder && !p.resp {
			p.resp = true
			q.respPending.Add(1)
		}
	}
	q.mu.Unlock()
	q.signal()
}

// pop removes the oldest event; ok is false when the queue is empty.
func (q *eventQueue) pop() (ev Event, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return Event{}, false
	}
	ev = q.ring[q.head]
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	if len(q.order) > 0 {
		k := q.order[0]
		copy(q.order, q.order[1:])
		q.order = q.order[:len(q.order)-1]
		s, peer := k/MaxPeers, k%MaxPeers
		p := &q.pend[s][peer]
		src := PeerDMAComplete
		if s == 1 {
			src = RMEMError
		}
		q.ring[(q.head+q.n)%len(q.ring)] = Event{Source: src, Peer: peer, Code: p.code, Coalesced: p.count}
		q.n++
		if p.resp {
			q.respPending.Add(-1)
		}
		*p = pendingEvent{}
	}
	if q.n > 0 {
		q.signal() // another waiter may take the next event
	}
	return ev, true
}

func (q *eventQueue) signal() {
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

func (q *eventQueue) clear() {
	q.mu.Lock()
	q.head, q.n = 0, 0
	q.pend = [2][MaxPeers]pendingEvent{}
	q.order = q.order[:0]
	q.respPending.Store(0)
	q.mu.Unlock()
}

// NextEvent returns the oldest pending event, waiting for one if there is
// none. It returns ctx.Err() when ctx ends first and ErrClosed after Close.
func (e *Endpoint) NextEvent(ctx context.Context) (Event, error) {
	for {
		if ev, ok := e.ev.pop(); ok {
			return ev, nil
		}
		select {
		case <-e.ev.sig:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-e.done:
			return Event{}, ErrClosed
		}
	}
}

// raise queues an event of the initiator unless the configuration in force
// disables it.
func (e *Endpoint) raise(src EventSource, peer int, code wire.Code) {
	e.raiseFrom(src, peer, code, false)
}

// raiseResponder queues an event of the responder (a failed received
// request) unless the configuration in force disables it. While such an
// event waits for room in a full queue, the responder defers new requests:
// see Endpoint.admit.
func (e *Endpoint) raiseResponder(src EventSource, peer int, code wire.Code) {
	e.raiseFrom(src, peer, code, true)
}

func (e *Endpoint) raiseFrom(src EventSource, peer int, code wire.Code, responder bool) {
	cfg := e.cfg.Load()
	switch src {
	case PeerDMAComplete:
		if !cfg.Events.PeerDMAComplete || !e.peers.Load().entries[peer].EventEnable {
			return
		}
	case RMEMError:
		if !cfg.Events.RMEMError {
			return
		}
	}
	e.ev.push(Event{Source: src, Peer: peer, Code: code}, responder)
}
