package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/addrtable"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/regs"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
)

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
