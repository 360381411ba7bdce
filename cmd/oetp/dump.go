package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
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
			return frames.ShowLive(cmd.Context(), frames.LiveOptions{Iface: o.iface, MaxFrame: o.maxFrame.v, JSON: o.json,
				Count: o.count.v, Promisc: o.promisc, Write: o.write}, cmd.OutOrStdout(), cmd.ErrOrStderr())
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
			return usagef("cannot open %s: %v", path, cli.OSError(err))
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return usagef("%s is a directory: give a capture file (pcap or pcapng), or - for standard input", path)
		}
		in, name = f, path
	}
	d := frames.NewDumper(cmd.OutOrStdout(), o.maxFrame.v, o.json)
	d.Live = path == "-" // a pipe from a running capture: print each frame as it comes
	return d.ReadFile(in, name, cmd.ErrOrStderr())
}
