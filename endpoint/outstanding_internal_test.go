package endpoint

import (
	"context"
	"testing"
	"time"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/wire"
)

// TestOutstandingTable: the initiator's table with more than one entry (as
// a transport beneath the engine would use it; v1 has one). Four RMEM
// reads are outstanding at once with four Request IDs, a fifth waits for an
// entry, the replies come back in reverse order and each completes its own
// operation (matched by Request ID in O(1)), with nothing unmatched.
func TestOutstandingTable(t *testing.T) {
	sw, err := mem.NewSwitch(mem.Config{QueueLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	macA := wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x0a}
	macP := wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x50}
	la, _ := sw.Attach(macA)
	p, _ := sw.Attach(macP)
	defer p.Close()
	e, err := New(la, nil, Config{RMEMTimeout: time.Minute, InitialRequestID: 0xFFFFFFFE, Outstanding: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.SetPeer(0, Peer{MAC: macP, Mode: ModeRMEM, WindowSize: 1 << 32}); err != nil {
		t.Fatal(err)
	}
	type res struct {
		addr, v uint32
		err     error
	}
	out := make(chan res, 5)
	read := func(addr uint32) {
		go func() {
			v, err := e.RMEMRead(context.Background(), 0, addr)
			out <- res{addr, v, err}
		}()
	}
	for i := range 4 {
		read(uint32(0x100 + 4*i))
	}
	bufs, sizes := [][]byte{make([]byte, 100)}, []int{0}
	var reqs [][]byte
	for len(reqs) < 4 {
		n, err := p.ReadBatch(bufs, sizes)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			reqs = append(reqs, append([]byte(nil), bufs[i][:sizes[i]]...))
		}
	}
	// The four are out: the fifth waits for an entry.
	read(0x110)
	testutil.Eventually(t, "the fifth RMEM operation waiting for an entry", func() bool {
		rmem, _ := e.slot.waiting()
		return rmem == 1
	})
	seen := map[uint32]bool{}
	for _, f := range reqs {
		seen[wire.Frame(f).RequestID()] = true
	}
	for _, id := range []uint32{0xFFFFFFFE, 0xFFFFFFFF, 0, 1} {
		if !seen[id] {
			t.Fatalf("Request IDs %v, want the four from 0xFFFFFFFE (wrapping)", seen)
		}
	}
	answer := func(f []byte) {
		t.Helper()
		fr := wire.Frame(f)
		addr := fr.Address()
		rsp := wire.AppendRMEMReadRsp(nil, macA, macP, fr.RequestID(), addr+1)
		if err := p.Write(rsp); err != nil {
			t.Fatal(err)
		}
	}
	for i := len(reqs) - 1; i >= 0; i-- {
		answer(reqs[i])
	}
	// The fifth goes out once an entry is free.
	n, err := p.ReadBatch(bufs, sizes)
	if err != nil || n != 1 || wire.Frame(bufs[0][:sizes[0]]).RequestID() != 2 {
		t.Fatalf("fifth request: %d frames, %v", n, err)
	}
	answer(bufs[0][:sizes[0]])
	for range 5 {
		r := <-out
		if r.err != nil || r.v != r.addr+1 {
			t.Fatalf("read of %#x = %#x, %v", r.addr, r.v, r.err)
		}
	}
	if s := e.Stats(); s.DropUnmatchedResponse != 0 || s.DropLateResponse != 0 || s.Timeouts != 0 {
		t.Fatalf("stats %+v", s)
	}
}
