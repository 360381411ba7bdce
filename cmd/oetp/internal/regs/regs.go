// Package regs is what oetp regs does with an address table (package
// addrtable) once the command has its flags: the list of nodes, the words a
// read takes and the writes a value makes (refused before anything is
// sent), the accesses in order with the word that failed, and the
// registers of a dump with their fields.
package regs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/openenoc/oetp/addrtable"
	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/num"
)

// NodeJSON is a node in regs list --json.
type NodeJSON struct {
	Name        string `json:"name"`
	Address     uint32 `json:"address"`
	Mask        uint32 `json:"mask"`
	Mode        string `json:"mode"`
	Permission  string `json:"permission"`
	Size        uint32 `json:"size"`
	Words       uint32 `json:"words"`
	Stride      uint32 `json:"stride"`
	Volatile    bool   `json:"volatile"`
	Branch      bool   `json:"branch"`
	Description string `json:"description"`
	// Reset is the value after reset (a field's shifted down), when the
	// table gives it (IP-XACT).
	Reset *uint32 `json:"reset,omitempty"`
}

// PrintNodes prints the human table of regs list.
func PrintNodes(w io.Writer, nodes []addrtable.Node) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADDRESS\tMASK\tMODE\tPERM\tSIZE\tDESCRIPTION")
	for _, n := range nodes {
		mode := n.Mode.String()
		switch {
		case n.Words > 1:
			mode = fmt.Sprintf("%d words", n.Words)
		case n.Branch:
			mode = "single, branch"
		}
		if n.Volatile() && !n.Mode.IsPort() {
			mode += ", volatile"
		}
		fmt.Fprintf(tw, "%s\t0x%08x\t0x%08x\t%s\t%s\t%d\t%s\n", n.Name, n.Address, n.Mask, mode, n.Perm, n.Size, n.Description)
	}
	return tw.Flush()
}

// HubKnowsVolatile reports whether the hub's device never retries n: its
// own address table has a volatile node (a port, non-incremental or TOML
// volatile = true node) of that name at n's address, spanning at least
// n's bytes, whose range the hub adds to the device's volatile ranges. A hub
// whose node records predate the volatile flag (words = 0) knows it only
// for a port.
func HubKnowsVolatile(dev *client.Device, n addrtable.Node) bool {
	if !dev.HasTable {
		return false
	}
	hn, err := dev.Node(n.Name)
	if err != nil || hn.Address != n.Address {
		return false
	}
	if hn.Words == 0 {
		return n.Mode.IsPort() && addrtable.Mode(hn.Mode).IsPort()
	}
	span := hn.Size // the range the hub spares: addrtable.Node.Span
	if addrtable.Mode(hn.Mode).IsPort() {
		span = 4
	}
	return hn.Volatile && span >= n.Span()
}

// Device is what regs needs of an initiator: *endpoint.Endpoint, or a
// one-shot session.
type Device interface {
	RMEMRead(ctx context.Context, peer int, addr uint32) (uint32, error)
	RMEMWrite(ctx context.Context, peer int, addr, data, mask uint32) error
}

// Reads returns the addresses a read of n takes; a refusal is bad
// usage (nothing sent).
func Reads(n addrtable.Node, count int) ([]uint32, error) {
	addrs, err := n.Reads(count)
	if err != nil {
		return nil, cli.Usagef("%v: nothing sent", err)
	}
	return addrs, nil
}

// Context is the context of the accesses to n: a volatile node (a port,
// a TOML node with volatile = true) gets exactly one try per access
// whatever retry policy the peer has, so recovery can never execute it
// twice.
func Context(ctx context.Context, n addrtable.Node) context.Context {
	if n.Volatile() {
		return endpoint.WithRetry(ctx, endpoint.RetryPolicy{})
	}
	return ctx
}

// Read reads the words at addrs, in order, and returns those read.
func Read(ctx context.Context, dev Device, addrs []uint32) ([]uint32, error) {
	words := make([]uint32, 0, len(addrs))
	for i, a := range addrs {
		w, err := dev.RMEMRead(ctx, 0, a)
		if err != nil {
			if len(addrs) > 1 {
				err = &wordError{i: i, k: len(addrs), addr: a, err: err}
			}
			return words, err
		}
		words = append(words, w)
	}
	return words, nil
}

// Write performs the writes in order and returns how many completed.
func Write(ctx context.Context, dev Device, writes []addrtable.Access) (int, error) {
	for i, w := range writes {
		if err := dev.RMEMWrite(ctx, 0, w.Addr, w.Data, w.Mask); err != nil {
			if len(writes) > 1 {
				err = &wordError{i: i, k: len(writes), addr: w.Addr, err: err}
			}
			return i, err
		}
	}
	return len(writes), nil
}

// wordError says which word of a multi-word access failed; it keeps the
// operation's code (endpoint.CodeOf unwraps it).
type wordError struct {
	i, k int
	addr uint32
	err  error
}

func (e *wordError) Error() string {
	before := "none before it"
	if e.i == 1 {
		before = "word 0 before it completed"
	} else if e.i > 1 {
		before = fmt.Sprintf("words 0..%d before it completed", e.i-1)
	}
	return fmt.Sprintf("word %d of %d (0x%08x): %v; %s", e.i, e.k, e.addr, e.err, before)
}
func (e *wordError) Unwrap() error { return e.err }

// ParseValue parses a VALUE argument in oetp's number syntax (internal/num:
// decimal, 0x hex, K/M/G suffixes); a plain decimal or hex number wider than
// 64 bits (a wide LiteX CSR) is accepted too.
func ParseValue(s string) (*big.Int, error) {
	v, err := num.Parse(s)
	if err == nil {
		return new(big.Int).SetUint64(v), nil
	}
	t := strings.TrimSpace(s)
	base := 10
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		base, t = 16, t[2:]
	}
	if b, ok := new(big.Int).SetString(t, base); ok && t != "" && t[0] != '+' && t[0] != '-' && !strings.Contains(t, "_") && b.BitLen() > 64 {
		return b, nil
	}
	return nil, err
}

// Plan checks the values against the node and returns its RMEM writes
// and, for a register, the value. Everything it refuses is bad usage:
// nothing has been sent.
func Plan(n addrtable.Node, args []string) ([]addrtable.Access, *big.Int, error) {
	vals := make([]*big.Int, len(args))
	for i, a := range args {
		var err error
		if vals[i], err = ParseValue(a); err != nil {
			return nil, nil, cli.Usagef("VALUE: %v", err)
		}
	}
	if n.Mode.IsBlock() || n.Mode.IsPort() {
		words := make([]uint32, len(vals))
		for i, v := range vals {
			if v.BitLen() > 32 {
				return nil, nil, cli.Usagef("VALUE %s (word %d) does not fit 32 bits: nothing sent", args[i], i)
			}
			words[i] = uint32(v.Uint64())
		}
		writes, err := n.BlockWrites(words)
		if err != nil {
			return nil, nil, cli.Usagef("%v: nothing sent", err)
		}
		return writes, nil, nil
	}
	if len(vals) != 1 {
		return nil, nil, cli.Usagef("node %q is a register: give one VALUE, not %d", n.Name, len(vals))
	}
	writes, err := n.Writes(vals[0])
	if err != nil {
		return nil, nil, cli.Usagef("%v: nothing sent", err)
	}
	return writes, vals[0], nil
}

// Reg is one register of regs dump: its node, the fields decoded from
// its word(s), and the addresses its value takes.
type Reg struct {
	Node   addrtable.Node
	Fields []addrtable.Node
	Addrs  []uint32
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

// Under reports whether name is path or below it ("a.b", "a[2]").
func Under(name, path string) bool {
	return path == "" || name == path || strings.HasPrefix(name, path+".") || strings.HasPrefix(name, path+"[")
}

// DumpPlan returns the readable registers under path, in address order,
// and the volatile ones it leaves out. A register is a single node that is
// not a branch and not a field of another register at its address; its
// fields are the masked nodes below it at its address.
func DumpPlan(t *addrtable.Table, path string) (regs []Reg, skipped []string) {
	nodes := t.Nodes()
	isField := map[string]bool{}
	var all []Reg
	for _, n := range nodes {
		if n.Mode != addrtable.Single || n.Branch || !n.Perm.Readable() || !Under(n.Name, path) {
			continue
		}
		if isField[n.Name] {
			continue
		}
		r := Reg{Node: n}
		if !n.Masked() && n.Words <= 1 {
			for _, c := range nodes {
				if c.Address == n.Address && c.Masked() && c.Mode == addrtable.Single && strings.HasPrefix(c.Name, n.Name+".") {
					isField[c.Name] = true
					if c.Perm.Readable() {
						r.Fields = append(r.Fields, c)
					}
				}
			}
		}
		all = append(all, r)
	}
	for _, r := range all {
		if isField[r.Node.Name] {
			continue
		}
		vol := r.Node.Volatile()
		for _, f := range r.Fields {
			vol = vol || f.Volatile()
		}
		if vol {
			skipped = append(skipped, r.Node.Name)
			continue
		}
		r.Addrs, _ = r.Node.Reads(0)
		sort.SliceStable(r.Fields, func(i, j int) bool { return r.Fields[i].Shift() < r.Fields[j].Shift() })
		regs = append(regs, r)
	}
	return regs, skipped
}

// short is a field's name relative to its register.
func short(field, reg string) string { return strings.TrimPrefix(field, reg+".") }

// PrintDump prints the registers whose words are all in words and returns
// how many it printed.
func PrintDump(w io.Writer, regs []Reg, words []uint32, asJSON bool) (int, error) {
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
		k := len(r.Addrs)
		if i+k > len(words) {
			break
		}
		ws := words[i : i+k]
		i += k
		v, err := r.Node.Value(ws)
		if err != nil {
			return printed, err
		}
		fields := map[string]uint32{}
		var text []string
		for _, fl := range r.Fields {
			fv := fl.Field(ws[0])
			fields[short(fl.Name, r.Node.Name)] = fv
			text = append(text, fmt.Sprintf("%s=0x%x", short(fl.Name, r.Node.Name), fv))
		}
		if asJSON {
			if err := enc.Encode(dumpJSON{Name: r.Node.Name, Address: r.Node.Address, Value: v, Fields: fields}); err != nil {
				return printed, err
			}
		} else {
			fmt.Fprintf(tw, "%s\t0x%08x\t0x%08x\t%s\n", r.Node.Name, r.Node.Address, v, strings.Join(text, " "))
		}
		printed++
	}
	if tw != nil {
		return printed, tw.Flush()
	}
	return printed, nil
}

// Load loads the address table at path (the flag --table, or a device's
// address_table) and prints its warnings on warn; any problem with it is
// bad configuration.
func Load(path string, warn io.Writer) (*addrtable.Table, error) {
	if path == "" {
		return nil, cli.Usagef("--table is required (or --device NAME with an address_table): an address table (.xml uHAL or IP-XACT, .csv/.json LiteX, .toml oetp)")
	}
	t, err := addrtable.Load(path)
	if err != nil {
		return nil, cli.Usagef("--table: %v", err)
	}
	for _, w := range t.Warnings() {
		fmt.Fprintf(warn, "oetp: warning: %s\n", w)
	}
	return t, nil
}

// Lookup returns the node called name; an unknown name is bad usage.
func Lookup(t *addrtable.Table, name string) (addrtable.Node, error) {
	n, err := t.Node(name)
	if err != nil {
		return n, cli.Usagef("%v", err)
	}
	return n, nil
}

// LookupFor returns the node called name, refusing it (bad usage: nothing
// is sent) if it lacks the permission need.
func LookupFor(t *addrtable.Table, name string, need addrtable.Permission) (addrtable.Node, error) {
	n, err := Lookup(t, name)
	if err != nil {
		return n, err
	}
	switch {
	case need.Readable() && !n.Perm.Readable():
		return n, cli.Usagef("node %q is write-only (permission %s): nothing sent", n.Name, n.Perm)
	case need.Writable() && !n.Perm.Writable():
		return n, cli.Usagef("node %q is read-only (permission %s): nothing sent", n.Name, n.Perm)
	}
	return n, nil
}

// ReadResult is what a read of a node found, for its result and output.
type ReadResult struct {
	Human string
	// Value is the field read (shifted down), nil for a block or a port.
	Value *big.Int
	// Words are the raw words of a block, a port or a multi-word CSR.
	Words []uint32
	// Data is the raw word of a one-word read.
	Data *uint32
}

// DescribeRead says what the words read at addrs from peer mean for n.
func DescribeRead(n addrtable.Node, addrs, words []uint32, peer string) ReadResult {
	var r ReadResult
	head := fmt.Sprintf("regs read %s %s 0x%08x", peer, n.Name, n.Address)
	if n.Masked() {
		head += fmt.Sprintf(" mask 0x%08x", n.Mask)
	}
	switch {
	case n.Mode.IsBlock() || n.Mode.IsPort():
		r.Words = words
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d words (%s)", head, len(words), n.Mode)
		for i, w := range words {
			if i%4 == 0 {
				fmt.Fprintf(&b, "\n0x%08x:", addrs[i])
			}
			fmt.Fprintf(&b, " 0x%08x", w)
		}
		r.Human = b.String()
		return r
	case len(words) > 1:
		r.Words = words
	default:
		w := words[0]
		r.Data = &w
	}
	r.Value, _ = n.Value(words)
	r.Human = fmt.Sprintf("%s = 0x%x", head, r.Value)
	return r
}

// NodeList is the JSON of regs list --json.
func NodeList(t *addrtable.Table, nodes []addrtable.Node) any {
	list := make([]NodeJSON, 0, len(nodes))
	for _, n := range nodes {
		nj := NodeJSON{Name: n.Name, Address: n.Address, Mask: n.Mask, Mode: n.Mode.String(),
			Permission: n.Perm.String(), Size: n.Size, Words: n.Words, Stride: n.Stride, Volatile: n.Volatile(),
			Branch: n.Branch, Description: n.Description}
		if n.HasReset {
			r := n.Reset
			nj.Reset = &r
		}
		list = append(list, nj)
	}
	return struct {
		Table  string     `json:"table"`
		Format string     `json:"format"`
		Nodes  []NodeJSON `json:"nodes"`
	}{t.File(), t.Format().String(), list}
}
