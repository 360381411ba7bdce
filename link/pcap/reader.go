package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/openenoc/oetp/internal/oserr"
)

// Reader reads the records of a classic pcap or a pcapng file.
type Reader struct {
	format   Format
	classic  *pcapgo.Reader
	ng       *pcapgo.NgReader
	records  int // records returned so far
	origLen  int
	linkType LinkType
}

// NewReader reads the file header from r and tells the format by its first
// bytes: classic pcap (microsecond or nanosecond, either byte order, or
// gzip-compressed) or pcapng (every section; interfaces of mixed link
// types). r is read through a bufio.Reader, so standard input and FIFOs
// work.
func NewReader(r io.Reader) (*Reader, error) {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	head, err := br.Peek(4)
	switch {
	case len(head) == 0 && (err == io.EOF || err == nil):
		return nil, fmt.Errorf("%w: empty input, no file header", ErrTruncated)
	case len(head) < 4 && (err == io.EOF || err == io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: the input ends after %d bytes, inside the file header", ErrTruncated, len(head))
	case err != nil:
		return nil, fmt.Errorf("cannot read the file header: %w", oserr.Reason(err))
	}
	rd := &Reader{}
	magic := binary.LittleEndian.Uint32(head)
	switch {
	case magic == MagicPcapNG:
		rd.format = PcapNG
		rd.ng, err = pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true, SkipUnknownVersion: true})
	case magic == MagicMicroseconds || magic == MagicNanoseconds ||
		magic == swap32(MagicMicroseconds) || magic == swap32(MagicNanoseconds) ||
		head[0] == 0x1f && head[1] == 0x8b: // gzip
		rd.format = Classic
		rd.classic, err = pcapgo.NewReader(br)
		if err == nil {
			rd.linkType = LinkType(rd.classic.LinkType())
		}
	default:
		return nil, fmt.Errorf("%w: the file starts with % x; want a classic pcap magic (a1 b2 c3 d4 or a1 b2 3c 4d, either byte order) or a pcapng Section Header Block (0a 0d 0d 0a)", ErrMagic, head)
	}
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: the %v file header is incomplete", ErrTruncated, rd.format)
		}
		return nil, fmt.Errorf("bad %v file header: %w", rd.format, err)
	}
	return rd, nil
}

func swap32(v uint32) uint32 { return v>>24 | v>>8&0xff00 | v<<8&0xff0000 | v<<24 }

// Format returns the file's format.
func (r *Reader) Format() Format { return r.format }

// Next returns the next record's timestamp and captured bytes, valid until
// the next call. At the end of the file it returns io.EOF; a file that ends
// inside a record gives an error wrapping ErrTruncated. LinkType and
// OrigLen describe the record Next returned last.
func (r *Reader) Next() (ts time.Time, data []byte, err error) {
	rec := r.records + 1
	var ci gopacket.CaptureInfo
	if r.ng != nil {
		data, ci, err = r.ng.ZeroCopyReadPacketData()
	} else {
		data, ci, err = r.classic.ZeroCopyReadPacketData()
	}
	switch {
	case err == io.EOF:
		return time.Time{}, nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return time.Time{}, nil, fmt.Errorf("%w: record %d is incomplete", ErrTruncated, rec)
	case err != nil:
		return time.Time{}, nil, fmt.Errorf("record %d: %w", rec, oserr.Reason(err))
	}
	if r.ng != nil {
		intf, err := r.ng.Interface(ci.InterfaceIndex)
		if err != nil {
			return time.Time{}, nil, fmt.Errorf("record %d: %w", rec, err)
		}
		r.linkType = LinkType(intf.LinkType)
	}
	r.records = rec
	r.origLen = max(ci.Length, len(data))
	return ci.Timestamp, data, nil
}

// LinkType returns the link type of the record Next returned last (for a
// classic file, the file's link type from the start).
func (r *Reader) LinkType() LinkType { return r.linkType }

// OrigLen returns the original length on the wire of the record Next last
// returned; it exceeds the captured length when the capture truncated it to
// the snapshot length.
func (r *Reader) OrigLen() int { return r.origLen }
