package wire_test

import (
	"testing"

	"github.com/openenoc/oetp/wire"
)

// Sinks keep the compiler from discarding benchmarked work.
var (
	sinkBytes   []byte
	sinkClass   wire.Class
	sinkProblem wire.Problem
	sinkU32     uint32
	sinkMAC     wire.MAC
	sinkBool    bool
)

// TestZeroAllocs asserts that no encoder (with a preallocated buffer), no
// classification and no accessor allocates.
func TestZeroAllocs(t *testing.T) {
	buf := make([]byte, 0, wire.MaxFrameLen)
	payload := pattern(wire.MaxFragment, 3)
	wr := dmaWriteReq(macB, macA, 1, 0x1000, payload).encode()
	rr := dmaReadRsp(macA, macB, 1, payload).encode()
	rw := rmemWriteReq(macB, macA, 1, 0x1000, 0xF, 7).encode()
	er := errorRsp(macA, macB, 1, 6).encode()
	cases := map[string]func(){
		"AppendRMEMReadReq":  func() { sinkBytes = wire.AppendRMEMReadReq(buf[:0], macB, macA, 1, 2) },
		"AppendRMEMReadRsp":  func() { sinkBytes = wire.AppendRMEMReadRsp(buf[:0], macA, macB, 1, 2) },
		"AppendRMEMWriteReq": func() { sinkBytes = wire.AppendRMEMWriteReq(buf[:0], macB, macA, 1, 2, 3, 4) },
		"AppendRMEMWriteRsp": func() { sinkBytes = wire.AppendRMEMWriteRsp(buf[:0], macA, macB, 1) },
		"AppendDMAReadReq":   func() { sinkBytes = wire.AppendDMAReadReq(buf[:0], macB, macA, 1, 2, 3) },
		"AppendDMAReadRsp":   func() { sinkBytes = wire.AppendDMAReadRsp(buf[:0], macA, macB, 1, payload) },
		"AppendDMAWriteReq":  func() { sinkBytes = wire.AppendDMAWriteReq(buf[:0], macB, macA, 1, 2, payload) },
		"AppendDMAWriteRsp":  func() { sinkBytes = wire.AppendDMAWriteRsp(buf[:0], macA, macB, 1) },
		"AppendErrorRsp":     func() { sinkBytes = wire.AppendErrorRsp(buf[:0], macA, macB, 1, 2) },
		"GrowDMAWriteReq":    func() { sinkBytes, _ = wire.GrowDMAWriteReq(buf[:0], macB, macA, 1, 2, 8157) },
		"GrowDMAReadRsp":     func() { sinkBytes, _ = wire.GrowDMAReadRsp(buf[:0], macA, macB, 1, 8157) },
		"Classify":           func() { sinkClass = wire.Classify(wr, wire.MaxFrameLen) },
		"ClassifyRuntRaw":    func() { sinkClass = wire.Classify(wr[:13], wire.MaxFrameLen); sinkClass = wire.Classify(wr[:14], 60) },
		"ClassifyBad":        func() { sinkClass = wire.Classify(wr[:100], wire.MaxFrameLen) },
		"CheckDMAReadRsp":    func() { sinkProblem = wire.CheckDMAReadRsp(rr, wire.MaxFragment) },
		"CodeFromCause":      func() { sinkU32 = uint32(wire.CodeFromCause(wire.Frame(er).ErrorCode())) },
		"Accessors": func() {
			f := wire.Frame(rw)
			sinkMAC, sinkMAC = f.Dst(), f.Src()
			sinkBool = f.Dst().IsGroup()
			sinkU32 = uint32(f.EtherType()) + uint32(f.Cmd()) + f.RequestID() + f.Address() + f.BitEnable() + f.Data() + f.Param(4)
			w := wire.Frame(wr)
			sinkU32 += w.Length() + wire.Frame(er).ErrorCode()
			sinkBytes = w.Payload(w.Length())
			sinkU32, sinkBool = w.EndOfDataAt(w.Length())
			sinkBytes = wire.Frame(rr).Payload(wire.MaxFragment)
		},
	}
	for name, fn := range cases {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}

// BenchmarkCopy8160 is the yardstick: a plain copy of 8160 bytes.
func BenchmarkCopy8160(b *testing.B) {
	src := pattern(wire.MaxFragment, 1)
	dst := make([]byte, wire.MaxFragment)
	b.SetBytes(wire.MaxFragment)
	b.ReportAllocs()
	for b.Loop() {
		copy(dst, src)
	}
}

func BenchmarkEncodeDMAWriteReq8160(b *testing.B) {
	benchEncode(b, wire.MaxFragment, func(buf, p []byte) []byte { return wire.AppendDMAWriteReq(buf, macB, macA, 1, 0x1000, p) })
}

// BenchmarkEncodeDMAWriteReq8157 has three bytes of word padding.
func BenchmarkEncodeDMAWriteReq8157(b *testing.B) {
	benchEncode(b, 8157, func(buf, p []byte) []byte { return wire.AppendDMAWriteReq(buf, macB, macA, 1, 0x1000, p) })
}

func BenchmarkEncodeDMAReadRsp8160(b *testing.B) {
	benchEncode(b, wire.MaxFragment, func(buf, p []byte) []byte { return wire.AppendDMAReadRsp(buf, macA, macB, 1, p) })
}

// benchEncode measures encode, which appends a frame carrying a payload of
// n bytes to a buffer with room for the largest frame.
func benchEncode(b *testing.B, n int, encode func(buf, payload []byte) []byte) {
	buf := make([]byte, 0, wire.MaxFrameLen)
	payload := pattern(n, 1)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes = encode(buf[:0], payload)
	}
}

func BenchmarkDecodeDMAWriteReq8160(b *testing.B) {
	frame := dmaWriteReq(macB, macA, 1, 0x1000, pattern(wire.MaxFragment, 1)).encode()
	b.SetBytes(wire.MaxFragment)
	b.ReportAllocs()
	for b.Loop() {
		sinkClass = wire.Classify(frame, wire.MaxFrameLen)
		f := wire.Frame(frame)
		sinkBytes = f.Payload(f.Length())
	}
}

func BenchmarkDecodeDMAReadRsp8160(b *testing.B) {
	frame := dmaReadRsp(macA, macB, 1, pattern(wire.MaxFragment, 1)).encode()
	b.SetBytes(wire.MaxFragment)
	b.ReportAllocs()
	for b.Loop() {
		sinkClass = wire.Classify(frame, wire.MaxFrameLen)
		sinkProblem = wire.CheckDMAReadRsp(frame, wire.MaxFragment)
		sinkBytes = wire.Frame(frame).Payload(wire.MaxFragment)
	}
}

// BenchmarkRoundTripDMAWriteReq8160 encodes a fragment, classifies it and
// copies its payload out, as a responder writing memory would.
func BenchmarkRoundTripDMAWriteReq8160(b *testing.B) {
	buf := make([]byte, 0, wire.MaxFrameLen)
	payload := pattern(wire.MaxFragment, 1)
	mem := make([]byte, wire.MaxFragment)
	b.SetBytes(wire.MaxFragment)
	b.ReportAllocs()
	for b.Loop() {
		frame := wire.AppendDMAWriteReq(buf[:0], macB, macA, 1, 0x1000, payload)
		sinkClass = wire.Classify(frame, wire.MaxFrameLen)
		f := wire.Frame(frame)
		copy(mem, f.Payload(f.Length()))
	}
}

func BenchmarkEncodeRMEMWriteReq(b *testing.B) {
	buf := make([]byte, 0, wire.MaxFrameLen)
	b.SetBytes(32)
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes = wire.AppendRMEMWriteReq(buf[:0], macB, macA, 1, 0x1000, 0xF, 0x12345678)
	}
}

func BenchmarkEncodeRMEMReadReq(b *testing.B) {
	buf := make([]byte, 0, wire.MaxFrameLen)
	b.SetBytes(24)
	b.ReportAllocs()
	for b.Loop() {
		sinkBytes = wire.AppendRMEMReadReq(buf[:0], macB, macA, 1, 0x1000)
	}
}

func BenchmarkDecodeRMEMWriteReq(b *testing.B) {
	frame := rmemWriteReq(macB, macA, 1, 0x1000, 0xF, 0x12345678).encode()
	b.SetBytes(32)
	b.ReportAllocs()
	for b.Loop() {
		sinkClass = wire.Classify(frame, wire.MaxFrameLen)
		f := wire.Frame(frame)
		sinkU32 = f.RequestID() + f.Address() + f.BitEnable() + f.Data()
	}
}

func BenchmarkDecodeRMEMReadRsp(b *testing.B) {
	frame := rmemReadRsp(macA, macB, 1, 0x12345678).encode()
	b.SetBytes(24)
	b.ReportAllocs()
	for b.Loop() {
		sinkClass = wire.Classify(frame, wire.MaxFrameLen)
		f := wire.Frame(frame)
		sinkU32 = f.RequestID() + f.Data()
	}
}
