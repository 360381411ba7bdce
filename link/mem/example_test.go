package mem_test

import (
	"fmt"

	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/wire"
)

func Example() {
	sw, err := mem.NewSwitch(mem.Config{Seed: 1})
	if err != nil {
		panic(err)
	}
	a, _ := sw.Attach(wire.MAC{0x02, 0, 0, 0, 0, 0x0a})
	b, _ := sw.Attach(wire.MAC{0x02, 0, 0, 0, 0, 0x0b})
	defer a.Close()
	defer b.Close()

	// Truncate the next frame to its 14-byte header.
	if err := sw.AddRule(mem.Rule{Action: mem.Truncate, Len: 14, Count: 1}); err != nil {
		panic(err)
	}
	dst, src := b.Addr(), a.Addr()
	f := append(append(append([]byte{}, dst[:]...), src[:]...), 0x88, 0xb5, 'h', 'i')
	a.Write(f)
	a.Write(f)

	bufs := [][]byte{make([]byte, b.MaxFrame()), make([]byte, b.MaxFrame())}
	sizes := make([]int, 2)
	n, _ := b.ReadBatch(bufs, sizes)
	for i := range n {
		fmt.Printf("% x\n", bufs[i][:sizes[i]])
	}
	fmt.Printf("%+v\n", sw.Stats())
	// Output:
	// 02 00 00 00 00 0b 02 00 00 00 00 0a 88 b5
	// 02 00 00 00 00 0b 02 00 00 00 00 0a 88 b5 68 69
	// {TxFrames:2 TxBytes:32 RxFrames:2 RxBytes:30 DropQueueFull:0 DropTooLong:0 DropTooShort:0 DropFault:0}
}
