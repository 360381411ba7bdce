package pcap

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/openenoc/oetp/wire"
)

// Direction is where a frame went, as far as the capture knows.
type Direction uint8

const (
	DirUnknown Direction = iota // EN10MB records do not say
	DirIn                       // received by the capturing host (SLL packet types host, broadcast, multicast, otherhost)
	DirOut                      // sent by the capturing host (SLL packet type outgoing)
)

// String returns "", "in" or "out".
func (d Direction) String() string {
	switch d {
	case DirIn:
		return "in"
	case DirOut:
		return "out"
	}
	return ""
}

// VLAN is one 802.1Q (TPID 0x8100) or 802.1ad (0x88a8) tag.
type VLAN struct {
	TPID         uint16
	ID           uint16 // 0..4095
	Priority     uint8  // PCP, 0..7
	DropEligible bool
}

// Frame is a record seen as an Ethernet frame.
type Frame struct {
	// Bytes is the untagged Ethernet frame: destination, source,
	// EtherType, payload. For a cooked capture the destination is not
	// recorded and is all zeros (see DstKnown).
	Bytes []byte
	// DstKnown is false for Linux cooked captures, which record only the
	// source address; PacketType then says where the frame was addressed.
	DstKnown bool
	// PacketType is the Linux packet type of a cooked capture: "host",
	// "broadcast", "multicast", "otherhost" or "outgoing"; empty for
	// EN10MB.
	PacketType string
	Direction  Direction
	// VLANs are the tags taken out of the frame, outermost first.
	VLANs []VLAN

	// decoders, kept so that Ethernet does not allocate
	sll  layers.LinuxSLL
	sll2 layers.LinuxSLL2
	tag  layers.Dot1Q
}

// maxTags is the most VLAN tags Ethernet takes out of one frame.
const maxTags = 8

// Ethernet interprets data, a record of link type lt, as an Ethernet frame:
// it removes a cooked-capture header (putting a zero destination and the
// recorded source in its place) and every 802.1Q / 802.1ad tag. The result
// reuses f's buffers; it does not allocate once they have grown. A link
// type that does not carry Ethernet gives an error wrapping ErrLinkType, a
// record too short for its headers one wrapping ErrFrame.
func Ethernet(lt LinkType, data []byte, f *Frame) error {
	f.DstKnown, f.PacketType, f.Direction, f.VLANs = true, "", DirUnknown, f.VLANs[:0]
	var src []byte
	var etherType uint16
	var payload []byte
	df := gopacket.NilDecodeFeedback
	switch lt {
	case LinkTypeEthernet:
		if len(data) < wire.HeaderLen {
			return fmt.Errorf("%w: %d bytes, an Ethernet header needs %d", ErrFrame, len(data), wire.HeaderLen)
		}
		f.Bytes = append(f.Bytes[:0], data[:12]...)
		etherType, payload = binary.BigEndian.Uint16(data[12:]), data[14:]
	case LinkTypeLinuxSLL:
		sll := &f.sll
		if err := sll.DecodeFromBytes(data, df); err != nil {
			return fmt.Errorf("%w: %v", ErrFrame, err)
		}
		src, etherType, payload = sll.Addr, uint16(sll.EthernetType), sll.Payload
		f.PacketType, f.Direction = sllPacketType(uint16(sll.PacketType))
	case LinkTypeLinuxSLL2:
		sll := &f.sll2
		if err := sll.DecodeFromBytes(data, df); err != nil {
			return fmt.Errorf("%w: %v", ErrFrame, err)
		}
		src, etherType, payload = sll.Addr, uint16(sll.ProtocolType), sll.Payload
		f.PacketType, f.Direction = sllPacketType(uint16(sll.PacketType))
	default:
		return fmt.Errorf("%w: %v; oetp reads EN10MB (1), LINUX_SLL (113) and LINUX_SLL2 (276)", ErrLinkType, lt)
	}
	if lt != LinkTypeEthernet {
		if len(src) != 6 {
			return fmt.Errorf("%w: cooked capture with a %d-byte address, not an Ethernet MAC", ErrFrame, len(src))
		}
		f.DstKnown = false
		f.Bytes = append(append(f.Bytes[:0], 0, 0, 0, 0, 0, 0), src...)
	}
	for etherType == uint16(layers.EthernetTypeDot1Q) || etherType == uint16(layers.EthernetTypeQinQ) {
		if len(f.VLANs) == maxTags {
			return fmt.Errorf("%w: more than %d VLAN tags", ErrFrame, maxTags)
		}
		tag := &f.tag
		if err := tag.DecodeFromBytes(payload, df); err != nil {
			return fmt.Errorf("%w: %v", ErrFrame, err)
		}
		f.VLANs = append(f.VLANs, VLAN{TPID: etherType, ID: tag.VLANIdentifier, Priority: tag.Priority, DropEligible: tag.DropEligible})
		etherType, payload = binary.BigEndian.Uint16(payload[2:4]), payload[4:]
	}
	f.Bytes = binary.BigEndian.AppendUint16(f.Bytes, etherType)
	f.Bytes = append(f.Bytes, payload...)
	return nil
}

// sllPacketType names a Linux packet type (PACKET_HOST and the others).
func sllPacketType(t uint16) (string, Direction) {
	switch t {
	case 0:
		return "host", DirIn
	case 1:
		return "broadcast", DirIn
	case 2:
		return "multicast", DirIn
	case 3:
		return "otherhost", DirIn
	case 4:
		return "outgoing", DirOut
	}
	return fmt.Sprintf("type %d", t), DirUnknown
}
