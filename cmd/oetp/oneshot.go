package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/addrtable"
	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/regs"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

func init() { register("rmem", newRMEMCmd) }

func newRMEMCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rmem",
		Short: "Read or write one 32-bit register of a remote endpoint (RMEM)",
		Long: `rmem reads or writes one aligned 32-bit word of a remote endpoint's memory with
RMEM_READ_REQ / RMEM_WRITE_REQ, as a one-shot initiator on --iface. It uses the
interface's MAC (or --mac) and a peer entry for --peer in mode 1 (RMEM); the
remote endpoint must have a mode 1 entry for this MAC whose window holds the
address. Received requests are ignored: a 'serve' on the same interface stays
the only responder.

When a hub (oetp hub) serves --iface and --peer, the command goes through it:
the hub sends the request from its local MAC for this kind of operation, and
the result reads exactly as without it. The hub is found through --hub, else
$OETP_HUB, /run/oetp/hub.sock or the per-user socket, in the same network
namespace; --no-hub, or a flag the hub cannot honour (--pcap, --timeout,
--max-frame, --busy-poll, a --mac other than the hub's), runs the command's own
endpoint.

Commands on one interface and MAC take turns: each holds its initiator role
while it runs (--wait), and starts its Request IDs at a random value, so a late
reply to an earlier command is never taken for its own.

With --retries N a try that times out, or is answered with a malformed
response, is sent again as a new request with a new Request ID, up to N times
and within --deadline; its timeout follows the measured round trip (RFC 6298
SRTT + 4*RTTVAR, at least 2ms, doubled per retry, at most --timeout). A valid
ERROR_RSP is never retried: it is the device's answer. A retry can repeat a
write whose response was lost; mark a register with side effects (a FIFO, a
clear-on-read register) --volatile and it gets exactly one try. Every failure
says in the JSON "outcome_unknown" whether it may have executed (sent, not
answered: true) or certainly did not (false); "retries" counts the
retransmissions, and "link" gives the round trips measured.

Exit status: 0 success, 1 the operation was attempted and failed (the JSON
error_code says why: 8 TIMEOUT, 9..15 an ERROR_RSP from the peer), 2 bad usage
or configuration, refused before anything is sent (an unaligned --addr, a group
--peer for a read, the own MAC as --peer, an interface that is down; with
--json the result still says LOCAL_INVALID, code 1).

SIGINT (Ctrl-C) or SIGTERM interrupts the command within a second: exit status
130 or 143, the message says "interrupted", and the JSON result keeps how far
it got ("interrupted": "SIGINT", "outcome_unknown").`,
	}
	cmd.AddCommand(newRMEMReadCmd(), newRMEMWriteCmd())
	return cmd
}

func newRMEMReadCmd() *cobra.Command {
	f := &opFlags{}
	cmd := &cobra.Command{
		Use:   "read (--device NAME | --iface IF --peer MAC) --addr A",
		Short: "Read one aligned 32-bit word",
		Long: `read sends one RMEM_READ_REQ and prints the word of the RMEM_READ_RSP. A group
--peer is refused before anything is sent (LOCAL_INVALID, code 1, exit 2): reads are
unicast only.`,
		Example: `  oetp rmem read --device board1 --addr 0x1000
  oetp rmem read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000
  oetp rmem read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000 --json
  oetp rmem read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000 --retries 5 --timeout 200ms
  oetp rmem read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x2000 --retries 5 --volatile   # a FIFO: one try`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var v uint32
			r, err := f.do(cmd, "rmem read", endpoint.ModeRMEM, func(ctx context.Context, s session.Session) (err error) {
				v, err = s.RMEMRead(ctx, f.addr.v)
				return err
			})
			if err != nil {
				return err
			}
			if r.OK {
				r.Data = &v
			}
			return f.finish(cmd, r, fmt.Sprintf("rmem read %s 0x%08x = 0x%08x", f.peer.m, f.addr.v, v))
		},
	}
	f.read = true
	f.register(cmd)
	cmd.Flags().BoolVar(&f.volatile, "volatile", false, volatileUsage)
	return cmd
}

// volatileUsage is the help of rmem --volatile.
const volatileUsage = "the address has side effects (a FIFO, a clear-on-read register): never retry it, whatever --retries says"

func newRMEMWriteCmd() *cobra.Command {
	f := &opFlags{}
	data := &u32Flag{hex: true}
	mask := &u32Flag{v: 0xFFFFFFFF, hex: true}
	cmd := &cobra.Command{
		Use:   "write (--device NAME | --iface IF --peer MAC) --addr A --data D [--mask M]",
		Short: "Write the bits of one aligned 32-bit word selected by a mask",
		Long: `write sends one RMEM_WRITE_REQ: bit i of --mask (BitEnable) enables bit i of
--data. A unicast write completes on the peer's RMEM_WRITE_RSP; a write to a
group --peer is multicast: it completes as soon as the frame is sent, with no
reply and no timer (delivery is best effort). A zero mask is a valid no-op.`,
		Example: `  oetp rmem write --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000 --data 0xC0FFEE01
  oetp rmem write --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x1000 --data 0x0000AB00 --mask 0x0000FF00
  oetp rmem write --iface eth1 --peer 03:0e:0c:00:00:01 --addr 0x1004 --data 1   # every group member`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := f.do(cmd, "rmem write", endpoint.ModeRMEM, func(ctx context.Context, s session.Session) error {
				return s.RMEMWrite(ctx, f.addr.v, data.v, mask.v)
			})
			if err != nil {
				return err
			}
			human := fmt.Sprintf("rmem write %s 0x%08x = 0x%08x mask 0x%08x: ok", f.peer.m, f.addr.v, data.v, mask.v)
			if f.peer.m.IsGroup() {
				sent := 0
				if r.OK {
					sent = 1
				}
				r.SetGroup(sent)
				human = fmt.Sprintf("rmem write %s 0x%08x = 0x%08x mask 0x%08x: sent; %s", f.peer.m, f.addr.v, data.v, mask.v, oneshot.GroupNote(sent))
			}
			return f.finish(cmd, r, human)
		},
	}
	f.register(cmd)
	cmd.Flags().Var(data, "data", "the word `D` to write (decimal or 0x hex)")
	cmd.Flags().Var(mask, "mask", "BitEnable `M`: bit i enables data bit i")
	cmd.Flags().BoolVar(&f.volatile, "volatile", false, volatileUsage)
	if err := cmd.MarkFlagRequired("data"); err != nil {
		panic(err)
	}
	return cmd
}

func init() { register("dma", newDMACmd) }

func newDMACmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dma",
		Short: "Write or read a block of a remote endpoint's memory (bulk DMA)",
		Long: `dma moves a block of bytes to or from a remote endpoint's memory as a one-shot
initiator on --iface, one fragment at a time: each unicast fragment waits for
its response (--timeout per fragment, no whole-block timer) before the next is
sent, and the first failure aborts the rest of the block. The fragment size is
--fragment (dma_max_fragment_size) rounded down to a multiple of 4, at most the
ceiling 4*floor((max-frame - 32)/4): 8160 bytes for 8192-byte frames, 1480 for a
1500-byte MTU. A value of 0..3, or one above the ceiling, is refused with
LOCAL_INVALID (code 1, exit 2) before anything is sent.

The peer modes must be complementary: 'dma write' uses a local peer entry in
mode 3 (mirror local to remote), so the remote endpoint needs mode 2 (accept
DMA writes) for this MAC; 'dma read' uses mode 2, so the remote needs mode 3.

When a hub (oetp hub) serves --iface and --peer, the command goes through it:
the hub sends the request from its local MAC for this kind of operation, and
the result reads exactly as without it. The hub is found through --hub, else
$OETP_HUB, /run/oetp/hub.sock or the per-user socket, in the same network
namespace; --no-hub, or a flag the hub cannot honour (--pcap, --timeout,
--max-frame, --fragment, --busy-poll, a --mac other than the hub's), runs the
command's own endpoint.

Commands on one interface and MAC take turns: each holds its initiator role
while it runs (--wait), and starts its Request IDs at a random value, so a late
reply to an earlier command is never taken for its own.

With --retries N a fragment whose try times out, or is answered with a
malformed response, is sent again as a new request with a new Request ID, up to
N times and within --deadline per fragment (the block may take longer); its
timeout follows the measured round trip (RFC 6298 SRTT + 4*RTTVAR, at least
2ms, doubled per retry, at most --timeout). A valid ERROR_RSP is never retried.
A failed block reports in the JSON the bytes and fragments completed and
"failed_addr", the remote address of the fragment that failed, from where it
can be resumed; "outcome_unknown" says whether that fragment may have executed.

Exit status: 0 success, 1 the operation was attempted and failed (the JSON
error_code says why), 2 bad usage or configuration, refused before anything is
sent (with --json the result still says LOCAL_INVALID).

SIGINT (Ctrl-C) or SIGTERM interrupts the command within a second: exit status
130 or 143, the message says "interrupted", and the JSON result keeps how far
it got ("interrupted": "SIGINT", with "bytes", "failed_addr" and
"outcome_unknown").`,
	}
	cmd.AddCommand(newDMAWriteCmd(), newDMAReadCmd())
	return cmd
}

// dmaFlags adds --fragment to the common flags.
type dmaFlags struct {
	opFlags
	fragment u32Flag
}

func (f *dmaFlags) register(cmd *cobra.Command) {
	f.opFlags.register(cmd)
	cmd.Flags().Var(&f.fragment, "fragment", "dma_max_fragment_size `N` in bytes, rounded down to a multiple of 4 (default the ceiling, 8160 for 8192-byte frames)")
}

// open opens the session and applies --fragment exactly as written, like a
// write to the CSR: 0..3 then fail the block with LOCAL_INVALID.
func (f *dmaFlags) open(cmd *cobra.Command, mode endpoint.Mode) (session.Session, error) {
	ss, err := f.opFlags.open(mode)
	if err != nil {
		return nil, err
	}
	// --fragment is one of the flags that make a command run its own
	// endpoint (hubBypass).
	if s, ok := ss.(*localSession); ok && cmd.Flags().Changed("fragment") {
		if s.Reliable && f.fragment.v&^3 > node.FragmentCeiling(s.Node.Link.Ceiling) {
			ceil := node.FragmentCeiling(s.Node.Link.Ceiling)
			s.Close()
			return nil, usagef("--fragment %d: with --transport %s the fragment ceiling is %d bytes (the transport adds 24 bytes to every frame)", f.fragment.v, f.transport, ceil)
		}
		if ceil := wire.FragmentCeiling(s.EP.Config().MaxFrame); f.fragment.v&^3 < 4 || f.fragment.v&^3 > ceil {
			// As a write of the CSR: LOCAL_INVALID, before anything is sent.
			s.Close()
			return nil, oneshot.LocalInvalid("--fragment %d rounds down to %d, outside 4..%d (the fragment ceiling of %d-byte frames, --max-frame): use 4..%d",
				f.fragment.v, f.fragment.v&^3, ceil, s.EP.Config().MaxFrame, ceil)
		}
		c := s.EP.Config()
		c.MaxFragment = f.fragment.v
		if err := s.EP.SetConfig(c); err != nil {
			s.Close()
			return nil, usagef("--fragment: %v", err)
		}
	}
	if s, ok := ss.(*localSession); ok {
		f.frag = dmafile.FragmentSize(s.EP)
	}
	return ss, nil
}

func newDMAWriteCmd() *cobra.Command {
	f := &dmaFlags{}
	g := &groupFlags{}
	var in string
	cmd := &cobra.Command{
		Use:   "write (--device NAME | --iface IF --peer MAC) --addr A --in FILE",
		Short: "Write the bytes of a file to a remote endpoint's memory",
		Long: `write sends the bytes of --in (- for standard input) to --addr in DMA_WRITE_REQ
fragments, read from the file fragment by fragment: memory use does not grow
with the file. The size of a regular file is checked against the address
space before anything is read or sent. A pipe or FIFO (or standard input from
one) has no size: it is read in chunks of whole fragments (4 MiB), each sent
as a block of its own, so the wire carries the same fragments; if it holds
more than fits below 4 GiB the write stops before the first byte that does
not fit (exit 1, the JSON "bytes" says how many were written). To a unicast --peer each fragment waits for its DMA_WRITE_RSP; to a
group --peer the write is multicast: each fragment completes when it has been
sent, with no reply (delivery to the members is best effort and unconfirmed).

Group writes (docs/replication.md): --member MAC names each member's unicast
MAC. Each is probed with five unicast writes of the first fragment (its entry
for this MAC accepts DMA writes), and the group's fragments are sent no closer
together than the slowest member's slowest round trip plus 50% and the
spread of its round trips, with that
member checked by a unicast rewrite of the last fragment of every 16 (a
slower answer raises the interval), so a member that takes one request at a
time (an openENOC device) loses nothing; --rate
paces at a fixed rate instead, and with neither the fragments go out back to
back (a note on stderr says so). --verify then reads each member back from
--verify-mac (each member's entry for it is mode dma-read), rewrites the
fragments that differ by unicast, reads them again, and reports per member
(state verified, repaired or failed; the fragments repaired): exit 0 only when
every member verified, 1 naming the member that did not.`,
		Example: `  oetp dma write --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x100000 --in image.bin
  oetp dma write --iface eth1 --peer 03:0e:0c:00:00:01 --addr 0x100000 --in image.bin --json
  oetp dma write --iface eth1 --mac 02:0e:0c:00:00:a1 --peer 03:0e:0c:00:00:01 --addr 0x100000 --in image.bin \
      --member 02:0e:0c:00:00:02 --member 02:0e:0c:00:00:03 --verify --verify-mac 02:0e:0c:00:00:a2`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := interrupt.Context(cmd)
			defer cancel()
			src, err := dmafile.OpenInput(cmd.InOrStdin(), in, f.addr.v)
			if err != nil {
				return err
			}
			defer src.Close()
			if err := g.group().Check(f.peer.m, src); err != nil {
				return err
			}
			f.length = uint64(max(src.Size, 0))
			s, err := f.open(cmd, endpoint.ModeDMARead)
			if err != nil {
				return f.openFailed(cmd, "dma write", err)
			}
			var run *oneshot.GroupRun
			if f.peer.m.IsGroup() {
				t0 := time.Now()
				if run, err = g.group().Start(ctx, cmd.ErrOrStderr(), g.write(cmd, f), s, src); err != nil {
					s.Close()
					var ue *usageError
					if errors.As(err, &ue) {
						return f.openFailed(cmd, "dma write", err)
					}
					// A probe failed: no group frame was sent.
					r := f.result("dma write", err, time.Since(t0))
					r.Message = replicate.Message(err) + "; no group frame was sent"
					return f.finish(cmd, r, "")
				}
				defer run.Close()
			}
			ctx, done := oneshot.Progress(ctx, cmd, "dma write", src.Size)
			t0 := time.Now()
			tr, err := run.Write(ctx, s, f.addr.v, src)
			if run != nil && err == nil && g.verify {
				run.Verify(ctx, src)
			}
			elapsed := time.Since(t0)
			done()
			if cerr := s.Close(); err == nil && cerr != nil {
				return cerr
			}
			var ue *usageError
			if errors.As(err, &ue) && tr.Fragments == 0 {
				return err // an empty pipe: nothing was sent
			}
			r := f.result("dma write", err, elapsed)
			r.SetTransfer(tr)
			r.AddSession(s)
			human := fmt.Sprintf("dma write %s 0x%08x: %s in %d fragment(s), %.3fs, %.1f MB/s",
				f.peer.m, f.addr.v, cli.HumanBytes(tr.Bytes), tr.Fragments, r.Seconds, *r.MBPerS)
			if f.peer.m.IsGroup() {
				r.SetGroup(tr.Fragments)
				if !g.verify {
					human += "; " + oneshot.GroupNote(tr.Fragments)
				}
			}
			if run != nil && err == nil {
				human = run.Report(&r, human)
			}
			return f.finish(cmd, r, human)
		},
	}
	f.register(cmd)
	g.register(cmd)
	cmd.Flags().Var((*rateFlag)(&f.rate), "rate", "pace the frames sent to `BYTES_PER_S` bytes per second (frame bytes: data + 32 per fragment; K/M/G are powers of two); 0, the default, sends as fast as the responses (or, to a group, the link) allow")
	cmd.Flags().StringVar(&in, "in", "", "`FILE` whose bytes are written; - reads standard input")
	if err := cmd.MarkFlagRequired("in"); err != nil {
		panic(err)
	}
	return cmd
}

// rateFlag is a pflag.Value for --rate, a byte rate in the num syntax.
type rateFlag uint64

func (r *rateFlag) String() string { return strconv.FormatUint(uint64(*r), 10) }
func (r *rateFlag) Type() string   { return "uint64" }
func (r *rateFlag) Set(s string) error {
	v, err := num.Parse(s)
	*r = rateFlag(v)
	return err
}

func newDMAReadCmd() *cobra.Command {
	f := &dmaFlags{}
	var out string
	length := &u32Flag{}
	cmd := &cobra.Command{
		Use:   "read (--device NAME | --iface IF --peer MAC) --addr A --length N --out FILE",
		Short: "Read a block of a remote endpoint's memory into a file",
		Long: `read fetches --length bytes at --addr with DMA_READ_REQ fragments and writes
them to --out (- for standard output, in which case the report goes to standard
error), fragment by fragment as they arrive: memory use does not grow with
--length. A regular file is written through a temporary file beside it that
replaces it only when the whole block succeeded, so a failed read leaves the
old file (or none) as it was. Standard output, a FIFO or a device receive the
bytes in order as they arrive; after a failure they hold the fragments that
arrived before it (the JSON "bytes" says how many). An error writing --out (a
full disk) fails the block with LOCAL_AXI_WR_SLVERR (6), the code of a local
write error, and the message names the OS error ("no space left on device");
the peer executed the failed fragment's read. A group --peer
is refused before anything is sent (LOCAL_INVALID, code 1, exit 2): reads are
unicast.`,
		Example: `  oetp dma read --device board1 --addr 0x100000 --length 0x19000 --out back.bin
  oetp dma read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x100000 --length 0x19000 --out back.bin
  oetp dma read --iface eth1 --peer 02:0e:0c:00:00:02 --addr 0x100000 --length 64 --out - | xxd`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := interrupt.Context(cmd)
			defer cancel()
			if length.v == 0 {
				return usagef("--length 0: a DMA block carries at least one byte")
			}
			f.read, f.length, f.out = true, uint64(length.v), out
			if out == "-" && f.json {
				return usagef("--out - and --json both use standard output: write the data to a file, or drop --json")
			}
			dst, err := dmafile.OpenOutput(cmd.OutOrStdout(), out)
			if err != nil {
				return err
			}
			dst.Reserve(int64(length.v))
			s, err := f.open(cmd, endpoint.ModeDMAWrite)
			if err != nil {
				dst.Finish(false)
				return f.openFailed(cmd, "dma read", err)
			}
			ctx, done := oneshot.Progress(ctx, cmd, "dma read", int64(length.v))
			t0 := time.Now()
			tr, err := s.DMARead(ctx, f.addr.v, length.v, dst)
			elapsed := time.Since(t0)
			done()
			if cerr := s.Close(); err == nil && cerr != nil {
				dst.Finish(false)
				return cerr
			}
			if ferr := dst.Finish(err == nil); err == nil && ferr != nil {
				return ferr
			}
			r := f.result("dma read", err, elapsed)
			r.SetOutErr(dst.WriteErr())
			r.SetTransfer(tr)
			r.AddSession(s)
			human := fmt.Sprintf("dma read %s 0x%08x: %s in %d fragment(s), %.3fs, %.1f MB/s -> %s",
				f.peer.m, f.addr.v, cli.HumanBytes(tr.Bytes), tr.Fragments, r.Seconds, *r.MBPerS, out)
			if r.OK && out == "-" {
				fmt.Fprintln(cmd.ErrOrStderr(), human)
				human = ""
			}
			return f.finish(cmd, r, human)
		},
	}
	f.register(cmd)
	cmd.Flags().Var(length, "length", "number of bytes `N` to read (decimal, 0x hex, K/M/G suffixes)")
	cmd.Flags().StringVar(&out, "out", "", "`FILE` the bytes are written to; - writes standard output")
	for _, name := range []string{"length", "out"} {
		if err := cmd.MarkFlagRequired(name); err != nil {
			panic(err)
		}
	}
	return cmd
}

func init() { register("regs", newRegsCmd) }

func newRegsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "regs",
		Short: "List, read and write a board's registers by name from an address table",
		Long: `regs names registers through an address table: IPbus uHAL XML (.xml), IP-XACT
(IEEE 1685-2009, -2014 or -2022 component XML, .xml: told from uHAL by its namespace),
LiteX csr.csv (.csv) or csr.json (.json), or oetp's TOML (.toml, see
examples/regs.toml). docs/address-tables.md describes them.

IPbus addresses are 32-bit WORD addresses: uHAL address W is oETP byte address
4*W. LiteX and TOML addresses are byte addresses already.

A bitfield (a node with a mask) is written with ONE masked RMEM write
(BitEnable = the mask): the other bits of the word are not touched and not
read. A read returns the field shifted down. Permissions are enforced before
anything is sent: writing a read-only node or reading a write-only one, an
unknown node, or a value that does not fit its field is bad usage (exit 2).

--device NAME takes the interface, the board's MAC, this host's RMEM MAC and
the address table from the devices file (see 'oetp devices --help').

Like rmem, read and write go through a hub that serves --iface and --peer
(--hub, --no-hub). A volatile node (a port, a non-incremental node, a TOML
volatile = true node) goes through the hub only if the hub's own address table
has it as volatile at the same address (the hub never retries those);
otherwise the command runs its own endpoint, with a note.

Exit status: 0 success, 1 the operation failed (the JSON error_code says why),
2 bad usage (flags, table, node, permission or value); 130 or 143 interrupted
by SIGINT or SIGTERM.`,
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q for %s: use list, read, write or dump", args[0], cmd.CommandPath())
		}
		return usagef("%s needs a subcommand: list, read, write or dump", cmd.CommandPath())
	}
	cmd.AddCommand(newRegsListCmd(), newRegsReadCmd(), newRegsWriteCmd(), newRegsDumpCmd())
	return cmd
}

// loadTable loads --table (regs.Load).
func loadTable(cmd *cobra.Command, path string) (*addrtable.Table, error) {
	return regs.Load(path, cmd.ErrOrStderr())
}

func newRegsListCmd() *cobra.Command {
	var table, device, devicesFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list (--table FILE | --device NAME) [PREFIX]",
		Short: "List the nodes of an address table",
		Long: `list prints every node of the table in address order: name, oETP byte
address, mask, mode, permission, size in bytes and description. With PREFIX,
only the node of that name and the nodes below it. Nothing is sent.`,
		Example: `  oetp regs list --table examples/regs.toml
  oetp regs list --table top.xml ctrl
  oetp regs list --table csr.csv --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if table == "" && device != "" {
				d, err := lookupDevice(devicesFile, device)
				if err != nil {
					return err
				}
				if table = d.AddressTable; table == "" {
					return usagef("--device %s has no address_table in %s: add one, or give --table", d.Name, d.File)
				}
			}
			t, err := loadTable(cmd, table)
			if err != nil {
				return err
			}
			var nodes []addrtable.Node
			for _, n := range t.Nodes() {
				if len(args) == 0 || regs.Under(n.Name, args[0]) {
					nodes = append(nodes, n)
				}
			}
			if len(args) > 0 && len(nodes) == 0 {
				_, err := regs.Lookup(t, args[0])
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				return enc.Encode(regs.NodeList(t, nodes))
			}
			return regs.PrintNodes(out, nodes)
		},
	}
	cmd.Flags().StringVar(&table, "table", "", "address table `FILE` (.xml uHAL or IP-XACT, .csv/.json LiteX, .toml oetp)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the nodes as one JSON object")
	cmd.Flags().StringVar(&device, "device", "", "list the address table of the device `NAME` of the devices file")
	cmd.Flags().StringVar(&devicesFile, "devices", "", devicesUsage)
	return cmd
}

// regsOpFlags are the flags of regs read and write: the one-shot initiator
// flags of rmem (--iface, --peer, --timeout, --json, ...) without --addr,
// which the node gives, and --table.
type regsOpFlags struct {
	opFlags
	table string
	count intFlag
}

func (f *regsOpFlags) register(cmd *cobra.Command, withCount bool) {
	f.opFlags.register(cmd)
	// The node gives the address: --addr is neither required nor shown.
	if fl := cmd.Flags().Lookup("addr"); fl != nil {
		delete(fl.Annotations, cobra.BashCompOneRequiredFlag)
		mustFlag(cmd.Flags().MarkHidden("addr"))
	}
	cmd.Flags().StringVar(&f.table, "table", "", "address table `FILE` (.xml uHAL or IP-XACT, .csv/.json LiteX, .toml oetp); default the --device's address_table")
	if withCount {
		cmd.Flags().Var(&f.count, "count", "words `N` to read from a block or port node (default its whole size)")
	}
}

func mustFlag(err error) {
	if err != nil {
		panic(err)
	}
}

// regsResult is the JSON result of regs read and write: the rmem result
// (addr is the node's address, data the raw word of a one-word read) and
// the node's figures.
type regsResult struct {
	oneshot.Result
	Node string `json:"node"`
	Mask uint32 `json:"mask"`
	// Value is the field read (shifted down) or written; a JSON number of
	// any width (a multi-word LiteX CSR may exceed 64 bits).
	Value *big.Int `json:"value,omitempty"`
	// Words are the raw words read from a block, a port or a multi-word
	// CSR, in access order.
	Words []uint32 `json:"words,omitempty"`
	// Done is the number of word accesses completed: on failure, how many
	// of a multi-word write were written before it.
	Done int `json:"words_done"`
}

func newRegsReadCmd() *cobra.Command {
	f := &regsOpFlags{}
	f.read = true // a group --peer is refused before anything is sent
	cmd := &cobra.Command{
		Use:   "read (--device NAME | --table FILE --iface IF --peer MAC) NAME",
		Short: "Read a node: a register, a bitfield (shifted down), a block or a port",
		Long: `read reads the node NAME of the address table with RMEM reads, as 'rmem read'
does (same flags; the peer entry is mode 1). A register or bitfield is one
RMEM_READ_REQ and prints the field shifted down; a multi-word LiteX CSR reads
its words most significant first and prints the joined value; a block reads
its words at increasing addresses and a port (non-incremental) reads all its
words at one address, --count words (default the node's size). Port reads
are never repeated. Every word is one RMEM round trip: for bulk memory use
'oetp dma read --addr' with the node's address.`,
		Example: `  oetp regs read --device board1 ctrl.enable
  oetp regs read --table regs.toml --iface eth1 --peer 02:0e:0c:00:00:02 status.ready
  oetp regs read --table top.xml --iface eth1 --peer 02:0e:0c:00:00:02 buf --count 4 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := f.node(cmd, args[0], addrtable.Read)
			if err != nil {
				return err
			}
			addrs, err := regs.Reads(n, f.count.v)
			if err != nil {
				return err
			}
			var words []uint32
			r, err := f.access(cmd, "regs read", n, func(ctx context.Context, dev regs.Device) (int, error) {
				var err error
				words, err = regs.Read(ctx, dev, addrs)
				return len(words), err
			})
			if err != nil {
				return err
			}
			human := ""
			if r.OK {
				human = r.fillRead(n, addrs, words, f.peer.m.String())
			}
			return f.finishRegs(cmd, r, human)
		},
	}
	f.register(cmd, true)
	return cmd
}

// fillRead sets the value or words read at addrs and returns the human
// output.
func (r *regsResult) fillRead(n addrtable.Node, addrs, words []uint32, peer string) string {
	rr := regs.DescribeRead(n, addrs, words, peer)
	if rr.Value != nil {
		r.Value = rr.Value
	}
	r.Words, r.Data = rr.Words, rr.Data
	return rr.Human
}

func newRegsWriteCmd() *cobra.Command {
	f := &regsOpFlags{}
	cmd := &cobra.Command{
		Use:   "write (--device NAME | --table FILE --iface IF --peer MAC) NAME VALUE...",
		Short: "Write a node: a register, a bitfield (one masked write), a block or a port",
		Long: `write writes VALUE to the node NAME of the address table with RMEM writes, as
'rmem write' does (same flags; a group --peer writes every member). A
register or bitfield is ONE RMEM_WRITE_REQ whose BitEnable is the node's
mask, with VALUE shifted into the mask: no read-modify-write, and the other
bits of the word are left alone. A multi-word LiteX CSR writes its words most
significant first (LiteX's order: the last, least significant word commits an
atomic CSR). A block takes one VALUE per word from its start; a port writes
every VALUE at its one address, in order, never repeated.

Refused before anything is sent (exit 2): a read-only node, a VALUE that does
not fit the field, more VALUEs than the node holds.`,
		Example: `  oetp regs write --device board1 ctrl.enable 1
  oetp regs write --table regs.toml --iface eth1 --peer 02:0e:0c:00:00:02 ctrl.mode 3
  oetp regs write --table csr.csv --iface eth1 --peer 02:0e:0c:00:00:02 ctrl_scratch 0x12345678 --json
  oetp regs write --table top.xml --iface eth1 --peer 02:0e:0c:00:00:02 buf 1 2 3 4`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := f.node(cmd, args[0], addrtable.Write)
			if err != nil {
				return err
			}
			writes, value, err := regs.Plan(n, args[1:])
			if err != nil {
				return err
			}
			r, err := f.access(cmd, "regs write", n, func(ctx context.Context, dev regs.Device) (int, error) {
				return regs.Write(ctx, dev, writes)
			})
			if err != nil {
				return err
			}
			r.Value = value
			if value == nil || len(writes) > 1 {
				// A block's or port's words, or a multi-word CSR's as written.
				for _, w := range writes {
					r.Words = append(r.Words, w.Data)
				}
			}
			head := fmt.Sprintf("regs write %s %s 0x%08x", f.peer.m, n.Name, n.Address)
			if n.Masked() {
				head += fmt.Sprintf(" mask 0x%08x", n.Mask)
			}
			human := fmt.Sprintf("%s = 0x%x: ok", head, value)
			if value == nil {
				human = fmt.Sprintf("%s: %d words (%s): ok", head, len(writes), n.Mode)
			}
			return f.finishRegs(cmd, r, human)
		},
	}
	f.register(cmd, false)
	return cmd
}

// node loads --table and returns the node called name, refusing it (bad
// usage: nothing is sent) if it lacks the permission need.
func (f *regsOpFlags) node(cmd *cobra.Command, name string, need addrtable.Permission) (addrtable.Node, error) {
	t, err := f.loadTable(cmd)
	if err != nil {
		return addrtable.Node{}, err
	}
	return regs.LookupFor(t, name, need)
}

// access runs do against a one-shot initiator session for node n, as rmem
// does, and returns the result so far. A non-nil error is the command's
// outcome already (the session could not be opened).
func (f *regsOpFlags) access(cmd *cobra.Command, op string, n addrtable.Node, do func(context.Context, regs.Device) (int, error)) (regsResult, error) {
	f.addr.v = n.Address
	s, err := f.open(endpoint.ModeRMEM)
	var oe *endpoint.OpError
	if errors.As(err, &oe) {
		// A local check refused it (a group --peer for a read): the
		// node's result, LOCAL_INVALID.
		return regsResult{Result: f.result(op, err, 0), Node: n.Name, Mask: n.Mask}, nil
	}
	if err != nil {
		return regsResult{}, f.openFailed(cmd, op, err)
	}
	if hs, ok := s.(*hubSession); ok && n.Volatile() && !regs.HubKnowsVolatile(hs.Dev, n) {
		// Through the hub the device's retry policy applies, and it spares
		// only the volatile nodes of the hub's own table: a node it does
		// not know as volatile could be sent twice. Run our own endpoint.
		s.Close()
		if f.fs.Changed("hub") {
			return regsResult{}, usagef("--hub: node %q is volatile and the hub's address table does not mark it so: the hub could retry it; drop --hub (or give the hub's device this table)", n.Name)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "oetp: note: node %q is volatile and the hub's table does not mark it so: this command runs its own endpoint on %s, so that it is never retried\n", n.Name, f.iface)
		f.noHub = true
		if s, err = f.open(endpoint.ModeRMEM); err != nil {
			return regsResult{}, f.openFailed(cmd, op, err)
		}
	}
	ctx, cancel := interrupt.Context(cmd)
	defer cancel()
	t0 := time.Now()
	done, err := do(regs.Context(ctx, n), session.Device{S: s})
	elapsed := time.Since(t0)
	if cerr := s.Close(); err == nil && cerr != nil {
		return regsResult{}, cerr
	}
	return regsResult{Result: f.result(op, err, elapsed), Node: n.Name, Mask: n.Mask, Done: done}, nil
}

// finishRegs prints the result (JSON with --json, else human on success)
// and returns the command's error as opFlags.finish does, naming the node.
func (f *regsOpFlags) finishRegs(cmd *cobra.Command, r regsResult, human string) error {
	if err := oneshot.Print(cmd, f.json, r, r.OK, human); err != nil {
		return err
	}
	if r.OK {
		return nil
	}
	if r.Done > 0 {
		// Part of a multi-word access ran: a failure, never bad usage.
		return interrupt.Wrap(fmt.Errorf("%s %s %s at 0x%08x failed: %s", r.Op, r.Peer, r.Node, r.Addr, r.Message))
	}
	quiet := f.opFlags
	quiet.json = false
	e := r.Result
	e.Peer += " " + r.Node // "regs read PEER NODE at 0x... failed: ..."
	return quiet.finish(cmd, e, "")
}

// loadTable loads --table, else the --device's address_table.
func (f *regsOpFlags) loadTable(cmd *cobra.Command) (*addrtable.Table, error) {
	table := f.table
	if table == "" && f.device != "" {
		d, err := f.resolveDevice()
		if err != nil {
			return nil, err
		}
		if table = d.AddressTable; table == "" {
			return nil, usagef("--device %s has no address_table in %s: add one, or give --table", d.Name, d.File)
		}
	}
	return loadTable(cmd, table)
}

func newRegsDumpCmd() *cobra.Command {
	f := &regsOpFlags{}
	f.read = true // a group --peer is refused before anything is sent
	cmd := &cobra.Command{
		Use:   "dump [PATH] (--device NAME | --table FILE --iface IF --peer MAC)",
		Short: "Read every readable register under PATH and print it with its decoded fields",
		Long: `dump reads every readable register of the address table whose name is PATH
or lies below it (all of them without PATH) and prints its address, its value
and its fields shifted down, in address order. Through a hub the reads go as
one batch; without one this command's endpoint reads them in turn, one RMEM
round trip each.

Volatile registers (a port, a TOML volatile = true node, an IP-XACT field with
a readAction such as clear-on-read) are not read: a dump must not change the
board. They are listed on stderr; read one with 'oetp regs read' if you mean
to. Blocks and ports are not dumped (read them with 'oetp regs read').

With --json every register is one JSON object on its own line:
{"name":..., "address":..., "value":..., "fields":{"FIELD": value, ...}}.

Exit status: 0 every register read; 1 a read failed (the registers read
before it are printed, the message names the failed one and says whether it
may have executed); 2 bad usage (flags, table, PATH).`,
		Example: `  oetp regs dump --device board1
  oetp regs dump --device board1 ctrl_blk --json
  oetp regs dump --table board.xml --iface eth1 --peer 02:0e:0c:00:00:02`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := ""
			if len(args) > 0 {
				path = args[0]
			}
			t, err := f.loadTable(cmd)
			if err != nil {
				return err
			}
			plan, skipped := regs.DumpPlan(t, path)
			if path != "" && len(plan) == 0 && len(skipped) == 0 {
				if _, err := regs.Lookup(t, path); err != nil {
					return err
				}
				return usagef("no readable register under %q in %s: nothing to dump", path, t.File())
			}
			for _, s := range skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "oetp: note: %s is volatile (reading it has side effects): not read; read it with oetp regs read\n", s)
			}
			if len(plan) == 0 {
				return nil
			}
			var addrs []uint32
			for _, r := range plan {
				addrs = append(addrs, r.Addrs...)
			}
			f.addr.v = plan[0].Node.Address
			s, err := f.open(endpoint.ModeRMEM)
			if err != nil {
				return f.openFailed(cmd, "regs dump", err)
			}
			ctx, cancel := interrupt.Context(cmd)
			defer cancel()
			t0 := time.Now()
			words, err := s.ReadWords(ctx, addrs)
			elapsed := time.Since(t0)
			if cerr := s.Close(); err == nil && cerr != nil {
				err = cerr
			}
			out := cmd.OutOrStdout()
			printed, perr := regs.PrintDump(out, plan, words, f.json)
			if perr != nil {
				return perr
			}
			if err == nil {
				return nil
			}
			failed := plan[printed]
			f.addr.v = addrs[len(words)]
			res := regsResult{Result: f.result("regs dump", err, elapsed), Node: failed.Node.Name, Mask: failed.Node.Mask, Done: len(words)}
			if f.json {
				if err := oneshot.Print(cmd, true, res, false, ""); err != nil {
					return err
				}
			}
			quiet := f.opFlags
			quiet.json = false
			e := res.Result
			e.Peer += " " + failed.Node.Name
			if ferr := quiet.finish(cmd, e, ""); ferr != nil {
				if printed > 0 {
					return fmt.Errorf("%w (%d registers before it were read)", ferr, printed)
				}
				return ferr
			}
			return nil
		},
	}
	f.register(cmd, false)
	cmd.Flags().Lookup("json").Usage = "print one JSON object per register, one per line"
	return cmd
}
