package pcap

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Writer writes Ethernet frames into a capture file. It is safe for
// concurrent use: records are written whole, in the order WritePacket calls
// take the lock, and each record reaches w with one Write call before
// WritePacket returns (no Flush is needed; a bufio.Writer passed as w needs
// its own Flush by the caller at the end).
type Writer struct {
	mu      sync.Mutex
	format  Format
	snaplen int
	bw      *bufio.Writer // holds one record, flushed after each
	classic *pcapgo.Writer
	ng      *pcapgo.NgWriter
	err     error // the first write error; every later call returns it
}

// NewWriter writes a pcapng file header to w and returns a Writer that
// records frames up to snaplen bytes (longer frames are truncated, keeping
// their original length in the record). snaplen 0 means MaxSnaplen.
func NewWriter(w io.Writer, snaplen int) (*Writer, error) {
	return NewWriterFormat(w, PcapNG, snaplen)
}

// NewWriterFormat is NewWriter for the format f: PcapNG or Classic.
func NewWriterFormat(w io.Writer, f Format, snaplen int) (*Writer, error) {
	if snaplen == 0 {
		snaplen = MaxSnaplen
	}
	if snaplen < 0 || snaplen > MaxSnaplen {
		return nil, fmt.Errorf("snaplen %d: use 1 through %d bytes, or 0 for %d", snaplen, MaxSnaplen, MaxSnaplen)
	}
	// Large enough for any record, and at least bufio's default size so
	// that pcapgo's own bufio.NewWriter returns it as is: each record is
	// then one Write to w.
	pw := &Writer{format: f, snaplen: snaplen, bw: bufio.NewWriterSize(w, max(snaplen+256, 4096))}
	var err error
	switch f {
	case Classic:
		pw.classic = pcapgo.NewWriter(pw.bw)
		err = pw.classic.WriteFileHeader(uint32(snaplen), layers.LinkTypeEthernet)
	case PcapNG:
		pw.ng, err = pcapgo.NewNgWriterInterface(pw.bw, pcapgo.NgInterface{
			Name:                "oetp",
			Description:         "oETP v1 frames (EtherType 0x88B5), recorded by oetp",
			LinkType:            layers.LinkTypeEthernet,
			SnapLength:          uint32(snaplen),
			TimestampResolution: 9,
		}, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{
			Application: "oetp", OS: runtime.GOOS, Hardware: runtime.GOARCH,
		}})
	default:
		return nil, fmt.Errorf("unknown capture format %d", f)
	}
	if err == nil {
		err = pw.flush()
	}
	if err != nil {
		return nil, fmt.Errorf("cannot write the %v file header: %w", f, err)
	}
	return pw, nil
}

func (w *Writer) flush() error {
	if w.ng != nil {
		if err := w.ng.Flush(); err != nil {
			return err
		}
	}
	return w.bw.Flush()
}

// Format returns the file format.
func (w *Writer) Format() Format { return w.format }

// Snaplen returns the snapshot length in the file header.
func (w *Writer) Snaplen() int { return w.snaplen }

// WritePacket records frame with timestamp ts (nanosecond precision in
// pcapng, microsecond in classic pcap). It does not allocate. After a write
// error, it and every later call return that error.
func (w *Writer) WritePacket(ts time.Time, frame []byte) error {
	if sec := ts.Unix(); w.format == Classic && (sec < 0 || sec > math.MaxUint32) {
		return fmt.Errorf("timestamp %v: classic pcap holds 1970-01-01 through 2106-02-07 UTC", ts)
	}
	incl := min(len(frame), w.snaplen)
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: incl, Length: len(frame)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	var err error
	if w.format == Classic {
		err = w.classic.WritePacket(ci, frame[:incl])
	} else {
		err = w.ng.WritePacket(ci, frame[:incl])
	}
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		w.err = fmt.Errorf("cannot write a record: %w", err)
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
