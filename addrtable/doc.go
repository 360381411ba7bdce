// Package addrtable loads register address tables, so that users name their
// board's registers ("ctrl.reset") instead of giving addresses. It reads the
// formats FPGA projects already have: IPbus uHAL XML, LiteX csr.csv and
// csr.json, IP-XACT (IEEE 1685-2009, 1685-2014 and 1685-2022) component XML, and a
// native TOML format of oetp's own.
//
// Every format becomes the same list of [Node]s: a dotted name, an oETP byte
// address, a bit mask, a permission and an access mode. Load picks the
// parser by the file's extension and, for .xml, by the content (a top
// element in an IP-XACT namespace is IP-XACT, anything else uHAL); Parse
// takes the format explicitly. IPbus word address W is oETP byte address
// 4×W; a table that does not fit the 32-bit byte space is refused.
//
// A node with a mask is a bitfield: Node.Field shifts its bits down and
// Node.Place shifts a value up, and a bitfield write is one RMEM write with
// BitEnable = Mask, leaving the word's other bits untouched. Node.Reads,
// Node.Value, Node.Writes and Node.BlockWrites turn a node operation into
// its RMEM word accesses, so every user of a table accesses a node the same
// way and refuses the same things before anything is sent.
//
// Errors are *Error values naming the file, the line (or JSON key path), the
// node and the field at fault; overlaps are warnings (Table.Warnings).
// docs/address-table-formats.md gives each format's rules in full.
package addrtable
