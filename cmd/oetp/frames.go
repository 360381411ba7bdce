package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/wire"
)

func init() { register("encode", newEncodeCmd) }

// causeValue is the pflag.Value of --cause (frames.ParseCause).
type causeValue struct{ v uint32 }

func (c *causeValue) String() string { return fmt.Sprint(c.v) }
func (c *causeValue) Type() string   { return "CAUSE" }
func (c *causeValue) Set(s string) (err error) {
	c.v, err = frames.ParseCause(s)
	return err
}

type encodeOptions struct {
	dst, src                      macFlag
	rid, addr, length, mask, data u32Flag
	cause                         causeValue
	payload                       hexValue
	payloadFile                   string
	pad                           bool
}

func newEncodeCmd() *cobra.Command {
	o := &encodeOptions{mask: u32Flag{v: 0xFFFFFFFF, hex: true}}
	cmd := &cobra.Command{
		Use:   "encode CMD --dst MAC --src MAC --rid N [flags]",
		Short: "Encode one oETP frame and print it in hex",
		Long: `encode prints the hex (lowercase, no spaces) of one oETP frame: the exact
logical frame the engine emits, from the destination MAC through EndOfData,
without Ethernet padding or FCS unless --pad asks for the 60-byte minimum a
MAC would produce. Numbers are decimal or 0x hex.

CMD is a mnemonic (case-insensitive, '-' or '_') or its code:
  RMEM_READ_REQ  (0x10) --addr
  RMEM_READ_RSP  (0x11) --data
  RMEM_WRITE_REQ (0x20) --addr --data [--mask, default 0xFFFFFFFF]
  RMEM_WRITE_RSP (0x21)
  DMA_READ_REQ   (0x30) --addr --length
  DMA_READ_RSP   (0x31) --payload or --payload-file
  DMA_WRITE_REQ  (0x40) --addr, --payload or --payload-file [--length, must match]
  DMA_WRITE_RSP  (0x41)
  ERROR_RSP      (0xFF) --cause
A DMA payload holds 1..8160 bytes.`,
		Example: `  oetp encode RMEM_READ_REQ --dst 02:0e:0c:00:00:0b --src 02:0e:0c:00:00:0a --rid 0x11223344 --addr 0x1000
  oetp encode dma-write-req --dst 03:0e:0c:00:00:01 --src 02:0e:0c:00:00:0a --rid 7 --addr 0x2000 --payload a0a1a2a3a4 --pad
  oetp encode ERROR_RSP --dst 02:0e:0c:00:00:0a --src 02:0e:0c:00:00:0b --rid 7 --cause LOCAL_AXI_WR_SLVERR`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("encode takes exactly one CMD argument, e.g. RMEM_READ_REQ; got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			frame, err := frames.Encode(args[0], frames.Params{Dst: o.dst.m, Src: o.src.m, RID: o.rid.v, Addr: o.addr.v,
				Length: o.length.v, Mask: o.mask.v, Data: o.data.v, Cause: o.cause.v, Payload: o.payload.b,
				PayloadFile: o.payloadFile, Pad: o.pad, Set: cmd.Flags().Changed})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), hex.EncodeToString(frame))
			return err
		},
	}
	fl := cmd.Flags()
	fl.Var(&o.dst, "dst", "destination `MAC`, e.g. 02:0e:0c:00:00:0b (03:0e:0c:.. for a group)")
	fl.Var(&o.src, "src", "source `MAC` (unicast), e.g. 02:0e:0c:00:00:0a")
	fl.Var(&o.rid, "rid", "Request ID `N` (32 bits)")
	fl.Var(&o.addr, "addr", "byte address `A` (32 bits)")
	fl.Var(&o.length, "length", "byte count `N`: DMA_READ_REQ Length; for DMA_WRITE_REQ/DMA_READ_RSP it must match the payload")
	fl.Var(&o.mask, "mask", "RMEM_WRITE_REQ BitEnable `M`: bit i enables data bit i")
	fl.Var(&o.data, "data", "RMEM data word `D` (32 bits)")
	fl.Var(&o.payload, "payload", "DMA data bytes in `HEX`")
	fl.StringVar(&o.payloadFile, "payload-file", "", "read the DMA data bytes from file `F` (binary)")
	fl.Var(&o.cause, "cause", "ERROR_RSP wire cause `C`: 1..7 or a mnemonic such as LOCAL_AXI_WR_SLVERR")
	fl.BoolVar(&o.pad, "pad", false, "pad the frame with zeros to 60 bytes, as an Ethernet MAC does")
	return cmd
}

func init() { register("decode", newDecodeCmd) }

func newDecodeCmd() *cobra.Command {
	maxFrame := &intFlag{v: wire.MaxFrameLen}
	expect := &u32Flag{}
	cmd := &cobra.Command{
		Use:   "decode [HEX...]",
		Short: "Decode oETP frames given in hex into JSON, one object per line",
		Long: `decode prints one JSON object per frame, one per line. Each argument is the hex
of one frame, from the destination MAC through the last payload or padding
byte (no preamble, SFD or FCS); without arguments decode reads one frame per
line from standard input, skipping blank lines and lines starting with '#'.
Spaces, colons and 0x prefixes may separate groups of whole bytes.

A DMA_READ_RSP carries no length of its own: give the Length of the
DMA_READ_REQ it answers with --expect-length, or decode reports it as not
valid with "needs --expect-length".

A frame that is not valid oETP is still decoded (valid false, with the
problem); the exit status is 2 when an argument is not hex, and 1 when a line
of standard input is not hex (the other lines are still decoded).`,
		Example: `  oetp decode 020e0c00000b020e0c00000a88b50e104433221100100000
  oetp decode --expect-length 5 "020e0c00000a 020e0c00000b 88b5 0e31 21000000 b0b1b2b3 b4000000 efbeadde"
  oetp encode RMEM_READ_REQ --dst 02:0e:0c:00:00:0b --src 02:0e:0c:00:00:0a --rid 1 --addr 0x1000 | oetp decode`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wire.CheckMaxFrame(maxFrame.v); err != nil {
				return usagef("--max-frame: %v", err)
			}
			opt := frames.Options{MaxFrame: maxFrame.v}
			if cmd.Flags().Changed("expect-length") {
				opt.ExpectLength = &expect.v
			}
			return runDecode(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, opt)
		},
	}
	cmd.Flags().Var(expect, "expect-length", "Length `N` of the DMA_READ_REQ that a DMA_READ_RSP answers (decimal or 0x hex)")
	cmd.Flags().Var(maxFrame, "max-frame", "frame ceiling `N` in bytes without FCS, 36..8192 (MAX_RAW_FRAME_SIZE)")
	return cmd
}

func runDecode(stdin io.Reader, stdout, stderr io.Writer, args []string, opt frames.Options) error {
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if len(args) > 0 {
		bs := make([][]byte, len(args))
		for i, a := range args {
			b, err := frames.ParseHex(a)
			if err != nil {
				return usagef("argument %d: %v", i+1, err)
			}
			bs[i] = b
		}
		for _, b := range bs {
			if err := enc.Encode(frames.Describe(b, opt)); err != nil {
				return err
			}
		}
		return w.Flush()
	}
	return frames.DecodeLines(stdin, w, stderr, opt)
}

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
