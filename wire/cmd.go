package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// EtherType is the oETP EtherType, a local experimental value (octets 88 B5).
const EtherType uint16 = 0x88B5

// Magic is the protocol discriminator, the first PDU octet.
const Magic byte = 0x0E

// EndOfData is the 32-bit successful-completion marker that ends the Data of
// DMA_WRITE_REQ and DMA_READ_RSP. Little-endian on the wire: D0 E0 D0 E0.
const EndOfData uint32 = 0xE0D0E0D0

// Cmd is the oETP command selector, the second PDU octet.
type Cmd uint8

// The nine assigned command codes. All other values are reserved.
const (
	RMEMReadReq  Cmd = 0x10 // RMEM_READ_REQ: Request ID, Address
	RMEMReadRsp  Cmd = 0x11 // RMEM_READ_RSP: Request ID, Data
	RMEMWriteReq Cmd = 0x20 // RMEM_WRITE_REQ: Request ID, Address, BitEnable, Data
	RMEMWriteRsp Cmd = 0x21 // RMEM_WRITE_RSP: Request ID
	DMAReadReq   Cmd = 0x30 // DMA_READ_REQ: Request ID, Address, Length
	DMAReadRsp   Cmd = 0x31 // DMA_READ_RSP: Request ID, Data[ceil(ExpectedLength/4)], EndOfData
	DMAWriteReq  Cmd = 0x40 // DMA_WRITE_REQ: Request ID, Address, Length, Data[ceil(Length/4)], EndOfData
	DMAWriteRsp  Cmd = 0x41 // DMA_WRITE_RSP: Request ID
	ErrorRsp     Cmd = 0xFF // ERROR_RSP: Request ID, Error Code
)

// Commands lists the nine assigned commands in code order.
var Commands = [...]Cmd{RMEMReadReq, RMEMReadRsp, RMEMWriteReq, RMEMWriteRsp,
	DMAReadReq, DMAReadRsp, DMAWriteReq, DMAWriteRsp, ErrorRsp}

// Valid reports whether c is one of the nine assigned codes. Exact codes are
// decoded before any request/response pairing: a reserved value with bit 0
// set is not a response.
func (c Cmd) Valid() bool {
	switch c {
	case RMEMReadReq, RMEMReadRsp, RMEMWriteReq, RMEMWriteRsp,
		DMAReadReq, DMAReadRsp, DMAWriteReq, DMAWriteRsp, ErrorRsp:
		return true
	}
	return false
}

// IsRequest reports whether c is one of the four assigned request codes.
func (c Cmd) IsRequest() bool {
	return c == RMEMReadReq || c == RMEMWriteReq || c == DMAReadReq || c == DMAWriteReq
}

// IsResponse reports whether c is an assigned response code, ERROR_RSP
// included.
func (c Cmd) IsResponse() bool { return c.Valid() && !c.IsRequest() }

// Response returns the successful response code of a request (request OR
// 0x01). It is only meaningful for requests.
func (c Cmd) Response() Cmd { return c | 0x01 }

// IsWrite reports whether c is RMEM_WRITE_REQ or DMA_WRITE_REQ, the only
// commands that may be sent to a group address.
func (c Cmd) IsWrite() bool { return c == RMEMWriteReq || c == DMAWriteReq }

// IsRMEM reports whether c belongs to the RMEM command pairs.
func (c Cmd) IsRMEM() bool { return c>>4 == 1 || c>>4 == 2 }

var cmdNames = map[Cmd]string{
	RMEMReadReq: "RMEM_READ_REQ", RMEMReadRsp: "RMEM_READ_RSP",
	RMEMWriteReq: "RMEM_WRITE_REQ", RMEMWriteRsp: "RMEM_WRITE_RSP",
	DMAReadReq: "DMA_READ_REQ", DMAReadRsp: "DMA_READ_RSP",
	DMAWriteReq: "DMA_WRITE_REQ", DMAWriteRsp: "DMA_WRITE_RSP",
	ErrorRsp: "ERROR_RSP",
}

// String returns the specification's mnemonic, e.g. "DMA_WRITE_REQ", or
// "RESERVED(0x12)" for an unassigned value.
func (c Cmd) String() string {
	if n, ok := cmdNames[c]; ok {
		return n
	}
	return fmt.Sprintf("RESERVED(0x%02X)", uint8(c))
}

// ParseCmd accepts a mnemonic (case-insensitive, '-' or '_'), or a number
// such as 0x40, and returns the assigned command.
func ParseCmd(s string) (Cmd, error) {
	t := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_"))
	for c, n := range cmdNames {
		if n == t {
			return c, nil
		}
	}
	num := strings.ToLower(strings.TrimSpace(s))
	base := 10
	if strings.HasPrefix(num, "0x") {
		num, base = num[2:], 16
	}
	if v, err := strconv.ParseUint(num, base, 8); err == nil && Cmd(v).Valid() {
		return Cmd(v), nil
	}
	return 0, fmt.Errorf("unknown oETP command %q: use one of RMEM_READ_REQ, RMEM_READ_RSP, RMEM_WRITE_REQ, RMEM_WRITE_RSP, DMA_READ_REQ, DMA_READ_RSP, DMA_WRITE_REQ, DMA_WRITE_RSP, ERROR_RSP (or its code, e.g. 0x40)", s)
}
