package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

func init() { register("dump", newDumpCmd) }

// dumpOptions are the flags of dump.
type dumpOptions struct {
	maxFrame intFlag
	json     bool
	iface    string
	count    intFlag
	promisc  bool
	write    string // --write: a pcapng file of the frames shown live
}

func newDumpCmd() *cobra.Command {
	o := &dumpOptions{maxFrame: intFlag{v: wire.MaxFrameLen}}
	cmd := &cobra.Command{
		Use:   "dump FILE | - | --iface IF",
		Short: "Decode every frame of a capture file, or live oETP traffic on an interface",
		Long: `dump decodes frames one line per frame: every record of a capture file (FILE,
or - for standard input), or with --iface the oETP frames crossing an interface
live, in both directions, until --count frames or SIGINT.

Files: pcapng (tshark's and dumpcap's default, and what rmem and dma write with --pcap) and classic
pcap (tcpdump's; microsecond or nanosecond, either byte order, gzip too), with
every link type that carries Ethernet: EN10MB, and the Linux cooked captures
LINUX_SLL and LINUX_SLL2 that 'tcpdump -i any' writes. A cooked capture records
the source MAC and a packet type (host, broadcast, multicast, otherhost,
outgoing), not the destination MAC: dump shows '?' for it and the packet type.
802.1Q and 802.1ad tags are taken out and shown ("vlan 100"), and the oETP PDU
inside is decoded as tcpdump would: a VLAN interface (eth1.100) delivers such a
frame untagged to the endpoint on it. An endpoint on the parent interface gives
it to its raw receive policy and never answers it; 'oetp decode' of the tagged
bytes says so ("not oETP v1"). Records of other
link types in a pcapng file are skipped and counted on standard error.

Frames are numbered from 1. With --json each line is the JSON object 'oetp
decode' prints, plus "index" (the frame number), "time" (RFC 3339, UTC),
"orig_len" for a frame the capture truncated, "vlans" ([{"tpid","id","pcp",
"dei"}], outermost first), and for cooked captures "packet_type" and
"direction" (in or out) instead of "dst".

A DMA_READ_RSP carries no length: dump takes it from the earlier DMA_READ_REQ
with the same Request ID (and the reversed MAC addresses, when known). A
response whose request is not in the capture is reported as not checkable.
A request is remembered for 60s of capture time, and at most 65536 at once (a
long live view of requests nobody answers stays bounded); at the end dump
counts on standard error the requests it forgot without a response.

Live (--iface, Linux only: an AF_PACKET socket, root or CAP_NET_RAW): frames of
EtherType 0x88B5, tagged or not, sent and received by this host; --promisc also
shows frames between other hosts on the segment.

Exit status: 0 when the whole file was read (or the live view ended by
--count or a signal), 1 when a file ends inside a record (the frames before
are still printed), 2 when FILE is missing or not a capture, or the interface
cannot be opened.`,
		Example: `  oetp dump capture.pcapng
  tcpdump -i any -w - ether proto 0x88b5 | oetp dump -
  oetp dump --json capture.pcap | jq 'select(.valid == false)'
  sudo oetp dump --iface eth1 --count 10
  sudo oetp dump --iface eth1 --write trace.pcapng`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.iface != "" && len(args) > 0:
				return usagef("%s reads a file or --iface, not both; got %q and --iface %s", cmd.CommandPath(), args, o.iface)
			case o.iface == "" && len(args) != 1:
				return usagef("%s takes one argument, the capture file (- for standard input), or --iface IF for live traffic; got %d arguments", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wire.CheckMaxFrame(o.maxFrame.v); err != nil {
				return usagef("--max-frame: %v", err)
			}
			if o.iface == "" {
				if cmd.Flags().Changed("count") || o.promisc || o.write != "" {
					return usagef("--count, --promisc and --write belong to a live view: add --iface IF, or drop them to read %s", args[0])
				}
				return dumpFile(cmd, args[0], o)
			}
			if cmd.Flags().Changed("count") && o.count.v == 0 {
				return usagef("--count 0 is out of range: give the number of oETP frames to show, or leave it out to run until SIGINT")
			}
			return dumpLive(cmd, o)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.json, "json", false, "print one JSON object per frame, as 'oetp decode' does")
	fs.Var(&o.maxFrame, "max-frame", "frame ceiling `N` in bytes without FCS, 36..8192 (MAX_RAW_FRAME_SIZE)")
	fs.StringVar(&o.iface, "iface", "", "show live oETP traffic on the network interface `IF` (Linux)")
	fs.Var(&o.count, "count", "with --iface: stop after `N` oETP frames")
	fs.BoolVar(&o.promisc, "promisc", false, "with --iface: put the interface in promiscuous mode, to see frames between other hosts")
	fs.StringVar(&o.write, "write", "", "with --iface: also record every oETP frame shown in the pcapng `FILE` (created or truncated; a symbolic link is refused), as it is decoded")
	return cmd
}

// dumpFile decodes a capture file, or standard input for "-".
func dumpFile(cmd *cobra.Command, path string, o *dumpOptions) error {
	var in io.Reader = cmd.InOrStdin()
	name := "standard input"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return usagef("cannot open %s: %v", path, osError(err))
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return usagef("%s is a directory: give a capture file (pcap or pcapng), or - for standard input", path)
		}
		in, name = f, path
	}
	r, err := pcap.NewReader(in)
	if err != nil {
		return usagef("%s: %v", name, err)
	}
	if lt := r.LinkType(); r.Format() == pcap.Classic && !lt.CarriesEthernet() {
		return usagef("%s: link type %v does not carry Ethernet; oetp reads EN10MB (1), LINUX_SLL (113) and LINUX_SLL2 (276)", name, lt)
	}
	d := newDumper(cmd.OutOrStdout(), o)
	d.live = path == "-" // a pipe from a running capture: print each frame as it comes
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
		err = pcap.Ethernet(lt, data, &d.frame)
		if errors.Is(err, pcap.ErrLinkType) {
			skipped[lt]++ // an interface of another kind in a pcapng file
			continue
		}
		if err != nil && lt == pcap.LinkTypeEthernet {
			// A runt: describe says what is missing.
			d.frame = pcap.Frame{Bytes: data, DstKnown: true}
			err = nil
		}
		if err := d.record(ts, len(data), r.OrigLen(), err); err != nil {
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
		fmt.Fprintf(cmd.ErrOrStderr(), "oetp: skipped %d record(s) of link type %v, which does not carry Ethernet\n", skipped[lt], lt)
	}
	d.summary(cmd.ErrOrStderr())
	return nil
}

// summary reports on w the DMA_READ_REQs forgotten unanswered, if any.
func (d *dumper) summary(w io.Writer) {
	if d.reads.aged > 0 {
		fmt.Fprintf(w, "oetp: %d DMA_READ_REQ(s) had no response within %v or beyond %d outstanding and were forgotten (a later response to one shows no length)\n", d.reads.aged, readMaxAge, readMaxOutstanding)
	}
}

// dumpRecord is the JSON object dump prints for one frame.
type dumpRecord struct {
	Index      int        `json:"index"`
	Time       string     `json:"time"`
	OrigLen    int        `json:"orig_len,omitempty"`
	VLANs      []dumpVLAN `json:"vlans,omitempty"`
	PacketType string     `json:"packet_type,omitempty"`
	Direction  string     `json:"direction,omitempty"`
	frameDescription
}

// dumpVLAN is one VLAN tag in dump's JSON.
type dumpVLAN struct {
	TPID uint16 `json:"tpid"`
	ID   uint16 `json:"id"`
	PCP  uint8  `json:"pcp"`
	DEI  bool   `json:"dei"`
}

// dumper prints frames, remembering DMA_READ_REQ lengths for their
// responses.
type dumper struct {
	w        *bufio.Writer
	enc      *json.Encoder
	maxFrame int
	asJSON   bool
	live     bool // flush after every line
	index    int
	reads    *readTable
	frame    pcap.Frame
}

func newDumper(out io.Writer, o *dumpOptions) *dumper {
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &dumper{w: w, enc: enc, maxFrame: o.maxFrame.v, asJSON: o.json, reads: newReadTable(readMaxAge, readMaxOutstanding)}
}

// record prints d.frame, from a record of dataLen bytes captured at ts
// with origLen bytes on the wire; linkErr is a link-layer header that could
// not be decoded.
func (d *dumper) record(ts time.Time, dataLen, origLen int, linkErr error) error {
	d.index++
	fr := &d.frame
	frame := fr.Bytes
	opt := describeOptions{MaxFrame: d.maxFrame}
	var desc frameDescription
	if linkErr != nil {
		desc = frameDescription{Kind: "runt", FrameLen: origLen, Problem: linkErr.Error()}
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
		desc = describe(frame, opt)
		if cls.Cmd == wire.DMAReadRsp && opt.ExpectLength == nil && desc.Kind == "oetp" && !desc.Valid {
			desc.Problem = "no DMA_READ_REQ with this Request ID earlier in the capture: the expected length is unknown"
			if d.reads.aged > 0 {
				desc.Problem += fmt.Sprintf(" (requests unanswered for %v, or beyond %d outstanding, are forgotten)", readMaxAge, readMaxOutstanding)
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
	rec := dumpRecord{Index: d.index, Time: ts.UTC().Format(time.RFC3339Nano), frameDescription: desc,
		PacketType: fr.PacketType, Direction: fr.Direction.String()}
	if fr.DstKnown {
		rec.PacketType, rec.Direction = "", ""
	}
	for _, v := range fr.VLANs {
		rec.VLANs = append(rec.VLANs, dumpVLAN{TPID: v.TPID, ID: v.ID, PCP: v.Priority, DEI: v.DropEligible})
	}
	if linkErr == nil && origLen > dataLen {
		// The frame as shown (untagged) before the capture truncated it.
		rec.OrigLen = origLen - dataLen + len(frame)
	}
	var err error
	if d.asJSON {
		err = d.enc.Encode(rec)
	} else {
		_, err = fmt.Fprintln(d.w, dumpLine(rec, ts, opt.ExpectLength))
	}
	if err == nil && d.live {
		err = d.w.Flush()
	}
	return err
}

// dumpLine formats one frame for people:
//
//	3 12:00:00.000123 02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 RMEM_READ_RSP rid=7 data=0xc0ffee01, 24 bytes
//	4 12:00:00.000200 02:0e:0c:00:00:01 > ? [outgoing] vlan 100 p5 RMEM_READ_REQ rid=8 addr=0x00001000, 24 bytes
func dumpLine(r dumpRecord, ts time.Time, expect *uint32) string {
	d := r.frameDescription
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
