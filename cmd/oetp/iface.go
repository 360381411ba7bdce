package main

import (
	"context"
	"net"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/node"
)

// cliErr turns the errors of a node that the user fixes by changing a flag
// into usage errors (exit 2) naming it (cli.Err).
func cliErr(err error) error { return cli.Err(err) }

// openLink opens a command's link (node.OpenLink) with usage errors that
// name the flags.
func openLink(cfg node.LinkConfig) (*node.Link, error) {
	l, err := node.OpenLink(cfg)
	return l, cliErr(err)
}

// openNode opens a command's stack (node.Open) with usage errors that name
// the flags.
func openNode(ctx context.Context, cfg node.Config) (*node.Node, error) {
	n, err := node.Open(ctx, cfg)
	return n, cliErr(err)
}

// busyPollUsage is the help of --busy-poll.
const busyPollUsage = "after each frame received, keep reading the socket for `D` (such as 50us, at most 10ms) before sleeping: lower latency for a CPU that spins; 0 never spins"

// checkBusyPoll validates a --busy-poll value (cli.CheckBusyPoll).
func checkBusyPoll(d time.Duration) error { return cli.CheckBusyPoll(d) }

// lookupIface finds the interface name given by flag (cli.LookupIface).
func lookupIface(flag, name string) (*net.Interface, error) { return cli.LookupIface(flag, name) }
