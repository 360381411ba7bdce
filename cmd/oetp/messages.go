package main

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// This file holds what the one-shot commands say about a failure beyond its
// code: the checklist of a REMOTE_INVALID, the note on an ERROR_RSP that a
// damaged request can cause, and the failed handshake of --transport
// reliable.

// handshakeTries is the number of SYNs the reliable transport's handshake
// sends, InitialRTO apart, before it fails (or auto falls back to v1).
const handshakeTries = node.HandshakeTries

// handshakeError is the failed handshake of --transport reliable: the peer
// answered none of the SYNs, and no request was sent.
type handshakeError struct {
	peer, own wire.MAC
	mode      endpoint.Mode // the local entry's mode
}

func (e *handshakeError) Error() string {
	return fmt.Sprintf("%v does not answer the reliable transport's handshake (%d tries, %v apart): no request was sent; "+
		"give this MAC's entry on the peer transport=reliable (on oetp serve: --peer %v,mode=%s,transport=reliable), or use --transport auto (v1 when the peer does not answer the handshake)",
		e.peer, handshakeTries, node.HandshakeInterval, e.own, remoteMode(e.mode))
}

// remoteMode is the --peer mode the remote's entry for this MAC needs for
// an operation whose local entry is in mode m.
func remoteMode(m endpoint.Mode) string {
	switch m {
	case endpoint.ModeDMARead: // dma write: the remote accepts DMA writes
		return "dma-write"
	case endpoint.ModeDMAWrite: // dma read: the remote serves DMA reads
		return "dma-read"
	}
	return "rmem"
}

// remoteModeNumber is remoteMode as the peer table's mode number.
func remoteModeNumber(m endpoint.Mode) int {
	switch m {
	case endpoint.ModeDMARead:
		return 2
	case endpoint.ModeDMAWrite:
		return 3
	}
	return 1
}

// span is the failed request's address and length: the RMEM word, or the
// DMA fragment that failed.
func (f *opFlags) span(r opResult) (addr uint32, n uint64) {
	if f.mode == endpoint.ModeRMEM {
		return r.Addr, 4
	}
	addr = r.Addr
	if r.FailedAddr != nil {
		addr = *r.FailedAddr
	}
	n = uint64(f.frag)
	if f.length > 0 {
		if rest := f.length - uint64(addr-r.Addr); n == 0 || rest < n {
			n = rest
		}
	}
	return addr, n
}

// invalidChecklist is what the human-readable REMOTE_INVALID message asks
// to check: the peer refused the request in its admission checks.
func (f *opFlags) invalidChecklist(r opResult) string {
	addr, n := f.span(r)
	mode := remoteMode(f.mode)
	var b strings.Builder
	fmt.Fprintf(&b, "the peer refused the request (0x%08x, %d bytes) in one of its checks; check:\n", addr, n)
	fmt.Fprintf(&b, "  - the window: the peer's entry for this MAC %v holds 0x%08x..0x%08x (on oetp serve: --peer %v,mode=%s,window=BASE:SIZE)\n", f.own, addr, uint64(addr)+n-1, f.own, mode)
	fmt.Fprintf(&b, "  - the peer mode for this operation: that entry is in mode %d (mode=%s); an entry has one mode, so RMEM, DMA writes and DMA reads need one local MAC each (--mac)\n", remoteModeNumber(f.mode), mode)
	if f.mode == endpoint.ModeRMEM {
		fmt.Fprintf(&b, "  - the alignment: an RMEM --addr is a multiple of 4\n")
		fmt.Fprintf(&b, "  - the length: an RMEM access is one 32-bit word\n")
	} else {
		b.WriteString("  - the alignment: DMA ranges may be unaligned (only RMEM needs a multiple of 4), so not this one unless the peer is stricter than the specification\n")
		fmt.Fprintf(&b, "  - the length: a peer refuses a Length of 0 (oetp never sends one); each fragment carries 1..%d bytes (--fragment)\n", max(f.frag, 4))
	}
	b.WriteString("  - where: oetp serve logs which check failed and for which peer (an event line with code=\"LOCAL_INVALID (1)\" check=window|mode|alignment|length, peer_mac, addr); on a board, read its peer table and status CSRs")
	return b.String()
}

// damagedNote is the note on REMOTE_OVERFLOW and the DECERR answers: the
// failed request's address and length were valid when sent, so the answer
// may be about a request damaged in transit (an ERROR_RSP is never
// retried). Empty when the request was not valid when sent.
func (f *opFlags) damagedNote(r opResult, code wire.Code) string {
	addr, n := f.span(r)
	if n == 0 || uint64(addr)+n > wholeSpace {
		return ""
	}
	what := "the peer has no memory there"
	if code == wire.CodeRemoteOverflow {
		what = fmt.Sprintf("the peer's fragment ceiling is below %d bytes (lower --fragment)", n)
	}
	return fmt.Sprintf("the failed request (0x%08x, %d bytes) was valid when sent: either %s, or the reply may come from a request damaged in transit "+
		"(an ERROR_RSP is never retried: run the command again; record with --pcap FILE to compare)", addr, n, what)
}

// transportNote is the note on a TIMEOUT under the reliable transport when
// its retransmission timeout leaves --timeout no room for a retransmission
// or two: the transport recovers a lost frame after its RTO, which grows
// under loss (up to 1s, the default --timeout), so the operation timed out
// while the transport was still recovering. Empty otherwise.
func transportNote(s *localSession, r *opResult) string {
	if s.Node == nil || !s.Reliable || endpoint.CodeOf(r.err) != wire.CodeTimeout || r.Interrupted != "" {
		return ""
	}
	timeout := s.EP.Config().RMEMTimeout
	peer, ok := s.EP.Peer(0)
	if !ok {
		return ""
	}
	pi, ok := s.Node.TransportPeer(peer.MAC)
	if !ok || timeout <= 0 || 2*pi.RTO <= timeout {
		return ""
	}
	return fmt.Sprintf("the reliable transport's retransmission timeout is %v (it grows under loss, up to %v): --timeout %v leaves it no room to resend a lost frame twice, "+
		"so the operation timed out while the transport was still recovering; raise --timeout (such as --timeout %v)",
		pi.RTO.Round(time.Millisecond), node.MaxRTO, timeout, max(10*pi.RTO, 10*time.Second).Round(time.Second))
}

// fileWords is a file operation's error as "PATH: REASON" ("/x: no such
// file or directory"), without Go's name of the operation ("open /x: ...").
func fileWords(err error) string { return cli.FileWords(err) }

// hubDialHint is what to do when no hub answers at the socket or address a
// command was given: empty for other failures (a refused token, an
// untrusted socket), whose messages say it themselves.
func hubDialHint(err error) string {
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return "; start a hub there (oetp hub --config FILE), or give the socket of a running one"
	}
	return ""
}
