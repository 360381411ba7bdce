package serve

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

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// buildSpace builds the address space of the regions and faults. closers
// are the file mappings to close after the endpoint.
func buildSpace(s *Settings) (*memory.Map, []*memory.File, error) {
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
				return fail(cli.Usagef("--region %v: %v", r, err))
			}
			sp = ram
		} else {
			f, err := memory.OpenFile(r.Path, r.Base, r.Size)
			if err != nil {
				return fail(cli.Usagef("--region %v: %v", r, err))
			}
			files = append(files, f)
			sp = f
		}
		if err := m.Add(r.Base, r.Size, sp); err != nil {
			return fail(cli.Usagef("--region %v: %v: regions and faults must not overlap", r, err))
		}
	}
	for _, fs := range s.Faults {
		f, err := memory.NewFault(fs.Base, fs.Size, fs.Resp)
		if err != nil {
			return fail(cli.Usagef("--fault %v: %v", fs, err))
		}
		if err := m.Add(fs.Base, fs.Size, f); err != nil {
			return fail(cli.Usagef("--fault %v: %v: regions and faults must not overlap", fs, err))
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

// Event is the JSON form of an endpoint event.
type Event struct {
	Event     string `json:"event"` // PEER_DMA_COMPLETE or RMEM_ERROR
	Time      string `json:"time"`
	Source    uint8  `json:"source"`
	Peer      int    `json:"peer"`
	PeerMAC   string `json:"peer_mac"`
	ErrorCode uint8  `json:"error_code"`
	Error     string `json:"error"`
	Coalesced int    `json:"coalesced"`
	// Invalid says which check a request refused as INVALID failed.
	Invalid *InvalidReport `json:"invalid,omitempty"`
}

// RawEvent is the JSON form of a non-oETP frame admitted by the raw policy.
type RawEvent struct {
	Event     string `json:"event"` // "raw"
	Time      string `json:"time"`
	Dst       string `json:"dst"`
	Src       string `json:"src"`
	EtherType uint16 `json:"ethertype"`
	Len       int    `json:"frame_len"`
}

// Run serves s until ctx ends or SIGINT or SIGTERM: logs on stderr, the
// --json-events lines on stdout.
func Run(ctx context.Context, s *Settings, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
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
	n, err := node.Open(ctx, node.Config{
		LinkConfig: node.LinkConfig{Iface: s.Iface, MAC: s.MAC, MaxFrame: s.MaxFrame, Capture: s.Pcap, CaptureFormat: s.PcapFormat,
			AllEtherTypes: s.RawPolicy != endpoint.RawDrop, BusyPoll: s.BusyPoll, Placement: s.Place()},
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
			return cli.Usagef("--peer #%d %s%s", ce.Peer+1, FormatPeer(s.Peers[ce.Peer]), ce.Msg)
		}
		return cli.Err(err)
	}
	if n.RoleReplaced != "" {
		fmt.Fprintf(stderr, "oetp: warning: %s\n", n.RoleReplaced)
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
		log.Info("peer", "index", i, "entry", FormatPeer(p), "transport", tm.String())
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

	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	usr1 := make(chan os.Signal, 1)
	if len(statsSignals) > 0 { // Notify without signals would relay every one
		signal.Notify(usr1, statsSignals...)
		defer signal.Stop(usr1)
	}

	out := &lineWriter{w: stdout}
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
