package wireshark_test

import (
	"encoding/binary"
	"time"

	"github.com/openenoc/oetp/wire"
)

// Documentation MAC addresses: local unicast 02:0e:0c:xx, local group 03:0e:0c:xx.
var (
	macA = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0x0a} // initiator A
	macB = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0x0b} // responder B
	macC = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, 0x0c} // a third endpoint
	macG = wire.MAC{0x03, 0x0e, 0x0c, 0x00, 0x00, 0x01} // the group B joins
)

// captureStart is the timestamp of the first frame.
var captureStart = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// capFrame is one frame of the test capture and what the dissector must
// make of it.
type capFrame struct {
	name string        // what the frame exercises
	at   time.Duration // timestamp, relative to captureStart
	b    []byte
	// malformed frames, and only those, carry error-severity expert info.
	malformed bool
	// expected is the DMA_READ_RSP length known from its DMA_READ_REQ, or
	// -1 when the capture holds no matching request.
	expected int
}

// pattern returns n bytes of a recognisable non-zero pattern.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
		if b[i] == 0 {
			b[i] = 0x5a
		}
	}
	return b
}

// pad60 applies Ethernet padding as an external MAC does: zero bytes up to
// a 60-byte frame (64 with FCS).
func pad60(b []byte) []byte {
	for len(b) < wire.MinFrameLen {
		b = append(b, 0)
	}
	return b
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// buildCapture returns every command, every length class and every
// malformed class the dissector distinguishes, as request/response
// exchanges between A and B, in capture order. Frame numbers in the golden
// files are 1 + the index here.
func buildCapture() []capFrame {
	var fs []capFrame
	var t time.Duration
	add := func(gap time.Duration, name string, b []byte) {
		t += gap
		fs = append(fs, capFrame{name: name, at: t, b: b, expected: -1})
	}
	req := func(name string, b []byte) { add(time.Millisecond, name, b) }
	rsp := func(name string, b []byte) { add(250*time.Microsecond, name, b) }
	bad := func() { fs[len(fs)-1].malformed = true }
	expect := func(n int) { fs[len(fs)-1].expected = n }

	// Every command, exact and padded lengths, pairing.
	req("RMEM_READ_REQ, exact 24 bytes", wire.AppendRMEMReadReq(nil, macB, macA, 1, 0x1000))
	rsp("RMEM_READ_RSP, padded to 60", pad60(wire.AppendRMEMReadRsp(nil, macA, macB, 1, 0xdeadbeef)))
	req("RMEM_WRITE_REQ, padded to 60", pad60(wire.AppendRMEMWriteReq(nil, macB, macA, 2, 0x1004, 0x0000000f, 0x12345678)))
	rsp("RMEM_WRITE_RSP, exact 20 bytes", wire.AppendRMEMWriteRsp(nil, macA, macB, 2))
	req("RMEM_WRITE_REQ to the group: no response", wire.AppendRMEMWriteReq(nil, macG, macA, 3, 0x1008, 0xffffffff, 0xcafef00d))
	req("DMA_READ_REQ, Length 1", wire.AppendDMAReadReq(nil, macB, macA, 4, 0x2000, 1))
	rsp("DMA_READ_RSP, 1 byte, exact 28 bytes", wire.AppendDMAReadRsp(nil, macA, macB, 4, []byte{0xa5}))
	expect(1)
	req("DMA_READ_REQ, Length 3, padded", pad60(wire.AppendDMAReadReq(nil, macB, macA, 5, 0x2001, 3)))
	rsp("DMA_READ_RSP, 3 bytes, padded to 60", pad60(wire.AppendDMAReadRsp(nil, macA, macB, 5, pattern(3, 0x31))))
	expect(3)
	req("DMA_READ_REQ, Length 8160", wire.AppendDMAReadReq(nil, macB, macA, 6, 0x10000, 8160))
	rsp("DMA_READ_RSP, 8160 bytes", wire.AppendDMAReadRsp(nil, macA, macB, 6, pattern(8160, 0x61)))
	expect(8160)
	req("DMA_WRITE_REQ, Length 4, data is the EndOfData pattern",
		wire.AppendDMAWriteReq(nil, macB, macA, 7, 0x3000, []byte{0xd0, 0xe0, 0xd0, 0xe0}))
	rsp("DMA_WRITE_RSP", wire.AppendDMAWriteRsp(nil, macA, macB, 7))
	req("DMA_WRITE_REQ, Length 5, exact 40 bytes", wire.AppendDMAWriteReq(nil, macB, macA, 8, 0x3004, pattern(5, 0x11)))
	rsp("DMA_WRITE_RSP, padded", pad60(wire.AppendDMAWriteRsp(nil, macA, macB, 8)))
	req("DMA_WRITE_REQ, Length 8160, 8192-byte frame", wire.AppendDMAWriteReq(nil, macB, macA, 9, 0x4000, pattern(8160, 0x21)))
	rsp("DMA_WRITE_RSP", wire.AppendDMAWriteRsp(nil, macA, macB, 9))
	req("DMA_WRITE_REQ, Length 1, padded to 60", pad60(wire.AppendDMAWriteReq(nil, macB, macA, 10, 0x5000, []byte{0x7e})))
	rsp("DMA_WRITE_RSP", wire.AppendDMAWriteRsp(nil, macA, macB, 10))
	req("DMA_WRITE_REQ, Length 3, to the group", wire.AppendDMAWriteReq(nil, macG, macA, 11, 0x5004, pattern(3, 0x41)))
	req("DMA_WRITE_REQ, Length 8, to broadcast", wire.AppendDMAWriteReq(nil, wire.Broadcast, macA, 12, 0x5008, pattern(8, 0x51)))

	// ERROR_RSP with every cause, each answering a request, then two
	// invalid Error Codes (recorded as LOCAL_INVALID, not as a timeout).
	req("RMEM_READ_REQ out of range", wire.AppendRMEMReadReq(nil, macB, macA, 20, 0xfffffff0))
	rsp("ERROR_RSP cause 1", wire.AppendErrorRsp(nil, macA, macB, 20, 1))
	req("DMA_WRITE_REQ", wire.AppendDMAWriteReq(nil, macB, macA, 21, 0x6000, pattern(16, 0x71)))
	rsp("ERROR_RSP cause 2", wire.AppendErrorRsp(nil, macA, macB, 21, 2))
	req("DMA_READ_REQ", wire.AppendDMAReadReq(nil, macB, macA, 22, 0x7000, 8160))
	rsp("ERROR_RSP cause 3", wire.AppendErrorRsp(nil, macA, macB, 22, 3))
	req("RMEM_READ_REQ", wire.AppendRMEMReadReq(nil, macB, macA, 23, 0x1100))
	rsp("ERROR_RSP cause 4", wire.AppendErrorRsp(nil, macA, macB, 23, 4))
	req("DMA_READ_REQ", wire.AppendDMAReadReq(nil, macB, macA, 24, 0x7100, 64))
	rsp("ERROR_RSP cause 5", wire.AppendErrorRsp(nil, macA, macB, 24, 5))
	req("RMEM_WRITE_REQ", wire.AppendRMEMWriteReq(nil, macB, macA, 25, 0x1104, 0xffff0000, 0x55aa55aa))
	rsp("ERROR_RSP cause 6", wire.AppendErrorRsp(nil, macA, macB, 25, 6))
	req("DMA_WRITE_REQ", wire.AppendDMAWriteReq(nil, macB, macA, 26, 0x7200, pattern(7, 0x81)))
	rsp("ERROR_RSP cause 7", wire.AppendErrorRsp(nil, macA, macB, 26, 7))
	req("RMEM_READ_REQ", wire.AppendRMEMReadReq(nil, macB, macA, 27, 0x1108))
	rsp("ERROR_RSP invalid cause 0", pad60(wire.AppendErrorRsp(nil, macA, macB, 27, 0)))
	req("RMEM_WRITE_REQ", wire.AppendRMEMWriteReq(nil, macB, macA, 28, 0x110c, 1, 1))
	rsp("ERROR_RSP invalid cause 8", wire.AppendErrorRsp(nil, macA, macB, 28, 8))

	// Pairing needs the Request ID, the MAC pair and the response command.
	rsp("DMA_READ_RSP from C with the Request ID of A's read from B: unknown length",
		wire.AppendDMAReadRsp(nil, macA, macC, 6, pattern(12, 0x91)))
	rsp("DMA_READ_RSP without a request: unknown length", wire.AppendDMAReadRsp(nil, macA, macB, 99, pattern(5, 0xa1)))
	req("RMEM_READ_REQ reusing Request ID 1", wire.AppendRMEMReadReq(nil, macB, macA, 1, 0x1010))
	rsp("DMA_WRITE_RSP with Request ID 1: wrong response command, unpaired", wire.AppendDMAWriteRsp(nil, macA, macB, 1))
	rsp("RMEM_READ_RSP pairs with the latest request 1", wire.AppendRMEMReadRsp(nil, macA, macB, 1, 0x0badf00d))
	rsp("RMEM_READ_RSP duplicate", wire.AppendRMEMReadRsp(nil, macA, macB, 1, 0x0badf00d))

	// Policy warnings on well-formed frames.
	req("RMEM_READ_REQ to the group", wire.AppendRMEMReadReq(nil, macG, macA, 30, 0x1000))
	req("RMEM_WRITE_REQ, unaligned Address", wire.AppendRMEMWriteReq(nil, macB, macA, 31, 0x1002, 0xff, 0x12))
	req("DMA_READ_REQ, Length 0", wire.AppendDMAReadReq(nil, macB, macA, 32, 0x2000, 0))

	// Malformed frames.
	badMagic := wire.AppendRMEMReadReq(nil, macB, macA, 33, 0x1000)
	badMagic[14] = 0x0f
	req("EtherType 0x88B5, Magic 0x0F: not oETP", badMagic)
	reserved := wire.AppendRMEMReadReq(nil, macB, macA, 34, 0x1000)
	reserved[15] = 0x13
	req("reserved Cmd 0x13", reserved)
	bad()
	req("RMEM_WRITE_RSP too short for a Request ID", wire.AppendRMEMWriteRsp(nil, macA, macB, 35)[:18])
	bad()
	req("RMEM_READ_REQ with 4 trailing bytes", append(wire.AppendRMEMReadReq(nil, macB, macA, 36, 0x1000), 1, 2, 3, 4))
	bad()
	req("RMEM_WRITE_REQ without Data", wire.AppendRMEMWriteReq(nil, macB, macA, 37, 0x1000, 0xf, 0x1)[:28])
	bad()
	rsp("RMEM_WRITE_RSP padded to 64 bytes", append(pad60(wire.AppendRMEMWriteRsp(nil, macA, macB, 37)), 0, 0, 0, 0))
	bad()
	badEOD := wire.AppendDMAWriteReq(nil, macB, macA, 38, 0x8000, pattern(5, 0xb1))
	badEOD[len(badEOD)-1] = 0xe1
	req("DMA_WRITE_REQ, wrong EndOfData", badEOD)
	bad()
	rsp("ERROR_RSP cause 2 for it", wire.AppendErrorRsp(nil, macA, macB, 38, 2))
	noEOD := wire.AppendDMAWriteReq(nil, macB, macA, 39, 0x8000, pattern(5, 0xc1))
	req("DMA_WRITE_REQ ending before EndOfData", noEOD[:len(noEOD)-4])
	bad()
	excess := wire.AppendDMAWriteReq(nil, macB, macA, 40, 0x8000, append([]byte{0xd0, 0xe0, 0xd0, 0xe0}, pattern(4, 0xd1)...))
	copy(excess[24:28], le32(4))
	req("DMA_WRITE_REQ, Length 4 with 8 data bytes: EndOfData position holds data", excess)
	bad()
	short := pad60(wire.AppendDMAWriteReq(nil, macB, macA, 41, 0x8000, []byte{0x01}))
	copy(short[24:28], le32(12))
	req("DMA_WRITE_REQ, Length 12 in a padded 60-byte frame: padding is no EndOfData", short)
	bad()
	req("DMA_WRITE_REQ truncated before Length", wire.AppendDMAWriteReq(nil, macB, macA, 42, 0x8000, []byte{1})[:24])
	bad()
	req("DMA_READ_REQ, Length 8", wire.AppendDMAReadReq(nil, macB, macA, 43, 0x9000, 8))
	rsp("DMA_READ_RSP with 4 of the 8 bytes", wire.AppendDMAReadRsp(nil, macA, macB, 43, pattern(4, 0xe1)))
	expect(8)
	bad()
	req("DMA_READ_REQ, Length 4", wire.AppendDMAReadReq(nil, macB, macA, 44, 0x9000, 4))
	rdBad := wire.AppendDMAReadRsp(nil, macA, macB, 44, pattern(4, 0xf1))
	copy(rdBad[len(rdBad)-4:], []byte{0, 0, 0, 0})
	rsp("DMA_READ_RSP, zero EndOfData", rdBad)
	expect(4)
	bad()
	req("DMA_WRITE_REQ, 8196-byte frame over the ceiling",
		wire.AppendDMAWriteReq(nil, macB, macA, 45, 0xa000, pattern(8164, 0x15)))
	bad()
	return fs
}
