// Package pcap reads and writes classic libpcap capture files of Ethernet
// frames, and tees a link.Link into one.
//
// Writer produces the classic format with microsecond timestamps (magic
// 0xa1b2c3d4, version 2.4, little-endian, LINKTYPE_ETHERNET): the one format
// that every tcpdump, tshark, Wireshark and libpcap version reads. The
// nanosecond variant (0xa1b23c4d) needs libpcap 1.5 or later and is not
// understood by some older tools, and sub-microsecond stamps from a software
// clock carry no real information. Frames are recorded as the link carries
// them: no preamble, SFD or FCS.
//
// Reader reads both the microsecond and the nanosecond variants in either
// byte order, Ethernet link type only. pcapng files are recognised and
// refused with the command that converts them.
//
// Tee wraps a link so that every frame read from it and written to it is
// recorded, live.
package pcap

import "errors"

const (
	// MagicMicroseconds is the magic number of classic pcap files with
	// microsecond timestamps, the format Writer writes.
	MagicMicroseconds = 0xa1b2c3d4
	// MagicNanoseconds is the magic number of classic pcap files with
	// nanosecond timestamps.
	MagicNanoseconds = 0xa1b23c4d

	// LinkTypeEthernet is LINKTYPE_ETHERNET: frames from the destination MAC,
	// without FCS.
	LinkTypeEthernet = 1

	// MaxSnaplen is the largest snapshot length this package writes and the
	// largest record it reads: libpcap's MAXIMUM_SNAPLEN.
	MaxSnaplen = 262144

	magicPcapNG     = 0x0a0d0d0a // pcapng Section Header Block type
	fileHeaderLen   = 24
	recordHeaderLen = 16
)

// Errors wrapped by Reader's errors, to test with errors.Is.
var (
	// ErrMagic: the input does not start with a classic pcap magic number.
	ErrMagic = errors.New("pcap: not a classic pcap file")
	// ErrVersion: the file's major version is not 2.
	ErrVersion = errors.New("pcap: unsupported pcap version")
	// ErrLinkType: the file holds frames other than plain Ethernet.
	ErrLinkType = errors.New("pcap: unsupported link type")
	// ErrTruncated: the file ends inside a header or a record.
	ErrTruncated = errors.New("pcap: truncated file")
	// ErrRecordLength: a record claims more captured bytes than MaxSnaplen.
	ErrRecordLength = errors.New("pcap: record too long")
)
