"""Attribute access over a device's address table: ``dev.regs.ctrl.enable.write(1)``,
``dev.regs.status.read()``, ``dev.regs.scratch[2].read()``."""

import re

from ._client import UsageError

_SEG = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def split_name(name):
    """"blk.scratch[2].f" -> ["blk", "scratch", 2, "f"]."""
    out = []
    for part in name.split("."):
        pos = 0
        for m in _SEG.finditer(part):
            if m.start() != pos:
                break
            out.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
            pos = m.end()
        if pos != len(part):
            out.append(part[pos:])  # not a plain name or index: kept whole
    return out


class Regs:
    """One level of the address table's names. An attribute is the next name
    (``regs.ctrl``), an index the next array element (``regs.scratch[2]``).
    A level that is a node has ``read()`` and ``write(v)``: a field reads
    shifted down and writes with one masked RMEM write; writing a read-only
    node, or reading a write-only one, raises UsageError before anything is
    sent. ``node`` is the hub's node record (None for a level that only
    groups others)."""

    def __init__(self, path="", node=None):
        self._path = path
        self._node = node
        self._attrs = {}
        self._items = {}

    @classmethod
    def build(cls, nodes):
        root = cls()
        for n in nodes:
            level = root
            path = ""
            for seg in split_name(n.name):
                if isinstance(seg, int):
                    path += "[%d]" % seg
                    level = level._items.setdefault(seg, cls(path))
                else:
                    path = path + "." + seg if path else seg
                    level = level._attrs.setdefault(seg, cls(path))
            level._node = n
        return root

    @property
    def node(self):
        return self._node

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._attrs[name]
        except KeyError:
            where = self._path or "the address table"
            have = ", ".join(sorted(self._attrs)) or "none"
            if self._items:
                have += " (and elements [%d..%d])" % (min(self._items), max(self._items))
            raise AttributeError("%s has no %r: its names are %s" % (where, name, have)) from None

    def __getitem__(self, i):
        try:
            return self._items[i]
        except (KeyError, TypeError):
            if not self._items:
                raise TypeError("%s is not an array" % (self._path or "the address table")) from None
            raise IndexError("%s[%r]: its elements are [%d..%d]" % (self._path, i, min(self._items), max(self._items))) from None

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return (self._items[i] for i in sorted(self._items))

    def __dir__(self):
        return sorted(set(self._attrs) | {"read", "write", "node"})

    def __repr__(self):
        if self._node is not None:
            return "<oetp.Regs %s @0x%08x mask 0x%08x %s>" % (self._path, self._node.address, self._node.mask, self._node.permission)
        return "<oetp.Regs %s: %s>" % (self._path or "(top)", ", ".join(sorted(self._attrs)) or "%d elements" % len(self._items))

    def _leaf(self):
        if self._node is None:
            raise UsageError("%s is not a register or field: it groups %s" % (self._path or "the address table", ", ".join(sorted(self._attrs))))
        return self._node

    def read(self):
        """The node's value, its field shifted down."""
        n = self._leaf()
        if "r" not in n.permission:
            raise UsageError("node %r is write-only (permission %s): nothing sent" % (n.name, n.permission))
        return n.read()

    def write(self, value):
        """Write ``value`` (shifted up into the field's mask, one masked write)."""
        n = self._leaf()
        if "w" not in n.permission:
            raise UsageError("node %r is read-only (permission %s): nothing sent" % (n.name, n.permission))
        if not isinstance(value, int) or value < 0:
            raise UsageError("node %r: value %r is not an unsigned integer" % (n.name, value))
        width = bin(n.mask).count("1") * max(1, n.words)
        if value >> width:
            raise UsageError("value 0x%x does not fit node %r: it is %d bits wide: nothing sent" % (value, n.name, width))
        n.write(value)
