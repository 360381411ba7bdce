// Package link moves whole Ethernet frames between an oETP endpoint and a
// medium. Its subpackages are the links and the wrappers of a link:
//
//   - link/afpacket: Linux AF_PACKET sockets (the real wire);
//   - link/mem: an in-process switch with group delivery and faults;
//   - link/pcap: a capture tee, and the pcap/pcapng reader and writer;
//   - link/pace: a wrapper that paces written frames to a rate;
//   - link/relay: forwards frames between two links and impairs them
//     (loss, delay, reordering) for fault tests;
//   - link/rlink: the reliable transport beneath an endpoint, per peer.
//
// The test helpers beside them: link/linktest (a scripted link to wrap),
// link/afpacket/afpackettest and link/pcap/pcaptest.
//
// The roles of an address (package role), thread placement (placement) and
// throwaway test networks (netns) are not links and live outside link.
//
// A frame is the bytes from the destination MAC through the last payload or
// padding byte, without preamble, SFD or FCS, exactly as the oETP
// specification counts frames.
//
// Besides Link, a link may implement optional interfaces that the endpoint
// looks for: Filter, Spinner, Looper, FillWriter, OffsetReader, Tracker,
// Batcher and Carrier. A link that wraps another (a pcap capture, a lossy or paced
// wire) is built with Wrap, which forwards every one of them that the
// wrapped link implements, and no other, except Tracker, Batcher and
// Carrier: the link that implements them (link/rlink) is the one the
// endpoint holds, above every wrapper.
package link

import (
	"errors"
	"time"

	"github.com/openenoc/oetp/wire"
)

// ErrClosed is returned by a Link after Close.
var ErrClosed = errors.New("link: closed")

// Link is one attachment of an endpoint to a medium. It is safe for one
// reader and several writers at the same time.
type Link interface {
	// ReadBatch blocks until at least one frame has arrived, then fills up to
	// len(bufs) frames without waiting for more: bufs[i][:sizes[i]] is frame
	// i. Each buffer should hold MaxFrame bytes; a longer frame is truncated
	// to the buffer and its size reported as the buffer length. It returns
	// ErrClosed once the link is closed.
	ReadBatch(bufs [][]byte, sizes []int) (n int, err error)

	// WriteBatch hands frames to the medium in order and returns when every
	// frame has been accepted by it (the Ethernet-facing TLAST handshake of
	// the specification). The frames may be reused as soon as it returns.
	WriteBatch(frames [][]byte) (n int, err error)

	// Write hands one frame to the medium; see WriteBatch.
	Write(frame []byte) error

	// Addr is the link's own unicast MAC address.
	Addr() wire.MAC

	// MaxFrame is the largest frame, in bytes without FCS, that the medium
	// carries (for Ethernet: MTU + 14).
	MaxFrame() int

	// Close releases the link and unblocks ReadBatch.
	Close() error
}

// Filter is implemented by links that filter received frames by
// destination like a NIC: a link delivers frames addressed to its own MAC,
// to broadcast, and to the groups it joined, and every frame in
// promiscuous mode.
type Filter interface {
	JoinGroup(mac wire.MAC) error
	LeaveGroup(mac wire.MAC) error
	SetPromiscuous(on bool) error
}

// Spinner is implemented by links whose reader can busy-poll: keep
// reading the medium for a while after each frame instead of sleeping as
// soon as it is empty (afpacket's Config.BusyPoll). BusyPoll returns that
// window; 0 means the reader sleeps at once. The endpoint uses it to spend
// the time its receive loop would spin anyway on warming the caches for
// the next DMA fragment.
type Spinner interface {
	BusyPoll() time.Duration
}

// Looper is implemented by links that can deliver batches of frames to a
// callback while they keep waiting for more, which spares a waiting reader
// the read that finds the medium empty before it sleeps (see
// link/afpacket). The endpoint uses it instead of ReadBatch when present.
type Looper interface {
	// ReadLoop waits for frames and calls batch(n) for each batch read:
	// bufs[i][:sizes[i]] is frame i, as for ReadBatch. The buffers of bufs
	// may be replaced between calls (the next batch is read into bufs as
	// they are then). ReadLoop returns nil as soon as batch returns false,
	// and ErrClosed once the link is closed.
	ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error
}

// ReadBatches is a ReadLoop made of l's ReadBatch, for a link that has no
// faster way to wait: it calls batch(n) for each batch read until batch
// returns false (then it returns nil) or ReadBatch fails.
func ReadBatches(l Link, bufs [][]byte, sizes []int, batch func(n int) bool) error {
	for {
		n, err := l.ReadBatch(bufs, sizes)
		if err != nil {
			return err
		}
		if !batch(n) {
			return nil
		}
	}
}

// FillWriter is implemented by links that let the writer put a frame's
// data straight into the medium's own copy of the frame (link/mem: the
// receiving port's queue slot), so that a payload is copied once, from its
// source, instead of into the writer's frame and from there into the
// medium. The endpoint uses it for the fragments of a DMA write.
type FillWriter interface {
	// WriteFill writes frame as Write does, except its data,
	// frame[at:at+m], which fill writes in place: into the medium's copy
	// of the frame, or into frame itself when the link takes another path
	// (a fault, a group destination, a wrapper's Write hook). fill is
	// called exactly once, before the frame is accepted or refused, with
	// the m bytes to write, all of which it must write; it returns false
	// to cancel the frame. Then nothing is written and WriteFill returns
	// false and nil. Otherwise it returns true and what Write returns for
	// the filled frame. Every byte of frame outside the data must be set
	// before the call; the data bytes of frame may be overwritten. It
	// panics unless 0 <= at <= at+m <= len(frame).
	WriteFill(frame []byte, at, m int, fill func(data []byte) bool) (filled bool, err error)
}

// Tracker is implemented by links that must know what became of each
// request frame they delivered (link/rlink: a request its endpoint does not
// answer must not be acknowledged, so that the initiator resends it, and
// one it answers must be answered once). The endpoint reports both ends of
// every unicast request frame it reads from such a link: it answers a
// request by writing its response or ERROR_RSP (to the request's source,
// with its Request ID), and a request it will never answer (a busy
// responder, an unknown source, a Reset, a frame it cannot admit) it
// reports with Dropped, at once, before it reads again or later. The link
// never infers either from the order of the endpoint's writes and reads.
type Tracker interface {
	// Dropped tells the link that the request frame f, as ReadBatch or
	// ReadLoop delivered it, will not be answered. It must not keep f.
	Dropped(f []byte)
}

// OffsetReader is implemented by links that deliver a frame where it lies
// in the buffer it was received into rather than moving it to the start
// (link/rlink: the v1 frame a reliable DATA frame carries starts 20 bytes
// in), so that its payload is copied once, out of the buffer, by the
// reader. ReadBatchAt is ReadBatch with frame i at bufs[i][offs[i]:
// offs[i]+sizes[i]]; it may reorder the buffers in bufs (never replace
// them), and each has at least MaxFrame+1 bytes.
type OffsetReader interface {
	ReadBatchAt(bufs [][]byte, offs, sizes []int) (int, error)
}

// Carrier is implemented by links that carry requests to some peers
// reliably (link/rlink): such a link resends a request until it is
// answered on its one retransmission timer per window, so the endpoint
// starts no timer per request for it (one timer of the endpoint keeps the
// response timeouts of all of them). A request the link stops carrying it
// reports with the function given to SetLost, without its locks held:
//   - abandoned (plain false: its session failed, or the peer was removed):
//     it will not be answered; it may or may not have executed. The
//     endpoint ends it as a timeout, retried as its retry policy allows;
//   - sent as a plain v1 frame (plain true: an Auto peer fell back to v1):
//     it may still be answered, and the endpoint's response timer for it
//     starts then.
type Carrier interface {
	// Carries reports whether the link carries the requests written to
	// dst from now on. It takes no lock.
	Carries(dst wire.MAC) bool
	// SetLost sets the function that the link calls for each request it
	// stops carrying: its destination and Request ID, and whether it was
	// sent as a plain frame.
	SetLost(fn func(dst wire.MAC, rid uint32, plain bool))
}

// Batcher is implemented by links that can gather the frames several
// writes hand them into one batch for the medium (link/rlink: one
// WriteBatch, one sendmmsg(2) on AF_PACKET, for the first window of a DMA
// block). Between Hold and Release the link may keep the frames written
// (they count as handed to the link: Write has returned) and writes them
// together at Release at the latest. Holds nest; every Hold needs its
// Release.
type Batcher interface {
	Hold()
	Release()
}
