//go:build linux

package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/openenoc/oetp/wire"
)

// The raw pipelined exchange: the medium's limit for RMEM reads with many
// in flight, the figure the 32-goroutine RMEM row is set against beside
// its target (≥ 10× v1 one at a time). One locked OS thread on
// the near side keeps pipeDepth requests of 24 bytes in flight, sending
// with sendmmsg(2) and receiving with recvmmsg(2) in batches: each batch
// of replies that arrives is answered by as many new requests in one call.
// The far side is an echo on a locked OS thread that reads requests in
// recvmmsg batches and answers each batch with one sendmmsg. No protocol,
// no goroutine per request, no copy beyond the kernel's: what two threads
// and the kernel's per-packet path allow for this exchange.

// pipeDepth is the number of requests the pipelined exchange keeps in
// flight: the reliable transport's depth and the RMEM row's callers.
const pipeDepth = parallelCallers

// rawPipe is one pipelined exchange between two raw sockets.
type rawPipe struct {
	near, far *rawSock
	req, rsp  []byte
	stop      []byte
	// depth is the requests kept in flight; 0 selects pipeDepth.
	depth int
	// external: the far side is an echo process (WindowEcho) that the
	// caller starts and stops; far and stop are unused.
	external bool
	// floor, with external, makes the exchange the windowed floor's (see
	// WindowEcho) with this block: each request gets a frame of its own,
	// writes carry their payload from the block and a CRC32C, and each
	// read's reply has its CRC32C checked and its payload copied into the
	// block.
	floor []byte
	// cpu is the CPU time of the near thread, over all rounds.
	cpu time.Duration
}

// round runs the exchange for about d and returns the replies received
// and the time taken.
func (p *rawPipe) round(d time.Duration) (int64, time.Duration, error) {
	depth := p.depth
	if depth == 0 {
		depth = pipeDepth
	}
	p.near.drain()
	echoDone := make(chan error, 1)
	ready := make(chan error, 1)
	if p.external {
		ready <- nil
	} else {
		p.far.drain()
		go p.echo(ready, echoDone)
	}
	if err := <-ready; err != nil {
		return 0, 0, err
	}
	type result struct {
		n   int64
		el  time.Duration
		cpu time.Duration
		err error
	}
	res := make(chan result, 1)
	go func() {
		if err := lockThread(-1); err != nil {
			res <- result{err: err}
			return
		}
		cpu0 := threadCPU()
		in, rbufs := newRecvBatch()
		out := newSendBatch(p.req, depth)
		fl := newPipeFloor(p, out)
		if fl != nil {
			in = newMmsgBatch(rbufs[:floorRecvBatch])
		}
		send := func(k int) error {
			if fl != nil {
				fl.fill(depth-k, depth)
			}
			for i := depth - k; i < depth; {
				m, err := out.sendmmsg(p.near.fd, i)
				if err != nil {
					return err
				}
				i += m
			}
			return nil
		}
		var got int64
		start := time.Now()
		deadline := start.Add(d)
		if err := send(depth); err != nil {
			res <- result{err: err}
			return
		}
		for time.Now().Before(deadline) {
			n, err := in.recvmmsg(p.near.fd)
			if err == errRawTimeout {
				// Frames lost (a full queue): fill the pipe again.
				err = send(depth)
				n = 0
			}
			if err != nil {
				res <- result{err: err}
				return
			}
			k := 0
			for i := range n {
				if int(in.msgs[i].Len) == len(p.rsp) {
					if fl != nil && !fl.take(rbufs[i][:len(p.rsp)]) {
						res <- result{err: errors.New("a windowed floor reply failed its CRC32C")}
						return
					}
					k++
				}
			}
			got += int64(k)
			if err := send(min(k, depth)); err != nil {
				res <- result{err: err}
				return
			}
		}
		res <- result{n: got, el: time.Since(start), cpu: time.Duration(threadCPU() - cpu0)}
	}()
	r := <-res
	p.cpu += r.cpu
	if p.external {
		p.near.drain()
		if r.err != nil {
			return 0, 0, fmt.Errorf("raw windowed exchange: %w", r.err)
		}
		return r.n, r.el, nil
	}
	// The stop frame ends the echo; resent should a copy be lost.
	var eerr error
	for i := 0; ; i++ {
		_ = p.near.write(p.stop)
		select {
		case eerr = <-echoDone:
		case <-time.After(rawTimeout):
			if i < 10 {
				continue
			}
			eerr = errRawTimeout
		}
		break
	}
	p.near.drain()
	if r.err == nil {
		r.err = eerr
	}
	if r.err != nil {
		return 0, 0, fmt.Errorf("raw pipelined exchange: %w", r.err)
	}
	return r.n, r.el, nil
}

// echo is the far side of an in-process pipelined exchange: it reads
// requests in recvmmsg batches and answers each batch with one sendmmsg,
// until the stop frame.
func (p *rawPipe) echo(ready, echoDone chan<- error) {
	if err := lockThread(-1); err != nil {
		ready <- err
		return
	}
	in, bufs := newRecvBatch()
	out := newSendBatch(p.rsp, streamBatch)
	ready <- nil
	for {
		n, err := in.recvmmsg(p.far.fd)
		if err == errRawTimeout {
			continue // the near side's stop frame ends the loop
		}
		if err != nil {
			echoDone <- err
			return
		}
		k := 0
		for i := range n {
			switch {
			case int(in.msgs[i].Len) >= wire.ParamOffset && bufs[i][15] == stopCmd:
				echoDone <- nil
				return
			case int(in.msgs[i].Len) == len(p.req):
				k++
			}
		}
		// One sendmmsg of k replies (from message streamBatch-k on).
		for i := streamBatch - k; i < streamBatch; {
			m, err := out.sendmmsg(p.far.fd, i)
			if err != nil {
				echoDone <- err
				return
			}
			i += m
		}
	}
}

// pipeFloor is the near side's work in the windowed floor: the block, the
// frames of the requests (one per message of the send batch) and where in
// the block the next request and the next reply's payload go.
type pipeFloor struct {
	block     []byte
	frames    [][]byte
	write     bool // the requests carry the payload (DMA writes)
	next, got int
}

// newPipeFloor gives each message of out a request frame of its own and
// returns the floor's state, or nil when p is not a floor exchange.
func newPipeFloor(p *rawPipe, out *mmsgBatch) *pipeFloor {
	if p.floor == nil || !p.external {
		return nil
	}
	f := &pipeFloor{block: p.floor, frames: make([][]byte, len(out.msgs)), write: len(p.req) == windowFrameLen}
	for i := range f.frames {
		f.frames[i] = slices.Clone(p.req)
		binary.LittleEndian.PutUint32(f.frames[i][floorLenOff:], uint32(windowFloorFrag))
		out.iov[i].Base = &f.frames[i][0]
	}
	return f
}

// advance returns the offset of the next fragment at *at in the block and
// moves *at on, back to the start when the next would not fit.
func (f *pipeFloor) advance(at *int) int {
	off := *at
	*at += windowFloorFrag
	if *at+windowFloorFrag > len(f.block) {
		*at = 0
	}
	return off
}

// fill readies the requests of messages i..j-1 for sending: each asks for
// the block's next fragment, and a write carries it and its CRC32C.
func (f *pipeFloor) fill(i, j int) {
	for _, fr := range f.frames[i:j] {
		off := f.advance(&f.next)
		binary.LittleEndian.PutUint32(fr[floorAddrOff:], remoteBase+uint32(off))
		if f.write {
			copy(fr[floorWriteHdr:], f.block[off:off+windowFloorFrag])
			sealFloor(fr)
		}
	}
}

// take checks a reply's CRC32C and copies a read's payload into the
// block's next fragment; false if the check fails.
func (f *pipeFloor) take(r []byte) bool {
	if f.write {
		return true // a 20-byte DMA_WRITE_RSP: nothing to check or copy
	}
	if !floorSealed(r) {
		return false
	}
	off := f.advance(&f.got)
	copy(f.block[off:off+windowFloorFrag], r[floorReadHdr:])
	return true
}
