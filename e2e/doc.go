// Package e2e holds end-to-end tests of oETP through the Linux kernel: oETP
// endpoints (package endpoint) on AF_PACKET links (link/afpacket) in throwaway
// network namespaces (netns), joined by a veth pair or a Linux bridge,
// exchanging real Ethernet frames.
//
// The tests check what an observer of the network sees: the exact bytes of
// every frame on the wire (captured by a third AF_PACKET socket in promiscuous
// mode or by a pcap Tee, and compared with frames built by the wire
// encoders), the exact contents of every memory involved, and the exact error
// codes recorded on both sides. They cover RMEM masks, DMA lengths and
// fragmentation, error replies, group replication over a bridge, Ethernet
// padding of short frames, frames at a 1500-byte MTU, two endpoints
// requesting from each other at once, and pcap recording.
//
// TestHubSoak (hubsoak_test.go) runs 200 clients at once (Go, Python, CLI)
// on a real hub process serving two boards for $OETP_SOAK (default 10s):
// every operation succeeds, every read back matches, and the hub's peak
// RSS stays under 200 MB.
//
// TestLayersOneWay (layers_test.go) checks that no import runs up the
// layers CONTRIBUTING.md draws.
//
// The package has no non-test code. Its tests need root (CAP_SYS_ADMIN and
// CAP_NET_ADMIN, to build namespaces and links); they skip, saying why, only
// when netns.Available reports that networks cannot be built. They use no
// network but the namespaces they create.
package e2e
