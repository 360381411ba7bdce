package hub_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/internal/testutil"
)

func withLimits(l hub.Limits) func(*hub.Config) { return func(c *hub.Config) { c.Limits = l } }

// openRaw opens board1 on a raw connection and returns its handle.
func openRaw(t *testing.T, c net.Conn) uint16 {
	t.Helper()
	req := proto.AppendHeader(nil, proto.Open, 0, 1)
	req = append(append(req, proto.OpenByName), "board1"...)
	c.Write(proto.Finish(req, 0))
	_, st, res := readReply(t, c)
	if st.Status != 0 || len(res) < 2 {
		t.Fatalf("OPEN: %+v", st)
	}
	return binary.LittleEndian.Uint16(res)
}

// 10,000 idle connections: a new client past the cap is refused at once
// with a message naming the limit, and served again when one leaves.
func TestConnectionCap(t *testing.T) {
	th := newTestHub(t)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for len(idle) < 10000 {
		c, err := net.Dial("unix", th.path)
		if errors.Is(err, syscall.EAGAIN) {
			time.Sleep(time.Millisecond) // the listen queue is full: the hub is still accepting
			continue
		}
		if err != nil {
			t.Fatalf("connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	// The hub has accepted them all: the ones past the cap refused.
	testutil.Eventually(t, "the connections past the cap refused", func() bool {
		return th.h.Refused() >= uint64(len(idle)-hub.DefaultMaxClients)
	})
	t0 := time.Now()
	_, err := client.Dial(th.path)
	took := time.Since(t0)
	var he *client.HubError
	if !errors.As(err, &he) || he.Status != proto.StatusBusy || !strings.Contains(he.Message, "max_clients") || !strings.Contains(he.Message, "1024") {
		t.Fatalf("client past the cap: %v", err)
	}
	t.Logf("refused at the cap in %v", took)
	if took > time.Second {
		t.Errorf("refusal took %v", took)
	}
	// The connections past the cap were refused and closed: one of them
	// reads the notice, then end of file.
	last := idle[len(idle)-1]
	hdr, st, _ := readReply(t, last)
	if hdr.Tag != proto.NoticeTag || st.Status != proto.StatusBusy {
		t.Errorf("refused connection: %+v %+v", hdr, st)
	}
	for _, c := range idle[:hub.DefaultMaxClients] {
		c.Close()
	}
	idle = idle[hub.DefaultMaxClients:]
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := client.Dial(th.path)
		if err == nil {
			d, err := c.Device("board1")
			if err == nil {
				_, err = d.Read(0)
			}
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no client served after the idle ones left: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := th.h.Refused(); n < 10000-hub.DefaultMaxClients {
		t.Errorf("refused connections counted: %d", n)
	}
}

// A connection idle past idle_timeout gets an IDLE notice and is closed.
func TestIdleTimeout(t *testing.T) {
	th := newTestHubConfig(t, withLimits(hub.Limits{IdleTimeout: 200 * time.Millisecond}))
	c := rawConn(t, th.path)
	openRaw(t, c)
	hdr, st, _ := readReply(t, c) // waits for the notice
	if hdr.Tag != proto.NoticeTag || st.Status != proto.StatusIdle || !strings.Contains(st.Message, "idle_timeout") {
		t.Errorf("notice %+v %+v", hdr, st)
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after the notice: %v, want end of file", err)
	}
	// The Go client reports it: nothing ran.
	cl := dial(t, th.path)
	d := openDev(t, cl)
	waitClients(t, th, 0) // both connections closed at the idle timeout
	_, err := d.Read(0)
	var he *client.HubError
	if !errors.As(err, &he) || he.Status != proto.StatusIdle {
		t.Errorf("read after the idle timeout: %v", err)
	}
}

// A request that stops arriving part way is abandoned after the read
// deadline (nothing of it runs); a streamed block that stalls is aborted,
// its client told that it may have executed, and other clients' writes to
// the device go on within the deadline.
func TestReadDeadline(t *testing.T) {
	if hub.DefaultReadDeadline > 5*time.Second {
		t.Errorf("the default read deadline %v is above 5s", hub.DefaultReadDeadline)
	}
	rd := 300 * time.Millisecond
	th := newTestHubConfig(t, withLimits(hub.Limits{ReadDeadline: rd}))
	// A WRITE half sent.
	c := rawConn(t, th.path)
	h := openRaw(t, c)
	req := proto.AppendHeader(nil, proto.Write, h, 2)
	req = binary.LittleEndian.AppendUint32(req, 0x40)
	req = proto.Finish(binary.LittleEndian.AppendUint64(req, 0x1111111111111111), 0)
	c.Write(req[:len(req)-4])
	hdr, st, _ := readReply(t, c)
	if hdr.Tag != proto.NoticeTag || st.Status != proto.StatusStalled {
		t.Errorf("stalled WRITE: %+v %+v", hdr, st)
	}
	// A streamed block: 2 MiB announced, 1 MiB sent, then nothing.
	s := rawConn(t, th.path)
	h = openRaw(t, s)
	blk := proto.AppendHeader(nil, proto.WriteBlock, h, 2)
	blk = binary.LittleEndian.AppendUint32(blk, 0x1000000)
	binary.LittleEndian.PutUint32(blk, uint32(len(blk)-4+2<<20))
	s.Write(blk)
	s.Write(bytes.Repeat([]byte{0xAB}, 1<<20))
	// Another client's writes to the device wait at most the deadline.
	d := openDev(t, dial(t, th.path))
	t0 := time.Now()
	if err := d.WriteBlock(0x100000, make([]byte, 64<<10)); err != nil {
		t.Fatalf("another client's write: %v", err)
	}
	if took := time.Since(t0); took > rd+2*time.Second {
		t.Errorf("another client's write took %v, read deadline %v", took, rd)
	}
	hdr, st, res := readReply(t, s)
	if hdr.Tag != 2 || st.Status == 0 || st.Flags&proto.FlagMaybeExecuted == 0 || st.Detail == nil || st.Detail.Cause != proto.CauseStalled {
		t.Fatalf("stalled block's reply: %+v %+v", hdr, st)
	}
	oe := st.OpError()
	done := binary.LittleEndian.Uint32(res)
	if !errors.Is(oe, proto.ErrStalled) || oe.Bytes != uint64(done) || done == 0 || done > 1<<20 || oe.Op != "DMA write" {
		t.Errorf("stalled block: %v, %d bytes done (%+v)", oe, done, oe)
	}
	if _, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after the stalled block: %v, want end of file", err)
	}
	if n := th.h.Stalls(); n != 2 {
		t.Errorf("stalls counted: %d, want 2", n)
	}
}

// Past the memory budget a request gets BUSY and runs nothing; past
// max_message TOO_LARGE; the connection goes on.
func TestMemoryBudget(t *testing.T) {
	th := newTestHubConfig(t, withLimits(hub.Limits{MemoryBudget: 256 << 10, MaxMessage: 128 << 10, ReadDeadline: 200 * time.Millisecond}))
	d := openDev(t, dial(t, th.path))
	_, err := d.ReadBlock(0x100000, 512<<10)
	var he *client.HubError
	if !errors.As(err, &he) || he.Status != proto.StatusBusy || !strings.Contains(he.Message, "memory_budget") {
		t.Errorf("a block read past the budget: %v", err)
	}
	// A streamed block needs its ring: BUSY, nothing written, the body
	// dropped, and the connection goes on.
	err = d.WriteBlock(0x1000000, bytes.Repeat([]byte{1}, 2<<20))
	if !errors.As(err, &he) || he.Status != proto.StatusBusy {
		t.Errorf("a streamed block past the budget: %v", err)
	}
	if v, err := d.Read(0x1000000); err != nil || v != 0 {
		t.Errorf("after the refused block: %#x %v", v, err)
	}
	err = d.WriteBlock(0x100000, make([]byte, 200<<10))
	if !errors.As(err, &he) || he.Status != proto.StatusTooLarge || !strings.Contains(he.Message, "max_message") {
		t.Errorf("a body past max_message: %v", err)
	}
	if err := d.WriteBlock(0x100000, make([]byte, 100<<10)); err != nil {
		t.Errorf("a block within the limits: %v", err)
	}
	if th.h.Busy() != 2 {
		t.Errorf("busy refusals %d, want 2", th.h.Busy())
	}
}

// Concurrent clients within the budget all run; what they hold returns.
func TestMemoryBudgetReleased(t *testing.T) {
	th := newTestHubConfig(t, withLimits(hub.Limits{MemoryBudget: 8 << 20}))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			c, err := client.Dial(th.path)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			d, _ := c.Device("board1")
			for range 5 {
				if err := d.WriteBlock(0x1000000+uint32(i)<<20, make([]byte, 1<<20)); err != nil {
					t.Error(err)
				}
				if _, err := d.ReadBlock(0x100000, 512<<10); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// A reply's bytes are counted until written, so the last one may
	// still be returning as its client reads it.
	waitReleased(t, th.h)
}
