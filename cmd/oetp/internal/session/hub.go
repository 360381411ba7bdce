package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/wire"
)

// Hub is a command's route through a hub: the connection and the device.
type Hub struct {
	C    *client.Client
	Dev  *client.Device
	Path string // the hub's socket
}

// HubQuery is what a one-shot command asks of the hub route: its flags.
type HubQuery struct {
	Hub      string // --hub; Explicit when given
	Explicit bool
	NoHub    bool     // --no-hub
	TrustAny bool     // --hub-trust-any-owner
	Iface    string   // --iface
	Peer     wire.MAC // --peer
	MAC      wire.MAC // --mac, when MACGiven
	MACGiven bool
	// Bypass is the first flag given that a hub cannot honour (Bypass
	// lists them), other than --mac; empty if none.
	Bypass string
	// DialHint says what to do when no hub answers at an explicit --hub.
	DialHint func(error) string
	// Context ends the opening exchanges (a signal); nil: none.
	Context context.Context
}

// OpenInterrupted is FindHub's error when Context ended while the route
// to the hub at Path was opening: nothing was sent.
type OpenInterrupted struct{ Path string }

func (e *OpenInterrupted) Error() string { return "interrupted while opening the hub at " + e.Path }

// OpenDenied is FindHub's error when the hub at Path refused the device at
// OPEN (the client is in neither its read nor its write list): Err is the
// hub's DENIED, naming the rule; nothing was sent.
type OpenDenied struct {
	Path string
	Err  error
}

func (e *OpenDenied) Error() string { return e.Err.Error() }
func (e *OpenDenied) Unwrap() error { return e.Err }

// Bypass are the flags a hub cannot honour for one operation (its device
// has its own timeouts, frame size and recovery policy; a capture needs the
// command's own link): given explicitly, they make the command run its own
// endpoint.
var Bypass = []string{"mac", "pcap", "pcap-format", "max-frame", "timeout", "busy-poll", "fragment",
	"retries", "deadline", "volatile", "transport", "rate"}

// FindHub opens the hub route for mode, or returns nil (and no error) when
// the command should run its own endpoint. A plain command (no --hub)
// routed through a hub says so on stderr, and so does one that finds a hub
// socket where no hub answers and runs its own endpoint.
func FindHub(q HubQuery, mode endpoint.Mode) (*Hub, error) {
	explicit := q.Explicit
	if q.NoHub {
		if explicit {
			return nil, cli.Usagef("--hub and --no-hub contradict each other: drop one")
		}
		return nil, nil
	}
	if q.Peer.IsGroup() {
		if explicit {
			return nil, cli.Usagef("--hub: a group --peer is not a hub device; drop --hub to send the multicast write from this command")
		}
		return nil, nil
	}
	if name := q.Bypass; name != "" {
		if explicit {
			return nil, cli.Usagef("--hub cannot honour --%s (the hub's device has its own settings); drop one of them", name)
		}
		return nil, nil
	}
	path := q.Hub
	if !explicit {
		path = proto.ClientSocket()
		if !strings.HasPrefix(path, "tcp://") {
			if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
				return nil, nil
			}
		}
	}
	ctx := q.Context
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := client.DialOptions(client.Options{Path: path, Timeout: 2 * time.Second, TrustAnyOwner: q.TrustAny, Context: ctx})
	if err != nil && ctx.Err() != nil {
		return nil, &OpenInterrupted{Path: path}
	}
	if err != nil {
		var ue *rundir.UntrustedError
		if errors.As(err, &ue) {
			err = ue // its own words, without the client's "oetp hub: "
			if !explicit {
				return nil, cli.Usagef("the hub socket this command would use: %v; or run without a hub: --no-hub", err)
			}
		}
		if explicit {
			return nil, cli.Usagef("--hub %s: %v%s; or run this command's own endpoint: --no-hub instead of --hub", path, err, q.DialHint(err))
		}
		// No hub answers there (one that died leaves its socket): run our
		// own endpoint, and say so.
		fmt.Fprintf(os.Stderr, "oetp: note: no hub answers at %s (%v): this command runs its own endpoint on %s\n", path, errors.Unwrap(err), q.Iface)
		return nil, nil
	}
	if !explicit && !strings.HasPrefix(path, "tcp://") && c.NetNS != 0 && c.NetNS != proto.NetNS() {
		// The hub is in another network namespace: its --iface is another
		// interface, even with the same name.
		c.Close()
		return nil, nil
	}
	dev, err := c.DeviceOn(q.Iface, q.Peer)
	if err != nil && ctx.Err() != nil {
		c.Close()
		return nil, &OpenInterrupted{Path: path}
	}
	if err != nil {
		c.Close()
		if errors.Is(err, client.ErrDenied) {
			return nil, &OpenDenied{Path: path, Err: err}
		}
		if explicit || !client.IsNoDevice(err) {
			return nil, cli.Usagef("--hub %s: %v", path, err)
		}
		return nil, nil
	}
	kind := map[endpoint.Mode]int{endpoint.ModeRMEM: 0, endpoint.ModeDMARead: 1, endpoint.ModeDMAWrite: 2}[mode]
	if q.MACGiven && q.MAC != dev.Local[kind] {
		c.Close()
		if explicit {
			return nil, cli.Usagef("--mac %v is not the hub's local MAC %v for this operation; drop --mac, or --hub", q.MAC, dev.Local[kind])
		}
		return nil, nil
	}
	if !explicit {
		fmt.Fprintf(os.Stderr, "oetp: note: through the hub at %s (its device %q); --no-hub runs this command's own endpoint\n", path, dev.Name)
	}
	return &Hub{C: c, Dev: dev, Path: path}, nil
}

// hubOpError is a hub operation's error as the engine's: the client's
// error is the engine's own, carried whole by the hub; a refusal of the hub
// itself (busy, a limit) did not run the operation.
func hubOpError(op string, addr uint32, err error) error {
	var oe *endpoint.OpError
	if err == nil || errors.As(err, &oe) {
		return err
	}
	var he *client.HubError
	if errors.Is(err, client.ErrDenied) {
		return err // its own result: DENIED, naming the rule (newResult)
	}
	if errors.As(err, &he) {
		return &endpoint.OpError{Op: op, Addr: addr, Code: wire.CodeLocalAXIS, Err: he}
	}
	// Not expected from the client: say the outcome is unknown.
	return &endpoint.OpError{Op: op, Addr: addr, Code: wire.CodeLocalAXIS, Err: err, OutcomeUnknown: true}
}

func (s *Hub) RMEMRead(ctx context.Context, addr uint32) (uint32, error) {
	v, err := s.Dev.WithContext(ctx).Read(addr)
	return v, hubOpError("RMEM read", addr, err)
}

func (s *Hub) RMEMWrite(ctx context.Context, addr, data, mask uint32) error {
	return hubOpError("RMEM write", addr, s.Dev.WithContext(ctx).Write(addr, data, mask))
}

// DMAWrite writes the input to addr, streamed from the file or pipe (at
// most proto.MaxBlock bytes per block).
func (s *Hub) DMAWrite(ctx context.Context, addr uint32, in *dmafile.Input) (endpoint.Transfer, error) {
	dev := s.Dev.WithContext(ctx)
	var total endpoint.Transfer
	fail := func(at uint32, t client.Transfer, err error) error {
		err = hubOpError("DMA write", at, err)
		var oe *endpoint.OpError
		if errors.As(err, &oe) {
			oe.Bytes = total.Bytes // the whole command's, as dmafile.Write's
		}
		return err
	}
	add := func(t client.Transfer) {
		total.Bytes += t.Bytes
		total.Fragments += t.Fragments
	}
	const chunk = 4 << 20 // a pipe's chunk, as dmafile.Write
	if in.File != nil {
		for off := int64(0); off < in.Size; {
			n := min(in.Size-off, proto.MaxBlock)
			at := addr + uint32(off)
			t, err := dev.WriteBlockFrom(at, io.NewSectionReader(in.File, in.Base+off, n), int(n))
			add(t)
			if err != nil {
				return total, fail(at, t, err)
			}
			off += n
		}
		return total, nil
	}
	err := in.Chunks(addr, chunk, func(off uint64, p []byte) error {
		at := addr + uint32(off)
		t, err := dev.WriteBlockTransfer(at, p)
		add(t)
		if err != nil {
			return fail(at, t, err)
		}
		return nil
	})
	return total, err
}

// DMARead reads n bytes at addr into the output, streamed from the socket.
func (s *Hub) DMARead(ctx context.Context, addr, n uint32, dst *dmafile.Output) (endpoint.Transfer, error) {
	t, err := s.Dev.WithContext(ctx).ReadBlockTo(addr, int(n), &spaceWriter{s: dst.Space()})
	return endpoint.Transfer{Bytes: t.Bytes, Fragments: t.Fragments}, hubOpError("DMA read", addr, err)
}

// ReadWords reads addrs in batches of up to 4096 reads.
func (s *Hub) ReadWords(ctx context.Context, addrs []uint32) ([]uint32, error) {
	dev := s.Dev.WithContext(ctx)
	var words []uint32
	for len(addrs) > 0 {
		n, base := min(len(addrs), 1<<12), len(words)
		b := dev.NewBatch()
		res := make([]*client.Result, 0, n)
		for _, a := range addrs[:n] {
			res = append(res, b.Read(a))
		}
		err := b.Run()
		for _, r := range res {
			if !r.Done {
				break
			}
			words = append(words, r.Value)
		}
		if err != nil {
			var be *client.BatchError
			if errors.As(err, &be) {
				err = be.Err // the failed read's own error, as without the hub
			}
			return words, hubOpError("RMEM read", addrs[len(words)-base], err)
		}
		addrs = addrs[n:]
	}
	return words, nil
}

// Close closes the connection to the hub.
func (s *Hub) Close() error { return s.C.Close() }

// spaceWriter writes a stream into a memory.Space from offset 0.
type spaceWriter struct {
	s   memory.Space
	off uint32
}

func (w *spaceWriter) Write(p []byte) (int, error) {
	if r := w.s.WriteAt(p, w.off); r != memory.OKAY {
		return 0, fmt.Errorf("writing --out at offset %d: %v", w.off, r)
	}
	w.off += uint32(len(p))
	return len(p), nil
}
