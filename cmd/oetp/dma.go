package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

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
