// Package proto is the hub's client protocol (docs/hub-protocol.md): a
// compact length-prefixed binary encoding, little-endian like oETP's own
// parameters, that a standard-library Python client implements with struct.
//
// Every message, request or reply, starts with a 12-byte header:
//
//	offset size field
//	0      4    length: bytes after this field (8 + body), 8..MaxMessage
//	4      1    type (a reply carries the request's type | 0x80)
//	5      1    reserved, 0
//	6      2    device handle (OPEN's result; 0 where no device applies)
//	8      4    tag, chosen by the client and echoed in the reply
//
// A reply's body starts with a 4-byte status block and an optional message:
//
//	12     1    status: 0 OK, 1..15 the CSR code of the failed operation, 0x80.. a hub error
//	13     1    flags: bit 0 the operation may have executed (or partly),
//	            bit 1 an error detail follows the message (ErrorDetail)
//	14     2    message length M
//	16     M    message, UTF-8
//	16+M   ..   the error detail if flagged, then the result
//
// The hub answers the requests of a connection in order; a client may send
// several before reading replies (pipelining).
package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Version is the protocol version HELLO negotiates.
const Version = 1

// HeaderLen is the size of the fixed header.
const HeaderLen = 12

// MaxMessage is the largest value of the length field: a 256 MiB block plus
// room for headers.
const MaxMessage = 256<<20 + 4096

// MaxBlock is the largest READ_BLOCK / WRITE_BLOCK length, and the largest
// total of block bytes in one BATCH.
const MaxBlock = 256 << 20

// MaxBatchRead is the largest total of READ_BLOCK bytes in one BATCH: the
// hub holds a batch's results until its reply, so they are bounded by the
// ring a streamed READ_BLOCK passes through (4 MiB). Larger reads go in a
// plain READ_BLOCK, which streams.
const MaxBatchRead = 4 << 20

// BatchReadTooLarge is the TOO_LARGE message for a BATCH whose block reads
// total n bytes, past MaxBatchRead.
func BatchReadTooLarge(n uint64) string {
	return fmt.Sprintf("BATCH reads %d block bytes, more than the %d bytes a batch's block reads may total; read larger blocks with a plain block read (READ_BLOCK), which streams", n, MaxBatchRead)
}

// MaxBatch is the largest number of operations in one BATCH.
const MaxBatch = 1 << 16

// MaxName is the longest device or node name.
const MaxName = 1024

// MaxToken is the longest shared-secret token.
const MaxToken = 1024

// MaxHello is the largest HELLO body (version and token): a longer one
// is refused and the connection closed.
const MaxHello = 2 + 2 + MaxToken

// PreAuthMax is the most the hub reads from a connection that must
// present the token before it has: its HELLO, and nothing after it until
// the token is accepted. Any other request before it is refused (AUTH)
// from its header alone, without reading its body.
const PreAuthMax = 4096

// Request types. A reply's type is the request's | Reply.
const (
	Hello      uint8 = 0x01
	Open       uint8 = 0x02
	Challenge  uint8 = 0x03
	Read       uint8 = 0x10
	Write      uint8 = 0x11
	ReadBlock  uint8 = 0x12
	WriteBlock uint8 = 0x13
	Batch      uint8 = 0x20
	NodeRead   uint8 = 0x30
	NodeWrite  uint8 = 0x31
	NodeInfo   uint8 = 0x32
	Nodes      uint8 = 0x33
	StatusReq  uint8 = 0x40

	Reply uint8 = 0x80
)

// TypeName names a request type for messages.
func TypeName(t uint8) string {
	switch t &^ Reply {
	case Hello:
		return "HELLO"
	case Open:
		return "OPEN"
	case Challenge:
		return "CHALLENGE"
	case Read:
		return "READ"
	case Write:
		return "WRITE"
	case ReadBlock:
		return "READ_BLOCK"
	case WriteBlock:
		return "WRITE_BLOCK"
	case Batch:
		return "BATCH"
	case NodeRead:
		return "NODE_READ"
	case NodeWrite:
		return "NODE_WRITE"
	case NodeInfo:
		return "NODE_INFO"
	case Nodes:
		return "NODES"
	case StatusReq:
		return "STATUS"
	case GroupWrite:
		return "GROUP_WRITE"
	}
	return fmt.Sprintf("type 0x%02x", t)
}

// OPEN kinds.
const (
	OpenByName  uint8 = 0 // body: name
	OpenByIface uint8 = 1 // body: 6-byte device MAC, interface name
)

// Statuses 1..15 are CSR codes (wire.Code). Hub errors:
const (
	StatusOK          uint8 = 0
	StatusBadMessage  uint8 = 0x80 // malformed request; the connection goes on unless the framing broke
	StatusUnknownType uint8 = 0x81
	StatusAuth        uint8 = 0x82 // HELLO missing or wrong token
	StatusNoDevice    uint8 = 0x83 // unknown device name or handle
	StatusNoNode      uint8 = 0x84 // unknown node, or the device has no address table
	StatusTooLarge    uint8 = 0x85 // a block, batch or message beyond the limits
	StatusShutdown    uint8 = 0x86 // the hub is stopping
	StatusVersion     uint8 = 0x87 // unsupported protocol version
	StatusDenied      uint8 = 0x88 // the device's read/write rules refuse this client; nothing ran
	StatusBusy        uint8 = 0x89 // the hub is at a limit (connections, memory); try again later
	StatusIdle        uint8 = 0x8A // the connection was idle past the hub's idle timeout
	StatusStalled     uint8 = 0x8B // a started message stopped arriving (the hub's read deadline)
)

// StatusName returns the mnemonic of a status: a CSR code's (NONE,
// TIMEOUT, ...) or a hub error's (BAD_MESSAGE, ...).
func StatusName(s uint8) string {
	if s < 16 {
		return codeNames[s]
	}
	switch s {
	case StatusBadMessage:
		return "BAD_MESSAGE"
	case StatusUnknownType:
		return "UNKNOWN_TYPE"
	case StatusAuth:
		return "AUTH"
	case StatusNoDevice:
		return "NO_DEVICE"
	case StatusNoNode:
		return "NO_NODE"
	case StatusTooLarge:
		return "TOO_LARGE"
	case StatusShutdown:
		return "SHUTDOWN"
	case StatusVersion:
		return "VERSION"
	case StatusDenied:
		return "DENIED"
	case StatusBusy:
		return "BUSY"
	case StatusIdle:
		return "IDLE"
	case StatusStalled:
		return "STALLED"
	}
	return fmt.Sprintf("STATUS_0x%02x", s)
}

// codeNames are the CSR mnemonics (wire.Code.String), repeated here so that
// clients need not import the wire codec.
var codeNames = [16]string{
	"NONE", "LOCAL_INVALID", "LOCAL_AXIS", "LOCAL_OVERFLOW",
	"LOCAL_AXI_RD_SLVERR", "LOCAL_AXI_RD_DECERR", "LOCAL_AXI_WR_SLVERR", "LOCAL_AXI_WR_DECERR",
	"TIMEOUT", "REMOTE_INVALID", "REMOTE_AXIS", "REMOTE_OVERFLOW",
	"REMOTE_AXI_RD_SLVERR", "REMOTE_AXI_RD_DECERR", "REMOTE_AXI_WR_SLVERR", "REMOTE_AXI_WR_DECERR",
}

// NoticeTag is the tag of a notice: a reply the hub sends, unasked, before
// it closes a connection whose further requests it will not read (the
// connection cap, the idle timeout, a stopping hub). Its type is
// HELLO|Reply and its status says why; the request the client has in
// progress, if any, was not read and did not run. Clients number their
// requests from 1, so no reply to a request has this tag.
const NoticeTag uint32 = 0

// FlagMaybeExecuted in a reply's flags says the failed operation may have
// executed at the device (a TIMEOUT, a block that failed part way).
const FlagMaybeExecuted uint8 = 1

// FlagPartial in a reply's flags says the reply is a piece of a streamed
// READ_BLOCK's data: its status is OK, its message empty, its result the
// next bytes of the block, and another reply with the same tag follows.
// The last reply (without the flag) carries the result: the counters, and
// on success the data not sent in pieces.
const FlagPartial uint8 = 4

// Capabilities in OPEN's result.
const (
	CapTable uint8 = 1 // the device has an address table
)

// Header is a message's fixed header.
type Header struct {
	Length uint32
	Type   uint8
	Handle uint16
	Tag    uint32
}

// ErrFraming is wrapped by ReadHeader's error when the length field is out
// of range: the stream cannot be resynchronised.
var ErrFraming = errors.New("hub protocol: bad message length")

// ParseHeader decodes the first HeaderLen bytes of b.
func ParseHeader(b []byte) (Header, error) {
	h := Header{
		Length: binary.LittleEndian.Uint32(b[0:]),
		Type:   b[4],
		Handle: binary.LittleEndian.Uint16(b[6:]),
		Tag:    binary.LittleEndian.Uint32(b[8:]),
	}
	if h.Length < HeaderLen-4 || h.Length > MaxMessage {
		return h, fmt.Errorf("%w %d: use 8..%d", ErrFraming, h.Length, MaxMessage)
	}
	return h, nil
}

// BodyLen is the number of body bytes after the header.
func (h Header) BodyLen() int { return int(h.Length) - (HeaderLen - 4) }

// ReadMessage reads one message from r into buf (grown as needed) and
// returns its header and body.
func ReadMessage(r io.Reader, buf []byte) (Header, []byte, []byte, error) {
	if cap(buf) < HeaderLen {
		buf = make([]byte, 4096)
	}
	buf = buf[:HeaderLen]
	if _, err := io.ReadFull(r, buf); err != nil {
		return Header{}, nil, buf, err
	}
	h, err := ParseHeader(buf)
	if err != nil {
		return h, nil, buf, err
	}
	n := h.BodyLen()
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	body := buf[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, buf, err
	}
	return h, body, buf, nil
}

// AppendHeader appends a header whose length is patched by Finish.
func AppendHeader(b []byte, typ uint8, handle uint16, tag uint32) []byte {
	b = append(b, 0, 0, 0, 0, typ, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint16(b[len(b)-6:], handle)
	binary.LittleEndian.PutUint32(b[len(b)-4:], tag)
	return b
}

// Finish patches the length of the message that starts at b[start:].
func Finish(b []byte, start int) []byte {
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// AppendReplyHeader appends a reply's header and status block; the result
// follows, then Finish.
func AppendReplyHeader(b []byte, req Header, status, flags uint8, msg string) []byte {
	if len(msg) > 0xFFFF {
		msg = msg[:0xFFFF]
	}
	for !utf8.ValidString(msg) {
		msg = msg[:len(msg)-1]
	}
	b = AppendHeader(b, req.Type|Reply, req.Handle, req.Tag)
	return AppendStr16(append(b, status, flags), msg)
}

// ReplyStatus is a decoded reply's status block.
type ReplyStatus struct {
	Status  uint8
	Flags   uint8
	Message string
	// Detail is the failed operation's error detail (flag DETAIL), nil
	// without one.
	Detail *ErrorDetail
}

// ParseReply splits a reply's body into its status block and result.
func ParseReply(body []byte) (ReplyStatus, []byte, error) {
	if len(body) < 4 {
		return ReplyStatus{}, nil, fmt.Errorf("hub protocol: reply body of %d bytes, shorter than the 4-byte status block", len(body))
	}
	m := int(binary.LittleEndian.Uint16(body[2:]))
	if len(body) < 4+m {
		return ReplyStatus{}, nil, fmt.Errorf("hub protocol: reply message of %d bytes overruns the %d-byte body", m, len(body))
	}
	st := ReplyStatus{Status: body[0], Flags: body[1], Message: string(body[4 : 4+m])}
	rest := body[4+m:]
	if st.Flags&FlagDetail != 0 {
		d, r, err := parseDetail(rest)
		if err != nil {
			return st, nil, fmt.Errorf("hub protocol: reply's error detail: %w", err)
		}
		st.Detail, rest = &d, r
	}
	return st, rest, nil
}

// Decoder reads little-endian fields from a body; the first short read
// sets Err and makes every later read return zero.
type Decoder struct {
	B   []byte
	Err error
}

func (d *Decoder) need(n int, what string) bool {
	if d.Err != nil {
		return false
	}
	if len(d.B) < n {
		d.Err = fmt.Errorf("%s needs %d bytes, %d left", what, n, len(d.B))
		return false
	}
	return true
}

// U8 reads one byte.
func (d *Decoder) U8(what string) uint8 {
	if b := d.Bytes(1, what); b != nil {
		return b[0]
	}
	return 0
}

// U16 reads a uint16.
func (d *Decoder) U16(what string) uint16 {
	if b := d.Bytes(2, what); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

// U32 reads a uint32.
func (d *Decoder) U32(what string) uint32 {
	if b := d.Bytes(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// Bytes reads n bytes (aliasing the body).
func (d *Decoder) Bytes(n int, what string) []byte {
	if n < 0 || !d.need(n, what) {
		if d.Err == nil {
			d.Err = fmt.Errorf("%s: negative length", what)
		}
		return nil
	}
	v := d.B[:n:n]
	d.B = d.B[n:]
	return v
}

// Str16 reads a string with a uint16 length prefix.
func (d *Decoder) Str16(what string) string {
	n := int(d.U16(what + " length"))
	return string(d.Bytes(n, what))
}

// End sets Err if bytes are left over.
func (d *Decoder) End(what string) {
	if d.Err == nil && len(d.B) != 0 {
		d.Err = fmt.Errorf("%s: %d unexpected trailing bytes", what, len(d.B))
	}
}

// AppendStr16 appends a string with a uint16 length prefix.
func AppendStr16(b []byte, s string) []byte {
	if len(s) > 0xFFFF {
		s = s[:0xFFFF]
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// Node is the wire form of an address-table node (NODE_INFO, NODES).
type Node struct {
	Name    string
	Address uint32
	Mask    uint32
	Perm    uint8 // 1 read, 2 write, 3 read-write
	Mode    uint8 // 0 single, 1 block, 2 incremental, 3 non-incremental, 4 port
	// Volatile: an access has side effects and is never retried nor
	// repeated (a port, a non-incremental node, a TOML volatile = true
	// node). The hub adds the node's range to its device's volatile ranges.
	Volatile bool
	// Words is the number of 32-bit words a register value spans: 1 for a
	// register or bitfield, n for a multi-word LiteX CSR (most significant
	// word first, one RMEM access each); at most MaxNodeWords. 0 from a hub
	// that predates the field (it sent a reserved 0): unknown.
	Words       uint8
	Size        uint32
	Description string
}

// Node flags (offset 10 of a node record).
const NodeVolatile uint8 = 1

// MaxNodeWords is the largest word count a node record carries.
const MaxNodeWords = 255

// AppendNode encodes n: u32 address, u32 mask, u8 perm, u8 mode, u8 flags,
// u8 words, u32 size, str16 name, str16 description.
func AppendNode(b []byte, n Node) []byte {
	b = binary.LittleEndian.AppendUint32(b, n.Address)
	b = binary.LittleEndian.AppendUint32(b, n.Mask)
	var flags uint8
	if n.Volatile {
		flags |= NodeVolatile
	}
	b = append(b, n.Perm, n.Mode, flags, n.Words)
	b = binary.LittleEndian.AppendUint32(b, n.Size)
	b = AppendStr16(b, n.Name)
	return AppendStr16(b, n.Description)
}

// DecodeNode decodes one node.
func (d *Decoder) Node() Node {
	var n Node
	n.Address = d.U32("node address")
	n.Mask = d.U32("node mask")
	n.Perm = d.U8("node permission")
	n.Mode = d.U8("node mode")
	n.Volatile = d.U8("node flags")&NodeVolatile != 0
	n.Words = d.U8("node words")
	n.Size = d.U32("node size")
	n.Name = d.Str16("node name")
	n.Description = d.Str16("node description")
	return n
}
