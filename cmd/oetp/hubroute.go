package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/wire"
)

// The one-shot commands (rmem read/write, dma write/read) go through a
// running hub when it serves their --iface and --peer: the hub's endpoint
// then sends the request from its own local MAC for that kind of
// operation, so a shell loop neither opens AF_PACKET sockets nor collides
// with the hub's other clients. The hub is found through --hub PATH, else
// $OETP_HUB, /run/oetp/hub.sock or the per-user socket; --no-hub always runs
// the command's own endpoint.

// hubUsage is the help of --hub; noHubUsage of --no-hub.
const (
	hubUsage   = "go through the hub at `PATH` (or tcp://HOST:PORT); default: $OETP_HUB, /run/oetp/hub.sock or the per-user socket, if a hub there serves --iface and --peer"
	noHubUsage = "never go through a hub: run this command's own endpoint on --iface"
	// hubTrustAnyUsage is the help of --hub-trust-any-owner.
	hubTrustAnyUsage = "use the hub's socket even if it, a directory above it or the process serving it belongs to another user " +
		"(or its directory is writable by others): only for a socket shared on purpose, since whoever owns it can answer in the hub's place " +
		"(read results, \"ok\" for writes never made); also $" + rundir.TrustAnyOwnerEnv + "=1"
)

// hubBypass are the flags a hub cannot honour for one operation (its
// device has its own timeouts, frame size and recovery policy; a capture
// needs the command's own link): given explicitly, they make the command run
// its own endpoint. Flags not defined on a command are ignored.
var hubBypass = []string{"mac", "pcap", "pcap-format", "max-frame", "timeout", "busy-poll", "fragment",
	"retries", "deadline", "volatile", "transport", "rate"}

// hubSession is a command's route through a hub: the connection and the
// device.
type hubSession struct {
	c    *client.Client
	dev  *client.Device
	path string // the hub's socket
}

// hubSession opens the hub route for mode, or returns nil (and no error)
// when the command should run its own endpoint. A plain command (no --hub)
// routed through a hub says so on stderr, and so does one that finds a hub
// socket where no hub answers and runs its own endpoint.
func (f *opFlags) hubSession(fs *pflag.FlagSet, mode endpoint.Mode) (*hubSession, error) {
	explicit := fs.Changed("hub")
	if f.noHub {
		if explicit {
			return nil, usagef("--hub and --no-hub contradict each other: drop one")
		}
		return nil, nil
	}
	if f.peer.m.IsGroup() {
		if explicit {
			return nil, usagef("--hub: a group --peer is not a hub device; drop --hub to send the multicast write from this command")
		}
		return nil, nil
	}
	for _, name := range hubBypass {
		if fl := fs.Lookup(name); fl != nil && fl.Changed {
			if name == "mac" {
				// --mac naming the hub's own local MAC is still the hub's route.
				continue
			}
			if explicit {
				return nil, usagef("--hub cannot honour --%s (the hub's device has its own settings); drop one of them", name)
			}
			return nil, nil
		}
	}
	path := f.hub
	if !explicit {
		path = proto.ClientSocket()
		if !strings.HasPrefix(path, "tcp://") {
			if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
				return nil, nil
			}
		}
	}
	ctx := commandContext()
	c, err := client.DialOptions(client.Options{Path: path, Timeout: 2 * time.Second, TrustAnyOwner: f.hubAny, Context: ctx})
	if err != nil && ctx.Err() != nil {
		return nil, f.hubOpenInterrupted(mode, path)
	}
	if err != nil {
		var ue *rundir.UntrustedError
		if errors.As(err, &ue) {
			err = ue // its own words, without the client's "oetp hub: "
			if !explicit {
				return nil, usagef("the hub socket this command would use: %v; or run without a hub: --no-hub", err)
			}
		}
		if explicit {
			return nil, usagef("--hub %s: %v%s; or run this command's own endpoint: --no-hub instead of --hub", path, err, hubDialHint(err))
		}
		// No hub answers there (one that died leaves its socket): run our
		// own endpoint, and say so.
		fmt.Fprintf(os.Stderr, "oetp: note: no hub answers at %s (%v): this command runs its own endpoint on %s\n", path, errors.Unwrap(err), f.iface)
		return nil, nil
	}
	if !explicit && !strings.HasPrefix(path, "tcp://") && c.NetNS != 0 && c.NetNS != proto.NetNS() {
		// The hub is in another network namespace: its --iface is another
		// interface, even with the same name.
		c.Close()
		return nil, nil
	}
	dev, err := c.DeviceOn(f.iface, f.peer.m)
	if err != nil && ctx.Err() != nil {
		c.Close()
		return nil, f.hubOpenInterrupted(mode, path)
	}
	if err != nil {
		c.Close()
		if explicit || !client.IsNoDevice(err) {
			return nil, usagef("--hub %s: %v", path, err)
		}
		return nil, nil
	}
	kind := map[endpoint.Mode]int{endpoint.ModeRMEM: 0, endpoint.ModeDMARead: 1, endpoint.ModeDMAWrite: 2}[mode]
	if fs.Changed("mac") && f.mac.m != dev.Local[kind] {
		c.Close()
		if explicit {
			return nil, usagef("--mac %v is not the hub's local MAC %v for this operation; drop --mac, or --hub", f.mac.m, dev.Local[kind])
		}
		return nil, nil
	}
	if !explicit {
		fmt.Fprintf(os.Stderr, "oetp: note: through the hub at %s (its device %q); --no-hub runs this command's own endpoint\n", path, dev.Name)
	}
	return &hubSession{c: c, dev: dev, path: path}, nil
}

// hubOpenInterrupted is the error of a command whose signal came while
// its hub route was opening: nothing was sent, as an operation the
// engine's context ends before accepting it (TIMEOUT, outcome known).
func (f *opFlags) hubOpenInterrupted(mode endpoint.Mode, path string) error {
	op := map[endpoint.Mode]string{endpoint.ModeRMEM: "RMEM write", endpoint.ModeDMARead: "DMA write", endpoint.ModeDMAWrite: "DMA read"}[mode]
	if mode == endpoint.ModeRMEM && f.read {
		op = "RMEM read"
	}
	f.via, f.hubPath = viaHub, path
	return &endpoint.OpError{Op: op, Addr: f.addr.v, Code: wire.CodeTimeout,
		Err: fmt.Errorf("%w while opening the hub at %s; nothing was sent", context.Canceled, path)}
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

func (s *hubSession) rmemRead(ctx context.Context, addr uint32) (uint32, error) {
	v, err := s.dev.WithContext(ctx).Read(addr)
	return v, hubOpError("RMEM read", addr, err)
}

func (s *hubSession) rmemWrite(ctx context.Context, addr, data, mask uint32) error {
	return hubOpError("RMEM write", addr, s.dev.WithContext(ctx).Write(addr, data, mask))
}

// dmaWrite writes the input to addr, streamed from the file or pipe (at
// most proto.MaxBlock bytes per block).
func (s *hubSession) dmaWrite(ctx context.Context, addr uint32, in *dmafile.Input) (endpoint.Transfer, error) {
	dev := s.dev.WithContext(ctx)
	var total endpoint.Transfer
	fail := func(at uint32, t client.Transfer, err error) error {
		err = hubOpError("DMA write", at, err)
		var oe *endpoint.OpError
		if errors.As(err, &oe) {
			oe.Bytes = total.Bytes // the whole command's, as streamWrite's
		}
		return err
	}
	add := func(t client.Transfer) {
		total.Bytes += t.Bytes
		total.Fragments += t.Fragments
	}
	const chunk = 4 << 20 // a pipe's chunk, as streamWrite
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

// dmaRead reads n bytes at addr into the output, streamed from the socket.
func (s *hubSession) dmaRead(ctx context.Context, addr, n uint32, dst *dmafile.Output) (endpoint.Transfer, error) {
	t, err := s.dev.WithContext(ctx).ReadBlockTo(addr, int(n), &spaceWriter{s: dst.Space()})
	return endpoint.Transfer{Bytes: t.Bytes, Fragments: t.Fragments}, hubOpError("DMA read", addr, err)
}

// readWords reads addrs in batches of up to 4096 reads.
func (s *hubSession) readWords(ctx context.Context, addrs []uint32) ([]uint32, error) {
	dev := s.dev.WithContext(ctx)
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

// addFigures: the hub's device keeps the link's figures (oetp hub status).
func (s *hubSession) addFigures(*opResult) {}

func (s *hubSession) close() error { return s.c.Close() }

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
