package hub

import (
	"errors"

	"github.com/openenoc/oetp/hub/proto"
)

// tableNode is an address-table node as the hub serves it.
type tableNode struct {
	proto.Node
	volatile bool
}

// field returns the node's field of word, shifted down.
func (n tableNode) field(word uint32) uint32 {
	if n.Mask == 0 {
		return 0
	}
	v := word & n.Mask
	for m := n.Mask; m&1 == 0; m >>= 1 {
		v >>= 1
	}
	return v
}

// place shifts v up into the node's mask.
func (n tableNode) place(v uint32) (data, mask uint32, err error) {
	return 0, 0, errors.New("not implemented")
}

// table is a device's loaded address table.
type table struct {
	list   []tableNode
	byName map[string]int
}

func (t *table) nodes() []tableNode { return t.list }

func (t *table) node(name string) (tableNode, error) {
	return tableNode{}, errors.New("not implemented")
}

func loadTable(path string) (*table, error) {
	return nil, errors.New("address tables are not supported yet")
}
