package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/cmd/oetp/internal/hubrun"
	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/rundir"
)

func init() { register("hub", newHubCmd) }

func newHubCmd() *cobra.Command {
	var (
		config, socket, listen, tokenFile, metrics string
		devicesFile                                string
		printPeers                                 bool
	)
	cmd := &cobra.Command{
		Use:   "hub (--config FILE | --devices FILE)",
		Short: "Run the hub: one process that owns the devices and serves many clients",
		Long: `hub owns one or more devices (boards, or 'oetp serve' endpoints), each reached
through an interface, and serves their RMEM and DMA operations, batches and
named address-table nodes to any number of clients at once: the Go package
client, the Python package in python/, and the one-shot commands (rmem, dma),
which go through the hub when it serves their interface. The protocol is
docs/hub-protocol.md.

A v1 peer entry has one mode, so the hub uses one local MAC per kind of
operation: [device.local] rmem, dma_write and dma_read, derived
locally-administered addresses when omitted. Program the device's peer table
once with the entries --print-peer-entries prints (without starting a hub).

The socket is 'socket' in the config or --socket (default /run/oetp/hub.sock
as root, else $XDG_RUNTIME_DIR/oetp/hub.sock or /tmp/oetp-UID/hub.sock), mode
0660, in a directory no other user may write. A socket left by a hub that
died is replaced; a live hub on it is never displaced. --listen ADDR also
serves TCP (a bare port or :PORT listens on loopback) and needs a
shared-secret token (--token-file or token_file, a file no other user may
read), which every TCP client must present before the hub reads anything
else from it, loopback included: any local user can reach a TCP port.
--metrics ADDR serves Prometheus text at /metrics (a bare port or :PORT means
loopback).

The devices can also come from a devices file (docs/devices.md), the one
'oetp rmem --device NAME' reads: --devices FILE, or devices = "FILE" in the
config. Its role MACs become the hub's local MACs, so a command given
--device NAME reaches the board through the hub with the same MACs.

Who may use a device: with no read or write list in its [[device]], everyone
who can connect (the socket's mode 0660: the hub's user and group, and
socket_group's members; on TCP, token holders). With read = [...] and/or
write = [...] (user names, UIDs, "@group", "*", "token" for TCP clients),
root, the hub's own user and those listed: read lets them read, write lets
them read and write; anything else gets DENIED naming the rule. See
docs/hub.md.

Config keys: socket, socket_group, listen, token_file, metrics, devices;
[[device]] name, iface, mac, read, write,
address_table, timeout (default 1s; rmem_timeout and dma_timeout override it),
max_frame, busy_poll, and the recovery policy of 'rmem --retries': retries
(default 0, one try as v1), deadline, min_rto, volatile (a list of "BASE:SIZE"
ranges never retried; the address table's port, non-incremental and volatile
nodes are added to it); [device.local] rmem, dma_write, dma_read.

Limits ([limits]; every refusal and close is counted in the metrics):
max_clients (default 1024) connections at once: a client past it is told
BUSY, naming the limit, and closed; max_message (default 16M) the largest
request read whole (TOO_LARGE beyond; a WRITE_BLOCK of 1 MiB or more streams
through a 4 MiB buffer whatever its size, up to 256 MiB); memory_budget
(default 512M) the request and reply buffers of all clients together: past
it a request waits up to read_deadline, then gets BUSY and runs nothing;
idle_timeout (default 10m, -1s never) closes a connection without requests,
with an IDLE notice; read_deadline (default 5s) the longest a started
request may pause: a stalled request is dropped (STALLED), a stalled
streamed block is aborted so that the device serves the next client, and
its client is told how far it got and that it may have executed.

The hub holds the initiator role of each local MAC (see 'oetp rmem --help'):
no other process initiates from them while it runs.

The hub runs Go code on one CPU per device (at most the CPUs it may use):
its goroutines mostly wait, and spare CPUs only made the Go runtime wake
idle threads on every operation. Set GOMAXPROCS in its environment to
choose otherwise.

Logs go to standard error; a line with msg=ready is printed once the hub
serves. SIGINT or SIGTERM stop it.`,
		Example: `  oetp hub --config /etc/oetp/hub.toml
  oetp hub --config hub.toml --print-peer-entries
  oetp hub --config hub.toml --listen 7700 --token-file hub.token --metrics 9110
  oetp hub status`,
		Args:        noArgs,
		Annotations: map[string]string{annotRuns: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := hubrun.Config(config, devicesFile)
			if err != nil {
				return err
			}
			if printPeers {
				_, err := fmt.Fprint(cmd.OutOrStdout(), cfg.PeerEntries())
				return err
			}
			fl := cmd.Flags()
			if fl.Changed("socket") {
				cfg.Socket = socket
			}
			if fl.Changed("listen") {
				cfg.Listen = listen
			}
			if fl.Changed("metrics") {
				cfg.Metrics = metrics
			}
			if tokenFile != "" {
				if cfg.Token, err = hub.ReadTokenFile(tokenFile); err != nil {
					return usagef("--token-file: %v", err)
				}
			}
			if cfg.Listen != "" && cfg.Token == "" {
				_, err := hub.ListenTCP(cfg.Listen, "")
				return usagef("%v", err)
			}
			if cfg.Socket == "" {
				cfg.Socket = hub.DefaultSocket()
			}
			return hubrun.Run(cmd.Context(), cfg, cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&config, "config", "", "the hub's TOML configuration `FILE`")
	fs.StringVar(&devicesFile, "devices", "", "serve the devices of this devices `FILE` (docs/devices.md), with or without --config")
	fs.BoolVar(&printPeers, "print-peer-entries", false, "print the peer table entries each device needs for the hub's MACs, and exit")
	fs.StringVar(&socket, "socket", "", "Unix socket `PATH` (overrides the config's socket)")
	fs.StringVar(&listen, "listen", "", "also serve TCP on `ADDR` (PORT or :PORT: loopback); needs a token (--token-file or token_file)")
	fs.StringVar(&tokenFile, "token-file", "", "`FILE` holding the shared secret every TCP client must present (mode 600: no other user may read it)")
	fs.StringVar(&metrics, "metrics", "", "serve Prometheus metrics on `ADDR` at /metrics (PORT or :PORT: loopback)")
	cmd.AddCommand(newHubStatusCmd())
	return cmd
}

func newHubStatusCmd() *cobra.Command {
	var path string
	var asJSON, trustAny bool
	cmd := &cobra.Command{
		Use:   "status [--hub PATH] [--json]",
		Short: "Show a running hub's devices and counters",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client.DialOptions(client.Options{Path: path, TrustAnyOwner: trustAny})
			if err != nil {
				var ue *rundir.UntrustedError
				if errors.As(err, &ue) {
					return usagef("--hub: %v", ue)
				}
				return fmt.Errorf("%v%s", err, hubDialHint(err))
			}
			defer c.Close()
			st, raw, err := c.Status()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				_, err := fmt.Fprintf(out, "%s\n", raw)
				return err
			}
			return hubrun.PrintStatus(out, c.Path, st)
		},
	}
	cmd.Flags().StringVar(&path, "hub", "", "the hub's socket `PATH`, or tcp://HOST:PORT (default $OETP_HUB, /run/oetp/hub.sock or the per-user socket)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as one JSON object")
	cmd.Flags().BoolVar(&trustAny, "hub-trust-any-owner", false, hubTrustAnyUsage)
	return cmd
}
