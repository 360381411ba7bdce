package endpoint

// ridIndex maps the Request IDs of outstanding requests to their entries in
// the initiator's table, in O(1) and without allocating after init: open
// addressing with linear probing over a power-of-two number of cells, at
// least twice the number of entries, and backward-shift deletion (no
// tombstones, so lookups stay short however long the endpoint runs).
//
// The home cell of an ID is its low bits: the endpoint allocates Request IDs
// sequentially, so the IDs outstanding at one time, at most len(entries)
// apart in the common case, land in distinct cells; any other pattern still
// works, only with longer probes.
type ridIndex struct {
	mask  uint32
	slots []int32  // entry index + 1; 0 is an empty cell
	keys  []uint32 // the Request ID in each occupied cell
}

func (x *ridIndex) init(entries int) {
	n := 2
	for n < 2*entries {
		n <<= 1
	}
	x.mask = uint32(n - 1)
	x.slots = make([]int32, n)
	x.keys = make([]uint32, n)
}

// get returns the entry of rid, or -1.
func (x *ridIndex) get(rid uint32) int {
	for i := rid & x.mask; ; i = (i + 1) & x.mask {
		s := x.slots[i]
		if s == 0 {
			return -1
		}
		if x.keys[i] == rid {
			return int(s - 1)
		}
	}
}

// put adds rid for entry e. rid must not be present; the table never holds
// more IDs than entries, so a free cell exists.
func (x *ridIndex) put(rid uint32, e int) {
	i := rid & x.mask
	for x.slots[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.slots[i], x.keys[i] = int32(e+1), rid
}

// del removes rid if present.
func (x *ridIndex) del(rid uint32) {
	i := rid & x.mask
	for {
		if x.slots[i] == 0 {
			return
		}
		if x.keys[i] == rid {
			break
		}
		i = (i + 1) & x.mask
	}
	// Backward shift: move later members of the probe run into the hole
	// unless their home cell lies cyclically in (hole, their cell].
	for j := i; ; {
		j = (j + 1) & x.mask
		if x.slots[j] == 0 {
			x.slots[i] = 0
			return
		}
		k := x.keys[j] & x.mask
		if i <= j {
			if i < k && k <= j {
				continue
			}
		} else if i < k || k <= j {
			continue
		}
		x.slots[i], x.keys[i] = x.slots[j], x.keys[j]
		i = j
	}
}
