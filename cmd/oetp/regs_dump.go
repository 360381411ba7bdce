package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/addrtable"
	"github.com/openenoc/oetp/endpoint"
)

// dumpReg is one register of regs dump: its node, the fields decoded from
// its word(s), and the addresses its value takes.
type dumpReg struct {
	n      addrtable.Node
	fields []addrtable.Node
	addrs  []uint32
}

// dumpJSON is one line of regs dump --json.
type dumpJSON struct {
	Name    string `json:"name"`
	Address uint32 `json:"address"`
	// Value is the register's value (fields joined for a multi-word CSR).
	Value *big.Int `json:"value"`
	// Fields are the register's fields by their own name, shifted down.
	Fields map[string]uint32 `json:"fields"`
}

// underPath reports whether name is path or below it ("a.b", "a[2]").
func underPath(name, path string) bool {
	return path == "" || name == path || strings.HasPrefix(name, path+".") || strings.HasPrefix(name, path+"[")
}

// dumpPlan returns the readable registers under path, in address order,
// and the volatile ones it leaves out. A register is a single node that is
// not a branch and not a field of another register at its address; its
// fields are the masked nodes below it at its address.
func dumpPlan(t *addrtable.Table, path string) (regs []dumpReg, skipped []string) {
	nodes := t.Nodes()
	isField := map[string]bool{}
	var all []dumpReg
	for _, n := range nodes {
		if n.Mode != addrtable.Single || n.Branch || !n.Perm.Readable() || !underPath(n.Name, path) {
			continue
		}
		if isField[n.Name] {
			continue
		}
		r := dumpReg{n: n}
		if !n.Masked() && n.Words <= 1 {
			for _, c := range nodes {
				if c.Address == n.Address && c.Masked() && c.Mode == addrtable.Single && strings.HasPrefix(c.Name, n.Name+".") {
					isField[c.Name] = true
					if c.Perm.Readable() {
						r.fields = append(r.fields, c)
					}
				}
			}
		}
		all = append(all, r)
	}
	for _, r := range all {
		if isField[r.n.Name] {
			continue
		}
		vol := r.n.Volatile()
		for _, f := range r.fields {
			vol = vol || f.Volatile()
		}
		if vol {
			skipped = append(skipped, r.n.Name)
			continue
		}
		r.addrs, _ = r.n.Reads(0)
		sort.SliceStable(r.fields, func(i, j int) bool { return r.fields[i].Shift() < r.fields[j].Shift() })
		regs = append(regs, r)
	}
	return regs, skipped
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

// short is a field's name relative to its register.
func short(field, reg string) string { return strings.TrimPrefix(field, reg+".") }

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
			regs, skipped := dumpPlan(t, path)
			if path != "" && len(regs) == 0 && len(skipped) == 0 {
				if _, err := regsNode(t, path); err != nil {
					return err
				}
				return usagef("no readable register under %q in %s: nothing to dump", path, t.File())
			}
			for _, s := range skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "oetp: note: %s is volatile (reading it has side effects): not read; read it with oetp regs read\n", s)
			}
			if len(regs) == 0 {
				return nil
			}
			var addrs []uint32
			for _, r := range regs {
				addrs = append(addrs, r.addrs...)
			}
			f.addr.v = regs[0].n.Address
			s, err := f.open(endpoint.ModeRMEM)
			if err != nil {
				return f.openFailed(cmd, "regs dump", err)
			}
			ctx, cancel := opContext(cmd)
			defer cancel()
			t0 := time.Now()
			words, err := s.readWords(ctx, addrs)
			elapsed := time.Since(t0)
			if cerr := s.close(); err == nil && cerr != nil {
				err = cerr
			}
			out := cmd.OutOrStdout()
			printed, perr := printDump(out, regs, words, f.json)
			if perr != nil {
				return perr
			}
			if err == nil {
				return nil
			}
			failed := regs[printed]
			f.addr.v = addrs[len(words)]
			res := regsResult{opResult: newResult("regs dump", &f.opFlags, err, elapsed), Node: failed.n.Name, Mask: failed.n.Mask, Done: len(words)}
			if f.json {
				if err := f.print(cmd, res, false, ""); err != nil {
					return err
				}
			}
			quiet := f.opFlags
			quiet.json = false
			e := res.opResult
			e.Peer += " " + failed.n.Name
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

// printDump prints the registers whose words are all in words and returns
// how many it printed.
func printDump(w io.Writer, regs []dumpReg, words []uint32, asJSON bool) (int, error) {
	var tw *tabwriter.Writer
	var enc *json.Encoder
	if asJSON {
		enc = json.NewEncoder(w)
		enc.SetEscapeHTML(false)
	} else {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tADDRESS\tVALUE\tFIELDS")
	}
	i, printed := 0, 0
	for _, r := range regs {
		k := len(r.addrs)
		if i+k > len(words) {
			break
		}
		ws := words[i : i+k]
		i += k
		v, err := r.n.Value(ws)
		if err != nil {
			return printed, err
		}
		fields := map[string]uint32{}
		var text []string
		for _, fl := range r.fields {
			fv := fl.Field(ws[0])
			fields[short(fl.Name, r.n.Name)] = fv
			text = append(text, fmt.Sprintf("%s=0x%x", short(fl.Name, r.n.Name), fv))
		}
		if asJSON {
			if err := enc.Encode(dumpJSON{Name: r.n.Name, Address: r.n.Address, Value: v, Fields: fields}); err != nil {
				return printed, err
			}
		} else {
			fmt.Fprintf(tw, "%s\t0x%08x\t0x%08x\t%s\n", r.n.Name, r.n.Address, v, strings.Join(text, " "))
		}
		printed++
	}
	if tw != nil {
		return printed, tw.Flush()
	}
	return printed, nil
}
