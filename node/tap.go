package node

import "time"

// TapConfig says which interface a Tap watches.
type TapConfig struct {
	Iface string
	// Promisc puts the interface in promiscuous mode, so that the tap also
	// sees the frames between other hosts on the segment.
	Promisc bool
}

// TapInfo is what a Tap knows of a frame besides its bytes.
type TapInfo struct {
	// Time is when the kernel received or sent the frame.
	Time time.Time
	// Length is the frame's length on the wire: more than the bytes read
	// when the frame was longer than the tap's buffer.
	Length int
	// VLAN is the ID of the 802.1Q tag the kernel (or the NIC) took out of
	// the frame, or -1.
	VLAN int
}
