package rlink_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/link/rlink"
	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// linkPair joins A and B by the in-memory switch, each through an rlink
// with the other as a reliable peer; the test's end closes them.
func linkPair(t *testing.T, seed int64) (pa, pb *mem.Port, la, lb *rlink.Link) {
	sw, _ := mem.NewSwitch(mem.Config{Seed: seed})
	pa, _ = sw.Attach(macA)
	pb, _ = sw.Attach(macB)
	la, _ = rlink.New(pa, rlink.Config{})
	lb, _ = rlink.New(pb, rlink.Config{})
	t.Cleanup(func() { la.Close(); lb.Close() })
	la.SetPeer(macB, rlink.Reliable)
	lb.SetPeer(macA, rlink.Reliable)
	return pa, pb, la, lb
}

// reader reads l in its own goroutine and hands each frame over, copied;
// with at, through ReadBatchAt, each frame after its offset in the buffer
// it was received into, as a string of two bytes.
func reader(t *testing.T, l *rlink.Link, at bool) <-chan []byte {
	c := make(chan []byte, 64)
	go func() {
		defer close(c)
		bufs, offs, sizes := [][]byte{make([]byte, 9000), make([]byte, 9000)}, []int{0, 0}, []int{0, 0}
		own := [2]*byte{&bufs[0][0], &bufs[1][0]}
		for {
			var n int
			var err error
			if at {
				n, err = l.ReadBatchAt(bufs, offs, sizes)
			} else {
				n, err = l.ReadBatch(bufs, sizes)
			}
			if err != nil {
				return
			}
			for i := range n {
				if &bufs[i][0] != own[0] && &bufs[i][0] != own[1] {
					t.Error("ReadBatchAt replaced a buffer")
				}
				f := bufs[i][offs[i] : offs[i]+sizes[i]]
				if at {
					f = append([]byte{byte(offs[i] >> 8), byte(offs[i])}, f...)
				}
				c <- append([]byte(nil), f...)
			}
		}
	}()
	return c
}

func next(t *testing.T, c <-chan []byte) []byte {
	t.Helper()
	select {
	case f := <-c:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame in 10s")
		return nil
	}
}

// WriteFill puts a DMA fragment's data straight into the transport's copy
// of the frame: the bytes the peer's endpoint receives are those fill
// wrote, never the frame's own, and ReadBatchAt gives them where they were
// received, in the caller's buffer; fill runs exactly once; a response whose
// fill cancels it leaves its request delivered, so that the answer written
// instead (an ERROR_RSP) is the one the initiator gets.
func TestWriteFill(t *testing.T) {
	_, _, la, lb := linkPair(t, 3)
	ra, rb := reader(t, la, false), reader(t, lb, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := la.Open(ctx, macB); !ok || err != nil {
		t.Fatalf("Open: %v %v", ok, err)
	}
	const n = 4096
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	req, d := wire.GrowDMAWriteReq(nil, macB, macA, 7, 0x1000, n)
	for i := range d {
		d[i] = 0xaa // not what goes out
	}
	want := append([]byte(nil), req...)
	copy(want[wire.ParamOffset+12:], data)
	calls := 0
	at, m := wire.ParamOffset+12, len(req)-(wire.ParamOffset+16)
	filled, err := la.WriteFill(req, at, m, func(b []byte) bool {
		calls++
		copy(b, data)
		clear(b[n:])
		return true
	})
	if !filled || err != nil || calls != 1 {
		t.Fatalf("WriteFill of the request: %v %v, fill called %d times", filled, err, calls)
	}
	// B reads without a copy: the v1 request where the DATA frame
	// carries it, 20 bytes into the buffer.
	if got := next(t, rb); !bytes.Equal(got[2:], want) || got[0] != 0 || got[1] != reliable.Headroom {
		t.Fatalf("the responder received %d bytes at offset %d, not the filled request (%d bytes at %d)", len(got)-2, int(got[0])<<8|int(got[1]), len(want), reliable.Headroom)
	}
	// The responder's fill cancels its DMA_READ_RSP-like answer: nothing
	// goes out, and the ERROR_RSP written next answers the request.
	rsp, _ := wire.GrowDMAReadRsp(nil, macA, macB, 7, n)
	calls = 0
	filled, err = lb.WriteFill(rsp, wire.ParamOffset+4, len(rsp)-(wire.ParamOffset+8), func([]byte) bool { calls++; return false })
	if filled || err != nil || calls != 1 {
		t.Fatalf("cancelled WriteFill of the response: %v %v, fill called %d times", filled, err, calls)
	}
	er := wire.AppendErrorRsp(nil, macA, macB, 7, wire.CauseAXIRdSlverr)
	if err := lb.Write(er); err != nil {
		t.Fatal(err)
	}
	if got := next(t, ra); !bytes.Equal(got, er) {
		t.Fatalf("the initiator received % x, want the ERROR_RSP % x", got, er)
	}
	if st := lb.Stats(); st.Executed != 1 {
		t.Errorf("the responder's transport executed %d requests, want 1", st.Executed)
	}
}
