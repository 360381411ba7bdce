package wire

import "encoding/binary"

// The Append functions append one complete oETP frame (Ethernet header and
// logical PDU, no Ethernet padding and no FCS) to b and return the extended
// slice. They allocate only when b lacks capacity; with a buffer of
// MaxFrameLen capacity they never allocate. src must be a unicast address:
// the configured group MAC is a receive destination, never a source.

func appendHeader(b []byte, dst, src MAC, cmd Cmd) []byte {
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	return append(b, byte(EtherType>>8), byte(EtherType&0xff), Magic, byte(cmd))
}

func appendLE32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

// AppendRMEMReadReq appends a 24-byte RMEM_READ_REQ.
func AppendRMEMReadReq(b []byte, dst, src MAC, rid, addr uint32) []byte {
	b = appendHeader(b, dst, src, RMEMReadReq)
	return appendLE32(appendLE32(b, rid), addr)
}

// AppendRMEMReadRsp appends a 24-byte RMEM_READ_RSP carrying data.
func AppendRMEMReadRsp(b []byte, dst, src MAC, rid, data uint32) []byte {
	b = appendHeader(b, dst, src, RMEMReadRsp)
	return appendLE32(appendLE32(b, rid), data)
}

// AppendRMEMWriteReq appends a 32-byte RMEM_WRITE_REQ. Bit i of bitEnable
// enables bit i of data.
func AppendRMEMWriteReq(b []byte, dst, src MAC, rid, addr, bitEnable, data uint32) []byte {
	b = appendHeader(b, dst, src, RMEMWriteReq)
	return appendLE32(appendLE32(appendLE32(appendLE32(b, rid), addr), bitEnable), data)
}

// AppendRMEMWriteRsp appends a 20-byte RMEM_WRITE_RSP.
func AppendRMEMWriteRsp(b []byte, dst, src MAC, rid uint32) []byte {
	return appendLE32(appendHeader(b, dst, src, RMEMWriteRsp), rid)
}

// AppendDMAReadReq appends a 28-byte DMA_READ_REQ for length bytes at addr.
func AppendDMAReadReq(b []byte, dst, src MAC, rid, addr, length uint32) []byte {
	b = appendHeader(b, dst, src, DMAReadReq)
	return appendLE32(appendLE32(appendLE32(b, rid), addr), length)
}

// AppendDMAWriteRsp appends a 20-byte DMA_WRITE_RSP.
func AppendDMAWriteRsp(b []byte, dst, src MAC, rid uint32) []byte {
	return appendLE32(appendHeader(b, dst, src, DMAWriteRsp), rid)
}

// AppendErrorRsp appends a 24-byte ERROR_RSP with the wire cause.
func AppendErrorRsp(b []byte, dst, src MAC, rid, cause uint32) []byte {
	b = appendHeader(b, dst, src, ErrorRsp)
	return appendLE32(appendLE32(b, rid), cause)
}

// AppendDMAWriteReq appends a DMA_WRITE_REQ carrying payload for addr:
// 32 + 4*ceil(len(payload)/4) bytes, Data in increasing address order, zero
// word padding, EndOfData at its fixed position.
func AppendDMAWriteReq(b []byte, dst, src MAC, rid, addr uint32, payload []byte) []byte {
	b, data := GrowDMAWriteReq(b, dst, src, rid, addr, uint32(len(payload)))
	copy(data, payload)
	return b
}

// AppendDMAReadRsp appends a DMA_READ_RSP carrying payload:
// 24 + 4*ceil(len(payload)/4) bytes, with zero word padding and EndOfData.
func AppendDMAReadRsp(b []byte, dst, src MAC, rid uint32, payload []byte) []byte {
	b, data := GrowDMAReadRsp(b, dst, src, rid, uint32(len(payload)))
	copy(data, payload)
	return b
}

// GrowDMAWriteReq appends a DMA_WRITE_REQ for n bytes whose Data the caller
// fills afterwards, so memory can be read straight into the frame. It returns
// the frame and data, the n-byte slot inside it. Word padding and EndOfData
// are already written; the caller must fill all of data before sending.
func GrowDMAWriteReq(b []byte, dst, src MAC, rid, addr, n uint32) (frame, data []byte) {
	b = appendHeader(b, dst, src, DMAWriteReq)
	b = appendLE32(appendLE32(appendLE32(b, rid), addr), n)
	return growData(b, n)
}

// GrowDMAReadRsp appends a DMA_READ_RSP for n bytes whose Data the caller
// fills afterwards; see GrowDMAWriteReq.
func GrowDMAReadRsp(b []byte, dst, src MAC, rid, n uint32) (frame, data []byte) {
	b = appendLE32(appendHeader(b, dst, src, DMAReadRsp), rid)
	return growData(b, n)
}

// growData extends b by the rounded Data array and EndOfData. The padding
// bytes are zeroed; the n data bytes are left for the caller.
func growData(b []byte, n uint32) (frame, data []byte) {
	start := len(b)
	words := int(DataWords(n))
	end := start + 4*words + 4
	if cap(b) < end {
		nb := make([]byte, start, end)
		copy(nb, b)
		b = nb
	}
	b = b[:end]
	for i := start + int(n); i < start+4*words; i++ {
		b[i] = 0
	}
	binary.LittleEndian.PutUint32(b[end-4:], EndOfData)
	return b, b[start : start+int(n)]
}
