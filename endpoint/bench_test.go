package endpoint_test

import (
	"testing"

	"github.com/openenoc/oetp/endpoint"
)

// benchPair returns A and B on a link/mem switch, each the other's peer 0
// in mode.
func benchPair(b *testing.B, modeA, modeB endpoint.Mode) (*endpoint.Endpoint, *endpoint.Endpoint) {
	sw := newSwitch(b)
	a := newEP(b, sw, macA, newRAM(b), endpoint.Config{})
	bb := newEP(b, sw, macB, newRAM(b), endpoint.Config{})
	setPeer(b, a, 0, win(macB, modeA))
	setPeer(b, bb, 0, win(macA, modeB))
	return a, bb
}

// BenchmarkRMEMRead measures one RMEM read round trip between two
// endpoints over link/mem.
func BenchmarkRMEMRead(b *testing.B) {
	a, _ := benchPair(b, endpoint.ModeRMEM, endpoint.ModeRMEM)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.RMEMRead(bg(), 0, 0x1000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDMAWrite measures a 64 KiB block in 8160-byte fragments.
func BenchmarkDMAWrite(b *testing.B) {
	benchBlock(b, endpoint.ModeDMARead, endpoint.ModeDMAWrite, func(a *endpoint.Endpoint, src []byte) error {
		_, err := a.DMAWrite(bg(), 0, 0x1000, src)
		return err
	})
}

// BenchmarkDMARead measures a 64 KiB block read in 8160-byte fragments.
func BenchmarkDMARead(b *testing.B) {
	benchBlock(b, endpoint.ModeDMAWrite, endpoint.ModeDMARead, func(a *endpoint.Endpoint, dst []byte) error {
		_, err := a.DMARead(bg(), 0, 0x1000, dst)
		return err
	})
}

// benchBlock measures op, a block operation of A on a 64 KiB buffer.
func benchBlock(b *testing.B, modeA, modeB endpoint.Mode, op func(a *endpoint.Endpoint, buf []byte) error) {
	a, _ := benchPair(b, modeA, modeB)
	buf := make([]byte, 0x10000)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if err := op(a, buf); err != nil {
			b.Fatal(err)
		}
	}
}
