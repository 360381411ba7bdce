package hub

import (
	"fmt"
	"math/big"

	"github.com/openenoc/oetp/addrtable"
	"github.com/openenoc/oetp/hub/proto"
)

// table is a device's loaded address table.
type table struct {
	t    *addrtable.Table
	list []proto.Node
}

func loadTable(path string) (*table, error) {
	t, err := addrtable.Load(path)
	if err != nil {
		return nil, err
	}
	tb := &table{t: t}
	for _, n := range t.Nodes() {
		if words(n) > proto.MaxNodeWords {
			return nil, fmt.Errorf("address table %s: node %q spans %d words; the hub's node record carries at most %d (docs/hub-protocol.md)",
				path, n.Name, words(n), proto.MaxNodeWords)
		}
		tb.list = append(tb.list, wireNode(n))
	}
	return tb, nil
}

// wireNode is n's node record; loadTable checked its word count.
func wireNode(n addrtable.Node) proto.Node {
	return proto.Node{Name: n.Name, Address: n.Address, Mask: n.Mask, Perm: uint8(n.Perm), Mode: uint8(n.Mode),
		Volatile: n.Volatile(), Words: uint8(words(n)), Size: n.Size, Description: n.Description}
}

func (t *table) nodes() []proto.Node { return t.list }

func (t *table) node(name string) (addrtable.Node, error) { return t.t.Node(name) }

// words is the number of 32-bit words of a node's value.
func words(n addrtable.Node) int {
	if n.Words == 0 {
		return 1
	}
	return int(n.Words)
}

// valueLen is the byte length of a node's value on the wire: 4 per 32 bits.
func valueLen(n addrtable.Node) int { return 4 * max(1, (int(n.Bits())+31)/32) }

// readNode reads a register node: each of its words with one RMEM read,
// fields joined, little-endian in valueLen bytes.
func (d *Device) readNode(n addrtable.Node, out []byte) ([]byte, error) {
	if !n.Perm.Readable() {
		return out, localInvalid("node %q is write-only (permission %s): not read", n.Name, n.Perm)
	}
	if n.Mode.IsBlock() {
		return out, localInvalid("node %q is a %s node of %d bytes: read it as a block (read_block at 0x%08x)", n.Name, n.Mode, n.Size, n.Address)
	}
	k := words(n)
	if k == 1 {
		v, err := d.read(n.Address)
		if err != nil {
			return out, err
		}
		f := n.Field(v)
		return append(out, byte(f), byte(f>>8), byte(f>>16), byte(f>>24)), nil
	}
	ws := make([]uint32, k)
	for i := range ws {
		v, err := d.read(n.WordAddress(i))
		if err != nil {
			return out, fmt.Errorf("word %d of %d: %w", i, k, err)
		}
		ws[i] = v
	}
	v, err := n.Join(ws)
	if err != nil {
		return out, localInvalid("%v", err)
	}
	b := make([]byte, valueLen(n))
	v.FillBytes(b) // big-endian
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return append(out, b...), nil
}

// writeNode writes a register node: a single word with ONE masked RMEM
// write of the field, a multi-word value word by word (most significant
// first, as LiteX commits on the last).
func (d *Device) writeNode(n addrtable.Node, le []byte) error {
	if words(n) == 1 {
		for _, b := range le[min(4, len(le)):] {
			if b != 0 {
				return localInvalid("the value does not fit node %q: its field is %d bits wide", n.Name, n.Width())
			}
		}
		var v uint32
		for i := min(4, len(le)) - 1; i >= 0; i-- {
			v = v<<8 | uint32(le[i])
		}
		data, mask, err := n.Place(v)
		if err != nil {
			return localInvalid("%v", err)
		}
		return d.write(n.Address, data, mask)
	}
	be := make([]byte, len(le))
	for i := range le {
		be[len(le)-1-i] = le[i]
	}
	ws, err := n.Split(new(big.Int).SetBytes(be))
	if err != nil {
		return localInvalid("%v", err)
	}
	for i, w := range ws {
		if err := d.write(n.WordAddress(i), w, n.Mask); err != nil {
			return fmt.Errorf("word %d of %d (words before it were written): %w", i, len(ws), err)
		}
	}
	return nil
}
