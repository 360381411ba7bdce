//go:build linux

package afpacket

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/wire"
)

// Classic BPF ancillary load of skb->pkt_type (linux/filter.h).
const (
	skfAdOff     = 0xfffff000 // SKF_AD_OFF = -0x1000
	skfAdPkttype = 4          // SKF_AD_PKTTYPE
	bpfAccept    = 0xffffffff // return: keep the whole frame
)

func bpfStmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// filterProgram returns the classic BPF program that accepts the frames the
// link delivers: none of its own outgoing frames (if outgoing is set), only
// EtherType 0x88B5 (if oetpOnly is set), then everything in promiscuous
// mode, else frames whose destination is the link's address, broadcast, or
// a joined group.
func filterProgram(outgoing, oetpOnly, promisc bool, addrs ...wire.MAC) []unix.SockFilter {
	var p []unix.SockFilter
	if outgoing {
		p = append(p,
			bpfStmt(unix.BPF_LD|unix.BPF_B|unix.BPF_ABS, skfAdOff+skfAdPkttype),
			bpfJump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.PACKET_OUTGOING, 0, 1),
			bpfStmt(unix.BPF_RET|unix.BPF_K, 0))
	}
	if oetpOnly {
		// The EtherType the socket sees: after a VLAN tag, if the kernel
		// took one out of the frame (restoreTag puts it back).
		p = append(p,
			bpfStmt(unix.BPF_LD|unix.BPF_H|unix.BPF_ABS, 12),
			bpfJump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, EtherType, 1, 0),
			bpfStmt(unix.BPF_RET|unix.BPF_K, 0))
	}
	if promisc {
		return append(p, bpfStmt(unix.BPF_RET|unix.BPF_K, bpfAccept))
	}
	for _, m := range addrs {
		// A frame shorter than 6 bytes fails the load and is dropped.
		p = append(p,
			bpfStmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 0),
			bpfJump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, binary.BigEndian.Uint32(m[0:4]), 0, 3),
			bpfStmt(unix.BPF_LD|unix.BPF_H|unix.BPF_ABS, 4),
			bpfJump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, uint32(binary.BigEndian.Uint16(m[4:6])), 0, 1),
			bpfStmt(unix.BPF_RET|unix.BPF_K, bpfAccept))
	}
	return append(p, bpfStmt(unix.BPF_RET|unix.BPF_K, 0))
}

// attachFilter installs (or atomically replaces) the receive filter for the
// link's current address, groups and promiscuous mode. Call with cmu held
// or before the link is shared.
// The probe of Config.FollowCPU gets the same frames.
func (l *Link) attachFilter(fd int) error {
	p := l.filter()
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		return fmt.Errorf("afpacket: %s: %w", l.ifname, os.NewSyscallError("setsockopt SO_ATTACH_FILTER", err))
	}
	if l.follow != nil {
		if err := l.follow.attach(l); err != nil {
			return fmt.Errorf("afpacket: %s: CPU probe: %w", l.ifname, os.NewSyscallError("setsockopt SO_ATTACH_FILTER", err))
		}
	}
	return nil
}

// filter returns the link's receive filter program. Call with cmu held or
// before the link is shared.
func (l *Link) filter() []unix.SockFilter {
	addrs := append(append([]wire.MAC{l.addr, wire.Broadcast}, l.extra...), l.groups...)
	return filterProgram(l.outgoingFilter, l.oetpOnly, l.promisc, addrs...)
}
