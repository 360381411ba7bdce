//go:build !linux

package client

import "net"

// dialUnixBlocking connects to the hub's Unix socket. The blocking system
// calls of the Linux version (conn.go) save a scheduler hop per round trip;
// elsewhere the runtime's network poller does the waiting. The serving
// process's credentials are not checked here (checkPeer is ignored).
func dialUnixBlocking(path string, checkPeer bool) (conn, error) { return net.Dial("unix", path) }
