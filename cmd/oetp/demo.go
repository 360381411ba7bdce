package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/demo"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
)

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
