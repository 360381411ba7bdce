// Package addrtable loads register address tables, so that users name their
// board's registers ("ctrl.reset") instead of giving addresses. It reads the
// formats FPGA projects already have:
//
//   - IPbus uHAL XML (.xml): nested node elements with id, address, mask,
//     permission, mode, size, description and module includes;
//   - LiteX csr.csv (.csv) and csr.json (.json), as written by LiteX's
//     litex.soc.integration.export (get_csr_csv / get_csr_json);
//   - IP-XACT (IEEE 1685-2014 and 1685-2022) component XML (.xml), as
//     PeakRDL-ipxact, Kactus2 and vendor IP packagers write it;
//   - a native TOML format of oetp's own (.toml), see below.
//
// Every format becomes the same list of [Node]s: a dotted name, an oETP byte
// address, a bit mask, a permission and an access mode. Load picks the
// parser by the file's extension and, for .xml, by the content (a top
// element in an IP-XACT namespace is IP-XACT, anything else uHAL); Parse
// takes the format explicitly.
//
// # Addresses: IPbus words, oETP bytes
//
// oETP addresses are 32-bit BYTE addresses (RMEM accesses are aligned words
// at byte addresses that are multiples of 4). IPbus addresses are 32-bit
// WORD addresses: IPbus word address W is oETP byte address 4×W. A uHAL
// register at address="0x0003" is therefore RMEM address 0x0000000C, and a
// uHAL block of size="256" (words) is a 1024-byte range. A uHAL table whose
// word addresses reach 0x40000000 or beyond does not fit oETP's 32-bit byte
// space and is refused with an error naming the node.
//
// In uHAL XML a child's address is relative to its parent's, and the
// addresses add up along the path (uHAL's calculateHierarchicalAddresses).
// A module node's address is combined with the included file's top-node
// address the way uHAL does it (bitwise OR; usually the included top node
// has no address, so it is simply the module's offset). Names are the
// dotted path of ids without the top node's id, as uHAL's getNode: a file
//
//	<node id="TOP">
//	  <node id="ctrl" address="0x1">
//	    <node id="reset" mask="0x1"/>
//	  </node>
//	</node>
//
// has the nodes "ctrl" (byte address 0x4, whole word) and "ctrl.reset"
// (byte address 0x4, mask 0x00000001). Module paths (module="file://sub.xml"
// or module="sub.xml") are relative to the directory of the including
// file; an include cycle is an error that names the chain of files. Only
// file includes are supported (no http://, no wildcards).
//
// uHAL semantics kept: a node without mode is "single" if it has no
// children or only masked children; a node whose children include whole
// words is a branch (Node.Branch) and, as in uHAL, can still be read as the
// single word at its address. permission defaults to rw, mask to
// 0xFFFFFFFF. Masked nodes may not have mode, size, module or children;
// module nodes may not have mask, mode, size, permission or children;
// mode="block"/"incremental"/"inc" needs size; "non-incremental",
// "non-inc" and "port" are FIFO-like ports whose size is optional (default
// one word). A size without mode is ignored as uHAL ignores it, with a
// warning (Table.Warnings). The attributes class, parameters, tags and
// fwinfo are accepted and ignored. Any other attribute is an error, so that
// a misspelled "permision" cannot silently make a read-only register
// writable. A mask must be one contiguous run of bits.
//
// # LiteX csr.csv / csr.json
//
// LiteX addresses are already byte addresses and are used as they are. A
// register row gives its size in CSR words. With config_csr_data_width = 32
// (LiteX's default) every CSR word is one 32-bit word; a CSR of size n > 1
// occupies n consecutive words, the first (lowest address) holding the most
// significant 32 bits, as LiteX's generated accessors read and write them.
// The word stride is config_csr_alignment/8 bytes (4 by default, 8 on SoCs
// with a 64-bit CSR alignment). With a data width of 8 or 16 each word
// carries only its low 8 or 16 bits (Node.Mask = 0xFF or 0xFFFF) and the
// value is assembled from the words most significant first, exactly as
// LiteX does. The data width and alignment are read from the constants
// (config_csr_data_width, config_csr_alignment); without them 32 is assumed
// and Table.Warnings says so. Such multi-word registers are one Node with
// Words > 1: use Node.WordAddress, Node.Join and Node.Split. Rows of type
// "ro" are read-only, "rw" read-write. memory_region rows / "memories"
// entries become block nodes named "mems.NAME" (LiteX's RemoteClient names
// them wb.mems.NAME). csr_base rows and constants are available through
// Table.Bases and Table.Constants.
//
// # IP-XACT
//
// The component's memory maps are read: address blocks, register files,
// registers and fields. Names are the dotted path block.register.field
// (with more than one memory map, the map's name leads). Addresses are in
// the map's addressUnitBits (8 by default) and become byte addresses.
// Registers are 1 to 32 bits wide at byte addresses that are multiples of
// 4 (a narrower register occupies the low bits of its word); a register is
// a node of the whole width and each field a node with the field's mask.
// Access (read-only, write-only, read-write, writeOnce, read-writeOnce;
// 2014's <access> or 2022's access policies) is inherited from the block to
// the register to the field; a register with fields allows what its fields
// together allow, so writing a read-only field is refused before anything
// is sent. A field with a readAction is volatile (its reads are never
// repeated). Field reset values (resets/reset/value) are Node.Reset; a
// register's is the fields' together when each field has one. Dimensioned
// registers and register files (2014's <dim>, 2022's <array>, several dims
// for more dimensions) become one node per element named name[i] (name[i][j]),
// spaced by 2022's <stride> or, without it, by the register's size (a
// register file's <range>). An address block without registers is one
// block node of its range; usage "reserved" blocks are skipped. Numbers
// are literals: decimal, 0x hex, Verilog 'h/'d/'b/'o (with an optional
// width), and the K/M/G suffixes; expressions and parameter references are
// refused with an error asking for the value. Banks, subspace maps and
// memory remaps are skipped with a warning. 1685-2009 (SPIRIT) files are
// refused with an error saying to save them as 2014 or 2022.
//
// # Native TOML
//
// The native format is a flat list of nodes with full dotted names and byte
// addresses:
//
//	[[node]]
//	name = "ctrl"             # dotted name, required
//	address = 0x0000_0004     # oETP byte address, a multiple of 4, required ("4K" as a string: oetp's number syntax)
//	permission = "rw"         # r, w, rw (or uHAL's spellings); default rw
//	description = "control register"
//
//	[[node]]
//	name = "ctrl.reset"
//	address = 0x4
//	bits = "0"                # or mask = 0x1; bits = "7:4" is mask 0xF0
//	permission = "w"
//
//	[[node]]
//	name = "fifo"
//	address = 0x100
//	mode = "port"             # single (default), block, incremental, non-incremental, port
//	size = 64                 # bytes, a multiple of 4; required for block modes
//	volatile = true           # reads or writes have side effects: never retried
//
// Unknown keys are errors. examples/regs.toml is a complete example.
//
// # Bitfields
//
// A node with a mask is a bitfield. Node.Field shifts the masked bits of a
// word down; Node.Place shifts a value up into the mask and refuses a value
// that does not fit or a node that is not writable. A bitfield write is ONE
// RMEM write with BitEnable = Mask: oETP's BitEnable does in one request
// what IPbus needs a read-modify-write for, and the other bits of the word
// are not touched.
//
// Node.Reads, Node.Value, Node.Writes and Node.BlockWrites turn a node
// operation into its RMEM word accesses (one masked write for a bitfield,
// the words of a multi-word CSR most significant first, a block's words at
// increasing addresses, a port's all at one address), so that every user of
// a table accesses a node the same way and refuses the same things before
// anything is sent.
//
// # Errors
//
// Errors are *Error values naming the file, the line (the XML element, the
// CSV row, the IP-XACT element, the TOML [[node]] header or syntax error; JSON errors name the key
// path instead, such as csr_registers.ctrl_reset.type) and the node and field
// at fault. Nodes of uHAL and TOML tables that share bits without one being
// the other's ancestor are reported as warnings (Table.Warnings), as uHAL
// reports address overlaps.
package addrtable
