package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Reader reads a classic pcap file of Ethernet frames.
type Reader struct {
	r        *bufio.Reader
	order    binary.ByteOrder
	nano     bool
	snaplen  int
	records  int // records returned so far
	origLen  int
	hdr      [recordHeaderLen]byte
	buf      []byte
	fracUnit int64 // nanoseconds per timestamp fraction unit
}

// NewReader reads the file header from r. It accepts microsecond
// (0xa1b2c3d4) and nanosecond (0xa1b23c4d) files in either byte order,
// version 2.x, link type Ethernet (1).
func NewReader(r io.Reader) (*Reader, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	var h [fileHeaderLen]byte
	if n, err := io.ReadFull(br, h[:]); err != nil {
		switch err {
		case io.EOF:
			return nil, fmt.Errorf("%w: empty input, no file header", ErrTruncated)
		case io.ErrUnexpectedEOF:
			return nil, fmt.Errorf("%w: file header ends after %d of %d bytes", ErrTruncated, n, fileHeaderLen)
		}
		return nil, fmt.Errorf("pcap: read file header: %w", err)
	}
	rd := &Reader{r: br, fracUnit: 1000}
	switch m := binary.LittleEndian.Uint32(h[:]); m {
	case MagicMicroseconds:
		rd.order = binary.LittleEndian
	case MagicNanoseconds:
		rd.order, rd.nano = binary.LittleEndian, true
	case swap32(MagicMicroseconds):
		rd.order = binary.BigEndian
	case swap32(MagicNanoseconds):
		rd.order, rd.nano = binary.BigEndian, true
	case magicPcapNG:
		return nil, fmt.Errorf("%w: this is a pcapng file; convert it with `editcap -F pcap IN OUT`", ErrMagic)
	default:
		return nil, fmt.Errorf("%w: magic number % x, want a1 b2 c3 d4 or a1 b2 3c 4d in either byte order", ErrMagic, h[:4])
	}
	if rd.nano {
		rd.fracUnit = 1
	}
	major, minor := rd.order.Uint16(h[4:]), rd.order.Uint16(h[6:])
	if major != 2 {
		return nil, fmt.Errorf("%w: version %d.%d, want 2.4", ErrVersion, major, minor)
	}
	rd.snaplen = int(rd.order.Uint32(h[16:]))
	lt := rd.order.Uint32(h[20:])
	if lt>>16 != 0 {
		return nil, fmt.Errorf("%w: link-type field %#08x has flags in its upper 16 bits (such as an FCS length); only plain Ethernet (1) is supported", ErrLinkType, lt)
	}
	if lt != LinkTypeEthernet {
		return nil, fmt.Errorf("%w: link type %d; only Ethernet (LINKTYPE_ETHERNET, 1) is supported", ErrLinkType, lt)
	}
	return rd, nil
}

func swap32(v uint32) uint32 { return v>>24 | v>>8&0xff00 | v<<8&0xff0000 | v<<24 }

// Snaplen returns the snapshot length in the file header.
func (r *Reader) Snaplen() int { return r.snaplen }

// Nanoseconds reports whether the file has nanosecond timestamps.
func (r *Reader) Nanoseconds() bool { return r.nano }

// Next returns the next record's timestamp and frame. The frame is valid
// until the next call. At the end of the file it returns io.EOF; a file
// that ends inside a record gives an error wrapping ErrTruncated.
func (r *Reader) Next() (ts time.Time, frame []byte, err error) {
	rec := r.records + 1
	if n, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		switch err {
		case io.EOF:
			return time.Time{}, nil, io.EOF
		case io.ErrUnexpectedEOF:
			return time.Time{}, nil, fmt.Errorf("%w: record %d header ends after %d of %d bytes", ErrTruncated, rec, n, recordHeaderLen)
		}
		return time.Time{}, nil, fmt.Errorf("pcap: read record %d: %w", rec, err)
	}
	o := r.order
	sec, frac := o.Uint32(r.hdr[0:]), o.Uint32(r.hdr[4:])
	incl, orig := o.Uint32(r.hdr[8:]), o.Uint32(r.hdr[12:])
	if incl > MaxSnaplen {
		return time.Time{}, nil, fmt.Errorf("%w: record %d claims %d captured bytes, more than %d", ErrRecordLength, rec, incl, MaxSnaplen)
	}
	if cap(r.buf) < int(incl) {
		r.buf = make([]byte, max(int(incl), 2*cap(r.buf), 2048))
	}
	frame = r.buf[:incl]
	if n, err := io.ReadFull(r.r, frame); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return time.Time{}, nil, fmt.Errorf("%w: record %d ends after %d of %d captured bytes", ErrTruncated, rec, n, incl)
		}
		return time.Time{}, nil, fmt.Errorf("pcap: read record %d: %w", rec, err)
	}
	r.records = rec
	r.origLen = int(orig)
	return time.Unix(int64(sec), int64(frac)*r.fracUnit), frame, nil
}

// OrigLen returns the original length on the wire of the frame Next last
// returned; it exceeds len(frame) when the capture truncated it to the
// snapshot length.
func (r *Reader) OrigLen() int { return r.origLen }
