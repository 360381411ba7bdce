package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/bench"
	"github.com/openenoc/oetp/cmd/oetp/internal/confrun"
	"github.com/openenoc/oetp/cmd/oetp/internal/demo"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/conformance"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

func init() { register("bench", newBenchCmd) }

func newBenchCmd() *cobra.Command {
	var (
		scenarios  string
		duration   time.Duration
		rounds     int
		maxOps     int64
		blocks     string
		asJSON     bool
		svg        string
		linkIO     string
		anyCPU     bool
		busyPoll   time.Duration
		quiet      bool
		rawEcho    string
		floorEcho  string
		windowEcho string
		floorWays  bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the engine against the medium's own limit, side by side",
		Long: `bench measures oETP where users choose a transport: how long one register
access takes and how many bytes per second a block moves, each next to the
limit of the medium underneath, measured in the same run:

  proc   what users run: 'oetp serve' on one host of a veth pair and each
         operation one 'oetp rmem read', 'dma write' or 'dma read' process
         on the other, default flags, unpinned, timed as the command reports
         it (--json seconds), against the raw AF_PACKET ping-pong of the same
         frames on the same veth pair, on one CPU and free, the faster one
         counting (DMA target ≥ 0.90× from 1 MiB up); the DMA commands
         again with standard error a terminal, so that they draw their
         progress bar ("(tty)" rows, from 1 MiB up); and an endpoint of the
         bench process against the same serve ("engine→serve" rows: two
         processes in steady state). For information, without a target:
         the raw ping-pong with its echo a process of its own ("echo
         process" rows: what two processes cost with no protocol work), and
         the RMEM ping-pong after both sides idled 20ms ("after idle": the
         cold exchange a one-shot command makes), which the command rows'
         notes compare with; and from 1 MiB up the floor of each DMA
         direction ("floor" rows, on one CPU and free, beside which the
         command rows' notes give their ratio): two processes doing only
         what any dma write or read against serve must do with the data,
         no protocol (a write's payloads preaded from a source file into
         the frames, copied into the echo's region; a read's copied out of
         it, pwritten to an output file). This binary runs itself. Needs
         root and nsenter;
  codec  encode and decode of RMEM frames and 8160-byte DMA frames, against a
         plain 8160-byte copy (ns/frame, MB/s, allocations);
  mem    the engine on the in-process switch (link/mem): RMEM read latency
         and DMA write/read MB/s for each block size, against a raw
         ping-pong of the same frames between two switch ports (DMA target
         ≥ 0.80× from 1 MiB up); for information, the floor of each block
         ("floor" rows, which the engine rows' notes compare with): that
         ping-pong moving the block, each fragment's payload copied from a
         source buffer of the block's size into the frame and out into a
         destination buffer, the least any implementation must do;
  veth   the engine on AF_PACKET over a veth pair between two network
         namespaces (MTU 9000, 8160-byte fragments), against a raw AF_PACKET
         ping-pong of the same frame sizes (24↔24 for an RMEM read, 8192↔20
         for a DMA write fragment, 28↔8184 for a DMA read fragment) with
         blocking system calls on locked OS threads, both on one CPU and
         free, the faster one counting, and the engine's threads on that same
         one CPU (--engine-any-cpu: free); then the same comparisons on a
         fresh veth pair with busy-polling links and the engine free on any
         CPU (scenario veth-busy in the table; --busy-poll sets the spin
         window, 0 leaves it out); and group DMA writes to 3 hosts on a
         bridge against a raw blast of the same frames. Needs root.
  reliable
         the engine through the reliable transport (docs/reliable.md,
         8136-byte fragments) over a veth pair, next to the same engine and
         wrapper with the peer set to v1, the raw ping-pong (free), TCP
         bulk transfers of the largest block over one connection and the raw
         one-way AF_PACKET stream of 8192-byte frames (sendmmsg/recvmmsg
         batches of 64: the medium's limit) on the same veth pair, in the
         same run; a DMA row's targets are ≥ 1.0× TCP and ≥ 0.6× the stream;
         RMEM reads from 32 goroutines against v1 one at a time (≥ 10×),
         beside the raw pipelined exchange of the same frames with 32 in
         flight (two locked threads, sendmmsg/recvmmsg: the medium's limit
         for that exchange), and 3 senders into one receiver through a
         bridge; then, as users run them, one 'oetp dma write' or 'dma read
         --transport reliable' process per block against 'oetp serve' on
         a fresh veth pair, and an endpoint of the bench process
         (package node, default link flags) moving blocks against the
         same 'oetp serve' in steady state ("engine→serve" rows, CPU
         per fragment of both processes), each taking turns with the
         windowed raw exchange (32 in flight) on the same veth pair, and
         the engine→serve rows also with the windowed floor ("floor
         window" rows, for information: that exchange with the data work
         any implementation must do, each payload copied from a block of
         the row's size and CRC32C'd on the sending side, checked and
         copied into such a block on the receiving side, with its own
         ratio to the windowed raw exchange beside the row's goal); and
         RMEM reads from 32 goroutines of such an endpoint against the
         same serve, as a Go program runs them and with GOMAXPROCS 1, each
         after a round of the raw pipelined exchange on that pair (goal
         ≥ 0.8× for the first). Needs root.

Each engine figure is printed as a ratio of its baseline, with the target
(RMEM read p50 ≤ 1.10×, DMA MB/s ≥ 0.95× from 1 MiB blocks up, 0.80× on
mem, codec ≥ 10 GB/s), and with the process's heap allocations per frame moved.
--duration is the time of each measurement (one row), shared over --rounds
rounds in which a baseline and the engine paths compared with it take turns.
Every measurement also stops after --max-ops operations.`,
		Example: `  oetp bench
  oetp bench --scenario codec,mem --duration 200ms
  sudo oetp bench --scenario veth --json > bench.json
  sudo oetp bench --svg docs/bench.svg`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rawEcho != "" && floorEcho != "" {
				// The proc scenario's floor echo process (hidden).
				return bench.FloorEcho(rawEcho, floorEcho, cmd.InOrStdin(), cmd.OutOrStdout())
			}
			if windowEcho != "" {
				// The reliable scenario's windowed echo process (hidden).
				// With --raw-echo-floor: the windowed floor's echo.
				return bench.WindowEcho(windowEcho, floorEcho, cmd.InOrStdin(), cmd.OutOrStdout())
			}
			if rawEcho != "" {
				// The proc scenario's raw echo process (hidden).
				return bench.RawEcho(rawEcho, cmd.InOrStdin(), cmd.OutOrStdout())
			}
			o := bench.Options{Duration: duration, Rounds: rounds, MaxOps: maxOps, LinkIO: linkIO, EngineAnyCPU: anyCPU, BusyPoll: busyPoll, FloorWays: floorWays}
			var err error
			// The proc scenario runs this very binary as serve and the
			// one-shot commands.
			if o.Binary, err = os.Executable(); err != nil {
				o.Binary = ""
			}
			if o.Scenarios, err = bench.ParseScenarios(scenarios); err != nil {
				return usagef("--scenario: %v", err)
			}
			if duration <= 0 || duration > time.Hour {
				return usagef("--duration %v: give a positive duration up to 1h, such as 500ms", duration)
			}
			if rounds < 1 || rounds > 100 {
				return usagef("--rounds %d: use 1..100", rounds)
			}
			if maxOps < int64(rounds) {
				return usagef("--max-ops %d: give at least one operation per round; --rounds is %d", maxOps, rounds)
			}
			if o.Blocks, err = parseBlocks(blocks); err != nil {
				return usagef("--blocks: %v", err)
			}
			switch linkIO {
			case "", "blocking", "poll":
			default:
				return usagef("--link-io %q: use blocking or poll", linkIO)
			}
			switch {
			case busyPoll < 0 || busyPoll > node.MaxBusyPoll:
				return usagef("--busy-poll %v: use 0 (no veth-busy rows) through %v, such as 100us", busyPoll, node.MaxBusyPoll)
			case busyPoll == 0:
				o.BusyPoll = -1 // no busy-polling rows
			}
			if !quiet {
				o.Log = cmd.ErrOrStderr()
			}
			var rep *bench.Report
			var runErr error
			// bench.Run does not watch a context: a signal stops its
			// processes and removes its files at once (atexit).
			if err := runInterruptible(cmd, "oetp bench", 0, func(context.Context) error {
				rep, runErr = bench.Run(o)
				return nil
			}); err != nil {
				return err
			}
			if rep == nil {
				return runErr
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = rep.WriteJSON(out)
			} else {
				err = rep.WriteTable(out)
			}
			if err != nil {
				return err
			}
			if svg != "" {
				if err := writeSVG(svg, rep); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenarios, "scenario", "all", "scenarios to run, comma-separated: proc, codec, mem, veth, reliable or all")
	f.DurationVar(&duration, "duration", bench.DefaultDuration, "time of each measurement (one table row), shared over the rounds")
	f.IntVar(&rounds, "rounds", bench.DefaultRounds, "rounds in which the baseline and the engine take turns")
	f.Int64Var(&maxOps, "max-ops", bench.DefaultMaxOps, "most operations of each measurement")
	f.StringVar(&blocks, "blocks", "4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB", "DMA block sizes, comma-separated (4096, 4K, 4KiB, 64MiB: powers of two)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON instead of a table")
	f.StringVar(&svg, "svg", "", "also draw the report as an SVG picture into this file")
	f.StringVar(&linkIO, "link-io", "", "I/O mode of the engine's AF_PACKET links in the veth scenario: blocking or poll (default: the link's own)")
	f.BoolVar(&anyCPU, "engine-any-cpu", false, "run the veth scenario's engine rows with the threads free to run on any CPU instead of on the one-CPU baseline's CPU")
	f.DurationVar(&busyPoll, "busy-poll", bench.DefaultBusyPoll, "spin window `D` of the busy-polling links in the veth-busy rows (afpacket Config.BusyPoll, at most 10ms); 0 leaves those rows out")
	f.BoolVar(&quiet, "quiet", false, "do not print progress lines on stderr")
	// The proc scenario starts this binary with it in the far namespace:
	// the raw ping-pong's echo as a process of its own.
	f.StringVar(&rawEcho, bench.RawEchoFlag, "", "run the raw ping-pong's echo on interface `IF` (the proc scenario's own use)")
	_ = f.MarkHidden(bench.RawEchoFlag)
	f.StringVar(&windowEcho, bench.WindowEchoFlag, "", "run the windowed raw exchange's echo on interface `IF` (the reliable scenario's own use)")
	_ = f.MarkHidden(bench.WindowEchoFlag)
	// With it, the echo is the floor rows' (a region of the size given).
	f.StringVar(&floorEcho, bench.FloorFlag, "", "with --"+bench.RawEchoFlag+" or --"+bench.WindowEchoFlag+", the floor rows' echo with a region `SPEC` (the bench's own use)")
	_ = f.MarkHidden(bench.FloorFlag)
	// Diagnosis: every way of the floor rows' copies (Options.FloorWays).
	f.BoolVar(&floorWays, "floor-ways", false, "add a proc floor row on one CPU for every other way of its copies")
	_ = f.MarkHidden("floor-ways")
	return cmd
}

// writeSVG draws rep into the file path.
func writeSVG(path string, rep *bench.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--svg %s", fileWords(err))
	}
	if err := rep.WriteSVG(f); err != nil {
		f.Close()
		return fmt.Errorf("--svg %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--svg %s: %w", path, err)
	}
	return nil
}

// parseBlocks parses a comma-separated list of sizes in the num syntax:
// 4096, 4K, 4KiB, 64MiB (K and KiB mean 1024, M and MiB 1048576).
func parseBlocks(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := num.Parse(f)
		if err != nil {
			return nil, err
		}
		if n == 0 || n%4 != 0 || n > bench.MaxBlock {
			return nil, fmt.Errorf("%q: a block size must be a positive multiple of 4 bytes, at most %s", f, bench.SizeString(bench.MaxBlock))
		}
		out = append(out, int64(n))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no block size in %q", s)
	}
	return out, nil
}

func init() { register("demo", newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var opt demo.Options
	var asJSON bool
	size := &intFlag{v: 256 << 10}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the specification's replication example: a master and N slaves",
		Long: `demo runs the oETP specification's one-master-to-N-slaves replication example
end to end, with no NIC and no privileges: a master and --slaves slaves (each
one endpoint with one unicast MAC; every slave a member of the group
03:0e:0c:00:00:01) attached to an in-memory Ethernet switch (link/mem).

A peer table entry has one mode, and a receiver finds one entry per source MAC,
so the demo works in phases and rewrites the peer entries between them, as
software rewrites a board's peer CSRs:
  1. registers: RMEM with mode 1 at both ends: write, masked write, read back,
     and a group write read back from every slave;
  2. a unicast DMA write to slave1 (master mode 3, slave mode 2);
  3. its read-back (master mode 2, slave mode 3), compared byte for byte;
  4. replication: one multicast DMA write of --size bytes to the group (the
     master's group entry mode 3, every slave's entry for the master mode 2),
     paced as oetp dma write --member paces it: each slave is probed with
     unicast writes of the first fragment and the group's fragments go out
     at the slowest slave's pace;
  5. failures: a DMA write outside slave2's window (the master records
     REMOTE_INVALID, the slave LOCAL_INVALID) and a request the switch drops
     (the master records TIMEOUT, the slave nothing).
Then it checks every slave's replicated memory by SHA-256 against the master's
source, and prints a table of the steps with the codes recorded on both sides.

--loss P makes the switch lose each frame with probability P: steps may then
time out or slaves miss fragments, and the demo says so. --netns runs the same
over a Linux bridge of network namespaces with AF_PACKET links (needs root).

Exit status: 0 when every step had its expected outcome, 1 otherwise, 2 bad
usage (or --netns without the privileges it needs).`,
		Example: `  oetp demo
  oetp demo --slaves 8 --size 4M
  oetp demo --loss 0.01 --seed 7
  sudo oetp demo --netns --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt.Size = size.v
			if !cmd.Flags().Changed("slaves") {
				opt.Slaves = 3
			} else if opt.Slaves == 0 {
				return usagef("--slaves 0: use 1..%d", demo.MaxSlaves)
			}
			if cmd.Flags().Changed("timeout") && opt.Timeout == 0 {
				return usagef("--timeout 0 would wait forever for the lost frame: use a duration such as 250ms")
			}
			if cmd.Flags().Changed("size") && opt.Size == 0 {
				return usagef("--size 0: use 1..%d bytes", demo.MaxSize)
			}
			out := cmd.OutOrStdout()
			if !asJSON {
				opt.Log = out
			}
			var rep *demo.Report
			err := interrupt.Run(cmd, "oetp demo", interrupt.Grace, func(ctx context.Context) (err error) {
				rep, err = demo.Run(ctx, opt)
				return err
			})
			var ie *interrupt.Error
			if errors.As(err, &ie) {
				return err
			}
			var oe *demo.OptionError
			switch {
			case errors.As(err, &oe):
				return usagef("%v", err)
			case errors.Is(err, demo.ErrNetNS):
				return usagef("--netns: %v; or drop --netns to use the in-memory switch", err)
			case err != nil:
				return err
			}
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else if err := writeDemoText(out, rep); err != nil {
				return err
			}
			if !rep.OK {
				return fmt.Errorf("not every step of the demo had its expected outcome (see the table)")
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&opt.Slaves, "slaves", 3, fmt.Sprintf("number of slaves `N`, 1..%d", demo.MaxSlaves))
	fs.Var(size, "size", "`BYTES` replicated to every slave by the multicast DMA write (decimal, 0x hex, K/M/G suffixes)")
	fs.Float64Var(&opt.Loss, "loss", 0, "probability `P` that the network loses any frame, 0 <= P < 1")
	fs.Uint64Var(&opt.Seed, "seed", 1, "seed of the data pattern and the loss draws")
	fs.DurationVar(&opt.Timeout, "timeout", 250*time.Millisecond, "RMEM and DMA response timeout `D` of every endpoint")
	fs.BoolVar(&opt.NetNS, "netns", false, "run over a Linux bridge of network namespaces (needs root)")
	fs.BoolVar(&asJSON, "json", false, "print the report as one JSON object instead of the table")
	return cmd
}

func writeDemoText(w io.Writer, rep *demo.Report) error {
	fmt.Fprintln(w)
	return rep.WriteText(w)
}

func init() { register("conformance", newConformanceCmd) }

func newConformanceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Check that a device on an interface follows the oETP v1 specification",
		Long: `conformance checks a device — a board through a NIC, an RTL simulation through a
TAP device, or an oetp serve — against the oETP v1 engine specification, from
the outside: it sends raw frames from the MACs of the device's peers and checks
every reply against the sentence of the specification each case quotes.

A DUT file (TOML; see dut-template) says how the device is programmed: its
frame ceiling, group address, peer table (the runner sends from those MACs),
bus-error ranges and a MAC it does not know. A case that needs a key the file
lacks is skipped and names the key; skipped is not failed.`,
	}
	cmd.AddCommand(newConformanceRunCmd(), newConformanceListCmd(), newConformanceTemplateCmd())
	return cmd
}

func newConformanceRunCmd() *cobra.Command {
	var (
		iface, dutPath, junit, pcapPath string
		target                          macFlag
		only                            []string
		asJSON, linkPads                bool
		timeout, wait                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run --iface IF --target MAC --dut FILE [--only ID_PREFIX]... [--json] [--junit FILE] [--pcap FILE]",
		Short: "Run the conformance cases against a device",
		Long: `run sends each case's frames on --iface to the device --target, from the MACs of
the peers in the DUT file, and checks the replies, which one socket receives for
all of those MACs (registered with the interface; no promiscuous mode). It needs
CAP_NET_RAW.

It prints one line per case: its verdict, its ID and a detail. PASS: the device
did what the rule says; VARIANT: it did something else the specification also
allows, named (e.g. "mode-0 entry treated as unknown source"); FAIL: it broke
the rule (the line also shows the rule and the frames sent (>) and received (<)
in hex); SKIP: the DUT file lacks a key the case needs, named. Responder cases
send the device requests; initiator cases make the device send requests
through the DUT file's [initiator] trigger commands and answer them. A device
that stops answering during the run is reported with its likely causes. --json
prints instead one JSON object {"cases":[{"id","section","role","rule",
"verdict","variant","reason","detail"}],"passed","variants","failed","skipped",
"silent"} (role responder or initiator; variant for the verdict variant, reason
for skip; silent when the device went silent), with the frames of failed cases
on standard error. --junit writes JUnit XML,
--pcap the frames of the cases. --only runs the cases under an ID prefix:
oetp/cmd runs a section, oetp/cmd/3 one case; repeat it for several.

Through a physical NIC, which pads frames shorter than 60 bytes, give
--link-pads: the cases that must send shorter frames are then skipped.

The runner is the initiator of every MAC it sends from (the DUT's peers and its
unknown MAC): it holds their initiator roles for the whole run, as rmem and dma
do for theirs, so no other process takes its replies and it takes none of
theirs. A role another process holds is waited for (--wait), then the run exits
2 naming the holder. An oetp serve on one of those MACs (a responder) runs
beside it.

Exit status: 0 no case failed (variants and skips included), 1 a case failed, 2 bad usage, a bad DUT file or
an interface the runner cannot use.`,
		Example: `  oetp conformance dut-template > dut.toml
  oetp conformance run --iface eth1 --target 02:0e:0c:00:00:01 --dut dut.toml
  oetp conformance run --iface eth1 --target 02:0e:0c:00:00:01 --dut dut.toml --only oetp/access --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if iface == "" {
				return usagef("--iface is required: the interface on the device's network (list them with `ip link`)")
			}
			if target.m.IsZero() {
				return usagef("--target is required: the device's unicast MAC, e.g. 02:0e:0c:00:00:01")
			}
			if target.m.IsGroup() {
				return usagef("--target %v is a group address: give the device's own unicast MAC", target.m)
			}
			if dutPath == "" {
				return usagef("--dut is required: the DUT file (write one with `oetp conformance dut-template > dut.toml`)")
			}
			if timeout < 0 {
				return usagef("--timeout %v is negative: give a duration such as 500ms", timeout)
			}
			dut, err := conformance.LoadDUT(dutPath)
			if err != nil {
				return usagef("--dut: %v", err)
			}
			if _, err := conformance.Select(only); err != nil {
				return usagef("%v", err)
			}
			ifi, err := lookupIface("--iface", iface)
			if err != nil {
				return err
			}
			maxFrame := min(wire.MaxFrameLen+4, ifi.MTU+wire.HeaderLen)
			if maxFrame < wire.MinFrameLen {
				return usagef("--iface %s has MTU %d, too small for oETP frames: raise it (ip link set dev %s mtu 9000)", iface, ifi.MTU, iface)
			}
			return confrun.Run(cmd, confrun.Config{Iface: iface, MaxFrame: maxFrame, Target: target.m, DUT: dut, Only: only,
				Timeout: timeout, Wait: wait, LinkPads: linkPads, Pcap: pcapPath, JSON: asJSON, JUnit: junit})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&iface, "iface", "", "network interface `IF` on the device's network")
	fs.Var(&target, "target", "the device's unicast `MAC`")
	fs.StringVar(&dutPath, "dut", "", "the DUT `FILE` (TOML) saying how the device is programmed")
	fs.StringArrayVar(&only, "only", nil, "run only the cases under `ID_PREFIX` (oetp/cmd, oetp/cmd/3); repeatable")
	fs.BoolVar(&asJSON, "json", false, "print the results as one JSON object")
	fs.StringVar(&junit, "junit", "", "write the results as JUnit XML to `FILE`")
	fs.StringVar(&pcapPath, "pcap", "", "write the frames the cases sent and received to `FILE` (pcapng)")
	fs.DurationVar(&timeout, "timeout", conformance.DefaultTimeout, "how long to wait for each reply `D`")
	fs.DurationVar(&wait, "wait", 10*time.Second, "wait up to `D` for the initiator role of each MAC the runner sends from while another process (an rmem, a dma) holds it, then exit 2 naming it; 0 refuses at once")
	fs.BoolVar(&linkPads, "link-pads", false, "the interface pads frames shorter than 60 bytes (a physical NIC): skip the cases that need shorter frames")
	return cmd
}

func newConformanceListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the conformance cases: ID, section, role, the rule each checks and the DUT keys it needs",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return confrun.List(cmd.OutOrStdout(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the cases as a JSON array")
	return cmd
}

func newConformanceTemplateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dut-template",
		Short: "Print a commented DUT file, with the oetp serve command that programs a software endpoint to match it",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), conformance.Template)
			return err
		},
	}
}

// runInterruptible runs a long command's work until it returns or a signal
// interrupts it (interrupt.Run).
func runInterruptible(cmd *cobra.Command, what string, grace time.Duration, work func(ctx context.Context) error) error {
	return interrupt.Run(cmd, what, grace, work)
}
