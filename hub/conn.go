package hub

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/wire"
)

// bigBuffer is the size above which a connection's buffers are released
// after use rather than kept for the next request: what a connection keeps
// is bounded by it (and the connection cap), larger buffers by the memory
// budget.
const bigBuffer = smallBody

// conn is one client connection, served by one goroutine.
type conn struct {
	h        *Hub
	nc       net.Conn
	src      io.Reader       // what br reads: nc, or an authReader around it
	dc       *deadlineConn   // nc with the read and write deadlines in force
	held     int64           // bytes of the memory budget held for the request in progress
	raw      syscall.RawConn // for the disconnect check between batch operations; nil if unavailable
	br       *bufio.Reader
	bw       *bufio.Writer
	needAuth bool
	who      *peer // the client's credentials, read when a rule needs them
	authed   bool
	// challenged: the client sent a CHALLENGE with nonce cnonce and got
	// the hub's nonce hnonce; its HELLO may then carry proto.ClientProof.
	challenged     bool
	cnonce, hnonce [proto.NonceLen]byte
	in, out        []byte
	batchOps       []batchOp
	peekBuf        [1]byte
	disconnect     bool // the client left: no reply, close
	closeAfter     bool // reply, then close (a refused HELLO)
}

// connBufs are a connection's buffers, kept in connPool between
// connections: a one-shot client (a shell loop of `oetp rmem read`)
// connects for one request, and 136 KiB of fresh buffers per connection
// made the hub's garbage collector run every few dozen of them.
type connBufs struct {
	br      *bufio.Reader
	bw      *bufio.Writer
	in, out []byte
}

var connPool = sync.Pool{New: func() any {
	return &connBufs{br: bufio.NewReaderSize(nil, 64<<10), bw: bufio.NewWriterSize(nil, 64<<10),
		in: make([]byte, 4096), out: make([]byte, 0, 4096)}
}}

func newConn(h *Hub, nc net.Conn, requireToken bool) *conn {
	b := connPool.Get().(*connBufs)
	dc := &deadlineConn{Conn: nc, write: h.lim.ReadDeadline}
	var src io.Reader = dc
	if requireToken {
		src = &authReader{r: dc, left: proto.PreAuthMax}
	}
	b.br.Reset(src)
	b.bw.Reset(dc)
	c := &conn{h: h, nc: nc, dc: dc, src: src, needAuth: requireToken, br: b.br, bw: b.bw, in: b.in, out: b.out[:0]}
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	return c
}

// release returns the connection's buffers to connPool; the connection's
// goroutine has ended (serve returned).
func (c *conn) release() {
	c.br.Reset(nil)
	c.bw.Reset(nil)
	in, out := c.in, c.out
	if cap(in) > bigBuffer {
		in = make([]byte, 4096)
	}
	if cap(out) > bigBuffer {
		out = make([]byte, 0, 4096)
	}
	connPool.Put(&connBufs{br: c.br, bw: c.bw, in: in, out: out[:0]})
	c.br, c.bw, c.in, c.out = nil, nil, nil, nil
}

// serve reads requests and answers them in order until the client goes or
// the framing breaks.
func (c *conn) serve() {
	defer c.nc.Close()
	defer c.releaseHeld()
	for {
		// Between requests the idle timeout; within one, the read deadline.
		c.dc.read = max(c.h.lim.IdleTimeout, 0)
		if _, err := c.br.Peek(1); err != nil {
			if isTimeout(err) {
				c.h.idleClosed.Add(1)
				c.sendNotice(proto.StatusIdle, fmt.Sprintf("no request for %v (the hub's idle_timeout): closing the connection; connect again", c.h.lim.IdleTimeout))
			}
			return
		}
		c.dc.read = c.h.lim.ReadDeadline
		hdr, body, err := c.readRequest()
		if err != nil && !errors.Is(err, errRefused) {
			var de *deniedError
			if errors.As(err, &de) {
				// Refused by the device's rules from the header: the
				// refusal goes first, then the body is read and dropped
				// (never held), so the connection goes on.
				c.bw.Write(fail(c.out[:0], hdr, proto.StatusDenied, "%s", de.why))
				if c.bw.Flush() != nil {
					return
				}
				if _, err := io.CopyN(io.Discard, c.br, int64(hdr.BodyLen())); err != nil {
					if isTimeout(err) {
						c.h.stalls.Add(1)
					}
					return
				}
				continue
			}
			if errors.Is(err, errNeedAuth) {
				// Refused before reading the body: a client without the
				// token costs the hub a header, never a buffer.
				c.h.malformed.Add(1)
				c.bw.Write(fail(c.out[:0], hdr, proto.StatusAuth, "%v", err))
				c.bw.Flush()
				return
			}
			if isTimeout(err) {
				// The request stopped arriving: nothing of it ran.
				c.h.stalls.Add(1)
				c.sendNotice(proto.StatusStalled, fmt.Sprintf("a %s request stopped arriving for %v (the hub's read_deadline); it did not run; closing the connection",
					proto.TypeName(hdr.Type), c.h.lim.ReadDeadline))
				return
			}
			if errors.Is(err, proto.ErrFraming) {
				c.h.malformed.Add(1)
				c.out = proto.Finish(proto.AppendReplyHeader(c.out[:0], hdr, proto.StatusBadMessage, 0,
					err.Error()+"; closing the connection: the stream cannot be resynchronised"), 0)
				c.bw.Write(c.out)
				c.bw.Flush()
			}
			return
		}
		switch {
		case errors.Is(err, errRefused):
			// c.out holds the refusal; the body was read and dropped.
		case body == nil:
			// A large WRITE_BLOCK, streamed (see streamWriteBlock).
			var alive bool
			if c.out, alive = c.streamWriteBlock(hdr, c.h.devs[hdr.Handle-1], c.out[:0]); !alive {
				return
			}
		default:
			c.out = c.handle(hdr, body, c.out[:0])
		}
		if c.disconnect {
			return
		}
		if _, err := c.bw.Write(c.out); err != nil {
			return
		}
		if c.closeAfter {
			c.bw.Flush()
			return
		}
		if c.br.Buffered() == 0 || c.held > 0 {
			if err := c.bw.Flush(); err != nil {
				return
			}
		}
		if cap(c.out) > bigBuffer {
			c.out = make([]byte, 0, 4096)
		}
		if cap(c.in) > bigBuffer {
			c.in = make([]byte, 4096)
		}
		c.releaseHeld()
	}
}

// errRefused is readRequest's error for a request refused before it ran
// (too large, or the memory budget stayed in use): its body was read and
// dropped, and c.out holds the reply.
var errRefused = errors.New("request refused")

// hold takes n bytes of the memory budget for the request in progress,
// waiting up to the read deadline; false if they did not come.
func (c *conn) hold(n int64) bool {
	if !c.h.mem.acquire(n, c.h.lim.ReadDeadline) {
		c.h.busy.Add(1)
		return false
	}
	c.held += n
	return true
}

// releaseHeld returns what the request held of the memory budget.
func (c *conn) releaseHeld() {
	c.h.mem.release(c.held)
	c.held = 0
}

// busyReply is the reply to a request of n bytes the memory budget
// refused.
func (c *conn) busyReply(out []byte, hdr proto.Header, n int64) []byte {
	return fail(out, hdr, proto.StatusBusy, "%s", c.busyMessage(hdr, n))
}

func (c *conn) busyMessage(hdr proto.Header, n int64) string {
	return fmt.Sprintf("%s of %d bytes: the hub's memory budget (memory_budget, %d bytes) stayed in use for %v; nothing ran, try again",
		proto.TypeName(hdr.Type), n, c.h.lim.MemoryBudget, c.h.lim.ReadDeadline)
}

// sendNotice writes a notice (proto.NoticeTag) before the connection
// closes.
func (c *conn) sendNotice(status uint8, msg string) {
	c.bw.Write(notice(status, msg))
	c.bw.Flush()
}

// readRequest reads the next request. A WRITE_BLOCK of streamMin bytes or
// more for a valid device, on an authenticated connection, is returned
// with a nil body: its bytes are still in c.br.
func (c *conn) readRequest() (proto.Header, []byte, error) {
	if cap(c.in) < proto.HeaderLen {
		c.in = make([]byte, 4096)
	}
	hb := c.in[:proto.HeaderLen]
	if _, err := io.ReadFull(c.br, hb); err != nil {
		return proto.Header{}, nil, err
	}
	hdr, err := proto.ParseHeader(hb)
	if err != nil {
		return hdr, nil, err
	}
	n := hdr.BodyLen()
	if c.needAuth && !c.authed && hdr.Type != proto.Hello && hdr.Type != proto.Challenge {
		return hdr, nil, errNeedAuth
	}
	if hdr.Type == proto.Hello && n > proto.MaxHello {
		return hdr, nil, fmt.Errorf("%w: a HELLO of %d bytes, more than the %d-byte limit", proto.ErrFraming, n, proto.MaxHello)
	}
	if hdr.Type == proto.Challenge && n != proto.NonceLen {
		return hdr, nil, fmt.Errorf("%w: a CHALLENGE of %d bytes, not the %d-byte nonce", proto.ErrFraming, n, proto.NonceLen)
	}
	if d := c.device(hdr); d != nil && d.Config.Access.Restricted() && deviceType(hdr.Type) {
		// A BATCH longer than any batch of reads holds a write.
		write := writeType(hdr.Type) || hdr.Type == proto.Batch && n > maxReadBatch
		if why := c.denied(d, write); why != "" {
			if hdr.Type == proto.Batch && write {
				why = "BATCH with a write: " + why
			}
			return hdr, nil, &deniedError{why}
		}
	}
	if hdr.Type == proto.GroupWrite && (!c.needAuth || c.authed) {
		if why, err := c.groupDenied(n); err != nil || why != "" {
			if err != nil {
				return hdr, nil, err
			}
			return hdr, nil, &deniedError{why}
		}
	}
	if hdr.Type == proto.WriteBlock && n-4 >= streamMin && n-4 <= proto.MaxBlock && (!c.needAuth || c.authed) &&
		c.device(hdr) != nil && !c.h.isClosed() {
		return hdr, nil, nil
	}
	refuse := func(status uint8, msg string) (proto.Header, []byte, error) {
		if _, err := io.CopyN(io.Discard, c.br, int64(n)); err != nil {
			return hdr, nil, err
		}
		c.out = fail(c.out[:0], hdr, status, "%s", msg)
		return hdr, nil, errRefused
	}
	if n > c.h.lim.MaxMessage {
		c.h.tooLarge.Add(1)
		return refuse(proto.StatusTooLarge, fmt.Sprintf("a %s of %d bytes exceeds the hub's max_message of %d bytes; split it (a WRITE_BLOCK streams up to %d bytes)",
			proto.TypeName(hdr.Type), n, c.h.lim.MaxMessage, proto.MaxBlock))
	}
	if n > smallBody && !c.hold(int64(n)) {
		return refuse(proto.StatusBusy, c.busyMessage(hdr, int64(n)))
	}
	if cap(c.in) < n {
		c.in = make([]byte, n)
	}
	body := c.in[:n]
	if _, err := io.ReadFull(c.br, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return hdr, nil, err
	}
	return hdr, body, nil
}

// maxReadBatch is the longest BATCH body that holds no write: the count
// and MaxBatch READ_BLOCKs (9 bytes each, the longest read).
const maxReadBatch = 4 + 9*proto.MaxBatch

// groupDenied checks a GROUP_WRITE of an n-byte body against the rules of
// its group's members before its data is read: it peeks at the flags and
// the group's name (at most 3+MaxName bytes), leaving them to be read.
func (c *conn) groupDenied(n int) (string, error) {
	if n < 3 {
		return "", nil
	}
	b, err := c.br.Peek(3)
	if err != nil {
		return "", err
	}
	k := int(binary.LittleEndian.Uint16(b[1:]))
	if k > proto.MaxName || 3+k > n {
		return "", nil // malformed: refused once decoded
	}
	if b, err = c.br.Peek(3 + k); err != nil {
		return "", err
	}
	name := string(b[3:])
	g := c.h.groups[name]
	if g == nil {
		return "", nil
	}
	for _, d := range g.members {
		if why := c.denied(d, true); why != "" {
			return fmt.Sprintf("group_write %s: %s", name, why), nil
		}
	}
	return "", nil
}

// deniedError is readRequest's error for a request the device's rules
// refuse (Access), from its header: its body has not been read.
type deniedError struct{ why string }

func (e *deniedError) Error() string { return e.why }

// writeType reports whether a request type writes to the device (a BATCH
// is checked for writes once decoded).
func writeType(t uint8) bool {
	return t == proto.Write || t == proto.WriteBlock || t == proto.NodeWrite
}

// denied returns "" if the client may read (write false) or write d, else
// why not.
func (c *conn) denied(d *Device, write bool) string {
	if !d.Config.Access.Restricted() {
		return ""
	}
	if c.who == nil {
		c.who = peerOf(c.nc)
	}
	return d.Config.Access.allowed(d.Config.Name, c.who, write)
}

// errNeedAuth is readRequest's error for a request other than HELLO on a
// connection that has not presented the token.
var errNeedAuth = errors.New("this listener needs HELLO with the shared-secret token first")

// authReader lets a connection that must present the token send at most
// proto.PreAuthMax bytes until it has (left < 0 then).
type authReader struct {
	r    io.Reader
	left int
}

func (a *authReader) Read(p []byte) (int, error) {
	if a.left < 0 {
		return a.r.Read(p)
	}
	if a.left == 0 {
		return 0, errNeedAuth
	}
	p = p[:min(len(p), a.left)]
	n, err := a.r.Read(p)
	a.left -= n
	return n, err
}

// unlimit lifts the pre-authentication read limit.
func (c *conn) unlimit() {
	// The bufio.Reader reads through the authReader given by newConn.
	if a, ok := c.src.(*authReader); ok {
		a.left = -1
	}
}

// gone reports whether the client has closed its end (a non-blocking
// peek that sees end of file). Buffered requests mean it has not.
func (c *conn) gone() bool {
	if c.raw == nil || c.br.Buffered() > 0 {
		return false
	}
	eof := false
	c.raw.Read(func(fd uintptr) bool {
		eof = peekEOF(fd, c.peekBuf[:])
		return true
	})
	return eof
}

// reply helpers.

func fail(out []byte, hdr proto.Header, status uint8, format string, a ...any) []byte {
	return proto.Finish(proto.AppendReplyHeader(out, hdr, status, 0, fmt.Sprintf(format, a...)), 0)
}

func ok(out []byte, hdr proto.Header) []byte {
	return proto.AppendReplyHeader(out, hdr, proto.StatusOK, 0, "")
}

// opFailed appends the reply of a failed device operation: the CSR code as
// status, the maybe-executed flag, the message and the engine's error whole
// (proto.AppendErrorReply). t is a block's progress.
func opFailed(out []byte, hdr proto.Header, what string, err error, t endpoint.Transfer) []byte {
	return proto.AppendErrorReply(out, hdr, what+": "+endpoint.Outcome(err), err, t.Bytes, t.Fragments)
}

func (c *conn) handle(hdr proto.Header, body []byte, out []byte) []byte {
	if c.needAuth && !c.authed && hdr.Type != proto.Hello && hdr.Type != proto.Challenge {
		c.h.malformed.Add(1)
		c.closeAfter = true
		return fail(out, hdr, proto.StatusAuth, "this listener needs HELLO with the shared-secret token first")
	}
	if c.h.isClosed() {
		return fail(out, hdr, proto.StatusShutdown, "the hub is stopping")
	}
	switch hdr.Type {
	case proto.Hello:
		return c.hello(hdr, body, out)
	case proto.Challenge:
		return c.challenge(hdr, body, out)
	case proto.Open:
		return c.open(hdr, body, out)
	case proto.GroupWrite:
		return c.groupWrite(hdr, body, out)
	case proto.StatusReq:
		b, err := json.Marshal(c.h.Status())
		if err != nil {
			return fail(out, hdr, proto.StatusBadMessage, "status: %v", err)
		}
		return proto.Finish(append(ok(out, hdr), b...), 0)
	}
	d := c.device(hdr)
	if d == nil {
		if !deviceType(hdr.Type) {
			c.h.malformed.Add(1)
			return fail(out, hdr, proto.StatusUnknownType, "unknown request type 0x%02x; see docs/hub-protocol.md", hdr.Type)
		}
		c.h.malformed.Add(1)
		return fail(out, hdr, proto.StatusNoDevice, "no device has handle %d; OPEN the device first and use the handle it returns", hdr.Handle)
	}
	dec := proto.Decoder{B: body}
	switch hdr.Type {
	case proto.Read:
		addr := dec.U32("READ address")
		dec.End("READ")
		if dec.Err != nil {
			return c.bad(out, hdr, dec.Err)
		}
		v, err := d.read(addr)
		if err != nil {
			return proto.Finish(opFailed(out, hdr, fmt.Sprintf("read 0x%08x", addr), err, endpoint.Transfer{}), 0)
		}
		return proto.Finish(binary.LittleEndian.AppendUint32(ok(out, hdr), v), 0)
	case proto.Write:
		addr, data, mask := dec.U32("WRITE address"), dec.U32("WRITE data"), dec.U32("WRITE mask")
		dec.End("WRITE")
		if dec.Err != nil {
			return c.bad(out, hdr, dec.Err)
		}
		if err := d.write(addr, data, mask); err != nil {
			return proto.Finish(opFailed(out, hdr, fmt.Sprintf("write 0x%08x", addr), err, endpoint.Transfer{}), 0)
		}
		return proto.Finish(ok(out, hdr), 0)
	case proto.ReadBlock:
		addr, n := dec.U32("READ_BLOCK address"), dec.U32("READ_BLOCK length")
		dec.End("READ_BLOCK")
		if dec.Err != nil {
			return c.bad(out, hdr, dec.Err)
		}
		if n > proto.MaxBlock {
			c.h.tooLarge.Add(1)
			return fail(out, hdr, proto.StatusTooLarge, "READ_BLOCK of %d bytes exceeds the %d-byte limit; split it", n, proto.MaxBlock)
		}
		if n >= streamMin && c.bw != nil {
			var alive bool
			out, alive = c.streamReadBlock(hdr, d, addr, n, out)
			c.disconnect = !alive
			return out
		}
		if n > smallBody && !c.hold(int64(n)) {
			return c.busyReply(out, hdr, int64(n))
		}
		start := len(out)
		out = ok(out, hdr)
		out = binary.LittleEndian.AppendUint32(out, 0)
		out = binary.LittleEndian.AppendUint32(out, 0)
		pos := len(out)
		out = grow(out, int(n))
		t, err := d.readBlock(addr, out[pos:pos+int(n)])
		if err != nil {
			out = opFailed(out[:start], hdr, fmt.Sprintf("read_block 0x%08x+%d", addr, n), err, t)
			out = binary.LittleEndian.AppendUint32(out, uint32(t.Bytes))
			out = binary.LittleEndian.AppendUint32(out, uint32(t.Fragments))
			return proto.Finish(out, 0)
		}
		binary.LittleEndian.PutUint32(out[pos-8:], uint32(t.Bytes))
		binary.LittleEndian.PutUint32(out[pos-4:], uint32(t.Fragments))
		return proto.Finish(out, 0)
	case proto.WriteBlock:
		addr := dec.U32("WRITE_BLOCK address")
		data := dec.B
		if dec.Err != nil {
			return c.bad(out, hdr, dec.Err)
		}
		if len(data) > proto.MaxBlock {
			return fail(out, hdr, proto.StatusTooLarge, "WRITE_BLOCK of %d bytes exceeds the %d-byte limit; split it", len(data), proto.MaxBlock)
		}
		t, err := d.writeBlock(addr, data)
		if err != nil {
			out = opFailed(out, hdr, fmt.Sprintf("write_block 0x%08x+%d", addr, len(data)), err, t)
		} else {
			out = ok(out, hdr)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(t.Bytes))
		out = binary.LittleEndian.AppendUint32(out, uint32(t.Fragments))
		return proto.Finish(out, 0)
	case proto.Batch:
		return c.batch(d, hdr, body, out)
	case proto.NodeRead, proto.NodeWrite, proto.NodeInfo, proto.Nodes:
		return c.node(d, hdr, &dec, out)
	}
	c.h.malformed.Add(1)
	return fail(out, hdr, proto.StatusUnknownType, "unknown request type 0x%02x; see docs/hub-protocol.md", hdr.Type)
}

func (c *conn) bad(out []byte, hdr proto.Header, err error) []byte {
	c.h.malformed.Add(1)
	return fail(out, hdr, proto.StatusBadMessage, "malformed %s: %v", proto.TypeName(hdr.Type), err)
}

// grow extends b by n bytes (contents undefined).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

func (c *conn) device(hdr proto.Header) *Device {
	i := int(hdr.Handle) - 1
	if i < 0 || i >= len(c.h.devs) {
		return nil
	}
	return c.h.devs[i]
}

func (c *conn) hello(hdr proto.Header, body []byte, out []byte) []byte {
	dec := proto.Decoder{B: body}
	ver := dec.U16("HELLO version")
	token := dec.Str16("HELLO token")
	dec.End("HELLO")
	if dec.Err != nil {
		c.closeAfter = c.needAuth && !c.authed
		return c.bad(out, hdr, dec.Err)
	}
	if ver != proto.Version {
		return fail(out, hdr, proto.StatusVersion, "protocol version %d is not supported; this hub speaks version %d", ver, proto.Version)
	}
	if c.needAuth {
		want := c.h.token()
		if c.challenged && strings.HasPrefix(token, proto.ProofPrefix) && want != "" {
			// The client proves it holds the token without sending it.
			want = proto.ClientProof(want, c.cnonce[:], c.hnonce[:])
		}
		if want == "" || subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
			c.h.malformed.Add(1)
			c.closeAfter = true
			time.Sleep(100 * time.Millisecond) // slow down guessing
			return fail(out, hdr, proto.StatusAuth, "wrong or missing token")
		}
		c.authed = true
		c.unlimit()
	}
	out = ok(out, hdr)
	out = binary.LittleEndian.AppendUint16(out, proto.Version)
	out = binary.LittleEndian.AppendUint32(out, proto.MaxMessage)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(c.h.devs)))
	out = binary.LittleEndian.AppendUint64(out, c.h.netns)
	return proto.Finish(out, 0)
}

// challenge answers a CHALLENGE on a connection that must present the
// token: the hub's nonce and its proof that it holds the token
// (proto.HubProof), so that the client knows it reached the real hub
// before it proves it holds the token itself.
func (c *conn) challenge(hdr proto.Header, body []byte, out []byte) []byte {
	want := c.h.token()
	if !c.needAuth || want == "" {
		return fail(out, hdr, proto.StatusAuth, "this connection needs no token: CHALLENGE is for a TCP listener")
	}
	copy(c.cnonce[:], body)
	if _, err := rand.Read(c.hnonce[:]); err != nil {
		return fail(out, hdr, proto.StatusAuth, "no random nonce: %v", err)
	}
	c.challenged = true
	out = append(ok(out, hdr), c.hnonce[:]...)
	return proto.Finish(append(out, proto.HubProof(want, c.cnonce[:], c.hnonce[:])...), 0)
}

// open resolves a device by name or by (interface, device MAC).
func (c *conn) open(hdr proto.Header, body []byte, out []byte) []byte {
	dec := proto.Decoder{B: body}
	kind := dec.U8("OPEN kind")
	var d *Device
	switch kind {
	case proto.OpenByName:
		name := string(dec.B)
		if dec.Err == nil && (len(name) == 0 || len(name) > proto.MaxName) {
			return c.bad(out, hdr, fmt.Errorf("device name of %d bytes; use 1..%d", len(name), proto.MaxName))
		}
		if dec.Err != nil {
			return c.bad(out, hdr, dec.Err)
		}
		d = c.h.byName[name]
		if d == nil {
			return fail(out, hdr, proto.StatusNoDevice, "no device %q; this hub has %s", name, c.h.deviceNames())
		}
	case proto.OpenByIface:
		var mac wire.MAC
		copy(mac[:], dec.Bytes(6, "OPEN device MAC"))
		iface := string(dec.B)
		if dec.Err != nil {
			return c.bad(out, hdr, dec.Err)
		}
		for _, x := range c.h.devs {
			if x.Config.Iface == iface && x.Config.MAC == mac {
				d = x
				break
			}
		}
		if d == nil {
			return fail(out, hdr, proto.StatusNoDevice, "no device %v on %s", mac, iface)
		}
	default:
		return c.bad(out, hdr, fmt.Errorf("OPEN kind %d: use 0 (by name) or 1 (by interface and MAC)", kind))
	}
	if why := c.denied(d, false); why != "" {
		return fail(out, hdr, proto.StatusDenied, "%s", strings.Replace(why, "read on device", "OPEN of device", 1))
	}
	out = ok(out, hdr)
	out = binary.LittleEndian.AppendUint16(out, uint16(d.index+1))
	var caps uint8
	if d.table != nil {
		caps |= proto.CapTable
	}
	out = append(out, caps, 0)
	for k := range numKinds {
		out = append(out, d.Config.Local[k][:]...)
	}
	out = append(out, d.Config.MAC[:]...)
	out = proto.AppendStr16(out, d.Config.Name)
	out = proto.AppendStr16(out, d.Config.Iface)
	out = binary.LittleEndian.AppendUint32(out, uint32(d.bound().Milliseconds()))
	out = binary.LittleEndian.AppendUint32(out, d.eps[KindDMAWrite].Config().MaxFragment)
	return proto.Finish(out, 0)
}

// batchOp is one decoded BATCH operation.
type batchOp struct {
	op         uint8
	addr, a, b uint32
	data       []byte
}

func (o *batchOp) String() string {
	switch o.op {
	case proto.Read:
		return fmt.Sprintf("read 0x%08x", o.addr)
	case proto.Write:
		return fmt.Sprintf("write 0x%08x", o.addr)
	case proto.ReadBlock:
		return fmt.Sprintf("read_block 0x%08x+%d", o.addr, o.a)
	}
	return fmt.Sprintf("write_block 0x%08x+%d", o.addr, len(o.data))
}

// batch decodes the whole batch first (a malformed one runs nothing), then
// runs its operations in order, stopping at the first failure.
func (c *conn) batch(d *Device, hdr proto.Header, body []byte, out []byte) []byte {
	dec := proto.Decoder{B: body}
	n := dec.U32("BATCH count")
	if dec.Err != nil {
		return c.bad(out, hdr, dec.Err)
	}
	if n > proto.MaxBatch {
		return fail(out, hdr, proto.StatusTooLarge, "BATCH of %d operations exceeds the limit of %d; split it", n, proto.MaxBatch)
	}
	ops := c.batchOps[:0]
	var readBytes uint64
	for i := uint32(0); i < n && dec.Err == nil; i++ {
		o := batchOp{op: dec.U8("operation code")}
		switch o.op {
		case proto.Read:
			o.addr = dec.U32("read address")
		case proto.Write:
			o.addr, o.a, o.b = dec.U32("write address"), dec.U32("write data"), dec.U32("write mask")
		case proto.ReadBlock:
			o.addr, o.a = dec.U32("read_block address"), dec.U32("read_block length")
			readBytes += uint64(o.a)
		case proto.WriteBlock:
			o.addr = dec.U32("write_block address")
			o.data = dec.Bytes(int(dec.U32("write_block length")), "write_block data")
		default:
			if dec.Err == nil {
				dec.Err = fmt.Errorf("operation %d has code 0x%02x; use READ 0x10, WRITE 0x11, READ_BLOCK 0x12 or WRITE_BLOCK 0x13", i, o.op)
			}
		}
		if dec.Err != nil {
			dec.Err = fmt.Errorf("operation %d: %w", i, dec.Err)
		}
		ops = append(ops, o)
	}
	dec.End("BATCH")
	c.batchOps = ops[:0]
	if dec.Err != nil {
		return c.bad(out, hdr, fmt.Errorf("%w; nothing was run", dec.Err))
	}
	for i := range ops {
		if o := ops[i].op; o == proto.Write || o == proto.WriteBlock {
			if why := c.denied(d, true); why != "" {
				return fail(out, hdr, proto.StatusDenied, "BATCH with a write: %s", why)
			}
			break
		}
	}
	if readBytes > proto.MaxBatchRead {
		c.h.tooLarge.Add(1)
		return fail(out, hdr, proto.StatusTooLarge, "%s", proto.BatchReadTooLarge(readBytes))
	}
	if readBytes > smallBody && !c.hold(int64(readBytes)) {
		return c.busyReply(out, hdr, int64(readBytes))
	}
	start := len(out)
	out = ok(out, hdr)
	resPos := len(out)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = binary.LittleEndian.AppendUint32(out, 0xFFFFFFFF)
	for i := range ops {
		o := &ops[i]
		if i > 0 && i%64 == 0 && c.gone() {
			// The client left: nobody reads the reply, stop before the next
			// operation.
			c.disconnect = true
			return out
		}
		var err error
		var t endpoint.Transfer
		switch o.op {
		case proto.Read:
			var v uint32
			v, err = d.read(o.addr)
			if err == nil {
				out = binary.LittleEndian.AppendUint32(out, v)
			}
		case proto.Write:
			err = d.write(o.addr, o.a, o.b)
		case proto.ReadBlock:
			out = binary.LittleEndian.AppendUint32(out, o.a)
			pos := len(out)
			out = grow(out, int(o.a))
			t, err = d.readBlock(o.addr, out[pos:])
			if err != nil {
				out = out[:pos-4]
			}
		case proto.WriteBlock:
			t, err = d.writeBlock(o.addr, o.data)
		}
		if err != nil {
			results := append([]byte(nil), out[resPos+8:]...)
			what := fmt.Sprintf("batch operation %d (%v) failed", i, o)
			if i > 0 {
				what += fmt.Sprintf(" after operations 0..%d completed; the later ones were not run", i-1)
			} else {
				what += "; the later ones were not run"
			}
			out = opFailed(out[:start], hdr, what, err, t)
			out = binary.LittleEndian.AppendUint32(out, uint32(i))
			out = binary.LittleEndian.AppendUint32(out, uint32(i))
			out = append(out, results...)
			return proto.Finish(out, 0)
		}
	}
	binary.LittleEndian.PutUint32(out[resPos:], uint32(len(ops)))
	return proto.Finish(out, 0)
}

// node serves the named-node requests.
func (c *conn) node(d *Device, hdr proto.Header, dec *proto.Decoder, out []byte) []byte {
	if d.table == nil {
		return fail(out, hdr, proto.StatusNoNode, "device %q has no address table; set address_table in its [[device]]", d.Config.Name)
	}
	if hdr.Type == proto.Nodes {
		dec.End("NODES")
		if dec.Err != nil {
			return c.bad(out, hdr, dec.Err)
		}
		nodes := d.table.nodes()
		out = ok(out, hdr)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(nodes)))
		for _, n := range nodes {
			out = proto.AppendNode(out, n)
		}
		return proto.Finish(out, 0)
	}
	var value []byte
	if hdr.Type == proto.NodeWrite {
		value = dec.Bytes(int(dec.U16("NODE_WRITE value length")), "NODE_WRITE value")
	}
	name := string(dec.B)
	if dec.Err != nil {
		return c.bad(out, hdr, dec.Err)
	}
	n, err := d.table.node(name)
	if err != nil {
		return fail(out, hdr, proto.StatusNoNode, "%v", err)
	}
	switch hdr.Type {
	case proto.NodeInfo:
		return proto.Finish(proto.AppendNode(ok(out, hdr), wireNode(n)), 0)
	case proto.NodeRead:
		start := len(out)
		out, err = d.readNode(n, ok(out, hdr))
		if err != nil {
			return proto.Finish(opFailed(out[:start], hdr, fmt.Sprintf("read %s (0x%08x)", name, n.Address), err, endpoint.Transfer{}), 0)
		}
		return proto.Finish(out, 0)
	}
	if err := d.writeNode(n, value); err != nil {
		return proto.Finish(opFailed(out, hdr, fmt.Sprintf("write %s (0x%08x)", name, n.Address), err, endpoint.Transfer{}), 0)
	}
	return proto.Finish(ok(out, hdr), 0)
}

func localInvalid(format string, a ...any) error {
	return &endpoint.OpError{Op: "node", Code: wire.CodeLocalInvalid, Err: fmt.Errorf(format, a...)}
}

// deviceType reports whether t is a request on a device handle.
func deviceType(t uint8) bool {
	switch t {
	case proto.Read, proto.Write, proto.ReadBlock, proto.WriteBlock, proto.Batch,
		proto.NodeRead, proto.NodeWrite, proto.NodeInfo, proto.Nodes:
		return true
	}
	return false
}
