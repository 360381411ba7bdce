package transport_test

import (
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/transport"
	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// A v1 endpoint (the transport not enabled for the peer) that receives
// reliable frames, SYN and a DATA request, drops them by its raw policy,
// counts them, and answers nothing; the Sender's handshake then fails within
// 3 InitialRTOs, as `auto` needs to fall back.
func TestV1EndpointDropsReliableFrames(t *testing.T) {
	sw, err := mem.NewSwitch(mem.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := sw.Attach(wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x0a})
	b, _ := sw.Attach(wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x0b})
	defer a.Close()
	ram, _ := memory.NewRAM(0, 1<<16)
	ep, err := endpoint.New(b, ram, endpoint.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if err := ep.SetPeer(0, endpoint.Peer{MAC: a.Addr(), Mode: endpoint.ModeRMEM, WindowSize: 1 << 32}); err != nil {
		t.Fatal(err)
	}

	clock := transport.NewMonotonicClock()
	s, err := transport.NewSender(transport.Config{InitialRTO: 20 * time.Millisecond}, a.Addr(), b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	s.Open(clock.Now(), 0x1234, 77)
	// A DATA request as well, as if the session were open.
	data := reliable.AppendData(nil, b.Addr(), a.Addr(), reliable.Header{Flags: reliable.FlagAck, Session: 0x1234, PSN: 77, APSN: 77},
		wire.AppendRMEMReadReq(nil, b.Addr(), a.Addr(), 1, 0)[wire.HeaderLen:])

	got := make(chan int, 1)
	go func() {
		bufs := [][]byte{make([]byte, 9000)}
		sizes := []int{0}
		n := 0
		for {
			k, err := a.ReadBatch(bufs, sizes)
			if err != nil {
				got <- n
				return
			}
			n += k
		}
	}()

	start := time.Now()
	frames := s.Pending(clock.Now(), nil)
	frames = append(frames, data)
	for s.State() == transport.SynSent {
		for _, f := range frames {
			if err := a.Write(f); err != nil {
				t.Fatal(err)
			}
		}
		d, _ := s.Deadline()
		time.Sleep(max(d-clock.Now(), 0))
		s.OnTimer(clock.Now())
		frames = s.Pending(clock.Now(), nil)
	}
	if s.State() != transport.Failed {
		t.Fatalf("state %v", s.State())
	}
	if el := time.Since(start); el < 60*time.Millisecond || el > time.Second {
		t.Errorf("the handshake failed after %v, want 3 InitialRTOs (60ms)", el)
	}
	if n := s.Stats().Syns; n != 3 {
		t.Errorf("%d SYNs", n)
	}
	// 3 SYNs and the DATA frame (sent with the first SYN): the endpoint
	// counts every one as a raw-policy drop.
	deadline := time.Now().Add(time.Second)
	for ep.Stats().DropRawPolicy < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	st := ep.Stats()
	if st.DropRawPolicy != 4 || st.TxFrames != 0 {
		t.Errorf("v1 endpoint: raw-policy drops %d (want 4), frames sent %d (want 0)", st.DropRawPolicy, st.TxFrames)
	}
	a.Close()
	if n := <-got; n != 0 {
		t.Errorf("the v1 endpoint answered %d frames", n)
	}
}
