package wire

import (
	"fmt"
	"strings"
)

// Code is a 4-bit CSR error code as recorded in a peer's error_code field
// and returned on initiator completions. Codes 1..7 are failures detected
// locally, 8 is a local response timeout, and 9..15 are the remote
// equivalents of causes 1..7 reported by a peer (or, for 10, detected
// directly on an incomplete received DMA frame).
type Code uint8

// The sixteen CSR codes.
const (
	CodeNone              Code = 0  // NONE
	CodeLocalInvalid      Code = 1  // LOCAL_INVALID: invalid request, configuration or parameters
	CodeLocalAXIS         Code = 2  // LOCAL_AXIS: stream/PDU length or TLAST error
	CodeLocalOverflow     Code = 3  // LOCAL_OVERFLOW: supported size or buffer capacity exceeded
	CodeLocalAXIRdSlverr  Code = 4  // LOCAL_AXI_RD_SLVERR
	CodeLocalAXIRdDecerr  Code = 5  // LOCAL_AXI_RD_DECERR
	CodeLocalAXIWrSlverr  Code = 6  // LOCAL_AXI_WR_SLVERR
	CodeLocalAXIWrDecerr  Code = 7  // LOCAL_AXI_WR_DECERR
	CodeTimeout           Code = 8  // TIMEOUT: response timeout or Request ID wrap collision
	CodeRemoteInvalid     Code = 9  // REMOTE_INVALID
	CodeRemoteAXIS        Code = 10 // REMOTE_AXIS
	CodeRemoteOverflow    Code = 11 // REMOTE_OVERFLOW
	CodeRemoteAXIRdSlverr Code = 12 // REMOTE_AXI_RD_SLVERR
	CodeRemoteAXIRdDecerr Code = 13 // REMOTE_AXI_RD_DECERR
	CodeRemoteAXIWrSlverr Code = 14 // REMOTE_AXI_WR_SLVERR
	CodeRemoteAXIWrDecerr Code = 15 // REMOTE_AXI_WR_DECERR
	numCodes                   = 16
)

// Wire causes carried in ERROR_RSP's Error Code parameter (1..7).
const (
	CauseInvalid     uint32 = 1 // invalid request, access, range or peer mode
	CauseLength      uint32 = 2 // stream/PDU length or EndOfData error
	CauseOverflow    uint32 = 3 // supported size or buffer capacity exceeded
	CauseAXIRdSlverr uint32 = 4 // local read SLVERR (or CPUIF read error)
	CauseAXIRdDecerr uint32 = 5 // local read DECERR
	CauseAXIWrSlverr uint32 = 6 // local write SLVERR (or CPUIF write error)
	CauseAXIWrDecerr uint32 = 7 // local write DECERR
)

var codeNames = [numCodes]string{
	"NONE", "LOCAL_INVALID", "LOCAL_AXIS", "LOCAL_OVERFLOW",
	"LOCAL_AXI_RD_SLVERR", "LOCAL_AXI_RD_DECERR", "LOCAL_AXI_WR_SLVERR", "LOCAL_AXI_WR_DECERR",
	"TIMEOUT", "REMOTE_INVALID", "REMOTE_AXIS", "REMOTE_OVERFLOW",
	"REMOTE_AXI_RD_SLVERR", "REMOTE_AXI_RD_DECERR", "REMOTE_AXI_WR_SLVERR", "REMOTE_AXI_WR_DECERR",
}

// String returns the mnemonic, e.g. "REMOTE_AXI_WR_SLVERR".
func (c Code) String() string {
	if c < numCodes {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE(%d)", uint8(c))
}

// Valid reports whether c fits the 4-bit CSR field.
func (c Code) Valid() bool { return c < numCodes }

// IsLocal reports whether c is a locally detected failure 1..7.
func (c Code) IsLocal() bool { return c >= 1 && c <= 7 }

// IsRemote reports whether c is a remote code 9..15.
func (c Code) IsRemote() bool { return c >= 9 && c < numCodes }

// Cause returns the wire Error Code that reports the local failure c in an
// ERROR_RSP (1..7), or 0 when c has no wire form (NONE, TIMEOUT, remote codes).
func (c Code) Cause() uint32 {
	if c.IsLocal() {
		return uint32(c)
	}
	return 0
}

// CodeFromCause validates a received 32-bit ERROR_RSP Error Code over its
// full width and maps it to a CSR code: causes 1..7 become the remote codes
// 9..15. Any other value (0, 8, 0x100000002, ...) is an invalid response
// parameter and yields LOCAL_INVALID (1); it is never truncated and never
// read as a timeout.
func CodeFromCause(cause uint32) Code {
	if cause >= 1 && cause <= 7 {
		return Code(8 + cause)
	}
	return CodeLocalInvalid
}

// ParseCode accepts a mnemonic (case-insensitive) or a number 0..15.
func ParseCode(s string) (Code, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	for i, n := range codeNames {
		if n == t {
			return Code(i), nil
		}
	}
	var v int
	if _, err := fmt.Sscanf(t, "%d", &v); err == nil && v >= 0 && v < numCodes && fmt.Sprint(v) == t {
		return Code(v), nil
	}
	return 0, fmt.Errorf("unknown error code %q: use 0..15 or a mnemonic such as REMOTE_AXI_WR_SLVERR", s)
}
