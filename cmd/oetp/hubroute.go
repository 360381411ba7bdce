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

// hubSession opens the hub route for mode, or returns nil (and no error)
// when the command should run its own endpoint.
func (f *opFlags) hubSession(fs *pflag.FlagSet, mode endpoint.Mode) (*session, error) {
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
	c, err := client.DialOptions(client.Options{Path: path, Timeout: 2 * time.Second, TrustAnyOwner: f.hubAny})
	if err != nil {
		var ue *rundir.UntrustedError
		if errors.As(err, &ue) && !explicit {
			return nil, usagef("the hub socket this command would use: %v; or run without a hub: --no-hub", err)
		}
		if explicit {
			return nil, usagef("--hub %s: %v", path, err)
		}
		return nil, nil // no hub answers there: run our own endpoint
	}
	if !explicit && !strings.HasPrefix(path, "tcp://") && c.NetNS != 0 && c.NetNS != proto.NetNS() {
		// The hub is in another network namespace: its --iface is another
		// interface, even with the same name.
		c.Close()
		return nil, nil
	}
	dev, err := c.DeviceOn(f.iface, f.peer.m)
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
	return &session{hubc: c, dev: dev}, nil
}

// hubError turns a hub client's error into the engine's, so that results
// and messages read exactly as without the hub.
func hubError(op string, err error) error {
	var oe *client.OpError
	if !errors.As(err, &oe) {
		if err == nil {
			return nil
		}
		return &endpoint.OpError{Op: op, Code: wire.CodeLocalInvalid, Err: err}
	}
	// The hub's message is "<operation>: MNEMONIC (n)[: detail]".
	msg := oe.Message
	head := fmt.Sprintf("%s (%d)", oe.Name, uint8(oe.Code))
	if i := strings.Index(msg, head); i >= 0 {
		msg = msg[i+len(head):]
	}
	var detail error
	if d, ok := strings.CutPrefix(msg, ": "); ok && d != "" {
		detail = errors.New(d)
	}
	return &endpoint.OpError{Op: op, Code: oe.Code, Err: detail}
}

// The operations of a session, through the hub or on the command's own
// endpoint.

func (s *session) rmemRead(ctx context.Context, addr uint32) (uint32, error) {
	if s.dev != nil {
		v, err := s.dev.Read(addr)
		return v, hubError("RMEM read", err)
	}
	return s.ep.RMEMRead(ctx, 0, addr)
}

func (s *session) rmemWrite(ctx context.Context, addr, data, mask uint32) error {
	if s.dev != nil {
		return hubError("RMEM write", s.dev.Write(addr, data, mask))
	}
	return s.ep.RMEMWrite(ctx, 0, addr, data, mask)
}

// dmaWrite writes the input to addr: through the hub streamed from the
// file or pipe (at most proto.MaxBlock bytes per block), else streamWrite.
func (s *session) dmaWrite(ctx context.Context, addr uint32, in *dmaInput) (endpoint.Transfer, error) {
	if s.dev == nil {
		return streamWrite(ctx, s.ep, addr, in)
	}
	var total endpoint.Transfer
	add := func(t client.Transfer) {
		total.Bytes += t.Bytes
		total.Fragments += t.Fragments
	}
	const chunk = 4 << 20 // a pipe's chunk, as streamWrite
	if in.file != nil {
		for off := int64(0); off < in.size; {
			n := min(in.size-off, proto.MaxBlock)
			t, err := s.dev.WriteBlockFrom(addr+uint32(off), io.NewSectionReader(in.file, in.base+off, n), int(n))
			add(t)
			if err != nil {
				return total, hubError("DMA write", err)
			}
			off += n
		}
		return total, nil
	}
	err := in.chunks(addr, chunk, func(off uint64, p []byte) error {
		t, err := s.dev.WriteBlockTransfer(addr+uint32(off), p)
		add(t)
		if err != nil {
			return hubError("DMA write", err)
		}
		return nil
	})
	return total, err
}

// dmaRead reads n bytes at addr into the output: through the hub streamed
// from the socket into it, else DMAReadInto.
func (s *session) dmaRead(ctx context.Context, addr, n uint32, dst *dmaOutput) (endpoint.Transfer, error) {
	if s.dev == nil {
		return s.ep.DMAReadInto(ctx, 0, addr, dst.space(), 0, n)
	}
	t, err := s.dev.ReadBlockTo(addr, int(n), &spaceWriter{s: dst.space()})
	return endpoint.Transfer{Bytes: t.Bytes, Fragments: t.Fragments}, hubError("DMA read", err)
}

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
