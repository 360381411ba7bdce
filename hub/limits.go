package hub

import (
	"cmp"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// Limits bound what clients can make the hub hold. Zero fields take the
// defaults; every bound is counted in the metrics when it refuses or
// closes something.
type Limits struct {
	// MaxClients is the number of connections served at once; a client
	// past it gets a BUSY notice and is closed.
	MaxClients int
	// MaxMessage is the largest request body the hub reads whole: a larger
	// request gets TOO_LARGE (its body is read and dropped), except a
	// WRITE_BLOCK of a valid device, whose data streams through a bounded
	// buffer up to proto.MaxBlock.
	MaxMessage int
	// MemoryBudget bounds the request and reply buffers of every
	// connection together (bodies above 64 KiB, block replies, the
	// buffers of streamed blocks). A request past it waits up to
	// ReadDeadline for room, then gets BUSY and runs nothing.
	MemoryBudget int64
	// IdleTimeout closes a connection that sends no request for this long
	// (an IDLE notice first); negative: never.
	IdleTimeout time.Duration
	// ReadDeadline is the longest a started request may pause: a request
	// whose bytes stop arriving for this long is abandoned (STALLED), and
	// a streamed WRITE_BLOCK is aborted, freeing the device. Replies are
	// written under the same deadline.
	ReadDeadline time.Duration
}

// The defaults of Limits.
const (
	DefaultMaxClients   = 1024
	DefaultMaxMessage   = 16 << 20
	DefaultMemoryBudget = 512 << 20
	DefaultIdleTimeout  = 10 * time.Minute
	DefaultReadDeadline = 5 * time.Second
)

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	l.MaxClients = cmp.Or(l.MaxClients, DefaultMaxClients)
	l.MaxMessage = cmp.Or(l.MaxMessage, DefaultMaxMessage)
	l.MemoryBudget = cmp.Or(l.MemoryBudget, DefaultMemoryBudget)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, DefaultIdleTimeout)
	l.ReadDeadline = cmp.Or(l.ReadDeadline, DefaultReadDeadline)
	return l
}

// smallBody is the body size up to which a connection's own buffer serves
// without the memory budget: the connection cap bounds those.
const smallBody = 64 << 10

// budget is the hub's memory budget: bytes of buffers held for requests.
type budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	peak  int64         // the most held at once
	freed chan struct{} // closed (and replaced) when bytes are released
}

func newBudget(limit int64) *budget { return &budget{limit: limit, freed: make(chan struct{})} }

// acquire takes n bytes, waiting up to wait for room; false if they did
// not fit in time (or never can).
func (b *budget) acquire(n int64, wait time.Duration) bool {
	if n > b.limit {
		return false
	}
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-freed:
		case <-timer.C:
			return false
		}
	}
}

// release returns n bytes.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// maxUsed returns the most bytes held at once.
func (b *budget) maxUsed() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// inUse returns the bytes held.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// deadlineConn sets a deadline before every read and write of its
// connection: read is the current read deadline (0: none), write the
// write deadline, per call and per MiB written.
type deadlineConn struct {
	net.Conn
	read, write time.Duration
}

func (d *deadlineConn) Read(p []byte) (int, error) {
	if d.read > 0 {
		d.Conn.SetReadDeadline(time.Now().Add(d.read))
	} else {
		d.Conn.SetReadDeadline(time.Time{})
	}
	return d.Conn.Read(p)
}

func (d *deadlineConn) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if d.write > 0 {
			d.Conn.SetWriteDeadline(time.Now().Add(d.write))
		}
		m, err := d.Conn.Write(p[n:min(len(p), n+1<<20)])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
