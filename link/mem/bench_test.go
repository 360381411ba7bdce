package mem

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkHop measures one frame hop: Write on one port and ReadBatch of
// the same frame on another, in one goroutine.
func BenchmarkHop(b *testing.B) {
	for _, size := range []int{60, 8192} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			sw := newSwitch(b, Config{})
			tx, rx := attach(b, sw, macA), attach(b, sw, macB)
			f := seqFrame(macB, macA, 1, size)
			bufs := [][]byte{make([]byte, sw.MaxFrame())}
			sizes := make([]int, 1)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := tx.Write(f); err != nil {
					b.Fatal(err)
				}
				if n, err := rx.ReadBatch(bufs, sizes); n != 1 || err != nil {
					b.Fatalf("ReadBatch = %d, %v", n, err)
				}
			}
		})
	}
}

// BenchmarkStream measures throughput with the writer and the reader on
// separate goroutines; the reader takes up to 32 frames per ReadBatch.
func BenchmarkStream(b *testing.B) {
	sw := newSwitch(b, Config{MaxFrame: 1514, QueueLen: 1024})
	tx, rx := attach(b, sw, macA), attach(b, sw, macB)
	f := seqFrame(macB, macA, 1, 1514)
	bufs := make([][]byte, 32)
	for i := range bufs {
		bufs[i] = make([]byte, 1514)
	}
	sizes := make([]int, len(bufs))
	done := make(chan int)
	go func() {
		got := 0
		for {
			n, err := rx.ReadBatch(bufs, sizes)
			if err != nil {
				done <- got
				return
			}
			got += n
		}
	}()
	b.SetBytes(int64(len(f)))
	b.ReportAllocs()
	for b.Loop() {
		// Keep the queue from overflowing: a drop would make the
		// benchmark measure nothing.
		for rx.Stats().RxFrames+1000 < tx.Stats().TxFrames {
			runtime.Gosched()
		}
		if err := tx.Write(f); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for queued(rx) > 0 {
		runtime.Gosched()
	}
	rx.Close()
	<-done
	if d := rx.Stats().DropQueueFull; d != 0 {
		b.Fatalf("%d frames dropped", d)
	}
}
