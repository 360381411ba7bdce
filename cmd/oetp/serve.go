package main

import (
	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/serve"
	"github.com/openenoc/oetp/role"
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
one-shot rmem or dma command stays on the CPU it started on. --placement off
leaves the threads to the kernel's scheduler. Not with --busy-poll.

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
