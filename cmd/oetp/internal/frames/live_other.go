//go:build !linux

package frames

import (
	"context"
	"io"
	"runtime"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
)

// ShowLive needs an AF_PACKET socket: Linux only.
func ShowLive(ctx context.Context, o LiveOptions, out, errw io.Writer) error {
	return cli.Usagef("--iface: a live view needs Linux (AF_PACKET); this is %s. Capture with tcpdump or tshark and run oetp dump FILE", runtime.GOOS)
}
