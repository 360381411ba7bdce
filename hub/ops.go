package hub

import (
	"context"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
)

// The device operations, each on the endpoint of its kind, counted in the
// metrics.

func (d *Device) read(addr uint32) (uint32, error) {
	t0 := time.Now()
	v, err := d.eps[KindRMEM].RMEMRead(opCtx, 0, addr)
	d.m.done(opRead, t0, err, 0)
	return v, err
}

func (d *Device) write(addr, data, mask uint32) error {
	t0 := time.Now()
	err := d.eps[KindRMEM].RMEMWrite(opCtx, 0, addr, data, mask)
	d.m.done(opWrite, t0, err, 0)
	return err
}

func (d *Device) readBlock(addr uint32, dst []byte) (endpoint.Transfer, error) {
	t0 := time.Now()
	t, err := d.eps[KindDMARead].DMARead(opCtx, 0, addr, dst)
	d.m.done(opReadBlock, t0, err, t.Bytes)
	return t, err
}

func (d *Device) writeBlock(addr uint32, src []byte) (endpoint.Transfer, error) {
	t0 := time.Now()
	t, err := d.eps[KindDMAWrite].DMAWrite(opCtx, 0, addr, src)
	d.m.done(opWriteBlock, t0, err, t.Bytes)
	return t, err
}

func (d *Device) writeBlockFrom(ctx context.Context, addr uint32, src memory.Space, n uint32) (endpoint.Transfer, error) {
	t0 := time.Now()
	t, err := d.eps[KindDMAWrite].DMAWriteFrom(ctx, 0, addr, src, 0, n)
	d.m.done(opWriteBlock, t0, err, t.Bytes)
	return t, err
}

// bound is the longest the device may take for one operation or DMA
// fragment: its timeout times its tries, within its retry deadline; 0 when
// it waits forever. Clients derive their deadlines from it.
func (d *Device) bound() time.Duration {
	t := max(d.Config.RMEMTimeout, d.Config.DMATimeout)
	if t <= 0 {
		return 0
	}
	if r := d.Config.Retry; r.Retries > 0 {
		t *= time.Duration(r.Retries + 1)
		if r.Deadline > 0 {
			t = min(t, r.Deadline)
		}
	}
	return t
}

func (d *Device) readBlockInto(ctx context.Context, addr uint32, dst memory.Space, n uint32) (endpoint.Transfer, error) {
	t0 := time.Now()
	t, err := d.eps[KindDMARead].DMAReadInto(ctx, 0, addr, dst, 0, n)
	d.m.done(opReadBlock, t0, err, t.Bytes)
	return t, err
}
