//go:build !linux

package hub

import "net"

// peerOf: credentials are read on Linux only; elsewhere a Unix client is
// unknown (it matches only "*" in a device's rules).
func peerOf(nc net.Conn) *peer {
	if _, ok := nc.(*net.UnixConn); ok {
		return &peer{}
	}
	return &peer{tcp: true}
}
