package devices

import (
	"fmt"

	"github.com/openenoc/oetp/wire"
)

// The openENOC endpoint's peer table, as its SystemRDL register map
// (openenoc_endpoint_interface.rdl, addressing = regalign) places it. The
// offsets are copied here so that nothing outside the repository is read
// at build or test time.
const (
	// CSRBase is where openENOC's full endpoint puts the endpoint
	// interface's register file: its CSR block (csr) sits at 0x2000_0000
	// and the block's endpoint_interface at csr + 0x800 (with the default
	// RMEM_TOTAL_DEPTH of 256 words the interface spans 0x800 bytes).
	CSRBase = 0x2000_0800

	// CSRPeers is NUM_OF_PEERS of openENOC's full endpoint (and of the
	// RTL kit): the number of peers.entry[N] the board has.
	CSRPeers = 4

	// csrIRQEnd is where the peers register file may start: after info
	// (0x00), config (0x20), axis_if (0x40), non_oetp_dma (0x60) and irq
	// (0x80, five words).
	csrIRQEnd = 0x94
	// csrEntryStride is the size of one peers.entry[N] (seven words); the
	// entries follow each other.
	csrEntryStride = 0x1C

	// Offsets within peers.entry[N].
	csrMACLo      = 0x00 // mac_address.lo_word[31:0]: the MAC's last four octets
	csrMACHi      = 0x04 // mac_address.hi_word[47:32]: its first two, in bits 15:0
	csrLocalBase  = 0x0C // local_address.base[31:0]
	csrRemoteBase = 0x10 // remote_address.base[31:0]
	csrSize       = 0x14 // size.bytes[31:0]
	csrDMA        = 0x18 // dma: mode[1:0], irq_enable[2], request[8], clear_error[9]

	// csrModeMask selects dma.mode alone, so that writing the mode leaves
	// irq_enable, request and clear_error as they are.
	csrModeMask = 0x3
)

// CSRPeersOffset is peers.entry[0]'s offset in the endpoint interface of
// a board with n peer entries: regalign places the peers register file
// (n entries of 0x1C bytes) at the next multiple of its size rounded up to
// a power of two (0xA0 for one entry, 0xC0 for two, 0x100 for three to
// nine).
func CSRPeersOffset(n int) uint32 {
	size := uint32(n) * csrEntryStride
	align := uint32(4)
	for align < size {
		align <<= 1
	}
	return (csrIRQEnd + align - 1) &^ (align - 1)
}

// CSRWrite is one register write of an openENOC endpoint: Name in its
// register map, the byte address, the value and the BitEnable mask; Note
// says what the value means where the number alone does not.
type CSRWrite struct {
	Name  string
	Addr  uint32
	Value uint32
	Mask  uint32
	Note  string
}

// Window is the memory window a peer entry grants: Size bytes from Base.
type Window struct {
	Base, Size uint64
}

// PeerCSRs returns the CSR writes that make an openENOC endpoint's peer
// entries first, first+1 and first+2 admit this host's RMEM, DMA-write and
// DMA-read MACs (local, in Role order), on a board with peers entries
// whose endpoint interface's registers are at base. With a window, each
// entry gets it as both its local and remote base and its size. The mode
// is written last, with a mask that leaves the other bits of dma
// untouched.
func PeerCSRs(base uint32, peers, first int, local [3]wire.MAC, win *Window) ([]CSRWrite, error) {
	if peers < 3 || peers > 2047 {
		return nil, fmt.Errorf("a board of %d peer entries: the three roles need three, and openENOC has at most 2047", peers)
	}
	if first < 0 || first+3 > peers {
		return nil, fmt.Errorf("entries %d..%d are not all among the board's %d (0..%d)", first, first+2, peers, peers-1)
	}
	at := CSRPeersOffset(peers)
	last := uint64(base) + uint64(at) + uint64(first+2)*csrEntryStride + csrDMA
	if last > 0xFFFFFFFC {
		return nil, fmt.Errorf("peer entries %d..%d at 0x%08x end past the 32-bit address space", first, first+2, base)
	}
	var out []CSRWrite
	for r, m := range local {
		n := first + r
		e := base + at + uint32(n)*csrEntryStride
		p := fmt.Sprintf("peers.entry[%d]", n)
		out = append(out,
			CSRWrite{p + ".mac_address.lo_word", e + csrMACLo, MACLo(m), 0xFFFFFFFF, m.String()},
			CSRWrite{p + ".mac_address.hi_word", e + csrMACHi, MACHi(m), 0xFFFFFFFF, m.String()})
		if win != nil {
			size := min(win.Size, 0xFFFFFFFF)
			out = append(out,
				CSRWrite{p + ".local_address.base", e + csrLocalBase, uint32(win.Base), 0xFFFFFFFF, ""},
				CSRWrite{p + ".remote_address.base", e + csrRemoteBase, uint32(win.Base), 0xFFFFFFFF, ""},
				CSRWrite{p + ".size.bytes", e + csrSize, uint32(size), 0xFFFFFFFF, ""})
		}
		out = append(out, CSRWrite{p + ".dma.mode", e + csrDMA, uint32(r + 1), csrModeMask, Role(r).BoardMode()})
	}
	return out, nil
}

// MACLo is a MAC's last four octets as openENOC's mac_address.lo_word
// holds them (the last octet in bits 7:0).
func MACLo(m wire.MAC) uint32 {
	return uint32(m[2])<<24 | uint32(m[3])<<16 | uint32(m[4])<<8 | uint32(m[5])
}

// MACHi is a MAC's first two octets as mac_address.hi_word holds them.
func MACHi(m wire.MAC) uint32 { return uint32(m[0])<<8 | uint32(m[1]) }
