package oneshot

import (
	"fmt"
	"strings"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// This file holds what a one-shot command says about a failure beyond its
// code: the checklists of a TIMEOUT and a REMOTE_INVALID, the note on an
// ERROR_RSP that a damaged request can cause, the note on a TIMEOUT under
// the reliable transport's own timer, and the failed handshake of
// --transport reliable.

// wholeSpace is the size of the whole 32-bit address space.
const wholeSpace = uint64(1) << 32

// HandshakeTries is the number of SYNs the reliable transport's handshake
// sends, InitialRTO apart, before it fails (or auto falls back to v1).
const HandshakeTries = node.HandshakeTries

// HandshakeError is the failed handshake of --transport reliable: the peer
// answered none of the SYNs, and no request was sent.
type HandshakeError struct {
	Peer, Own wire.MAC
	Mode      endpoint.Mode // the local entry's mode
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("%v does not answer the reliable transport's handshake (%d tries, %v apart): no request was sent; "+
		"give this MAC's entry on the peer transport=reliable (on oetp serve: --peer %v,mode=%s,transport=reliable), or use --transport auto (v1 when the peer does not answer the handshake)",
		e.Peer, HandshakeTries, node.HandshakeInterval, e.Own, remoteMode(e.Mode))
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

// timeoutChecklist is what the human-readable TIMEOUT message asks to
// check, for this command's interface, MAC and modes.
func (o *Op) timeoutChecklist() string {
	remote := map[endpoint.Mode]string{endpoint.ModeRMEM: "1 (RMEM), mode=rmem", endpoint.ModeDMARead: "2 (accept DMA writes), mode=dma-write",
		endpoint.ModeDMAWrite: "3 (serve DMA reads), mode=dma-read"}[o.Mode]
	mode, flag, _ := strings.Cut(remote, ", ")
	wait := "--timeout " + o.Timeout.String()
	var b strings.Builder
	fmt.Fprintf(&b, "no response within %s; check:\n", wait)
	fmt.Fprintf(&b, "  - the remote's peer table has an entry for this MAC %v in mode %s whose window holds the address (on oetp serve: --peer %v,%s; serve logs requests from MACs it has no entry for)\n", o.Own, mode, o.Own, flag)
	fmt.Fprintf(&b, "  - --peer %v is the remote's MAC, and the remote is running\n", o.Peer)
	b.WriteString("  - a board (openENOC RTL) whose interrupt claims nobody services: once its IRQ FIFO is full (16 claims, after about 17 failed requests) it answers no request at all; service or complete the board's interrupt claims (or disable its error events), then retry\n")
	if o.Ceiling > 0 {
		fmt.Fprintf(&b, "  - the MTU: every device on the path carries %d-byte frames (an MTU of at least %d), or lower --max-frame\n", o.Ceiling, o.Ceiling-wire.HeaderLen)
	} else {
		b.WriteString("  - the MTU: every device on the path carries the frames the sender uses (--max-frame)\n")
	}
	fmt.Fprintf(&b, "  - VLANs: frames leave %s untagged; a remote on a VLAN needs the VLAN interface as --iface (such as %s.100)\n", o.Iface, o.Iface)
	fmt.Fprintf(&b, "  - the cable and the link: ip link show %s (state UP, carrier)\n", o.Iface)
	fmt.Fprintf(&b, "  - the wire: record with --pcap FILE (or tcpdump -i %s -w FILE ether proto 0x88b5) and read it with oetp dump FILE", o.Iface)
	return b.String()
}

// span is the failed request's address and length: the RMEM word, or the
// DMA fragment that failed.
func (o *Op) span(r Result) (addr uint32, n uint64) {
	if o.Mode == endpoint.ModeRMEM {
		return r.Addr, 4
	}
	addr = r.Addr
	if r.FailedAddr != nil {
		addr = *r.FailedAddr
	}
	n = uint64(o.Frag)
	if o.Length > 0 {
		if rest := o.Length - uint64(addr-r.Addr); n == 0 || rest < n {
			n = rest
		}
	}
	return addr, n
}

// invalidChecklist is what the human-readable REMOTE_INVALID message asks
// to check: the peer refused the request in its admission checks.
func (o *Op) invalidChecklist(r Result) string {
	addr, n := o.span(r)
	mode := remoteMode(o.Mode)
	var b strings.Builder
	fmt.Fprintf(&b, "the peer refused the request (0x%08x, %d bytes) in one of its checks; check:\n", addr, n)
	fmt.Fprintf(&b, "  - the window: the peer's entry for this MAC %v holds 0x%08x..0x%08x (on oetp serve: --peer %v,mode=%s,window=BASE:SIZE)\n", o.Own, addr, uint64(addr)+n-1, o.Own, mode)
	fmt.Fprintf(&b, "  - the peer mode for this operation: that entry is in mode %d (mode=%s); an entry has one mode, so RMEM, DMA writes and DMA reads need one local MAC each (--mac)\n", remoteModeNumber(o.Mode), mode)
	if o.Mode == endpoint.ModeRMEM {
		fmt.Fprintf(&b, "  - the alignment: an RMEM --addr is a multiple of 4\n")
		fmt.Fprintf(&b, "  - the length: an RMEM access is one 32-bit word\n")
	} else {
		b.WriteString("  - the alignment: DMA ranges may be unaligned (only RMEM needs a multiple of 4), so not this one unless the peer is stricter than the specification\n")
		fmt.Fprintf(&b, "  - the length: a peer refuses a Length of 0 (oetp never sends one); each fragment carries 1..%d bytes (--fragment)\n", max(o.Frag, 4))
	}
	b.WriteString("  - where: oetp serve logs which check failed and for which peer (an event line with code=\"LOCAL_INVALID (1)\" check=window|mode|alignment|length, peer_mac, addr); on a board, read its peer table and status CSRs")
	return b.String()
}

// damagedNote is the note on REMOTE_OVERFLOW and the DECERR answers: the
// failed request's address and length were valid when sent, so the answer
// may be about a request damaged in transit (an ERROR_RSP is never
// retried). Empty when the request was not valid when sent.
func (o *Op) damagedNote(r Result, code wire.Code) string {
	addr, n := o.span(r)
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
func transportNote(s *session.Local, r *Result) string {
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
