package pcap

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

// Writer writes a classic pcap file. It is safe for concurrent use: records
// are written whole, one Write call each, in the order WritePacket calls
// take the lock.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	snaplen int
	buf     []byte // record header + frame, grown to the largest record
	err     error  // the first write error; every later call returns it
}

// NewWriter writes the file header to w and returns a Writer that records
// frames up to snaplen bytes (longer frames are truncated, keeping their
// original length in the record). snaplen 0 means MaxSnaplen. For live
// capture pass an *os.File: each record is one write(2). A bufio.Writer
// needs a Flush by the caller at the end.
func NewWriter(w io.Writer, snaplen int) (*Writer, error) {
	if snaplen == 0 {
		snaplen = MaxSnaplen
	}
	if snaplen < 0 || snaplen > MaxSnaplen {
		return nil, fmt.Errorf("pcap: snaplen %d: use 1 through %d bytes, or 0 for %d", snaplen, MaxSnaplen, MaxSnaplen)
	}
	var h [fileHeaderLen]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], MagicMicroseconds)
	le.PutUint16(h[4:], 2) // version 2.4
	le.PutUint16(h[6:], 4)
	// h[8:16]: thiszone and sigfigs, always 0.
	le.PutUint32(h[16:], uint32(snaplen))
	le.PutUint32(h[20:], LinkTypeEthernet)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("pcap: write file header: %w", err)
	}
	return &Writer{w: w, snaplen: snaplen}, nil
}

// Snaplen returns the snapshot length in the file header.
func (w *Writer) Snaplen() int { return w.snaplen }

// WritePacket records frame with timestamp ts (microsecond precision). It
// does not allocate once its buffer has grown to the largest record. After a
// write error, it and every later call return that error.
func (w *Writer) WritePacket(ts time.Time, frame []byte) error {
	sec := ts.Unix()
	if sec < 0 || sec > math.MaxUint32 {
		return fmt.Errorf("pcap: timestamp %v: classic pcap holds 1970-01-01 through 2106-02-07 UTC", ts)
	}
	incl := min(len(frame), w.snaplen)
	n := recordHeaderLen + incl
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if cap(w.buf) < n {
		w.buf = make([]byte, max(n, 2*cap(w.buf), 2048))
	}
	b := w.buf[:n]
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(sec))
	le.PutUint32(b[4:], uint32(ts.Nanosecond()/1000))
	le.PutUint32(b[8:], uint32(incl))
	le.PutUint32(b[12:], uint32(len(frame)))
	copy(b[recordHeaderLen:], frame[:incl])
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("pcap: write record: %w", err)
		return w.err
	}
	return nil
}

// Err returns the first write error, or nil. Tee discards WritePacket's
// errors so that a full disk does not stop the link; check Err at the end.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
