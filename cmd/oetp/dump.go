package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

func init() { register(newDumpCmd) }

func newDumpCmd() *cobra.Command {
	maxFrame := &intFlag{v: wire.MaxFrameLen}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "dump FILE.pcap",
		Short: "Decode every frame of a pcap capture, one line per frame",
		Long: `dump decodes every frame of a classic pcap capture of Ethernet frames (written by
tcpdump, tshark -F pcap, or oetp's --pcap), one line per frame. Frames are
numbered from 1. With --json each line is the JSON object 'oetp decode' prints,
plus "index" (the frame number), "time" (RFC 3339, UTC) and, for a frame the
capture truncated, "orig_len".

A DMA_READ_RSP carries no length: dump takes it from the earlier DMA_READ_REQ
with the same Request ID and the reversed MAC addresses. A response whose
request is not in the capture is reported as not checkable.

Exit status: 0 when the whole file was read, 1 when it ends inside a record
(the frames before are still printed), 2 when FILE is missing or not a pcap
file (a pcapng file is refused with the command that converts it).`,
		Example: `  oetp dump capture.pcap
  oetp dump --json capture.pcap | jq 'select(.valid == false)'
  tcpdump -i eth1 -w eth1.pcap ether proto 0x88b5; oetp dump eth1.pcap`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s takes one argument, the capture file; got %d", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wire.CheckMaxFrame(maxFrame.v); err != nil {
				return usagef("--max-frame: %v", err)
			}
			f, err := os.Open(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			defer f.Close()
			r, err := pcap.NewReader(bufio.NewReaderSize(f, 1<<16))
			if err != nil {
				return usagef("%s: %v", args[0], err)
			}
			return runDump(r, cmd.OutOrStdout(), maxFrame.v, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per frame, as 'oetp decode' does")
	cmd.Flags().Var(maxFrame, "max-frame", "frame ceiling `N` in bytes without FCS, 36..8192 (MAX_RAW_FRAME_SIZE)")
	return cmd
}

// dumpRecord is the JSON object dump prints for one frame.
type dumpRecord struct {
	Index   int    `json:"index"`
	Time    string `json:"time"`
	OrigLen int    `json:"orig_len,omitempty"`
	frameDescription
}

// readKey identifies an outstanding DMA_READ_REQ as its response will carry
// it: the response's source is the request's destination.
type readKey struct {
	requester, responder wire.MAC
	rid                  uint32
}

func runDump(r *pcap.Reader, stdout io.Writer, maxFrame int, asJSON bool) error {
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	reads := map[readKey]uint32{}
	for i := 1; ; i++ {
		ts, frame, err := r.Next()
		if errors.Is(err, io.EOF) {
			return w.Flush()
		}
		if err != nil {
			w.Flush()
			return fmt.Errorf("after %d frame(s): %w", i-1, err)
		}
		opt := describeOptions{MaxFrame: maxFrame}
		var cls wire.Class
		if len(frame) >= 20 {
			cls = wire.Classify(frame, maxFrame)
			f := wire.Frame(frame)
			switch {
			case cls.Kind == wire.KindRequest && cls.Cmd == wire.DMAReadReq && len(frame) >= 28:
				reads[readKey{f.Src(), f.Dst(), f.RequestID()}] = f.Length()
			case cls.Kind == wire.KindResponse && cls.Cmd == wire.DMAReadRsp:
				if n, ok := reads[readKey{f.Dst(), f.Src(), f.RequestID()}]; ok {
					opt.ExpectLength = &n
				}
			}
		}
		d := describe(frame, opt)
		if cls.Cmd == wire.DMAReadRsp && opt.ExpectLength == nil && d.Kind == "oetp" && !d.Valid {
			d.Problem = "no DMA_READ_REQ with this Request ID earlier in the capture: the expected length is unknown"
		}
		rec := dumpRecord{Index: i, Time: ts.UTC().Format(time.RFC3339Nano), frameDescription: d}
		if r.OrigLen() > len(frame) {
			rec.OrigLen = r.OrigLen()
		}
		if asJSON {
			if err := enc.Encode(rec); err != nil {
				return err
			}
		} else if _, err := fmt.Fprintln(w, dumpLine(rec, ts, opt.ExpectLength)); err != nil {
			return err
		}
	}
}

// dumpLine formats one frame for people:
//
//	3 12:00:00.000123 02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 RMEM_READ_RSP rid=7 data=0xc0ffee01, 24 bytes
func dumpLine(r dumpRecord, ts time.Time, expect *uint32) string {
	d := r.frameDescription
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", r.Index, ts.Local().Format("15:04:05.000000"))
	if d.Kind == "runt" {
		fmt.Fprintf(&b, " runt, %d bytes: %s", d.FrameLen, d.Problem)
		return b.String()
	}
	fmt.Fprintf(&b, " %s > %s", d.Src, d.Dst)
	if d.Kind == "raw" {
		fmt.Fprintf(&b, " raw ethertype 0x%04x, %d bytes", *d.EtherType, d.FrameLen)
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
