// Package hub is the oETP hub: a long-running service that owns devices
// (boards, or `oetp serve` endpoints), each reached through an interface,
// and serves their operations to many clients at once over a Unix socket
// (and optionally TCP) with the protocol of docs/hub-protocol.md
// (package hub/proto).
//
// A device gets one initiator-only endpoint per kind of operation (RMEM, DMA
// write, DMA read), each on its own local MAC: a v1 peer entry has one mode,
// so the device's peer table holds one entry per hub MAC
// (Config.PeerEntries). Each client connection is served by one goroutine
// that reads a request, runs it on the device's endpoint and writes the
// reply; replies are flushed when no further request is already buffered, so
// a pipelining client pays one system call per burst. Concurrent clients
// meet in the endpoint, whose initiating slot serialises the frames, so
// every reply is matched to its own request whatever the interleaving. A
// BATCH runs its operations back to back on the endpoint without a client
// round trip between them.
//
// Bad input never costs other clients anything: a malformed request gets a
// BAD_MESSAGE reply and the connection goes on (only a broken length field
// closes it, since the stream cannot be resynchronised); a client that
// disconnects during a batch stops the batch before its next operation.
//
// Its subpackage hub/proto is the client protocol's codec, shared by the hub,
// the Go client (package client) and the tests.
package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/internal/ratelog"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/wire"
)

// Opener opens the link of one local MAC of a device: the interface iface,
// receiving frames for mac (which is also the source of the frames sent).
type Opener func(d DeviceConfig, k Kind, mac wire.MAC) (node.Medium, error)

// Device is one device the hub owns.
type Device struct {
	Config DeviceConfig
	index  int
	eps    [numKinds]*endpoint.Endpoint
	nodes  [numKinds]*node.Node // the stack of each endpoint
	table  *table               // nil without an address table
	m      devMetrics
}

// Endpoint returns the endpoint of kind k.
func (d *Device) Endpoint(k Kind) *endpoint.Endpoint { return d.eps[k] }

// Hub owns the devices and serves clients.
type Hub struct {
	cfg    Config
	log    *slog.Logger
	devs   []*Device
	byName map[string]*Device
	groups map[string]*Group // by name
	start  time.Time
	netns  uint64 // proto.NetNS() of the hub
	met    *metrics
	lim    Limits  // cfg.Limits with the defaults
	mem    *budget // the memory budget (Limits.MemoryBudget)

	// The bounds' counters (metrics).
	capRefused atomic.Uint64 // connections refused at MaxClients
	busy       atomic.Uint64 // requests refused BUSY by the memory budget
	tooLarge   atomic.Uint64 // requests refused TOO_LARGE (MaxMessage, the block limits)
	idleClosed atomic.Uint64 // connections closed after IdleTimeout
	stalls     atomic.Uint64 // requests abandoned after ReadDeadline
	acceptErrs atomic.Uint64 // accept errors
	acceptLog  ratelog.Limiter[string]

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*conn]struct{}
	closed    bool
	closing   atomic.Bool
	wg        sync.WaitGroup
	clients   atomic.Int64
	accepted  atomic.Uint64
	malformed atomic.Uint64
}

// New opens every device of cfg (cfg.Check must pass) with open, loading
// address tables, and returns the hub, not yet serving. log may be nil.
func New(cfg Config, open Opener, log *slog.Logger) (*Hub, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{cfg: cfg, log: log, byName: map[string]*Device{}, start: time.Now(), conns: map[*conn]struct{}{}, netns: proto.NetNS(),
		lim: cfg.Limits.withDefaults()}
	h.mem = newBudget(h.lim.MemoryBudget)
	h.met = newMetrics(h)
	for i, dc := range cfg.Devices {
		d := &Device{Config: dc, index: i}
		if dc.AddressTable != "" {
			t, err := loadTable(dc.AddressTable)
			if err != nil {
				h.closeDevices()
				return nil, fmt.Errorf("device %q: address_table: %w", dc.Name, err)
			}
			d.table = t
		}
		h.devs = append(h.devs, d)
		h.byName[dc.Name] = d
		if d.table != nil {
			for _, n := range d.table.t.Nodes() {
				if n.Volatile() && n.Span() > 0 {
					d.Config.Retry.Volatile = append(d.Config.Retry.Volatile, endpoint.AddrRange{Base: n.Address, Size: uint64(n.Span())})
				}
			}
		}
		for k := range numKinds {
			if err := h.openEndpoint(d, Kind(k), open); err != nil {
				h.closeDevices()
				return nil, fmt.Errorf("device %q: local.%s %v on %s: %w", dc.Name, Kind(k), dc.Local[k], dc.Iface, err)
			}
		}
		h.met.addDevice(d)
	}
	h.groups = map[string]*Group{}
	for _, gc := range cfg.Groups {
		g, err := h.openGroup(gc, open)
		if err != nil {
			h.closeDevices()
			return nil, fmt.Errorf("group %q: local %v: %w", gc.Name, gc.Local, err)
		}
		h.groups[gc.Name] = g
	}
	return h, nil
}

func (h *Hub) openEndpoint(d *Device, k Kind, open Opener) error {
	l, err := open(d.Config, k, d.Config.Local[k])
	if err != nil {
		return err
	}
	retry := d.Config.Retry
	cfg := node.Config{
		LinkConfig: node.LinkConfig{Iface: d.Config.Iface, Link: l},
		Endpoint:   endpoint.Config{MaxFrame: d.Config.MaxFrame, RMEMTimeout: d.Config.RMEMTimeout, DMATimeout: d.Config.DMATimeout},
		Peers: []node.Peer{{Peer: endpoint.Peer{MAC: d.Config.MAC, Mode: k.localMode(), WindowSize: 1 << 32},
			Transport: d.Config.Transport, Retry: &retry}},
	}
	if h.cfg.HoldRoles {
		cfg.Role = node.Initiator
	}
	n, err := node.Open(context.Background(), cfg)
	if err != nil {
		return err
	}
	d.eps[k], d.nodes[k] = n.Endpoint, n
	if n.RoleReplaced != "" {
		h.log.Warn(n.RoleReplaced, "device", d.Config.Name)
	}
	for _, hs := range n.Handshakes {
		switch {
		case hs.Err != nil:
			h.log.Warn("the device does not answer the reliable transport's handshake; is its peer entry for this MAC set with transport = \"reliable\"?",
				"device", d.Config.Name, "kind", k.String(), "mac", d.Config.Local[k].String(), "err", hs.Err)
		case !hs.Reliable:
			// node has set the window back to one request, as for the CLI.
			h.log.Info("the device does not answer the reliable transport's handshake: using v1", "device", d.Config.Name, "kind", k.String())
		}
	}
	return nil
}

func (h *Hub) closeDevices() {
	for _, g := range h.groups {
		g.close()
	}
	for _, d := range h.devs {
		for _, n := range d.nodes {
			if n != nil {
				n.Close()
			}
		}
	}
}

// SetToken sets the shared secret that listeners served with requireToken
// check (Config.Token).
func (h *Hub) SetToken(token string) {
	h.mu.Lock()
	h.cfg.Token = token
	h.mu.Unlock()
}

// token returns the shared secret.
func (h *Hub) token() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg.Token
}

// Devices returns the devices in configuration order.
func (h *Hub) Devices() []*Device { return h.devs }

// Config returns the configuration in force, local MACs derived.
func (h *Hub) Config() Config { return h.cfg }

// ErrRunning is wrapped by ListenUnix's error when another hub serves the
// socket.
var ErrRunning = errors.New("another hub is serving this socket")

// ListenUnix creates the Unix socket at path (mode 0660, its directory
// made by rundir.Ensure: 0755 for /run/oetp, else 0700, and refused when
// another user could write to it) and returns its listener. A lock file path+".lock"
// held for the listener's life makes sure two hubs never serve one socket: if
// another hub holds it, ListenUnix fails with ErrRunning; a socket left by a
// hub that died is detected (its lock is free) and replaced.
func ListenUnix(path string) (net.Listener, error) {
	if err := rundir.Ensure(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	lock, replaced, err := rundir.TryLock(path + ".lock")
	if errors.Is(err, rundir.ErrBusy) {
		return nil, fmt.Errorf("%s: %w: %s holds %s.lock; stop it first, or give this hub another socket", path, ErrRunning, rundir.ReadHolder(path+".lock"), path)
	}
	if err != nil {
		return nil, fmt.Errorf("socket lock: %w", err)
	}
	// Holding the lock, any socket file is stale: a hub that is alive holds
	// the lock. Still, never remove something that answers.
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		lock.Release()
		return nil, fmt.Errorf("%s: %w (it answers although its lock is free); stop it first", path, ErrRunning)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			lock.Release()
			return nil, fmt.Errorf("%s exists and is not a socket; remove it or choose another path", path)
		}
		if err := os.Remove(path); err != nil {
			lock.Release()
			return nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		lock.Release()
		return nil, err
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		lock.Release()
		return nil, err
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(true)
	return &lockedListener{UnixListener: ul, lock: lock, replaced: replaced}, nil
}

type lockedListener struct {
	*net.UnixListener
	lock     *rundir.FileLock
	replaced string
	once     sync.Once
}

func (l *lockedListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { l.lock.Release() })
	return err
}

// Replaced says what ListenUnix removed from its lock file's place (see
// rundir.TryLock), "" when nothing: print it as a warning.
func (l *lockedListener) Replaced() string { return l.replaced }

// ListenTCP listens on addr for --listen. A bare port ("7700") or ":7700"
// listens on 127.0.0.1. Every TCP listener needs a token (Config.Token),
// loopback included: any local user can connect to a loopback port, and
// TCP carries no credentials the hub could check.
func ListenTCP(addr, token string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if !strings.Contains(addr, ":") {
			host, port, err = "", addr, nil
		} else {
			return nil, fmt.Errorf("--listen %q: %v; use PORT, :PORT or HOST:PORT", addr, err)
		}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if token == "" {
		return nil, fmt.Errorf("--listen %s: a shared-secret token is required, loopback included (any local user can connect to a TCP port): "+
			"make one with `head -c 32 /dev/urandom | base64 > hub.token; chmod 600 hub.token` and set token_file in the config, or --token-file", addr)
	}
	return net.Listen("tcp", net.JoinHostPort(host, port))
}

// ReadTokenFile reads a shared-secret token from path (token_file,
// --token-file). The file must not be readable or writable by others
// (chmod 600, or 640 for the hub's group), the token 1..proto.MaxToken
// bytes once surrounding white space is trimmed.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o007 != 0 {
		return "", fmt.Errorf("%s may be read or written by any user (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, proto.MaxToken+4096))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty: put the shared secret in it", path)
	}
	if len(tok) > proto.MaxToken {
		return "", fmt.Errorf("%s holds %d bytes: a token has at most %d", path, len(tok), proto.MaxToken)
	}
	return tok, nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve accepts clients on l until Close. requireToken makes every client
// present Config.Token in HELLO before anything else.
func (h *Hub) Serve(l net.Listener, requireToken bool) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	h.listeners = append(h.listeners, l)
	h.mu.Unlock()
	for {
		nc, err := l.Accept()
		if err != nil {
			h.mu.Lock()
			closed := h.closed
			h.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors: wait for connections to end,
				// logging a few lines and then a count per interval.
				h.acceptErrs.Add(1)
				for _, s := range h.acceptLog.Flush() {
					h.log.Warn("accept errors suppressed", "count", s.Suppressed, "since", s.Since)
				}
				if h.acceptLog.Allow("accept") {
					h.log.Warn("accept: out of file descriptors; lower max_clients or raise the hub's file limit (ulimit -n)", "err", err)
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			return err
		}
		if h.clients.Load() >= int64(h.lim.MaxClients) {
			// At the cap: say so and close, without reading anything.
			h.capRefused.Add(1)
			nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			nc.Write(notice(proto.StatusBusy, fmt.Sprintf("the hub serves %d clients, its limit (max_clients); try again later, or raise max_clients in the hub's config", h.lim.MaxClients)))
			nc.Close()
			continue
		}
		c := newConn(h, nc, requireToken)
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			nc.Close()
			return nil
		}
		h.conns[c] = struct{}{}
		h.wg.Add(1)
		h.mu.Unlock()
		h.clients.Add(1)
		h.accepted.Add(1)
		go func() {
			defer h.wg.Done()
			c.serve()
			c.release()
			h.clients.Add(-1)
			h.mu.Lock()
			delete(h.conns, c)
			h.mu.Unlock()
		}()
	}
}

// Close stops accepting, disconnects the clients (an operation in progress
// finishes first), waits for their goroutines and closes the endpoints.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.closing.Store(true)
	for _, l := range h.listeners {
		l.Close()
	}
	for c := range h.conns {
		c.nc.Close()
	}
	h.mu.Unlock()
	// Operations in progress finish first; one that waits without a
	// timeout (timeout = "0") is aborted by closing the endpoints after a
	// grace period.
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
	}
	h.closeDevices()
	<-done
	return nil
}

// closeGrace is how long Close lets operations in progress finish.
const closeGrace = 2 * time.Second

// ctx is the context of operations: the endpoints' own timeouts bound them.
var opCtx = context.Background()

// notice is a notice message (proto.NoticeTag): status and why.
func notice(status uint8, msg string) []byte {
	return proto.Finish(proto.AppendReplyHeader(nil, proto.Header{Type: proto.Hello, Tag: proto.NoticeTag}, status, 0, msg), 0)
}
