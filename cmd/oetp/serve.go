package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/wire"
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
			return runServe(cmd, s)
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

// buildSpace builds the address space of the regions and faults. closers
// are the file mappings to close after the endpoint.
func buildSpace(s *serveSettings) (*memory.Map, []*memory.File, error) {
	m := memory.NewMap()
	var files []*memory.File
	fail := func(err error) (*memory.Map, []*memory.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, err
	}
	for _, r := range s.Regions {
		var sp memory.Space
		if r.Path == "" {
			ram, err := memory.NewRAM(r.Base, r.Size)
			if err != nil {
				return fail(usagef("--region %v: %v", r, err))
			}
			sp = ram
		} else {
			f, err := memory.OpenFile(r.Path, r.Base, r.Size)
			if err != nil {
				return fail(usagef("--region %v: %v", r, err))
			}
			files = append(files, f)
			sp = f
		}
		if err := m.Add(r.Base, r.Size, sp); err != nil {
			return fail(usagef("--region %v: %v: regions and faults must not overlap", r, err))
		}
	}
	for _, fs := range s.Faults {
		f, err := memory.NewFault(fs.Base, fs.Size, fs.Resp)
		if err != nil {
			return fail(usagef("--fault %v: %v", fs, err))
		}
		if err := m.Add(fs.Base, fs.Size, f); err != nil {
			return fail(usagef("--fault %v: %v: regions and faults must not overlap", fs, err))
		}
	}
	return m, files, nil
}

// lineWriter serialises whole lines written by several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) json(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(append(b, '\n'))
}

// serveEvent is the JSON form of an endpoint event.
type serveEvent struct {
	Event     string `json:"event"` // PEER_DMA_COMPLETE or RMEM_ERROR
	Time      string `json:"time"`
	Source    uint8  `json:"source"`
	Peer      int    `json:"peer"`
	PeerMAC   string `json:"peer_mac"`
	ErrorCode uint8  `json:"error_code"`
	Error     string `json:"error"`
	Coalesced int    `json:"coalesced"`
	// Invalid says which check a request refused as INVALID failed.
	Invalid *invalidReport `json:"invalid,omitempty"`
}

// rawEvent is the JSON form of a non-oETP frame admitted by the raw policy.
type rawEvent struct {
	Event     string `json:"event"` // "raw"
	Time      string `json:"time"`
	Dst       string `json:"dst"`
	Src       string `json:"src"`
	EtherType uint16 `json:"ethertype"`
	Len       int    `json:"frame_len"`
}

func runServe(cmd *cobra.Command, s *serveSettings) error {
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	space, files, err := buildSpace(s)
	if err != nil {
		return err
	}
	closeFiles := func() {
		for _, f := range files {
			f.Close()
		}
	}
	peers := make([]node.Peer, len(s.Peers))
	for i, p := range s.Peers {
		peers[i] = node.Peer{Peer: p}
		if i < len(s.PeerTransport) && s.PeerTransport[i] != node.V1 {
			// serve admits the peer's reliable requests either way.
			peers[i].Transport = node.Reliable
		}
	}
	// One MAC, one responder, also across processes: a second serve would
	// answer every request a second time.
	n, err := node.Open(cmd.Context(), node.Config{
		LinkConfig: node.LinkConfig{Iface: s.Iface, MAC: s.MAC, MaxFrame: s.MaxFrame, Capture: s.Pcap, CaptureFormat: s.PcapFormat,
			AllEtherTypes: s.RawPolicy != endpoint.RawDrop, BusyPoll: s.BusyPoll, Placement: s.place()},
		Role: node.Responder,
		Endpoint: endpoint.Config{
			Group: s.Group, RawPolicy: s.RawPolicy,
			RMEMTimeout: s.RMEMTimeout, DMATimeout: s.DMATimeout, Contexts: s.Contexts, MaxReadRate: s.MaxReadRate,
			Events: endpoint.EventEnable{PeerDMAComplete: true, RMEMError: true},
		},
		Memory: space,
		Peers:  peers,
	})
	if err != nil {
		closeFiles()
		var ce *node.ConfigError
		if errors.As(err, &ce) && ce.Field == "peer" {
			return usagef("--peer #%d %s%s", ce.Peer+1, formatPeer(s.Peers[ce.Peer]), ce.Msg)
		}
		return cliErr(err)
	}
	if n.RoleReplaced != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "oetp: warning: %s\n", n.RoleReplaced)
	}
	ep := n.Endpoint
	stop := func() error {
		err := n.Close()
		closeFiles()
		return err
	}

	for _, r := range s.Regions {
		kind := "ram"
		if r.Path != "" {
			kind = "file " + r.Path
		}
		log.Info("region", "base", fmt.Sprintf("0x%08x", r.Base), "size", fmt.Sprintf("0x%x", r.Size), "kind", kind)
	}
	for _, f := range s.Faults {
		log.Info("fault", "base", fmt.Sprintf("0x%08x", f.Base), "size", fmt.Sprintf("0x%x", f.Size), "resp", f.Resp.String())
	}
	for i, p := range s.Peers {
		tm := node.V1
		if i < len(s.PeerTransport) {
			tm = s.PeerTransport[i]
		}
		log.Info("peer", "index", i, "entry", formatPeer(p), "transport", tm.String())
	}
	if len(s.Regions) == 0 {
		log.Warn("no --region: every access answers DECERR")
	}
	if len(s.Peers) == 0 {
		log.Warn("no --peer: every request is dropped without a reply (the sender sees TIMEOUT); requests from MACs in no peer entry are logged with the --peer that would admit them")
	}
	c := ep.Config()
	log.Info("ready", "iface", s.Iface, "mac", c.MAC.String(), "group", c.Group.String(),
		"max_frame", c.MaxFrame, "fragment_ceiling", wire.FragmentCeiling(c.MaxFrame), "mtu", n.Link.MTU,
		"contexts", c.Contexts, "peers", len(s.Peers), "raw_policy", c.RawPolicy.String(), "max_read_rate", c.MaxReadRate, "placement", placementOf(n.Link), "pid", os.Getpid())

	ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	usr1 := make(chan os.Signal, 1)
	if len(statsSignals) > 0 { // Notify without signals would relay every one
		signal.Notify(usr1, statsSignals...)
		defer signal.Stop(usr1)
	}

	out := &lineWriter{w: cmd.OutOrStdout()}
	w := newWatch(n, log, out, s.JSONEvents)
	var wg sync.WaitGroup
	wg.Go(func() { serveEvents(ctx, ep, w) })
	wg.Go(func() { w.run(ctx) })
	if s.RawPolicy != endpoint.RawDrop {
		wg.Go(func() { serveRaw(ctx, ep, w) })
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-usr1:
			printStats(ep.Stats(), w.kernelDrops(), w.cpuMoves(), log, out, s.JSONEvents)
			printTransportStats(n, log, out, s.JSONEvents)
		}
	}
	cancel()
	wg.Wait()
	kd := w.kernelDrops()
	err = stop()
	w.tick(true)
	printStats(ep.Stats(), max(kd, w.kernelDrops()), w.cpuMoves(), log, out, s.JSONEvents)
	printTransportStats(n, log, out, s.JSONEvents)
	log.Info("stopped")
	return err
}

// serveEvents logs each event, and prints it as JSON with --json-events,
// rate-limited per source, peer and code (see watch).
func serveEvents(ctx context.Context, ep *endpoint.Endpoint, w *watch) {
	for {
		ev, err := ep.NextEvent(ctx)
		if err != nil {
			return
		}
		w.event(ctx, ev)
	}
}

// serveRaw logs the non-oETP frames the raw policy admits.
// They are rate-limited per source MAC (see watch); RawReceived counts
// them all.
func serveRaw(ctx context.Context, ep *endpoint.Endpoint, w *watch) {
	buf := make([]byte, ep.Config().MaxFrame)
	for {
		n, err := ep.RecvRaw(ctx, buf)
		if err != nil && !errors.Is(err, io.ErrShortBuffer) {
			return
		}
		w.rawFrame(wire.Frame(buf[:n]), n)
	}
}

// printTransportStats logs the reliable transport's counters (msg=transport),
// and prints them as one JSON object {"event":"transport_stats", ...} with
// --json-events; nothing when no peer uses the transport.
func printTransportStats(n *node.Node, log *slog.Logger, out *lineWriter, asJSON bool) {
	st, ok := n.Transport()
	if !ok {
		return
	}
	v := reflect.ValueOf(st)
	attrs := make([]any, 0, v.NumField())
	obj := map[string]any{"event": "transport_stats", "time": time.Now().Format(time.RFC3339Nano)}
	for i := range v.NumField() {
		name := v.Type().Field(i).Tag.Get("json")
		attrs = append(attrs, slog.Any(name, v.Field(i).Interface()))
		obj[name] = v.Field(i).Interface()
	}
	log.Info("transport", attrs...)
	if asJSON {
		out.json(obj)
	}
}

// printStats logs the counters, and prints them as one JSON object
// {"event":"stats", "rx_frames": ...} with --json-events. rx_kernel_drops
// is the socket's: frames the kernel dropped because its receive queue was
// full, which the endpoint never saw; cpu_moves counts the moves of the
// process to the CPU its requests arrive on (--placement auto).
func printStats(st endpoint.Stats, kernelDrops, cpuMoves uint64, log *slog.Logger, out *lineWriter, asJSON bool) {
	v := reflect.ValueOf(st)
	attrs := make([]any, 0, v.NumField())
	obj := map[string]any{"event": "stats", "time": time.Now().Format(time.RFC3339Nano)}
	for i := range v.NumField() {
		name := snakeCase(v.Type().Field(i).Name)
		val := v.Field(i).Interface()
		attrs = append(attrs, slog.Any(name, val))
		obj[name] = val
	}
	attrs = append(attrs, slog.Uint64("rx_kernel_drops", kernelDrops), slog.Uint64("cpu_moves", cpuMoves))
	obj["rx_kernel_drops"] = kernelDrops
	obj["cpu_moves"] = cpuMoves
	log.Info("stats", attrs...)
	if asJSON {
		out.json(obj)
	}
}

// snakeCase turns a Go field name into snake case, keeping acronyms
// together: ServedRMEMRead -> served_rmem_read.
func snakeCase(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) {
			prev := r[i-1]
			next := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && next) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
