package serve

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/ratelog"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// This file keeps serve's output bounded whatever the input rate, and makes
// what its counters alone would hide visible: per peer and reason, the
// first few event lines (log and --json-events) of an interval are printed,
// then one summary line per interval with the count; a watcher polls, once
// per watchTick, the kernel's drop counter and the endpoint's last unknown
// source and warns (rate-limited) when they grow. Counters (the stats line)
// keep exact totals.

// watchTick is the period of the watcher: summaries, kernel drops and
// unknown sources are reported at most this late.
const watchTick = time.Second

// eventKey is the rate-limit key of an event line: its source, peer and
// code.
type eventKey struct {
	source endpoint.EventSource
	peer   int
	code   wire.Code
}

// watch is serve's rate-limited reporter.
type watch struct {
	ep   *endpoint.Endpoint
	link *node.Link // for the socket's kernel drop count and CPU moves
	log  *slog.Logger
	out  *lineWriter
	json bool

	events  ratelog.Limiter[eventKey]
	raws    ratelog.Limiter[wire.MAC]
	unknown ratelog.Limiter[wire.MAC]
	drops   ratelog.Limiter[struct{}]
	reads   ratelog.Limiter[wire.MAC] // DMA reads over --max-read-rate

	mu          sync.Mutex // guards the fields below (tick and the final report)
	lastKernel  uint64
	lastUnknown uint64
	lastReads   uint64
}

func newWatch(n *node.Node, log *slog.Logger, out *lineWriter, asJSON bool) *watch {
	w := &watch{log: log, out: out, json: asJSON}
	if n != nil { // nil in tests of the reports alone
		w.ep, w.link = n.Endpoint, n.Link
	}
	// One warning per tick at most for these two; the limiter spaces
	// repeated ones out and sums what it held back.
	w.unknown.Burst, w.drops.Burst, w.reads.Burst = 2, 2, 2
	// Raw frames: a flood from random source MACs must not log a line per
	// MAC, so only a few MACs have lines of their own and the others share
	// the overflow entry.
	w.raws.Burst, w.raws.MaxKeys = 2, 2
	return w
}

// kernelDrops returns the frames the kernel dropped for the socket because
// its receive queue was full (PACKET_STATISTICS), 0 without a socket.
func (w *watch) kernelDrops() uint64 {
	if w.link == nil {
		return 0
	}
	return w.link.KernelDrops()
}

// cpuMoves returns the moves of the process to the CPU its requests arrive
// on (afpacket Stats.CPUMoves), 0 without a socket.
func (w *watch) cpuMoves() uint64 {
	if w.link == nil {
		return 0
	}
	return w.link.CPUMoves()
}

// placementOf returns the placement in force for serve's ready line: auto
// when its socket follows the CPU its requests arrive on, else off.
func placementOf(l *node.Link) string {
	if l.Follows() {
		return cli.PlaceAuto.String()
	}
	return cli.PlaceOff.String()
}

// run reports every watchTick until ctx ends.
func (w *watch) run(ctx context.Context) {
	t := time.NewTicker(watchTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.tick(false)
		}
	}
}

// tick checks the kernel drop counter and the unknown sources, and prints
// the summaries of the intervals that ended (all of them when final).
func (w *watch) tick(final bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if kd := w.kernelDrops(); kd > w.lastKernel {
		d := kd - w.lastKernel
		w.lastKernel = kd
		if w.drops.AllowN(struct{}{}, d) {
			w.kernelWarning(d, kd, false)
		}
	}
	st := w.ep.Stats()
	if n := st.DropUnknownSource; n > w.lastUnknown {
		d := n - w.lastUnknown
		w.lastUnknown = n
		if src, cmd, ok := w.ep.LastUnknownSource(); ok && w.unknown.AllowN(src, d) {
			w.unknownWarning(src, cmd, d, n, false)
		}
	}
	if n := st.DropReadRate; n > w.lastReads {
		d := n - w.lastReads
		w.lastReads = n
		if src, ok := w.ep.LastReadRateSource(); ok && w.reads.AllowN(src, d) {
			w.readRateWarning(src, d, n, false)
		}
	}
	for _, s := range pick(final, &w.reads) {
		w.readRateWarning(s.Key, s.Weight, w.lastReads, true)
	}
	for _, s := range pick(final, &w.events) {
		w.eventSummary(s)
	}
	w.rawSummaries(final)
	for _, s := range pick(final, &w.unknown) {
		w.unknownWarning(s.Key, 0, s.Weight, w.lastUnknown, true)
	}
	for _, s := range pick(final, &w.drops) {
		w.kernelWarning(s.Weight, w.lastKernel, true)
	}
}

// pick flushes l: the ended intervals, or all of them when final.
func pick[K comparable](final bool, l *ratelog.Limiter[K]) []ratelog.Summary[K] {
	if final {
		return l.FlushAll()
	}
	return l.Flush()
}

func seconds[K comparable](s ratelog.Summary[K]) float64 {
	return s.Until.Sub(s.Since).Round(time.Millisecond).Seconds()
}

func macOrOther(m wire.MAC, overflow bool) string {
	if overflow {
		return "other"
	}
	return m.String()
}

// kernelEvent is the JSON form of a kernel drop warning.
type kernelEvent struct {
	Event   string `json:"event"` // "kernel_drops"
	Time    string `json:"time"`
	Dropped uint64 `json:"dropped"`         // since the last report
	Total   uint64 `json:"rx_kernel_drops"` // since start, as in the stats
}

func (w *watch) kernelWarning(d, total uint64, summary bool) {
	msg := "the kernel dropped received frames: the socket's receive queue was full"
	if summary {
		msg = "the kernel dropped more received frames (repeated warnings suppressed)"
	}
	w.log.Warn(msg, "dropped", d, "rx_kernel_drops", total,
		"hint", "requests arrive faster than serve answers them (a group dma write? pace it with dma write --rate); the senders' operations see no error for a group write")
	if w.json {
		w.out.json(kernelEvent{Event: "kernel_drops", Time: now(), Dropped: d, Total: total})
	}
}

// unknownEvent is the JSON form of an unknown source warning.
type unknownEvent struct {
	Event   string `json:"event"` // "unknown_source"
	Time    string `json:"time"`
	Src     string `json:"src"`
	Cmd     string `json:"cmd,omitempty"`
	Dropped uint64 `json:"dropped"`             // since the last report
	Total   uint64 `json:"drop_unknown_source"` // since start, as in the stats
	Fix     string `json:"fix,omitempty"`       // the --peer that would admit it
	// DisabledEntry is the index of the peer entry that has the MAC but
	// is disabled (mode none); absent when no entry has it.
	DisabledEntry *int `json:"disabled_entry,omitempty"`
}

// peerFlag is the --peer entry that admits requests of cmd from src: the
// mode the command needs (RMEM 1, DMA write 2, DMA read 3).
func peerFlag(src wire.MAC, cmd wire.Cmd) string {
	mode := "rmem"
	switch cmd {
	case wire.DMAWriteReq:
		mode = "dma-write"
	case wire.DMAReadReq:
		mode = "dma-read"
	}
	return "--peer " + src.String() + ",mode=" + mode
}

func (w *watch) unknownWarning(src wire.MAC, cmd wire.Cmd, d, total uint64, summary bool) {
	if summary {
		w.log.Warn("more requests from MACs in no peer entry dropped (repeated warnings suppressed)",
			"src", src.String(), "dropped", d, "drop_unknown_source", total)
		return
	}
	fix := peerFlag(src, cmd)
	disabled := -1
	if i, ok := w.ep.DisabledPeer(src); ok {
		// The hardware's rule: a mode-0 entry never matches.
		disabled = i
		w.log.Warn("request from a MAC whose peer entry is disabled (mode none) dropped without a reply, as from a MAC in no entry; the sender sees TIMEOUT",
			"src", src.String(), "cmd", cmd.String(), "entry", i, "dropped", d, "drop_unknown_source", total, "admit_with", fix)
	} else {
		w.log.Warn("request from a MAC in no peer entry dropped without a reply; the sender sees TIMEOUT",
			"src", src.String(), "cmd", cmd.String(), "dropped", d, "drop_unknown_source", total, "admit_with", fix)
	}
	if w.json {
		ev := unknownEvent{Event: "unknown_source", Time: now(), Src: src.String(), Cmd: cmd.String(), Dropped: d, Total: total, Fix: fix}
		if disabled >= 0 {
			ev.DisabledEntry = &disabled
		}
		w.out.json(ev)
	}
}

// suppressedEvent is the JSON summary of event lines held back.
type suppressedEvent struct {
	Event     string  `json:"event"` // "suppressed"
	Time      string  `json:"time"`
	Of        string  `json:"of"` // the event: PEER_DMA_COMPLETE or RMEM_ERROR
	Source    uint8   `json:"source"`
	Peer      int     `json:"peer"`
	PeerMAC   string  `json:"peer_mac"`
	ErrorCode uint8   `json:"error_code"`
	Error     string  `json:"error"`
	Count     uint64  `json:"count"` // events held back, coalesced ones included
	Lines     uint64  `json:"lines"` // event lines held back
	Since     string  `json:"since"`
	Seconds   float64 `json:"seconds"`
}

// event prints an event unless its key is over the limit.
func (w *watch) event(ctx context.Context, ev endpoint.Event) {
	if !w.events.AllowN(eventKey{ev.Source, ev.Peer, ev.Code}, uint64(ev.Coalesced)+1) {
		return
	}
	mac := w.peerMAC(ev.Peer)
	level := slog.LevelInfo
	if ev.Code != wire.CodeNone {
		level = slog.LevelWarn
	}
	attrs := []any{"source", ev.Source.String(), "peer", ev.Peer, "peer_mac", mac,
		"code", cli.CodeString(ev.Code), "coalesced", ev.Coalesced}
	var inv *InvalidReport
	if ev.Code == wire.CodeLocalInvalid {
		// The requester sees REMOTE_INVALID and nothing more: say which
		// check failed.
		if r, ok := w.ep.LastInvalid(ev.Peer); ok {
			inv = &InvalidReport{Check: r.Check.String(), Cmd: r.Cmd.String(), Addr: fmt.Sprintf("0x%08x", r.Address), Length: r.Length}
			attrs = append(attrs, "check", inv.Check, "cmd", inv.Cmd, "addr", inv.Addr, "length", inv.Length)
		}
	}
	w.log.Log(ctx, level, "event", attrs...)
	if w.json {
		w.out.json(Event{Event: ev.Source.String(), Time: now(),
			Source: uint8(ev.Source), Peer: ev.Peer, PeerMAC: mac, ErrorCode: uint8(ev.Code),
			Error: ev.Code.String(), Coalesced: ev.Coalesced, Invalid: inv})
	}
}

// InvalidReport is the check a request refused as INVALID failed (mode,
// alignment, length or window), with its command, address and length.
type InvalidReport struct {
	Check  string `json:"check"`
	Cmd    string `json:"cmd"`
	Addr   string `json:"addr"`
	Length uint32 `json:"length"`
}

func (w *watch) eventSummary(s ratelog.Summary[eventKey]) {
	k := s.Key
	if s.Overflow {
		k = eventKey{peer: -1}
	}
	mac := w.peerMAC(k.peer)
	w.log.Warn("event lines suppressed", "source", k.source.String(), "peer", k.peer, "peer_mac", mac,
		"code", cli.CodeString(k.code), "count", s.Weight, "lines", s.Suppressed, "seconds", seconds(s))
	if w.json {
		w.out.json(suppressedEvent{Event: "suppressed", Time: now(), Of: k.source.String(), Source: uint8(k.source),
			Peer: k.peer, PeerMAC: mac, ErrorCode: uint8(k.code), Error: k.code.String(),
			Count: s.Weight, Lines: s.Suppressed, Since: s.Since.Format(time.RFC3339Nano), Seconds: seconds(s)})
	}
}

// rawFrame logs a raw frame of n bytes (f its first bytes), and prints it
// as JSON with --json-events, unless its source is over the limit.
func (w *watch) rawFrame(f wire.Frame, n int) {
	if !w.raws.Allow(f.Src()) {
		return
	}
	w.log.Info("raw frame", "dst", f.Dst().String(), "src", f.Src().String(),
		"ethertype", fmt.Sprintf("0x%04x", f.EtherType()), "len", n)
	if w.json {
		w.out.json(RawEvent{Event: "raw", Time: now(), Dst: f.Dst().String(),
			Src: f.Src().String(), EtherType: f.EtherType(), Len: n})
	}
}

// rawSummaries logs the raw frames held back in the intervals that ended
// (all of them when final).
func (w *watch) rawSummaries(final bool) {
	for _, s := range pick(final, &w.raws) {
		w.log.Info("raw frames suppressed", "src", macOrOther(s.Key, s.Overflow), "count", s.Suppressed, "seconds", seconds(s))
	}
}

// readRateEvent is the JSON form of a --max-read-rate warning.
type readRateEvent struct {
	Event   string `json:"event"` // "read_rate"
	Time    string `json:"time"`
	Src     string `json:"src"`
	Dropped uint64 `json:"dropped"`        // since the last report
	Total   uint64 `json:"drop_read_rate"` // since start, as in the stats
}

func (w *watch) readRateWarning(src wire.MAC, d, total uint64, summary bool) {
	msg := "DMA read requests over --max-read-rate dropped without a reply; the sender sees TIMEOUT"
	if summary {
		msg = "more DMA read requests over --max-read-rate dropped (repeated warnings suppressed)"
	}
	w.log.Warn(msg, "src", src.String(), "dropped", d, "drop_read_rate", total)
	if w.json && !summary {
		w.out.json(readRateEvent{Event: "read_rate", Time: now(), Src: src.String(), Dropped: d, Total: total})
	}
}

func (w *watch) peerMAC(i int) string {
	if p, ok := w.ep.Peer(i); ok {
		return p.MAC.String()
	}
	return ""
}

func now() string { return time.Now().Format(time.RFC3339Nano) }
