package e2e_test

import (
	"fmt"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// TestGroupReplication: the specification's one-master-to-N-slaves
// replication over a Linux bridge of six hosts. The master (h1) has an entry
// for the group MAC in mode 3 (and one in mode 1 for RMEM); the three slaves
// (h2..h4) have Config.Group = the group MAC and an entry for the master in
// mode 2 (then 1). h5 is in another group and h6 has no group; both have
// the master in their peer table and links that deliver every group frame
// (raw policies multicast and promiscuous), so only their group check keeps
// the frames out. A three-fragment group DMA write, a group DMA write that
// falls outside h4's window, and a group RMEM write then show: frames exact
// on the wire, no reply of any kind from any slave (the pcap Tees of every
// slave and of the master show exactly what each sent and received), exact
// memory on every slave, h4's local failure recorded and raised but not
// answered, and nothing at all in the memory of h5 and h6. The slaves have
// enough responder contexts for every fragment in flight.
func TestGroupReplication(t *testing.T) {
	n := netns.NewBridge(t, 6)
	hosts := n.Hosts()
	master := hosts[0]
	macM := master.MAC()
	const (
		mGroupDMA  = 10 // master's entries
		mGroupRMEM = 11
		sMaster    = 2 // slaves' entry for the master
		word       = ramBase + 0x100
	)
	ramM := newRAM(t)
	ramM.WriteWord(word, 0x600DF00D, 0xFFFFFFFF)
	lm, pcapM := teeFile(t, openLink(t, master, afpacket.Config{}), "master")
	m := newEndpoint(t, lm, ramM, endpoint.Config{})
	setPeer(t, m, mGroupDMA, win(group, endpoint.ModeDMARead))
	setPeer(t, m, mGroupRMEM, win(group, endpoint.ModeRMEM))

	type node struct {
		h    *netns.Host
		ep   *endpoint.Endpoint
		ram  *memory.RAM
		pcap string
	}
	events := endpoint.EventEnable{PeerDMAComplete: true, RMEMError: true}
	var slaves, others []node
	for i, h := range hosts[1:] {
		nd := node{h: h, ram: newRAM(t)}
		l, path := teeFile(t, openLink(t, h, afpacket.Config{}), h.Name())
		nd.pcap = path
		entry := win(macM, endpoint.ModeDMAWrite)
		// Group fragments arrive back to back, unpaced by replies. The
		// default single responder context keeps up: RAM is immediate, so
		// the receive loop serves each fragment before it classifies the
		// next, and the test asserts that no fragment was dropped as busy.
		cfg := endpoint.Config{Group: group, Events: events}
		switch i {
		case 2: // h4: a window that ends at ramBase+0x8000
			entry.WindowSize = 0x8000
		case 3: // h5: another group
			cfg.Group, cfg.RawPolicy = otherGroup, endpoint.RawMulticast
		case 4: // h6: no group
			cfg.Group, cfg.RawPolicy = wire.MAC{}, endpoint.RawPromiscuous
		}
		nd.ep = newEndpoint(t, l, nd.ram, cfg)
		setPeer(t, nd.ep, sMaster, entry)
		if i < 3 {
			setPeer(t, m, i, win(h.MAC(), endpoint.ModeRMEM))
			slaves = append(slaves, nd)
		} else {
			others = append(others, nd)
		}
	}

	// A 20000-byte group DMA write: three fragments, Request IDs 0..2,
	// complete as soon as the link has taken them.
	src := random(20000, 6)
	const addr = ramBase + 0x1001
	tr, err := m.DMAWrite(bg(), mGroupDMA, addr, src)
	if err != nil || tr != (endpoint.Transfer{Bytes: 20000, Fragments: 3}) {
		t.Fatalf("group DMAWrite = %+v, %v", tr, err)
	}
	var groupFrames [][]byte
	for k := range 3 {
		off := 8160 * k
		groupFrames = append(groupFrames, wire.AppendDMAWriteReq(nil, group, macM, uint32(k), addr+uint32(off), src[off:min(off+8160, len(src))]))
	}
	for _, s := range slaves {
		waitStats(t, s.h.Name()+" served 3 fragments", s.ep, func(st endpoint.Stats) bool { return st.ServedDMAWrite == 3 })
	}
	// Eight bytes outside h4's window: h2 and h3 write them, h4 records
	// LOCAL_INVALID and raises its event, and nobody answers.
	small := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	if _, err := m.DMAWrite(bg(), mGroupDMA, ramBase+0x9000, small); err != nil {
		t.Fatal(err)
	}
	groupFrames = append(groupFrames, wire.AppendDMAWriteReq(nil, group, macM, 3, ramBase+0x9000, small))
	h4 := slaves[2]
	for _, s := range slaves[:2] {
		waitStats(t, s.h.Name()+" served the small write", s.ep, func(st endpoint.Stats) bool { return st.ServedDMAWrite == 4 })
	}
	waitStats(t, "h4 rejected the small write", h4.ep, func(st endpoint.Stats) bool { return st.ResponderFailures == 1 })
	wantStatus(t, "h4", h4.ep, sMaster, failed(wire.CodeLocalInvalid))
	wantEvent(t, "h4", h4.ep, endpoint.Event{Source: endpoint.PeerDMAComplete, Peer: sMaster, Code: wire.CodeLocalInvalid})

	// A group RMEM write: mode 1 at both ends.
	for _, s := range append(append([]node{}, slaves...), others...) {
		e, _ := s.ep.Peer(sMaster)
		e.Mode = endpoint.ModeRMEM
		setPeer(t, s.ep, sMaster, e)
	}
	if err := m.RMEMWrite(bg(), mGroupRMEM, word, 0x12345678, 0x00FF00FF); err != nil {
		t.Fatal(err)
	}
	groupFrames = append(groupFrames, wire.AppendRMEMWriteReq(nil, group, macM, 4, word, 0x00FF00FF, 0x12345678))
	for _, s := range slaves {
		waitStats(t, s.h.Name()+" served the RMEM write", s.ep, func(st endpoint.Stats) bool { return st.ServedRMEMWrite == 1 })
	}
	for _, o := range others {
		waitStats(t, o.h.Name()+" dropped the 5 group frames", o.ep, func(st endpoint.Stats) bool { return st.DropNotForUs == 5 })
	}

	for _, s := range slaves {
		if st := s.ep.Stats(); st.DropResponderBusy != 0 {
			t.Fatalf("%s dropped %d requests for want of a context", s.h.Name(), st.DropResponderBusy)
		}
	}
	// Exact memory everywhere.
	for i, s := range slaves {
		want := make([]byte, ramSize)
		copy(want[addr-ramBase:], src)
		if i < 2 {
			copy(want[0x9000:], small)
		}
		copy(want[word-ramBase:], []byte{0x78, 0, 0x34, 0})
		eqMem(t, s.h.Name()+"'s RAM", s.ram, ramBase, want)
	}
	for _, o := range others {
		eqMem(t, o.h.Name()+"'s RAM (not a member)", o.ram, ramBase, make([]byte, ramSize))
		if s := o.ep.Stats(); s.ServedDMAWrite != 0 || s.ServedRMEMWrite != 0 || s.ResponderFailures != 0 || s.RawReceived != 0 {
			t.Fatalf("%s: %+v", o.h.Name(), s)
		}
	}

	// Each slave now reads a word of the master (unicast RMEM, answered):
	// a reply to any group write would have been sent before this request.
	var mSent, mReceived [][]byte
	mSent = append(mSent, groupFrames...)
	for _, s := range slaves {
		v, err := s.ep.RMEMRead(bg(), sMaster, word)
		if err != nil || v != 0x600DF00D {
			t.Fatalf("%s: RMEMRead from the master = %#x, %v", s.h.Name(), v, err)
		}
		req := wire.AppendRMEMReadReq(nil, macM, s.h.MAC(), 0, word)
		rsp := wire.AppendRMEMReadRsp(nil, s.h.MAC(), macM, 0, 0x600DF00D)
		mReceived = append(mReceived, req)
		mSent = append(mSent, rsp)
		sent, received := splitBySource(pcaptest.ReadCapture(t, s.pcap), s.h.MAC())
		eqFrames(t, s.h.Name()+" sent", [][]byte{req}, sent)
		eqFrames(t, s.h.Name()+" received", append(append([][]byte{}, groupFrames...), rsp), received)
	}
	// The master's Tee records a reply once the kernel has taken it, which
	// may be after the slave has it.
	var all [][]byte
	eventually(t, "the master's capture", func() bool { all = pcaptest.ReadCapture(t, pcapM); return len(all) >= len(mSent)+len(mReceived) })
	sent, received := splitBySource(all, macM)
	eqFrames(t, "master sent", mSent, sent)
	eqFrames(t, "master received", mReceived, received)
	if s := m.Stats(); s.DropUnmatchedResponse != 0 || s.DropLateResponse != 0 || s.RxFrames != 3 || s.Timeouts != 0 {
		t.Fatalf("master's stats: %+v", s)
	}
	for i := range 3 {
		wantStatus(t, "master", m, i, endpoint.PeerStatus{})
	}
	wantStatus(t, "master group DMA", m, mGroupDMA, endpoint.PeerStatus{})
	wantStatus(t, "master group RMEM", m, mGroupRMEM, endpoint.PeerStatus{})
	for _, s := range slaves[:2] {
		wantStatus(t, s.h.Name(), s.ep, sMaster, endpoint.PeerStatus{})
		noEvent(t, s.h.Name(), s.ep)
	}
	noEvent(t, "h4", h4.ep)
}

// eqFrames fails the test unless got is exactly the frames want, in order.
func eqFrames(t testing.TB, what string, want, got [][]byte) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		eqFrame(t, fmt.Sprintf("%s: frame %d", what, i), want[i], got[i])
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d frames, want %d", what, len(got), len(want))
	}
}
