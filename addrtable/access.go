package addrtable

import (
	"fmt"
	"math/big"
)

// This file turns node operations into RMEM word accesses, so that every
// user of a table (oetp regs, the hub) accesses a node the same way.

// Reads returns the byte addresses of the RMEM reads that read n, in order:
// one for a register or bitfield; Words for a multi-word LiteX CSR (most
// significant first); count words for a block (increasing addresses) or a
// port (all at Address), where count 0 means the node's whole Size. It fails
// if n is not readable or count does not fit.
func (n Node) Reads(count int) ([]uint32, error) {
	if !n.Perm.Readable() {
		return nil, fmt.Errorf("node %q is write-only (permission %s)", n.Name, n.Perm)
	}
	k, err := n.accesses(count)
	if err != nil {
		return nil, err
	}
	addrs := make([]uint32, k)
	for i := range addrs {
		addrs[i] = n.accessAddr(i)
	}
	return addrs, nil
}

// accesses is the number of word accesses to n (count for a block or port,
// 0 meaning all of it).
func (n Node) accesses(count int) (int, error) {
	switch {
	case count < 0:
		return 0, fmt.Errorf("count %d is negative", count)
	case n.Mode.IsBlock() || n.Mode.IsPort():
		all := int(n.Size / 4)
		if count == 0 {
			return all, nil
		}
		if count > all {
			return 0, fmt.Errorf("node %q holds %d words, not %d", n.Name, all, count)
		}
		return count, nil
	case count != 0:
		return 0, fmt.Errorf("a count applies to block and port nodes; %q is a %s node", n.Name, n.modeWords())
	}
	return n.words(), nil
}

// accessAddr is the address of word access i to n.
func (n Node) accessAddr(i int) uint32 {
	switch {
	case n.Mode.IsPort():
		return n.Address
	case n.Mode.IsBlock():
		return n.Address + uint32(i)*4
	}
	return n.WordAddress(i)
}

// Value is the value of a register or bitfield from the words its Reads
// returned: the field of one word shifted down, or the joined words of a
// multi-word CSR.
func (n Node) Value(words []uint32) (*big.Int, error) {
	if n.Mode != Single {
		return nil, fmt.Errorf("node %q is a %s node: it has words, not a value", n.Name, n.Mode)
	}
	return n.Join(words)
}

// Access is one RMEM write: Data under BitEnable Mask at byte address Addr.
type Access struct {
	Addr, Data, Mask uint32
}

// Writes returns the RMEM writes that store v in a register or bitfield:
// ONE write with BitEnable = Mask and v shifted into it for a one-word node
// (no read-modify-write: the word's other bits are untouched), or Words
// writes, most significant first, for a multi-word LiteX CSR (LiteX's
// order: the last, least significant word commits an atomic CSR). It fails,
// before anything is sent, if n is not writable, not a register, or v does
// not fit.
func (n Node) Writes(v *big.Int) ([]Access, error) {
	if !n.Perm.Writable() {
		return nil, fmt.Errorf("node %q is read-only (permission %s)", n.Name, n.Perm)
	}
	if n.Mode != Single {
		return nil, fmt.Errorf("node %q is a %s node: write its words", n.Name, n.Mode)
	}
	if n.words() == 1 {
		if v.Sign() < 0 || v.BitLen() > 32 {
			return nil, fmt.Errorf("value 0x%X does not fit node %q: its field is %d bits wide (mask 0x%08X), largest 0x%X", v, n.Name, n.Width(), n.Mask, n.Mask>>n.Shift())
		}
		d, m, err := n.Place(uint32(v.Uint64()))
		if err != nil {
			return nil, err
		}
		return []Access{{Addr: n.Address, Data: d, Mask: m}}, nil
	}
	words, err := n.Split(v)
	if err != nil {
		return nil, err
	}
	out := make([]Access, len(words))
	for i, w := range words {
		out[i] = Access{Addr: n.WordAddress(i), Data: w, Mask: n.Mask}
	}
	return out, nil
}

// BlockWrites returns the whole-word RMEM writes that store words in a
// block (from its start, at increasing addresses) or a port (all at
// Address, in order). It fails if n is not writable, not a block or port,
// or holds fewer words.
func (n Node) BlockWrites(words []uint32) ([]Access, error) {
	if !n.Perm.Writable() {
		return nil, fmt.Errorf("node %q is read-only (permission %s)", n.Name, n.Perm)
	}
	if !n.Mode.IsBlock() && !n.Mode.IsPort() {
		return nil, fmt.Errorf("node %q is a register, not a block or port", n.Name)
	}
	if len(words) > int(n.Size/4) {
		return nil, fmt.Errorf("%d words for node %q, which holds %d", len(words), n.Name, n.Size/4)
	}
	out := make([]Access, len(words))
	for i, w := range words {
		out[i] = Access{Addr: n.accessAddr(i), Data: w, Mask: FullMask}
	}
	return out, nil
}
