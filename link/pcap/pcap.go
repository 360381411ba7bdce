// Package pcap records and reads captures of oETP traffic: pcapng and
// classic libpcap files, through github.com/gopacket/gopacket/pcapgo, and a
// link.Link tee that records every frame in causal order.
//
// Writer writes pcapng by default (what tshark, dumpcap and Wireshark write
// and every current tool reads: a Section Header Block, one Interface
// Description Block with LINKTYPE_ETHERNET and nanosecond timestamps, then
// one Enhanced Packet Block per frame) or, on request, the classic format
// with microsecond timestamps (magic 0xa1b2c3d4, version 2.4), which every
// tcpdump and libpcap version reads. Frames are recorded as the link
// carries them: no preamble, SFD or FCS.
//
// Reader reads classic files (microsecond and nanosecond, either byte
// order, gzip-compressed too) and pcapng files (every section and interface,
// mixed link types), and Ethernet turns a record of any link type that
// carries Ethernet into the Ethernet frame: EN10MB (1), Linux cooked capture
// v1 (LINUX_SLL, 113, what `tcpdump -i any` wrote before libpcap 1.10) and
// v2 (LINUX_SLL2, 276), with 802.1Q and 802.1ad tags taken out and reported.
//
// Tee wraps a link so that every frame read from it and written to it is
// recorded, live.
package pcap

import (
	"errors"
	"fmt"
	"strings"
)

// LinkType is a pcap LINKTYPE_ value.
type LinkType uint32

// The link types that carry Ethernet.
const (
	// LinkTypeEthernet is LINKTYPE_ETHERNET (DLT_EN10MB): frames from the
	// destination MAC, without FCS.
	LinkTypeEthernet LinkType = 1
	// LinkTypeLinuxSLL is LINKTYPE_LINUX_SLL, the Linux cooked capture v1:
	// a 16-byte header with the packet type and the source address only.
	LinkTypeLinuxSLL LinkType = 113
	// LinkTypeLinuxSLL2 is LINKTYPE_LINUX_SLL2, the Linux cooked capture v2:
	// a 20-byte header that adds the interface index.
	LinkTypeLinuxSLL2 LinkType = 276
)

// CarriesEthernet reports whether Ethernet reads records of the link type.
func (t LinkType) CarriesEthernet() bool {
	return t == LinkTypeEthernet || t == LinkTypeLinuxSLL || t == LinkTypeLinuxSLL2
}

// String returns the libpcap name of the link type, e.g. EN10MB.
func (t LinkType) String() string {
	switch t {
	case LinkTypeEthernet:
		return "EN10MB"
	case LinkTypeLinuxSLL:
		return "LINUX_SLL"
	case LinkTypeLinuxSLL2:
		return "LINUX_SLL2"
	}
	return fmt.Sprintf("LINKTYPE %d", uint32(t))
}

// Format is a capture file format.
type Format uint8

const (
	// PcapNG is the pcapng format, the default.
	PcapNG Format = iota
	// Classic is the classic libpcap format with microsecond timestamps.
	Classic
)

// String returns "pcapng" or "pcap", the names ParseFormat accepts.
func (f Format) String() string {
	if f == Classic {
		return "pcap"
	}
	return "pcapng"
}

// ParseFormat parses "pcapng" or "pcap" (also "classic"), in either case.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pcapng", "ng":
		return PcapNG, nil
	case "pcap", "classic", "libpcap":
		return Classic, nil
	}
	return 0, fmt.Errorf("capture format %q is not pcapng or pcap", s)
}

const (
	// MagicMicroseconds is the magic number of classic pcap files with
	// microsecond timestamps, the classic format Writer writes.
	MagicMicroseconds = 0xa1b2c3d4
	// MagicNanoseconds is the magic number of classic pcap files with
	// nanosecond timestamps.
	MagicNanoseconds = 0xa1b23c4d
	// MagicPcapNG is the block type of a pcapng Section Header Block, the
	// first four bytes of every pcapng file.
	MagicPcapNG = 0x0a0d0d0a

	// MaxSnaplen is the largest snapshot length this package writes and the
	// default: libpcap's MAXIMUM_SNAPLEN.
	MaxSnaplen = 262144
)

// Errors wrapped by Reader's and Ethernet's errors, to test with errors.Is.
var (
	// ErrMagic: the input is neither a classic pcap nor a pcapng file.
	ErrMagic = errors.New("not a pcap or pcapng file")
	// ErrLinkType: the record's link type does not carry Ethernet.
	ErrLinkType = errors.New("a link type that does not carry Ethernet")
	// ErrTruncated: the file ends inside a header or a record.
	ErrTruncated = errors.New("truncated capture file")
	// ErrFrame: the record is too short for its link-layer headers.
	ErrFrame = errors.New("malformed link-layer header")
)
