package frames

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

// Summary reports on w the DMA_READ_REQs forgotten unanswered, if any.
func (d *Dumper) Summary(w io.Writer) {
	if d.reads.aged > 0 {
		fmt.Fprintf(w, "oetp: %d DMA_READ_REQ(s) had no response within %v or beyond %d outstanding and were forgotten (a later response to one shows no length)\n", d.reads.aged, ReadMaxAge, ReadMaxOutstanding)
	}
}

// DumpRecord is the JSON object dump prints for one frame.
type DumpRecord struct {
	Index      int        `json:"index"`
	Time       string     `json:"time"`
	OrigLen    int        `json:"orig_len,omitempty"`
	VLANs      []DumpVLAN `json:"vlans,omitempty"`
	PacketType string     `json:"packet_type,omitempty"`
	Direction  string     `json:"direction,omitempty"`
	Description
}

// DumpVLAN is one VLAN tag in dump's JSON.
type DumpVLAN struct {
	TPID uint16 `json:"tpid"`
	ID   uint16 `json:"id"`
	PCP  uint8  `json:"pcp"`
	DEI  bool   `json:"dei"`
}

// Dumper prints frames, remembering DMA_READ_REQ lengths for their
// responses.
type Dumper struct {
	w        *bufio.Writer
	enc      *json.Encoder
	maxFrame int
	asJSON   bool
	index    int
	reads    *readTable
	// Live flushes after every line (a pipe from a running capture).
	Live bool
	// Frame is the frame Record prints, filled by pcap.Ethernet.
	Frame pcap.Frame
}

// NewDumper prints to out, one line per frame (one JSON object with
// asJSON), frames checked against the ceiling maxFrame.
func NewDumper(out io.Writer, maxFrame int, asJSON bool) *Dumper {
	return newDumper(out, maxFrame, asJSON, ReadMaxOutstanding)
}

func newDumper(out io.Writer, maxFrame int, asJSON bool, maxReads int) *Dumper {
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &Dumper{w: w, enc: enc, maxFrame: maxFrame, asJSON: asJSON, reads: newReadTable(ReadMaxAge, maxReads)}
}

// Index is the number of frames recorded so far.
func (d *Dumper) Index() int { return d.index }

// Flush writes out what is buffered.
func (d *Dumper) Flush() error { return d.w.Flush() }

// ReadFile prints every record of the capture file in (name says which in
// messages), then on errw the records of link types that carry no Ethernet
// it skipped and the requests it forgot. A file that is not a capture of
// Ethernet frames is bad usage; an error after some frames says how many
// were printed.
func (d *Dumper) ReadFile(in io.Reader, name string, errw io.Writer) error {
	r, err := pcap.NewReader(in)
	if err != nil {
		return cli.Usagef("%s: %v", name, err)
	}
	if lt := r.LinkType(); r.Format() == pcap.Classic && !lt.CarriesEthernet() {
		return cli.Usagef("%s: link type %v does not carry Ethernet; oetp reads EN10MB (1), LINUX_SLL (113) and LINUX_SLL2 (276)", name, lt)
	}
	return d.readRecords(r, errw)
}

// readRecords prints every record of r; see ReadFile.
func (d *Dumper) readRecords(r *pcap.Reader, errw io.Writer) error {
	defer d.w.Flush()
	skipped := map[pcap.LinkType]int{}
	for {
		ts, data, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			d.w.Flush()
			return fmt.Errorf("after %d frame(s): %w", d.index, err)
		}
		lt := r.LinkType()
		err = pcap.Ethernet(lt, data, &d.Frame)
		if errors.Is(err, pcap.ErrLinkType) {
			skipped[lt]++ // an interface of another kind in a pcapng file
			continue
		}
		if err != nil && lt == pcap.LinkTypeEthernet {
			// A runt: Describe says what is missing.
			d.Frame = pcap.Frame{Bytes: data, DstKnown: true}
			err = nil
		}
		if err := d.Record(ts, len(data), r.OrigLen(), err); err != nil {
			return err
		}
	}
	if err := d.w.Flush(); err != nil {
		return err
	}
	for _, lt := range slices.Sorted(func(yield func(pcap.LinkType) bool) {
		for k := range skipped {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(errw, "oetp: skipped %d record(s) of link type %v, which does not carry Ethernet\n", skipped[lt], lt)
	}
	d.Summary(errw)
	return nil
}

// Record prints d.Frame, from a record of dataLen bytes captured at ts
// with origLen bytes on the wire; linkErr is a link-layer header that could
// not be decoded.
func (d *Dumper) Record(ts time.Time, dataLen, origLen int, linkErr error) error {
	d.index++
	fr := &d.Frame
	frame := fr.Bytes
	opt := Options{MaxFrame: d.maxFrame}
	var desc Description
	if linkErr != nil {
		desc = Description{Kind: "runt", FrameLen: origLen, Problem: linkErr.Error()}
	} else {
		var cls wire.Class
		if len(frame) >= 20 {
			cls = wire.Classify(frame, d.maxFrame)
			f := wire.Frame(frame)
			switch {
			case cls.Kind == wire.KindRequest && cls.Cmd == wire.DMAReadReq && len(frame) >= 28:
				d.reads.request(f.Src(), f.Dst(), f.RequestID(), f.Length(), ts)
			case cls.Kind == wire.KindResponse && cls.Cmd == wire.DMAReadRsp:
				key := readKey{f.Dst(), f.Src(), f.RequestID()}
				if !fr.DstKnown {
					key = readKey{rid: f.RequestID()}
				}
				if n, ok := d.reads.response(key, ts); ok {
					opt.ExpectLength = &n
				}
			}
		}
		desc = Describe(frame, opt)
		if cls.Cmd == wire.DMAReadRsp && opt.ExpectLength == nil && desc.Kind == "oetp" && !desc.Valid {
			desc.Problem = "no DMA_READ_REQ with this Request ID earlier in the capture: the expected length is unknown"
			if d.reads.aged > 0 {
				desc.Problem += fmt.Sprintf(" (requests unanswered for %v, or beyond %d outstanding, are forgotten)", ReadMaxAge, ReadMaxOutstanding)
			}
		}
		if !fr.DstKnown && desc.Kind != "runt" {
			desc.Dst = ""
			switch fr.PacketType {
			case "broadcast", "multicast":
				desc.Group = ptr(true)
			case "host":
				desc.Group = ptr(false)
			default:
				desc.Group = nil
			}
		}
	}
	rec := DumpRecord{Index: d.index, Time: ts.UTC().Format(time.RFC3339Nano), Description: desc,
		PacketType: fr.PacketType, Direction: fr.Direction.String()}
	if fr.DstKnown {
		rec.PacketType, rec.Direction = "", ""
	}
	for _, v := range fr.VLANs {
		rec.VLANs = append(rec.VLANs, DumpVLAN{TPID: v.TPID, ID: v.ID, PCP: v.Priority, DEI: v.DropEligible})
	}
	if linkErr == nil && origLen > dataLen {
		// The frame as shown (untagged) before the capture truncated it.
		rec.OrigLen = origLen - dataLen + len(frame)
	}
	var err error
	if d.asJSON {
		err = d.enc.Encode(rec)
	} else {
		_, err = fmt.Fprintln(d.w, line(rec, ts, opt.ExpectLength))
	}
	if err == nil && d.Live {
		err = d.w.Flush()
	}
	return err
}

// line formats one frame for people:
//
//	3 12:00:00.000123 02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 RMEM_READ_RSP rid=7 data=0xc0ffee01, 24 bytes
//	4 12:00:00.000200 02:0e:0c:00:00:01 > ? [outgoing] vlan 100 p5 RMEM_READ_REQ rid=8 addr=0x00001000, 24 bytes
func line(r DumpRecord, ts time.Time, expect *uint32) string {
	d := r.Description
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", r.Index, ts.Local().Format("15:04:05.000000"))
	if d.Kind == "runt" {
		fmt.Fprintf(&b, " runt, %d bytes: %s", d.FrameLen, d.Problem)
		return b.String()
	}
	dst := d.Dst
	if dst == "" {
		dst = "?"
	}
	fmt.Fprintf(&b, " %s > %s", d.Src, dst)
	if r.PacketType != "" {
		fmt.Fprintf(&b, " [%s]", r.PacketType)
	}
	for _, v := range r.VLANs {
		fmt.Fprintf(&b, " vlan %d", v.ID)
		if v.PCP != 0 {
			fmt.Fprintf(&b, " p%d", v.PCP)
		}
		if v.TPID != 0x8100 {
			fmt.Fprintf(&b, " (tpid 0x%04x)", v.TPID)
		}
	}
	if d.Kind == "raw" {
		fmt.Fprintf(&b, " raw ethertype 0x%04x, %d bytes", *d.EtherType, d.FrameLen)
		return b.String()
	}
	if t := d.Transport; t != nil {
		fmt.Fprintf(&b, " oETP-R %s session=0x%08x psn=%d apsn=%d credits=%d", t.Flags, t.Session, t.PSN, t.APSN, t.Credits)
		if t.CRCOK != nil && !*t.CRCOK {
			b.WriteString(" [bad CRC]")
		}
		if d.Cmd == "" {
			fmt.Fprintf(&b, ", %d bytes", d.FrameLen)
			if d.Problem != "" {
				b.WriteString(": " + d.Problem)
			}
			return b.String()
		}
		b.WriteString(" |")
	} else if d.Kind == "reliable" {
		fmt.Fprintf(&b, " oETP-R, %d bytes: %s", d.FrameLen, d.Problem)
		return b.String()
	}
	b.WriteString(" " + d.Cmd)
	if d.Group != nil && *d.Group {
		b.WriteString(" (group)")
	}
	field := func(name string, v *uint32, hex bool) {
		switch {
		case v == nil:
		case hex:
			fmt.Fprintf(&b, " %s=0x%08x", name, *v)
		default:
			fmt.Fprintf(&b, " %s=%d", name, *v)
		}
	}
	field("rid", d.RequestID, false)
	field("addr", d.Address, true)
	field("len", d.Length, false)
	if d.Cmd == wire.DMAReadRsp.String() {
		field("len", expect, false)
	}
	field("bit_enable", d.BitEnable, true)
	field("data", d.Data, true)
	if d.ErrorCode != nil {
		fmt.Fprintf(&b, " error_code=%d (%s)", *d.ErrorCode, d.Error)
	}
	fmt.Fprintf(&b, ", %d bytes", d.FrameLen)
	if r.OrigLen > 0 {
		fmt.Fprintf(&b, " (%d on the wire)", r.OrigLen)
	}
	if !d.Valid {
		fmt.Fprintf(&b, " INVALID: %s", d.Problem)
	}
	return b.String()
}

// LiveOptions are the flags of dump --iface.
type LiveOptions struct {
	Iface    string
	MaxFrame int
	JSON     bool
	Count    int    // stop after this many frames; 0: until ctx ends or a signal
	Promisc  bool   // --promisc
	Write    string // --write: a pcapng file of the frames shown
}
