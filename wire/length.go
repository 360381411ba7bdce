package wire

import "fmt"

// Frame geometry. Frames are counted from the destination MAC through the
// last payload or padding byte, without preamble, SFD and FCS.
const (
	// HeaderLen is the untagged Ethernet header: destination, source, EtherType.
	HeaderLen = 14
	// ParamOffset is the frame offset of parameter 1 (the Request ID).
	ParamOffset = 16
	// MinFrameLen is the shortest frame an external MAC delivers: 46 payload
	// bytes after the header (64 bytes on the wire with FCS).
	MinFrameLen = 60
	// MinPayloadLen is the Ethernet minimum payload the MAC pads to.
	MinPayloadLen = MinFrameLen - HeaderLen
	// MaxFrameLen is the default and largest MAX_RAW_FRAME_SIZE.
	MaxFrameLen = 8192
	// MinMaxFrameLen is the smallest MAX_RAW_FRAME_SIZE (a 4-byte fragment).
	MinMaxFrameLen = 36
	// MaxPDULen is the largest PDU within an 8192-byte frame.
	MaxPDULen = MaxFrameLen - HeaderLen
	// DMAOverhead is the DMA_WRITE_REQ frame overhead: Ethernet header,
	// Magic, Cmd, three parameters and EndOfData.
	DMAOverhead = 32
	// MaxFragment is the common DMA fragment ceiling for 8192-byte frames.
	MaxFragment = 8160
)

// Fixed PDU lengths of the commands without bulk data.
const (
	RMEMReadReqPDULen  = 10
	RMEMReadRspPDULen  = 10
	RMEMWriteReqPDULen = 18
	RMEMWriteRspPDULen = 6
	DMAReadReqPDULen   = 14
	DMAWriteRspPDULen  = 6
	ErrorRspPDULen     = 10
)

// DataWords returns ceil(n/4), the number of four-byte Data parameters that
// carry n bulk bytes.
func DataWords(n uint32) uint64 { return (uint64(n) + 3) / 4 }

// PDULen returns the logical PDU length of cmd. For DMA_WRITE_REQ, length is
// the Length parameter (18 + 4*ceil(B/4)); for DMA_READ_RSP it is the
// expected length from the saved request (10 + 4*ceil(B/4)); otherwise it is
// ignored. It returns 0 for a reserved cmd. The result is computed in 64
// bits so that any 32-bit length is representable.
func PDULen(cmd Cmd, length uint32) int {
	switch cmd {
	case RMEMReadReq:
		return RMEMReadReqPDULen
	case RMEMReadRsp:
		return RMEMReadRspPDULen
	case RMEMWriteReq:
		return RMEMWriteReqPDULen
	case RMEMWriteRsp:
		return RMEMWriteRspPDULen
	case DMAReadReq:
		return DMAReadReqPDULen
	case DMAReadRsp:
		return int(10 + 4*DataWords(length))
	case DMAWriteReq:
		return int(18 + 4*DataWords(length))
	case DMAWriteRsp:
		return DMAWriteRspPDULen
	case ErrorRsp:
		return ErrorRspPDULen
	}
	return 0
}

// FrameLen returns the exact logical frame length of cmd: HeaderLen +
// PDULen. The engine emits exactly this many bytes; it never pads to the
// Ethernet minimum (the MAC does).
func FrameLen(cmd Cmd, length uint32) int { return HeaderLen + PDULen(cmd, length) }

// lengthOK reports whether a received frame of n bytes carries a PDU of
// pdu bytes: the exact logical length, or, for a PDU shorter than 46 bytes,
// the frame padded to 46 payload bytes (60 bytes). Every other length,
// truncation or trailing bytes, is rejected.
func lengthOK(n, pdu int) bool {
	return n == HeaderLen+pdu || (pdu < MinPayloadLen && n == MinFrameLen)
}

// CheckMaxFrame validates a MAX_RAW_FRAME_SIZE value (36..8192).
func CheckMaxFrame(maxFrame int) error {
	if maxFrame < MinMaxFrameLen || maxFrame > MaxFrameLen {
		return fmt.Errorf("max frame size %d is out of range: use %d..%d bytes (without FCS); 60 or more for links through an Ethernet MAC, which pads short frames to 60 bytes",
			maxFrame, MinMaxFrameLen, MaxFrameLen)
	}
	return nil
}

// FragmentCeiling returns the peer DMA fragment ceiling of a frame ceiling:
// 4*floor((maxFrame-32)/4). 8192 gives 8160; 36 gives 4. It returns 0 for a
// maxFrame below 36.
func FragmentCeiling(maxFrame int) uint32 {
	if maxFrame < MinMaxFrameLen {
		return 0
	}
	return uint32(4 * ((maxFrame - DMAOverhead) / 4))
}

// EffectiveFragment applies the conf.dma_max_fragment_size rule: the written
// value is rounded down to a multiple of four and must then lie in
// 4..ceiling. 31 gives 28, 7 gives 4, 8161..8163 give 8160 with the default
// ceiling; 0..3 and rounded values above the ceiling are invalid (ok=false),
// which rejects a new block with LOCAL_INVALID.
func EffectiveFragment(csr, ceiling uint32) (mfs uint32, ok bool) {
	mfs = csr &^ 3
	if mfs < 4 || mfs > ceiling {
		return 0, false
	}
	return mfs, true
}

// RangeOK reports whether the byte range [addr, addr+length) is non-empty,
// fits the 32-bit address space and lies entirely inside the window
// [base, base+size). The arithmetic is widened to 64 bits, so no sum wraps.
func RangeOK(addr, length, base uint32, size uint64) bool {
	end := uint64(addr) + uint64(length)
	return length > 0 && end <= 1<<32 && addr >= base && end <= uint64(base)+size
}
