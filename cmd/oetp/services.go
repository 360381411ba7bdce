package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/cmd/oetp/internal/hubrun"
	"github.com/openenoc/oetp/cmd/oetp/internal/serve"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/memspec"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/rundir"
)

func init() { register("serve", newServeCmd) }

func newServeCmd() *cobra.Command {
	cmd, _ := serveCommand()
	return cmd
}

// serveCommand returns the serve command and the flag values it parses into.
func serveCommand() (*cobra.Command, *serveFlags) {
	sf := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve --iface IF [flags]",
		Short: "Run an oETP endpoint that serves a memory map to its peers",
		Long: `serve runs one oETP endpoint on --iface until SIGINT or SIGTERM: it answers the
RMEM and DMA requests of the peers in its peer table from a local address space,
exactly as an openENOC endpoint's responder does.

Address space: each --region BASE:SIZE[:PATH] is RAM, or with PATH a shared
mapping of that file (created, or extended with zeros to SIZE; other processes
see writes live). The file's SIZE bytes of storage are allocated at start: a
filesystem without room for them is refused (exit 2, with its free space). If
the file loses its storage while served (another process truncates it), the
accesses to the lost pages answer SLVERR and serve keeps running. Addresses in no region are a bus decode error (DECERR), and
a --fault BASE:SIZE:slverr|decerr range fails every access with that bus error:
a DMA request there is answered with cause 4/5 (read SLVERR/DECERR) or 6/7
(write); an RMEM request, whose word access has one error bit (the spec's
CPUIF), with cause 4 (read) or 6 (write) either way. Numbers are decimal or 0x
hex with an optional K, M or G suffix.

Peers: each --peer MAC,mode=M[,window=BASE:SIZE][,events=on|off][,transport=T] is one peer
table entry, with indexes 0, 1, ... in the order given. mode is none (0), rmem
(1), dma-write (2: the peer may write here by DMA), or dma-read (3: the peer may
read here by DMA). The window is the local range the peer's requests may
touch; it defaults to the whole 4 GiB address space. Requests from MACs not in
the table are dropped without a reply. transport=reliable (or auto) lets the
peer use the reliable transport of docs/reliable.md (PSN, ACK/NAK, Go-Back-N,
CRC32C, a retransmitted request answered from a replay cache instead of
executing again); the peer's rmem/dma then need --transport reliable or auto.
A peer without it (transport=v1, the default) is served as plain oETP v1, and
its reliable frames go to the raw policy like any non-oETP frame.

--mac defaults to the interface's MAC. --group is the multicast address the
endpoint accepts group writes on (zero, the default, disables them).
--contexts is the number of requests served at once (default 1, like the
hardware; a request that finds every context busy is dropped).

--max-read-rate BYTES bounds the DMA read data serve sends to each source MAC
(each peer entry) to BYTES per second, after a burst of a tenth of a second of
it (at least one 8 KiB frame): a DMA read request over the bound is dropped
without a reply (its initiator times out and may retry), counted as
drop_read_rate and logged within the output bound below. A 28-byte read request
draws up to 8 KiB, so a request with a forged source MAC makes serve send about
300 times its size to that MAC; the bound caps that reflection. It is off by
default (0): serve answers only the MACs of its peer table, on one Ethernet
segment, and any default low enough to matter would also cap the legitimate
bulk reads serve exists for. Set it where hosts you do not trust share the
segment, to what your readers need (e.g. 100M).

--placement auto (the default) moves serve's threads to the CPU its requests
are received on (after two receive batches in a row from that CPU, at most
every 10 ms, never outside the CPUs the process was given), so that a client
on that CPU and serve wake each other without a wake-up across CPUs; a
one-shot rmem or dma command stays on the CPU it started on. With a peer on
the reliable transport (transport=reliable or auto) neither moves: its window
keeps both sides busy at once. --placement off leaves the threads to the
kernel's scheduler. Not with --busy-poll.

Logs go to standard error; a line with msg=ready is printed once the endpoint
is serving. --json-events prints one JSON object per event (a failed request,
PEER_DMA_COMPLETE or RMEM_ERROR) on standard output. SIGUSR1 prints the
counters; so does exit. rx_kernel_drops among them counts the frames the kernel
dropped because the socket's receive queue was full (the endpoint never saw
them); serve warns when it grows.

Output stays bounded whatever the input rate: event lines (log and
--json-events) are limited per event, peer and code to the first 5 of an
interval, then one "suppressed" summary per 5s with the count; raw frame lines
at most 2 per source MAC for 2 MACs at a time, the other MACs sharing 2 lines
and one summary per interval (a flood from random MACs logs a few KB per
minute). The counters keep exact totals. Requests from a MAC in no peer entry,
and DMA reads over --max-read-rate, are dropped without a reply; serve names the
MAC (and the --peer that would admit it) at most once per second.

One MAC, one responder: serve holds the responder role of its interface and
MAC, and refuses at once (exit 2, naming the holder's PID) when another serve
holds it. One-shot rmem and dma commands on the same MAC hold the initiator
role instead, so they run beside it.
` + role.DirHelp + `

--config FILE reads the same settings from a TOML file (see
examples/oetp.toml): each key is the flag's name with '_' for '-', and --region,
--fault and --peer become [[region]], [[fault]] and [[peer]] tables. A flag on
the command line overrides the file; a list flag given at least once replaces
the file's list.`,
		Example: `  oetp serve --iface eth1 --region 0:64K --peer 02:0e:0c:00:00:01,mode=rmem
  oetp serve --iface eth1 --group 03:0e:0c:00:00:01 --region 0x100000:1M:/dev/shm/ddr.bin \
      --fault 0x200000:4K:slverr --peer 02:0e:0c:00:00:01,mode=dma-write,window=0x100000:1M
  oetp serve --config examples/oetp.toml --json-events`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := sf.settings(cmd.Flags())
			if err != nil {
				return err
			}
			return serve.Run(cmd.Context(), s, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&sf.config, "config", "", "read the settings from the TOML `FILE`; flags override it")
	fs.StringVar(&sf.iface, "iface", "", "network interface `IF` to serve on")
	fs.Var(&sf.mac, "mac", "own unicast `MAC` address (default the interface's)")
	fs.Var(&sf.group, "group", "multicast `MAC` whose group writes are accepted (default none)")
	fs.StringArrayVar(&sf.regions, "region", nil, "memory region `BASE:SIZE[:PATH]` (RAM, or a shared file mapping); repeatable")
	fs.StringArrayVar(&sf.faults, "fault", nil, "range `BASE:SIZE:slverr|decerr` answering that bus error; repeatable")
	fs.StringArrayVar(&sf.peers, "peer", nil, "peer entry `MAC,mode=M[,window=BASE:SIZE][,events=on|off]`; repeatable, indexes in order")
	fs.Var(&sf.contexts, "contexts", "responder contexts `N`: requests served at once, 1..1024 (default 1)")
	fs.Var(&sf.maxFrame, "max-frame", "frame ceiling `N` in bytes without FCS, 36..8192 (default min(8192, MTU+14))")
	fs.StringVar(&sf.rawPolicy, "raw-policy", "drop", "non-oETP frames to log: drop, filtered, multicast or promiscuous")
	fs.DurationVar(&sf.rmemTimeout, "rmem-timeout", 0, "RMEM response timeout `D` of operations this endpoint initiates (0 waits forever)")
	fs.DurationVar(&sf.dmaTimeout, "dma-timeout", 0, "DMA fragment response timeout `D` of operations this endpoint initiates (0 waits forever)")
	fs.StringVar(&sf.pcap, "pcap", "", "record every frame sent and received in `PATH` (pcapng; see --pcap-format)")
	fs.Var(&sf.pcapFormat, "pcap-format", pcapFormatUsage)
	fs.DurationVar(&sf.busyPoll, "busy-poll", 0, busyPollUsage)
	fs.Var(&sf.placement, "placement", placementUsage)
	fs.BoolVar(&sf.jsonEvents, "json-events", false, "print one JSON object per event (and the counters) on standard output")
	fs.Var(&sf.maxReadRate, "max-read-rate", "bound the DMA read data sent to each source MAC to `BYTES` per second (K, M, G suffixes); 0, the default, sets no bound")
	return cmd, sf
}

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

// This file merges the flags of `oetp serve` over its configuration file
// (package serve holds the settings, their parsers and the file).

// wholeSpace is the size of the whole 32-bit address space.
const wholeSpace = serve.WholeSpace

// serveFlags are the raw values of the serve flags.
type serveFlags struct {
	config      string
	iface       string
	mac         macFlag
	group       macFlag
	regions     []string
	faults      []string
	peers       []string
	contexts    intFlag
	maxFrame    intFlag
	rawPolicy   string
	rmemTimeout time.Duration
	dmaTimeout  time.Duration
	pcap        string
	pcapFormat  formatFlag
	busyPoll    time.Duration
	placement   placementFlag
	jsonEvents  bool
	maxReadRate intFlag
}

// settings merges the configuration file (if any) with the flags: a flag
// given on the command line overrides the file, and a list flag given at
// least once replaces the file's list.
func (sf *serveFlags) settings(fs *pflag.FlagSet) (*serve.Settings, error) {
	s := &serve.Settings{}
	var file *serve.File
	where := func(key string) string { return fmt.Sprintf("--config %s: %s", sf.config, key) }
	if sf.config != "" {
		var err error
		if file, err = serve.LoadFile(sf.config); err != nil {
			return nil, err
		}
		if err := file.Apply(s, where); err != nil {
			return nil, err
		}
	}
	changed := fs.Changed
	if changed("iface") {
		s.Iface = sf.iface
	}
	if changed("mac") {
		s.MAC = sf.mac.m
	}
	if changed("group") {
		s.Group = sf.group.m
	}
	if changed("region") {
		s.Regions = nil
		for _, a := range sf.regions {
			r, err := memspec.ParseRegion(a)
			if err != nil {
				return nil, usagef("%v", err)
			}
			s.Regions = append(s.Regions, r)
		}
	}
	if changed("fault") {
		s.Faults = nil
		for _, a := range sf.faults {
			f, err := memspec.ParseFault(a)
			if err != nil {
				return nil, usagef("%v", err)
			}
			s.Faults = append(s.Faults, f)
		}
	}
	if changed("peer") {
		s.Peers, s.PeerTransport = nil, nil
		for _, a := range sf.peers {
			rest, tm, err := serve.SplitTransport(a)
			if err != nil {
				return nil, usagef("--peer %v", err)
			}
			p, err := serve.ParsePeer(rest)
			if err != nil {
				return nil, usagef("--peer %v", err)
			}
			s.Peers = append(s.Peers, p)
			s.PeerTransport = append(s.PeerTransport, tm)
		}
		s.PeerTransport = serve.OnlyIfUsed(s.PeerTransport)
	}
	if changed("contexts") {
		if sf.contexts.v == 0 {
			return nil, usagef("--contexts 0 is out of range: use 1..%d (leave it out for 1)", endpoint.MaxContexts)
		}
		s.Contexts = sf.contexts.v
	}
	if changed("max-frame") {
		if sf.maxFrame.v == 0 {
			return nil, usagef("--max-frame 0 is out of range: use 36..8192, or leave the flag out for min(8192, MTU+14)")
		}
		s.MaxFrame = sf.maxFrame.v
	}
	if changed("raw-policy") {
		p, err := serve.ParseRawPolicy(sf.rawPolicy)
		if err != nil {
			return nil, usagef("--raw-policy: %v", err)
		}
		s.RawPolicy = p
	}
	if changed("rmem-timeout") {
		s.RMEMTimeout = sf.rmemTimeout
	}
	if changed("dma-timeout") {
		s.DMATimeout = sf.dmaTimeout
	}
	if changed("pcap") {
		s.Pcap = sf.pcap
	}
	if changed("pcap-format") {
		s.PcapFormat = sf.pcapFormat.f
	}
	if changed("busy-poll") {
		s.BusyPoll = sf.busyPoll
	}
	if changed("placement") {
		s.Placement = sf.placement.p
	}
	if changed("json-events") {
		s.JSONEvents = sf.jsonEvents
	}
	if changed("max-read-rate") {
		s.MaxReadRate = int64(sf.maxReadRate.v)
	}
	return s, s.Check()
}
