package memory_test

import (
	"fmt"

	"github.com/openenoc/oetp/memory"
)

// A responder's address space: 64 KiB of RAM at 0x1000, a failing target
// right after it, and holes everywhere else.
func ExampleMap() {
	ram, _ := memory.NewRAM(0x1000, 64<<10)
	bad, _ := memory.NewFault(0x11000, 4<<10, memory.SLVERR)
	m := memory.NewMap()
	m.Add(0x1000, 64<<10, ram)
	m.Add(0x11000, 4<<10, bad)

	fmt.Println(m.WriteAt([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 0x10FFC)) // last 4 bytes of RAM, then the fault
	fmt.Println(ram.Bytes()[0xFFFC:])                               // written before the fault answered
	fmt.Println(m.ReadAt(make([]byte, 4), 0x20000))                 // a hole
	m.WriteWord(0x1000, 0xFFFFFFFF, 0x5)                            // only bits 0 and 2
	fmt.Println(m.ReadWord(0x1000))
	// Output:
	// SLVERR
	// [1 2 3 4]
	// DECERR
	// 5 true
}
