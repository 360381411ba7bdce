//go:build linux

package node

import (
	"net"
	"os"

	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/bpf"

	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

// A Tap reads the oETP frames crossing an interface, sent and received by
// this host, without taking part: `oetp dump --iface`. Unlike a node's
// link it sends nothing, sees the host's own outgoing frames, and tells
// each frame's time, length on the wire and VLAN tag. One goroutine reads
// it; Close, from any goroutine, ends a Read.
type Tap struct {
	h *pcapgo.EthernetHandle
}

// tapFilter is a tap's socket filter: EtherType 0x88B5, untagged or under
// one or two 802.1Q / 802.1ad tags (tags the NIC took out are not in the
// packet the filter sees, so the first test matches).
var tapFilter = func() []bpf.RawInstruction {
	const accept, drop = pcap.MaxSnaplen, 0
	const et = uint32(wire.EtherType)
	prog, err := bpf.Assemble([]bpf.Instruction{
		/* 0 */ bpf.LoadAbsolute{Off: 12, Size: 2},
		/* 1 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: et, SkipTrue: 9},
		/* 2 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x8100, SkipTrue: 1},
		/* 3 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x88a8, SkipFalse: 6},
		/* 4 */ bpf.LoadAbsolute{Off: 16, Size: 2},
		/* 5 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: et, SkipTrue: 5},
		/* 6 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x8100, SkipTrue: 1},
		/* 7 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x88a8, SkipFalse: 2},
		/* 8 */ bpf.LoadAbsolute{Off: 20, Size: 2},
		/* 9 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: et, SkipTrue: 1},
		/* 10 */ bpf.RetConstant{Val: drop},
		/* 11 */ bpf.RetConstant{Val: accept},
	})
	if err != nil {
		panic(err)
	}
	return prog
}()

// OpenTap opens a tap on cfg.Iface. Errors the user fixes (no such
// interface, an interface that is down, no permission) are *ConfigError.
func OpenTap(cfg TapConfig) (*Tap, error) {
	ifi, err := lookupIface(cfg.Iface)
	if err != nil {
		return nil, err
	}
	if ifi.Flags&net.FlagUp == 0 {
		return nil, configErr("iface", " %s is down: bring it up (ip link set %s up)", cfg.Iface, cfg.Iface)
	}
	h, err := pcapgo.NewEthernetHandle(cfg.Iface)
	if err != nil {
		if os.Geteuid() != 0 {
			return nil, configErr("iface", " %s: %v: a live view needs root or CAP_NET_RAW", cfg.Iface, err)
		}
		return nil, configErr("iface", " %s: %v", cfg.Iface, err)
	}
	if err := h.SetBPF(tapFilter); err != nil {
		h.Close()
		return nil, configErr("iface", " %s: attach the socket filter: %v", cfg.Iface, err)
	}
	if cfg.Promisc {
		if err := h.SetPromiscuous(true); err != nil {
			h.Close()
			return nil, configErr("iface", " %s --promisc: %v", cfg.Iface, err)
		}
	}
	return &Tap{h: h}, nil
}

// Read waits for the next frame. The bytes are valid until the next Read.
// After Close it returns an error.
func (t *Tap) Read() ([]byte, TapInfo, error) {
	data, ci, err := t.h.ZeroCopyReadPacketData()
	if err != nil {
		return nil, TapInfo{}, err
	}
	info := TapInfo{Time: ci.Timestamp, Length: ci.Length, VLAN: -1}
	if len(ci.AncillaryData) > 0 {
		if v, ok := ci.AncillaryData[0].(int); ok {
			info.VLAN = v
		}
	}
	return data, info, nil
}

// Drops returns the frames the kernel dropped because the tap was not read
// in time, since the last call.
func (t *Tap) Drops() (uint64, error) {
	st, err := t.h.Stats()
	if err != nil {
		return 0, err
	}
	return uint64(st.Drops), nil
}

// Close closes the tap and ends a Read.
func (t *Tap) Close() error {
	t.h.Close()
	return nil
}
