package endpoint

import (
	"context"
	"sync"
)

// slot is the single initiating slot shared by RMEM operations and DMA
// fragments. When it is released, a waiting RMEM operation goes first, then
// a waiting DMA fragment; among equals, first come first served. Ownership
// passes directly to the chosen waiter.
type slot struct {
	mu    sync.Mutex
	busy  bool
	rmemQ []chan struct{}
	dmaQ  []chan struct{}
}

// acquire takes the slot, waiting if it is busy. It fails with ctx.Err() or
// ErrClosed (when done closes) without taking it, also when ctx has already
// ended and the slot is free.
func (s *slot) acquire(ctx context.Context, rmem bool, done <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if !s.busy {
		s.busy = true
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
	case len(s.rmemQ) > 0:
		q = &s.rmemQ
	case len(s.dmaQ) > 0:
		q = &s.dmaQ
	default:
		s.busy = false
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
