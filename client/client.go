// Package client is the Go client of the oETP hub (`oetp hub`): it speaks
// the protocol of docs/hub-protocol.md over the hub's Unix socket, or TCP,
// and offers the same operations as the Python package in python/: RMEM
// reads and masked writes, DMA block reads and writes, batches of those,
// named address-table nodes, and the hub's status.
//
// Addresses are the device's oETP byte addresses; block lengths are in
// bytes. A failed operation returns the engine's own error, an
// *endpoint.OpError (OpError here), carried whole over the hub: the CSR code
// (0..15), the cause (errors.Is finds the engine's sentinels), whether the
// operation may have executed, the failed address and the bytes done. When
// the hub itself fails the operation (the connection is lost, or no reply
// comes within the operation's deadline), the error is an OpError too, whose
// cause wraps ErrHub, and OutcomeUnknown says whether the request had reached
// the hub. A failure of the hub rather than of a device operation (unknown
// device, malformed request, the hub is busy) returns a *HubError.
//
// Every operation has a deadline: by default the device's own bound (its
// timeout and retries, which the hub reports when the device is opened)
// per fragment, plus a margin; Options.OpTimeout sets another. A Device
// from WithContext also ends its operations when the context is done.
//
// A Client is safe for concurrent use; its requests are serialised on one
// connection. Open several Clients for parallel requests.
package client

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/wire"
)

// OpError is a failed device operation: the engine's error, carried whole
// over the hub (see proto.ErrorDetail).
type OpError = endpoint.OpError

// ErrHub is wrapped by the cause of an operation that the hub connection
// failed: the hub closed it or died, or did not reply within the
// operation's deadline, or the operation's context ended.
var ErrHub = errors.New("hub connection")

// BatchError is a failed batch: the operation at Index failed with Err;
// the operations before it completed, the later ones did not run.
type BatchError struct {
	Index int
	Err   *OpError
}

func (e *BatchError) Error() string { return fmt.Sprintf("batch operation %d: %v", e.Index, e.Err) }

// Unwrap returns Err.
func (e *BatchError) Unwrap() error { return e.Err }

// HubError is a failure of the hub rather than of a device operation.
type HubError struct {
	Status  uint8
	Name    string // BAD_MESSAGE, NO_DEVICE, NO_NODE, AUTH, ...
	Message string
}

func (e *HubError) Error() string { return fmt.Sprintf("oetp hub: %s: %s", e.Name, e.Message) }

// ErrDenied matches (errors.Is) a HubError with the status DENIED: the
// device's access rules refuse this client the operation; the message
// names the client and the rule. Nothing ran.
var ErrDenied = errors.New("refused by the device's access rules")

// Is reports whether target is ErrDenied and e a DENIED refusal.
func (e *HubError) Is(target error) bool {
	return target == ErrDenied && e.Status == proto.StatusDenied
}

// IsNoDevice reports whether err says the hub has no such device.
func IsNoDevice(err error) bool {
	var he *HubError
	return errors.As(err, &he) && he.Status == proto.StatusNoDevice
}

// Options configure Dial.
type Options struct {
	// Path is the socket: a Unix socket path, or tcp://HOST:PORT. Empty
	// selects proto.ClientSocket() ($OETP_HUB, /run/oetp/hub.sock, or the
	// per-user socket).
	Path string
	// Token is the shared secret for TCP (default $OETP_HUB_TOKEN).
	Token string
	// Timeout bounds connecting and the HELLO exchange (default 5s).
	Timeout time.Duration
	// TrustAnyOwner skips the checks made before using a Unix socket
	// (rundir.CheckSocket: the socket and its directories are owned by
	// root or this user and writable by no one else; the serving process
	// runs as root or this user). Set it (or $OETP_HUB_TRUST_ANY_OWNER=1)
	// only for a socket shared on purpose: whoever owns the socket or can
	// write its directory can then answer in the hub's place.
	TrustAnyOwner bool
	// OpTimeout is every operation's deadline; 0 derives it from the
	// device (DefaultDeadline), negative waits for the hub forever.
	OpTimeout time.Duration
	// Context, when done, ends the HELLO exchange and the opening of
	// devices (Device, DeviceOn) at once, with an error wrapping its
	// cause; the connection is then closed. Operations watch their
	// device's context instead (Device.WithContext).
	Context context.Context
}

// Client is a connection to a hub.
type Client struct {
	mu   sync.Mutex
	nc   conn
	br   *bufio.Reader
	bw   *bufio.Writer
	tag  uint32
	out  []byte
	in   []byte
	Path string // the socket connected to
	// NetNS is the hub's network namespace (proto.NetNS), 0 if unknown.
	NetNS uint64
	ndev  int
	err   error // a broken connection
	// sent: every byte of the current request has been handed to the hub,
	// or (a streamed WRITE_BLOCK) any byte of its data: from then on a
	// failure leaves the outcome unknown.
	sent        bool
	opTimeout   time.Duration
	ctx         context.Context // Options.Context
	openTimeout time.Duration   // Options.Timeout
}

// dialReason is why a dial failed, without Go's operation and address
// ("connection refused", not "dial tcp 127.0.0.1:1: connect: connection
// refused"): the message names the path.
func dialReason(err error) error {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return fmt.Errorf("no host is named %s", dns.Name)
		}
		return fmt.Errorf("cannot look up the host %s (no name server answers)", dns.Name)
	}
	for {
		var next error
		switch e := err.(type) {
		case *net.OpError:
			next = e.Err
		case *os.SyscallError:
			next = e.Err
		case *fs.PathError:
			next = e.Err
		}
		if next == nil {
			return err
		}
		err = next
	}
}

// Dial connects to the hub at path (see Options.Path).
func Dial(path string) (*Client, error) { return DialOptions(Options{Path: path}) }

// DialOptions connects with options.
func DialOptions(o Options) (*Client, error) {
	if o.Path == "" {
		o.Path = proto.ClientSocket()
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	network, addr := "unix", o.Path
	if a, ok := strings.CutPrefix(o.Path, "tcp://"); ok {
		network, addr = "tcp", a
		if o.Token == "" {
			o.Token = getenv("OETP_HUB_TOKEN")
		}
	}
	var nc conn
	var err error
	if network == "unix" {
		trustAny := o.TrustAnyOwner || rundir.TrustAnyOwner()
		if !trustAny {
			if err := rundir.CheckSocket(addr); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("oetp hub: %w", err)
			}
		}
		nc, err = dialUnixBlocking(addr, !trustAny)
	} else {
		nc, err = net.DialTimeout(network, addr, o.Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("no oetp hub answers at %s: %w", o.Path, dialReason(err))
	}
	c := &Client{nc: nc, br: bufio.NewReaderSize(nc, smallBuf), bw: bufio.NewWriterSize(nc, smallBuf), Path: o.Path,
		out: make([]byte, 0, 4096), in: make([]byte, 4096), opTimeout: o.OpTimeout}
	c.ctx, c.openTimeout = o.Context, o.Timeout
	stop := c.watch()
	token := o.Token
	if network == "tcp" {
		// The hub proves it holds the token before the client sends
		// anything, and the client proves it holds it without sending it.
		token, err = c.challenge(o.Token)
	}
	var res []byte
	if err == nil {
		b := c.begin(proto.Hello, 0)
		b = binary.LittleEndian.AppendUint16(b, proto.Version)
		b = proto.AppendStr16(b, token)
		res, err = c.roundTrip(b)
	}
	if err = stop(err); err != nil {
		nc.Close()
		return nil, err
	}
	d := proto.Decoder{B: res}
	d.U16("version")
	d.U32("max message")
	c.ndev = int(d.U16("devices"))
	if len(d.B) >= 8 {
		c.NetNS = binary.LittleEndian.Uint64(d.B)
	}
	return c, nil
}

// challenge sends a CHALLENGE with a fresh nonce and checks the hub's
// proof that it holds token; it returns what HELLO carries instead of the
// token (proto.ClientProof). A server that cannot prove it gets nothing
// else: an AUTH error that says so.
func (c *Client) challenge(token string) (string, error) {
	var cn [proto.NonceLen]byte
	if _, err := rand.Read(cn[:]); err != nil {
		return "", err
	}
	b := c.begin(proto.Challenge, 0)
	res, err := c.roundTrip(append(b, cn[:]...))
	var he *HubError
	if errors.As(err, &he) && he.Status == proto.StatusAuth {
		return "", err
	}
	if err != nil || len(res) != proto.NonceLen+sha256.Size || !hmac.Equal(res[proto.NonceLen:], proto.HubProof(token, cn[:], res[:proto.NonceLen])) {
		return "", &HubError{Status: proto.StatusAuth, Name: proto.StatusName(proto.StatusAuth), Message: fmt.Sprintf(
			"the server at %s did not prove it holds the token ($OETP_HUB_TOKEN): either the token is not this hub's, or another program answers at that address; the token was not sent", c.Path)}
	}
	return proto.ClientProof(token, cn[:], res[:proto.NonceLen]), nil
}

// watch bounds an exchange outside the device operations (HELLO, OPEN) by
// the dial's timeout and context: the returned function ends the watch and
// returns the exchange's error, or the context's when it ended it.
func (c *Client) watch() func(error) error {
	c.nc.SetDeadline(time.Now().Add(c.openTimeout))
	var stop func() bool
	if c.ctx != nil && c.ctx.Done() != nil {
		nc := c.nc
		stop = context.AfterFunc(c.ctx, func() { interrupt(nc) })
	}
	return func(err error) error {
		c.nc.SetDeadline(time.Time{})
		if stop != nil && !stop() {
			if c.err == nil {
				c.err = &connError{fmt.Errorf("oetp hub: connection to %s: closed when the context ended", c.Path)}
				c.nc.Close()
			}
			return fmt.Errorf("oetp hub: %s: %w before the hub answered", c.Path, context.Cause(c.ctx))
		}
		return err
	}
}

// A connection starts with small buffers, so that a one-shot register
// access (a shell loop of `oetp rmem read`) does not allocate 128 KiB; the
// first block transfer or batch gives it large ones (bigBuffers).
const (
	smallBuf = 4 << 10
	bigBuf   = 64 << 10
)

// bigBuffers replaces small buffers by large ones; c.mu must be held.
// Between requests both are empty (every reply is read whole).
func (c *Client) bigBuffers() {
	if c.bw.Size() < bigBuf && c.bw.Buffered() == 0 && c.br.Buffered() == 0 {
		c.br = bufio.NewReaderSize(c.nc, bigBuf)
		c.bw = bufio.NewWriterSize(c.nc, bigBuf)
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.nc.Close() }

// begin starts a request in c.out; c.mu must be held.
func (c *Client) begin(typ uint8, handle uint16) []byte {
	c.nextTag()
	return proto.AppendHeader(c.out[:0], typ, handle, c.tag)
}

// conn is the connection to the hub.
type conn interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	Close() error
	SetDeadline(t time.Time) error
}

// nextTag numbers the next request: never proto.NoticeTag.
func (c *Client) nextTag() {
	c.tag++
	if c.tag == proto.NoticeTag {
		c.tag++
	}
}

// roundTrip sends the request in b and returns the result of its reply,
// or the reply's error. c.mu must be held (DialOptions: not yet shared).
func (c *Client) roundTrip(b []byte) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	b = proto.Finish(b, 0)
	c.out = b
	if _, err := c.bw.Write(b); err != nil {
		return nil, c.broken(err)
	}
	if cap(c.out) > 1<<20 {
		c.out = make([]byte, 0, 4096)
	}
	return c.finishSent(c.tag)
}

func statusError(st proto.ReplyStatus) error {
	if st.Status < 16 {
		return st.OpError()
	}
	return &HubError{Status: st.Status, Name: proto.StatusName(st.Status), Message: st.Message}
}

// notice returns the hub's notice if the message is one: a reply with tag
// 0 that the hub sends before closing a connection whose requests it will
// not read (proto.NoticeTag): the request in progress did not run.
func (c *Client) notice(hdr proto.Header, body []byte) error {
	if hdr.Tag != proto.NoticeTag {
		return nil
	}
	st, _, err := proto.ParseReply(body)
	if err != nil || st.Status == proto.StatusOK {
		return nil
	}
	c.sent = false
	he := &HubError{Status: st.Status, Name: proto.StatusName(st.Status), Message: st.Message}
	c.err = he
	c.nc.Close()
	return he
}

// connError is the error of a broken connection.
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

func (c *Client) broken(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if !c.sent && c.err == nil {
		// The hub may have closed the connection after a notice (idle,
		// its limits): the notice says why, and that nothing ran.
		c.nc.SetDeadline(time.Now().Add(50 * time.Millisecond))
		if hdr, body, _, rerr := proto.ReadMessage(c.br, nil); rerr == nil {
			if nerr := c.notice(hdr, body); nerr != nil {
				return nerr
			}
		}
	}
	c.err = &connError{fmt.Errorf("oetp hub: connection to %s: %w", c.Path, err)}
	c.nc.Close()
	return c.err
}

// Device opens the device the hub knows by name.
func (c *Client) Device(name string) (*Device, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.begin(proto.Open, 0)
	b = append(b, proto.OpenByName)
	b = append(b, name...)
	return c.openReply(b)
}

// DeviceOn opens the device with MAC mac on interface iface; the error is
// a *HubError with status NO_DEVICE (IsNoDevice) when the hub has none.
func (c *Client) DeviceOn(iface string, mac wire.MAC) (*Device, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.begin(proto.Open, 0)
	b = append(b, proto.OpenByIface)
	b = append(b, mac[:]...)
	b = append(b, iface...)
	return c.openReply(b)
}

func (c *Client) openReply(b []byte) (*Device, error) {
	stop := c.watch()
	res, err := c.roundTrip(b)
	if err = stop(err); err != nil {
		return nil, err
	}
	d := proto.Decoder{B: res}
	dev := &Device{c: c}
	dev.handle = d.U16("handle")
	dev.HasTable = d.U8("caps")&proto.CapTable != 0
	d.U8("reserved")
	for k := range dev.Local {
		copy(dev.Local[k][:], d.Bytes(6, "local MAC"))
	}
	copy(dev.MAC[:], d.Bytes(6, "device MAC"))
	dev.Name = d.Str16("name")
	dev.Iface = d.Str16("iface")
	dev.Bound, dev.MaxFragment = time.Second, 1024 // a hub that does not say
	if len(d.B) >= 8 {
		dev.Bound = time.Duration(d.U32("bound")) * time.Millisecond
		dev.MaxFragment = int(d.U32("max fragment"))
	}
	if d.Err != nil {
		return nil, c.broken(fmt.Errorf("OPEN reply: %w", d.Err))
	}
	return dev, nil
}

// Status returns the hub's status and counters.
func (c *Client) Status() (proto.Status, []byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res, err := c.roundTrip(c.begin(proto.StatusReq, 0))
	if err != nil {
		return proto.Status{}, nil, err
	}
	raw := append([]byte(nil), res...)
	var s proto.Status
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, raw, fmt.Errorf("oetp hub: STATUS reply: %w", err)
	}
	return s, raw, nil
}

// Device is a device opened through the hub.
type Device struct {
	c        *Client
	handle   uint16
	Name     string
	Iface    string
	MAC      wire.MAC
	Local    [3]wire.MAC // the hub's local MACs: RMEM, DMA write, DMA read
	HasTable bool
	// Bound is the longest the device may take for one operation or DMA
	// fragment (its timeout, times its tries, within its retry
	// deadline); 0 when it waits forever. MaxFragment is its DMA
	// fragment size. Both come from the hub and set Deadline.
	Bound       time.Duration
	MaxFragment int
	ctx         context.Context
}

// Read reads the 32-bit word at the byte address addr (RMEM).
func (d *Device) Read(addr uint32) (uint32, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	o := d.begin("RMEM read", addr, 0)
	b := c.begin(proto.Read, d.handle)
	b = binary.LittleEndian.AppendUint32(b, addr)
	res, err := c.roundTrip(b)
	if err != nil {
		return 0xFFFFFFFF, o.end(err)
	}
	if len(res) != 4 {
		return 0xFFFFFFFF, o.end(c.broken(fmt.Errorf("READ reply of %d bytes", len(res))))
	}
	o.end(nil)
	return binary.LittleEndian.Uint32(res), nil
}

// Write writes the bits of data selected by mask into the word at addr
// (RMEM; one masked write, no read-modify-write).
func (d *Device) Write(addr, data, mask uint32) error {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	o := d.begin("RMEM write", addr, 0)
	b := c.begin(proto.Write, d.handle)
	b = binary.LittleEndian.AppendUint32(b, addr)
	b = binary.LittleEndian.AppendUint32(b, data)
	b = binary.LittleEndian.AppendUint32(b, mask)
	_, err := c.roundTrip(b)
	return o.end(err)
}

// ReadBlock reads n bytes at addr by DMA.
func (d *Device) ReadBlock(addr uint32, n int) ([]byte, error) {
	dst := make([]byte, n)
	err := d.ReadBlockInto(addr, dst)
	return dst, err
}

// ReadBlockInto reads len(dst) bytes at addr by DMA into dst.
func (d *Device) ReadBlockInto(addr uint32, dst []byte) error {
	_, err := d.ReadBlockTransfer(addr, dst)
	return err
}

// Transfer is the progress of a block operation, also on failure: the
// bytes and fragments completed.
type Transfer struct {
	Bytes     uint64
	Fragments int
}

func transfer(res []byte) Transfer {
	if len(res) < 8 {
		return Transfer{}
	}
	return Transfer{Bytes: uint64(binary.LittleEndian.Uint32(res)), Fragments: int(binary.LittleEndian.Uint32(res[4:]))}
}

// ReadBlockTransfer is ReadBlockInto reporting the transfer's progress.
// On failure dst holds the bytes done (Transfer.Bytes), as after a direct
// DMA read.
func (d *Device) ReadBlockTransfer(addr uint32, dst []byte) (Transfer, error) {
	if len(dst) > proto.MaxBlock {
		return Transfer{}, &HubError{Status: proto.StatusTooLarge, Name: "TOO_LARGE", Message: fmt.Sprintf("a block of %d bytes exceeds %d; split it", len(dst), proto.MaxBlock)}
	}
	c := d.c
	c.mu.Lock()
	c.bigBuffers()
	defer c.mu.Unlock()
	o := d.begin("DMA read", addr, len(dst))
	w := sliceWriter{b: dst}
	t, err := d.readBlockTo(addr, len(dst), &w)
	return t, o.end(err)
}

// sliceWriter writes a stream into b from its start.
type sliceWriter struct {
	b   []byte
	off int
}

func (w *sliceWriter) Write(p []byte) (int, error) {
	if len(p) > len(w.b)-w.off {
		return 0, fmt.Errorf("%d bytes past the %d-byte block", len(p)-(len(w.b)-w.off), len(w.b))
	}
	w.off += copy(w.b[w.off:], p)
	return len(p), nil
}

// WriteBlock writes data at addr by DMA.
func (d *Device) WriteBlock(addr uint32, data []byte) error {
	_, err := d.WriteBlockTransfer(addr, data)
	return err
}

// WriteBlockTransfer is WriteBlock reporting the transfer's progress.
func (d *Device) WriteBlockTransfer(addr uint32, data []byte) (Transfer, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	o := d.begin("DMA write", addr, len(data))
	// Header and address, then the data straight from the caller's slice.
	if err := d.startWriteBlock(addr, len(data)); err != nil {
		return Transfer{}, o.end(err)
	}
	if _, err := c.bw.Write(data); err != nil {
		return Transfer{}, o.end(c.broken(err))
	}
	res, err := c.finishSent(c.tag)
	return transfer(res), o.end(err)
}

// WriteBlockFrom writes n bytes read from r at addr by DMA, streaming them
// to the hub (which streams them into the DMA block as they arrive).
func (d *Device) WriteBlockFrom(addr uint32, r io.Reader, n int) (Transfer, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	o := d.begin("DMA write", addr, n)
	if err := d.startWriteBlock(addr, n); err != nil {
		return Transfer{}, o.end(err)
	}
	if m, err := io.CopyN(c.bw, r, int64(n)); err != nil {
		// The request cannot be completed: the connection is unusable.
		return Transfer{}, o.end(c.broken(fmt.Errorf("reading the block's source after %d of %d bytes: %w", m, n, err)))
	}
	res, err := c.finishSent(c.tag)
	return transfer(res), o.end(err)
}

// startWriteBlock checks a WRITE_BLOCK of n bytes and sends its header
// and address; the caller holds c.mu and sends the n data bytes next.
func (d *Device) startWriteBlock(addr uint32, n int) error {
	if n > proto.MaxBlock || n < 0 {
		return &HubError{Status: proto.StatusTooLarge, Name: "TOO_LARGE", Message: fmt.Sprintf("a block of %d bytes exceeds %d; split it", n, proto.MaxBlock)}
	}
	c := d.c
	c.bigBuffers()
	if c.err != nil {
		return c.err
	}
	c.nextTag()
	hdr := proto.AppendHeader(c.out[:0], proto.WriteBlock, d.handle, c.tag)
	hdr = binary.LittleEndian.AppendUint32(hdr, addr)
	binary.LittleEndian.PutUint32(hdr, uint32(len(hdr)-4+n))
	if _, err := c.bw.Write(hdr); err != nil {
		return c.broken(err)
	}
	// The hub streams a large block into the DMA write as its data
	// arrives: from here on a failure may leave part of it written.
	c.sent = true
	return nil
}

// ReadBlockTo reads n bytes at addr by DMA and copies them to w as they
// come off the socket. The hub streams a large block as its fragments
// complete, so on failure w has received the bytes done (Transfer.Bytes),
// as a direct DMA read leaves them in memory.
func (d *Device) ReadBlockTo(addr uint32, n int, w io.Writer) (Transfer, error) {
	if n > proto.MaxBlock || n < 0 {
		return Transfer{}, &HubError{Status: proto.StatusTooLarge, Name: "TOO_LARGE", Message: fmt.Sprintf("a block of %d bytes exceeds %d; split it", n, proto.MaxBlock)}
	}
	c := d.c
	c.mu.Lock()
	c.bigBuffers()
	defer c.mu.Unlock()
	o := d.begin("DMA read", addr, n)
	t, err := d.readBlockTo(addr, n, w)
	return t, o.end(err)
}

// readBlockTo sends a READ_BLOCK and copies its data to w: the PARTIAL
// replies' pieces (proto.FlagPartial), then the data of the last reply.
func (d *Device) readBlockTo(addr uint32, n int, w io.Writer) (Transfer, error) {
	c := d.c
	if c.err != nil {
		return Transfer{}, c.err
	}
	b := c.begin(proto.ReadBlock, d.handle)
	b = binary.LittleEndian.AppendUint32(b, addr)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = proto.Finish(b, 0)
	tag := c.tag
	if _, err := c.bw.Write(b); err != nil {
		return Transfer{}, c.broken(err)
	}
	if err := c.bw.Flush(); err != nil {
		return Transfer{}, c.broken(err)
	}
	c.sent = true
	got := 0
	for {
		var h [proto.HeaderLen + 4]byte
		if _, err := io.ReadFull(c.br, h[:]); err != nil {
			return Transfer{}, c.broken(err)
		}
		hdr, err := proto.ParseHeader(h[:])
		if err == nil && hdr.Tag == proto.NoticeTag && h[12] != proto.StatusOK && hdr.BodyLen() >= 4 && hdr.BodyLen() < 1<<16 {
			body := make([]byte, hdr.BodyLen())
			copy(body, h[proto.HeaderLen:])
			if _, err := io.ReadFull(c.br, body[4:]); err != nil {
				return Transfer{}, c.broken(err)
			}
			if err := c.notice(hdr, body); err != nil {
				return Transfer{}, err
			}
		}
		if err != nil || hdr.Tag != tag || hdr.Type != proto.ReadBlock|proto.Reply {
			return Transfer{}, c.broken(fmt.Errorf("READ_BLOCK reply: %s tag %d for tag %d: %v", proto.TypeName(hdr.Type), hdr.Tag, tag, err))
		}
		m := int(binary.LittleEndian.Uint16(h[14:]))
		rest := hdr.BodyLen() - 4
		if h[12] == proto.StatusOK && h[13] == proto.FlagPartial && m == 0 {
			// A piece of the data.
			if got+rest > n {
				return Transfer{}, c.broken(fmt.Errorf("READ_BLOCK pieces of %d bytes for %d", got+rest, n))
			}
			if _, err := io.CopyN(w, c.br, int64(rest)); err != nil {
				return Transfer{}, c.broken(fmt.Errorf("copying the block: %w", err))
			}
			got += rest
			continue
		}
		if h[12] != proto.StatusOK {
			// A failure: no data, the reply is small (the counters of a
			// device operation, nothing for a hub error).
			if hdr.BodyLen() > 1<<20 {
				return Transfer{}, c.broken(fmt.Errorf("READ_BLOCK error reply of %d bytes", hdr.BodyLen()))
			}
			body := make([]byte, hdr.BodyLen())
			copy(body, h[proto.HeaderLen:])
			if _, err := io.ReadFull(c.br, body[4:]); err != nil {
				return Transfer{}, c.broken(err)
			}
			st, res, err := proto.ParseReply(body)
			if err != nil || (len(res) != 8 && len(res) != 0) {
				return Transfer{}, c.broken(fmt.Errorf("READ_BLOCK error reply: %d result bytes, %v", len(res), err))
			}
			return transfer(res), statusError(st)
		}
		if rest < m+8 {
			return Transfer{}, c.broken(fmt.Errorf("READ_BLOCK reply of %d bytes", hdr.BodyLen()))
		}
		msg := make([]byte, m)
		var counts [8]byte
		if _, err := io.ReadFull(c.br, msg); err != nil {
			return Transfer{}, c.broken(err)
		}
		if _, err := io.ReadFull(c.br, counts[:]); err != nil {
			return Transfer{}, c.broken(err)
		}
		t := transfer(counts[:])
		data := rest - m - 8
		if got+data != n {
			return t, c.broken(fmt.Errorf("READ_BLOCK reply of %d data bytes for %d", got+data, n))
		}
		if _, err := io.CopyN(w, c.br, int64(data)); err != nil {
			return t, c.broken(fmt.Errorf("copying the block: %w", err))
		}
		return t, nil
	}
}

// finishSent flushes a request written to the connection and reads its
// reply: the result, or the reply's error.
func (c *Client) finishSent(tag uint32) ([]byte, error) {
	if err := c.bw.Flush(); err != nil {
		return nil, c.broken(err)
	}
	c.sent = true
	hdr, body, buf, err := proto.ReadMessage(c.br, c.in)
	c.in = buf
	if err != nil {
		return nil, c.broken(err)
	}
	if err := c.notice(hdr, body); err != nil {
		return nil, err
	}
	if hdr.Tag != tag || hdr.Type&proto.Reply == 0 {
		return nil, c.broken(fmt.Errorf("reply %s with tag %d to request tag %d", proto.TypeName(hdr.Type), hdr.Tag, tag))
	}
	st, res, err := proto.ParseReply(body)
	if err != nil {
		return nil, c.broken(err)
	}
	if st.Status != proto.StatusOK {
		return res, statusError(st)
	}
	return res, nil
}

// Node is a named node of the device's address table.
type Node struct {
	d *Device
	proto.Node
}

// Node looks a node up by its dotted name (uHAL getNode style).
func (d *Device) Node(name string) (*Node, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.begin(proto.NodeInfo, d.handle)
	b = append(b, name...)
	res, err := c.roundTrip(b)
	if err != nil {
		return nil, err
	}
	dec := proto.Decoder{B: res}
	n := &Node{d: d, Node: dec.Node()}
	if dec.Err != nil {
		return nil, c.broken(dec.Err)
	}
	return n, nil
}

// Nodes lists the address table, in address order.
func (d *Device) Nodes() ([]proto.Node, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	res, err := c.roundTrip(c.begin(proto.Nodes, d.handle))
	if err != nil {
		return nil, err
	}
	dec := proto.Decoder{B: res}
	n := dec.U32("count")
	var out []proto.Node
	for i := uint32(0); i < n && dec.Err == nil; i++ {
		out = append(out, dec.Node())
	}
	if dec.Err != nil {
		return nil, c.broken(dec.Err)
	}
	return out, nil
}

// Read reads the node: its field, shifted down.
func (n *Node) Read() (uint32, error) { return n.d.NodeRead(n.Name) }

// Write writes v into the node's field with one masked RMEM write.
func (n *Node) Write(v uint32) error { return n.d.NodeWrite(n.Name, v) }

// NodeRead reads the named node's field, shifted down. A value wider than
// 32 bits (a multi-word LiteX CSR) fails; use NodeReadBytes.
func (d *Device) NodeRead(name string) (uint32, error) {
	b, err := d.NodeReadBytes(name)
	if err != nil {
		return 0xFFFFFFFF, err
	}
	for _, x := range b[4:] {
		if x != 0 {
			return 0xFFFFFFFF, fmt.Errorf("oetp hub: node %q holds a value wider than 32 bits; use NodeReadBytes", name)
		}
	}
	return binary.LittleEndian.Uint32(b), nil
}

// NodeReadBytes reads the named node's value, little-endian, 4 bytes per
// 32 bits of the value.
func (d *Device) NodeReadBytes(name string) ([]byte, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	o := d.begin("RMEM read", 0, 0)
	b := c.begin(proto.NodeRead, d.handle)
	b = append(b, name...)
	res, err := c.roundTrip(b)
	if err != nil {
		return nil, o.end(err)
	}
	if len(res) < 4 || len(res)%4 != 0 {
		return nil, o.end(c.broken(fmt.Errorf("NODE_READ reply of %d bytes", len(res))))
	}
	o.end(nil)
	return append([]byte(nil), res...), nil
}

// NodeWrite writes v into the named node's field (one masked RMEM write).
func (d *Device) NodeWrite(name string, v uint32) error {
	return d.NodeWriteBytes(name, binary.LittleEndian.AppendUint32(nil, v))
}

// NodeWriteBytes writes a value given little-endian (any length) into the
// named node.
func (d *Device) NodeWriteBytes(name string, le []byte) error {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	o := d.begin("RMEM write", 0, 0)
	b := c.begin(proto.NodeWrite, d.handle)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(le)))
	b = append(b, le...)
	b = append(b, name...)
	_, err := c.roundTrip(b)
	return o.end(err)
}

// Batch collects operations that the hub runs back to back in one round
// trip, stopping at the first failure.
type Batch struct {
	d     *Device
	ops   []byte
	n     int
	res   []*Result
	errs  error
	reads uint64 // block bytes read
}

// Result is the outcome of one batched operation, valid after Run.
type Result struct {
	Value uint32 // a read's word
	Data  []byte // a block read's bytes
	Done  bool   // the operation completed
	kind  uint8
	n     uint32
}

// NewBatch starts a batch.
func (d *Device) NewBatch() *Batch { return &Batch{d: d} }

func (b *Batch) add(op uint8, fields ...uint32) *Result {
	b.ops = append(b.ops, op)
	for _, f := range fields {
		b.ops = binary.LittleEndian.AppendUint32(b.ops, f)
	}
	r := &Result{kind: op}
	b.res = append(b.res, r)
	b.n++
	return r
}

// Read adds an RMEM read.
func (b *Batch) Read(addr uint32) *Result { return b.add(proto.Read, addr) }

// Write adds a masked RMEM write.
func (b *Batch) Write(addr, data, mask uint32) *Result { return b.add(proto.Write, addr, data, mask) }

// ReadBlock adds a DMA read of n bytes.
func (b *Batch) ReadBlock(addr uint32, n int) *Result {
	r := b.add(proto.ReadBlock, addr, uint32(n))
	r.n = uint32(n)
	b.reads += uint64(r.n)
	return r
}

// WriteBlock adds a DMA write.
func (b *Batch) WriteBlock(addr uint32, data []byte) *Result {
	r := b.add(proto.WriteBlock, addr, uint32(len(data)))
	b.ops = append(b.ops, data...)
	return r
}

// Len is the number of operations added.
func (b *Batch) Len() int { return b.n }

// Run sends the batch and fills the results. On failure the error is a
// *BatchError whose Index names the failed operation (its Err the
// operation's error); the ones before it completed (Done), the later ones
// did not run. A failure of the hub connection is an *OpError. A batch
// whose block reads total more than proto.MaxBatchRead is refused before
// anything is sent (a *HubError TOO_LARGE): read such blocks with
// Device.ReadBlock, which streams.
func (b *Batch) Run() error {
	if b.reads > proto.MaxBatchRead {
		return &HubError{Status: proto.StatusTooLarge, Name: "TOO_LARGE", Message: proto.BatchReadTooLarge(b.reads)}
	}
	c := b.d.c
	c.mu.Lock()
	c.bigBuffers()
	defer c.mu.Unlock()
	o := b.d.begin("batch", 0, len(b.ops))
	req := c.begin(proto.Batch, b.d.handle)
	req = binary.LittleEndian.AppendUint32(req, uint32(b.n))
	req = append(req, b.ops...)
	res, err := c.roundTrip(req)
	err = o.end(err)
	var oe *OpError
	if err != nil && (!errors.As(err, &oe) || res == nil) {
		return err
	}
	dec := proto.Decoder{B: res}
	done := int(dec.U32("completed"))
	failed := dec.U32("failed index")
	if dec.Err != nil || done > len(b.res) {
		return c.broken(fmt.Errorf("BATCH reply: %d of %d completed, %v", done, len(b.res), dec.Err))
	}
	for i := 0; i < done; i++ {
		r := b.res[i]
		switch r.kind {
		case proto.Read:
			r.Value = dec.U32("read value")
		case proto.ReadBlock:
			n := dec.U32("block length")
			r.Data = append([]byte(nil), dec.Bytes(int(n), "block data")...)
		}
		r.Done = true
	}
	if dec.Err != nil {
		return c.broken(fmt.Errorf("BATCH reply: %w", dec.Err))
	}
	if oe != nil {
		return &BatchError{Index: int(failed), Err: oe}
	}
	return nil
}

// GroupWrite writes data at addr to every device of the hub's group name
// with one group DMA write, paced at the slowest member's measured time per
// fragment; with verify the hub then reads every member back and rewrites
// by unicast the fragments that differ (docs/replication.md). The result
// says per member what was found and repaired. The error is an *OpError
// when the write failed or a member could not be verified (its message
// names the member); the result is returned with it when the hub sent one.
func (c *Client) GroupWrite(name string, addr uint32, data []byte, verify bool) (proto.GroupResult, error) {
	var r proto.GroupResult
	if len(data) > proto.MaxBlock {
		return r, fmt.Errorf("oetp hub: a group write of %d bytes exceeds %d; split it", len(data), proto.MaxBlock)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bigBuffers()
	b := c.begin(proto.GroupWrite, 0)
	res, err := c.roundTrip(proto.AppendGroupWrite(b, name, addr, verify, data))
	if len(res) > 0 {
		if jerr := json.Unmarshal(res, &r); jerr != nil && err == nil {
			err = fmt.Errorf("oetp hub: GROUP_WRITE reply: %w", jerr)
		}
	}
	return r, err
}
