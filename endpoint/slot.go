package endpoint

import (
	"context"
	"sync"
)

// slot is the set of initiating slots shared by RMEM operations and DMA
// fragments: one, the specification's single initiating context, or
// Config.Outstanding. When one is released, a waiting RMEM operation goes
// first, then a waiting DMA block; among equals, first come first served.
// Ownership passes directly to the chosen waiter.
type slot struct {
	mu    sync.Mutex
	used  int // slots taken
	cap   int // slots in all (Config.Outstanding)
	rmemQ []chan struct{}
	dmaQ  []chan struct{}
}

// setCap sets the number of slots. Lowering it takes effect as taken
// slots are released.
func (s *slot) setCap(n int) {
	s.mu.Lock()
	s.cap = max(n, 1)
	s.mu.Unlock()
}

// tryAcquire takes a slot if one is free and nobody waits for one.
func (s *slot) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used >= s.cap || len(s.rmemQ) > 0 || len(s.dmaQ) > 0 {
		return false
	}
	s.used++
	return true
}

// acquire takes the slot, waiting if it is busy. It fails with ctx.Err() or
// ErrClosed (when done closes) without taking it, also when ctx has already
// ended and the slot is free.
func (s *slot) acquire(ctx context.Context, rmem bool, done <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.used < s.cap {
		s.used++
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	if rmem {
		s.rmemQ = append(s.rmemQ, ch)
	} else {
		s.dmaQ = append(s.dmaQ, ch)
	}
	s.mu.Unlock()
	var err error
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-done:
		err = ErrClosed
	}
	s.mu.Lock()
	if remove(&s.rmemQ, ch) || remove(&s.dmaQ, ch) {
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	// The slot was handed to us while we gave up: pass it on.
	<-ch
	s.release()
	return err
}

func remove(q *[]chan struct{}, ch chan struct{}) bool {
	for i, c := range *q {
		if c == ch {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}

// release frees the slot or hands it to the next waiter.
func (s *slot) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var q *[]chan struct{}
	switch {
	case s.used > s.cap:
		s.used-- // the number of slots was lowered
		return
	case len(s.rmemQ) > 0:
		q = &s.rmemQ
	case len(s.dmaQ) > 0:
		q = &s.dmaQ
	default:
		s.used--
		return
	}
	ch := (*q)[0]
	*q = (*q)[1:]
	ch <- struct{}{}
}

// waiting returns the number of RMEM operations and DMA fragments waiting
// for the slot.
func (s *slot) waiting() (rmem, dma int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rmemQ), len(s.dmaQ)
}
