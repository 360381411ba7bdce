package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/bench"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/node"
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
         a fresh veth pair, each beside the windowed raw
         exchange (32 in flight) of the same run. Needs root.

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
				return bench.WindowEcho(windowEcho, cmd.InOrStdin(), cmd.OutOrStdout())
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
	f.StringVar(&floorEcho, bench.FloorFlag, "", "with --"+bench.RawEchoFlag+", the floor rows' echo with a region `SPEC` (the proc scenario's own use)")
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
