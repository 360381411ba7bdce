//go:build !linux

package main

import (
	"runtime"

	"github.com/spf13/cobra"
)

// dumpLive needs an AF_PACKET socket: Linux only.
func dumpLive(cmd *cobra.Command, o *dumpOptions) error {
	return usagef("--iface: a live view needs Linux (AF_PACKET); this is %s. Capture with tcpdump or tshark and run oetp dump FILE", runtime.GOOS)
}
