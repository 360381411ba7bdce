package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/addrtable"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/regs"
	"github.com/openenoc/oetp/endpoint"
)

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
