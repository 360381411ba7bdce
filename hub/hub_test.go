package hub_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/link/rlink"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

var boardMAC = wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0x01}

// testHub is a hub on an in-memory switch with one board: an endpoint
// serving 64 KiB of registers at 0 and 1 MiB of RAM at 0x100000, a
// SLVERR range at 0x200000, with the peer entries the hub prints.
type testHub struct {
	h    *hub.Hub
	path string
	sw   *mem.Switch
	ram  *memory.RAM
	dev  *endpoint.Endpoint
}

func newTestHub(t testing.TB) *testHub { return newTestHubTable(t, "") }

func newTestHubTable(t testing.TB, table string) *testHub {
	return newTestHubWith(t, func(d *hub.DeviceConfig) { d.AddressTable = table })
}

func newTestHubWith(t testing.TB, edit func(*hub.DeviceConfig)) *testHub {
	t.Helper()
	return newTestHubConfig(t, func(c *hub.Config) { edit(&c.Devices[0]) })
}

// newTestHubConfig is newTestHub with its config edited first.
func newTestHubConfig(t testing.TB, edit func(*hub.Config)) *testHub {
	t.Helper()
	return newTestHubSpaces(t, edit)
}

// testRegion is a region of the board's memory beside newTestHub's.
type testRegion struct {
	base uint32
	size uint64
	s    memory.Space
}

// newTestHubSpaces is newTestHubConfig with more regions on the board.
func newTestHubSpaces(t testing.TB, edit func(*hub.Config), extra ...testRegion) *testHub {
	t.Helper()
	return buildTestHub(t, edit, true, extra...)
}

// newHandlerHub is newTestHub without its Unix socket: for callers of
// HandleMessage only. A fuzz target uses it, because the fuzzing engine
// ends its worker processes without their cleanups, which would leave the
// socket's temporary directory behind.
func newHandlerHub(t testing.TB) *hub.Hub {
	t.Helper()
	return buildTestHub(t, func(*hub.Config) {}, false).h
}

// buildTestHub makes the hub of newTestHubSpaces, listening on a Unix
// socket in a temporary directory if listen.
func buildTestHub(t testing.TB, edit func(*hub.Config), listen bool, extra ...testRegion) *testHub {
	t.Helper()
	sw, err := mem.NewSwitch(mem.Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := hub.Config{Devices: []hub.DeviceConfig{{Name: "board1", Iface: "mem0", MAC: boardMAC, RMEMTimeout: time.Second, DMATimeout: time.Second}}}
	edit(&cfg)
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	port, err := sw.Attach(boardMAC)
	if err != nil {
		t.Fatal(err)
	}
	regs, _ := memory.NewRAM(0, 64<<10)
	ram, _ := memory.NewRAM(0x100000, 1<<20)
	fault, _ := memory.NewFault(0x200000, 4096, memory.SLVERR)
	big, _ := memory.NewRAM(0x1000000, 4<<20)
	m := memory.NewMap()
	for _, r := range append([]testRegion{{0, 64 << 10, regs}, {0x100000, 1 << 20, ram}, {0x200000, 4096, fault}, {0x1000000, 4 << 20, big}}, extra...) {
		if err := m.Add(r.base, r.size, r.s); err != nil {
			t.Fatal(err)
		}
	}
	var boardLink link.Link = port
	if tr := cfg.Devices[0].Transport; tr != rlink.V1 {
		rl, err := rlink.New(port, rlink.Config{MAC: boardMAC})
		if err != nil {
			t.Fatal(err)
		}
		for _, mac := range cfg.Devices[0].Local {
			if err := rl.SetPeer(mac, rlink.Reliable); err != nil {
				t.Fatal(err)
			}
		}
		boardLink = rl.Link()
	}
	dev, err := endpoint.New(boardLink, m, endpoint.Config{Contexts: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	for k, mac := range cfg.Devices[0].Local {
		mode := hub.Kind(k).DeviceMode()
		if err := dev.SetPeer(k, endpoint.Peer{MAC: mac, Mode: mode, WindowSize: 1 << 32}); err != nil {
			t.Fatal(err)
		}
	}
	if !listen {
		h := switchHub(t, cfg, sw)
		t.Cleanup(func() { h.Close() })
		return &testHub{h: h, sw: sw, ram: regs, dev: dev}
	}
	h, path := serveHub(t, cfg, sw)
	return &testHub{h: h, path: path, sw: sw, ram: regs, dev: dev}
}

// switchHub makes a hub on cfg whose devices' links are ports of sw; the
// caller closes it.
func switchHub(t testing.TB, cfg hub.Config, sw *mem.Switch) *hub.Hub {
	t.Helper()
	open := func(d hub.DeviceConfig, k hub.Kind, mac wire.MAC) (link.Link, error) { return sw.Attach(mac) }
	h, err := hub.New(cfg, open, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serveHub starts a hub on cfg whose devices' links are ports of sw, served
// on a Unix socket in a temporary directory; the test's cleanup closes it and
// checks that Serve ended cleanly.
func serveHub(t testing.TB, cfg hub.Config, sw *mem.Switch) (*hub.Hub, string) {
	t.Helper()
	h := switchHub(t, cfg, sw)
	path := filepath.Join(t.TempDir(), "hub.sock")
	l, err := hub.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(l, false) }()
	t.Cleanup(func() {
		h.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h, path
}

func dial(t testing.TB, path string) *client.Client {
	t.Helper()
	c, err := client.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func openDev(t *testing.T, c *client.Client) *client.Device {
	t.Helper()
	d, err := c.Device("board1")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOperations(t *testing.T) {
	th := newTestHub(t)
	d := openDev(t, dial(t, th.path))
	if err := d.Write(0x10, 0xC0FFEE01, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(0x10, 0x0000AB00, 0x0000FF00); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(0x10); err != nil || v != 0xC0FFAB01 {
		t.Fatalf("read 0x10 = %#x, %v; want 0xc0ffab01", v, err)
	}
	var w [4]byte
	th.ram.ReadAt(w[:], 0x10)
	if got := binary.LittleEndian.Uint32(w[:]); got != 0xC0FFAB01 {
		t.Errorf("device memory holds %#x", got)
	}
	data := make([]byte, 100<<10+3)
	rand.NewChaCha8([32]byte{7}).Read(data)
	if err := d.WriteBlock(0x100000, data); err != nil {
		t.Fatal(err)
	}
	back, err := d.ReadBlock(0x100000, len(data))
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read_block: %v, equal %v", err, bytes.Equal(back, data))
	}
	// A large block is streamed into the DMA write: the same bytes arrive.
	large := make([]byte, 3<<20+8)
	rand.NewChaCha8([32]byte{8}).Read(large)
	if err := d.WriteBlock(0x1000000, large); err != nil {
		t.Fatal(err)
	}
	if back, err := d.ReadBlock(0x1000000, len(large)); err != nil || !bytes.Equal(back, large) {
		t.Fatalf("streamed write_block read back: %v", err)
	}
	// A streamed block that fails at the device reports its progress.
	err = d.WriteBlock(0x1000000+4<<20-8160, large[:2<<20])
	wantOp(t, err, wire.CodeRemoteAXIWrDecerr, true)
	// Errors: an ERROR_RSP's code, a local check, a timeout flagged as maybe executed.
	_, err = d.Read(0x200000)
	wantOp(t, err, wire.CodeRemoteAXIRdSlverr, false)
	_, err = d.Read(0x13)
	wantOp(t, err, wire.CodeLocalInvalid, false)
	err = d.WriteBlock(0x200000, []byte{1, 2, 3, 4})
	wantOp(t, err, wire.CodeRemoteAXIWrSlverr, false)
	if _, err := dial(t, th.path).Device("nope"); !client.IsNoDevice(err) {
		t.Errorf("unknown device: %v, want NO_DEVICE", err)
	}
	dd, err := dial(t, th.path).DeviceOn("mem0", boardMAC)
	if err != nil || dd.Name != "board1" || dd.Local != th.h.Config().Devices[0].Local {
		t.Errorf("DeviceOn: %+v, %v", dd, err)
	}
}

func wantOp(t *testing.T, err error, code wire.Code, maybe bool) *client.OpError {
	t.Helper()
	var oe *client.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v, want an OpError with %v", err, code)
	}
	if oe.Code != code || oe.MaybeExecuted() != maybe {
		t.Errorf("OpError %+v, want code %v maybe-executed %v", oe, code, maybe)
	}
	return oe
}

func TestTimeoutMaybeExecuted(t *testing.T) {
	th := newTestHub(t)
	d := openDev(t, dial(t, th.path))
	th.dev.SetPeer(0, endpoint.Peer{}) // the board no longer answers the hub's RMEM MAC
	_, err := d.Read(0)
	wantOp(t, err, wire.CodeTimeout, true)
}

func TestBatch(t *testing.T) {
	th := newTestHub(t)
	d := openDev(t, dial(t, th.path))
	b := d.NewBatch()
	var rs []*client.Result
	for i := range 100 {
		b.Write(uint32(4*i), uint32(i*3), 0xFFFFFFFF)
		rs = append(rs, b.Read(uint32(4*i)))
	}
	blk := b.ReadBlock(0x0, 16)
	if err := b.Run(); err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if !r.Done || r.Value != uint32(i*3) {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if !bytes.Equal(blk.Data, []byte{0, 0, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0, 9, 0, 0, 0}) {
		t.Errorf("block %x", blk.Data)
	}
	// A failing batch: operation 2 fails, 0 and 1 ran, 3 did not.
	b = d.NewBatch()
	r0 := b.Write(0x40, 0x11, 0xFFFFFFFF)
	r1 := b.Read(0x40)
	b.Read(0x200000)
	r3 := b.Write(0x8000, 0x22, 0xFFFFFFFF)
	err := b.Run()
	oe := wantOp(t, err, wire.CodeRemoteAXIRdSlverr, false)
	var be *client.BatchError
	if !errors.As(err, &be) || be.Index != 2 || !r0.Done || !r1.Done || r1.Value != 0x11 || r3.Done {
		t.Errorf("failed batch: %v, results %+v %+v %+v", err, r0, r1, r3)
	}
	if oe.Op != "RMEM read" || oe.Addr != 0x200000 || oe.OutcomeUnknown {
		t.Errorf("failed batch operation: %+v", oe)
	}
	if v, _ := d.Read(0x8000); v != 0 {
		t.Errorf("operation after the failure ran: 0x8000 = %#x", v)
	}
}

// A BATCH's block reads total at most the streaming ring: the hub holds a
// batch's results whole until its reply, so more is refused, before anything
// runs, with the limit named and the plain block read suggested; the Go
// client refuses it before sending.
func TestBatchReadLimit(t *testing.T) {
	th := newTestHub(t)
	d := openDev(t, dial(t, th.path))
	if proto.MaxBatchRead != hub.StreamRing {
		t.Fatalf("MaxBatchRead %d, the stream ring %d", proto.MaxBatchRead, hub.StreamRing)
	}
	const half = proto.MaxBatchRead / 2
	b := d.NewBatch()
	r0 := b.ReadBlock(0x1000000, half)
	r1 := b.ReadBlock(0x1000000+half, half)
	if err := b.Run(); err != nil || len(r0.Data) != half || len(r1.Data) != half {
		t.Fatalf("batch reading %d bytes: %v", proto.MaxBatchRead, err)
	}
	b = d.NewBatch()
	w := b.Write(0x40, 0x5a, 0xFFFFFFFF)
	b.ReadBlock(0x1000000, half)
	b.ReadBlock(0x1000000+half, half+4)
	err := b.Run()
	var he *client.HubError
	if !errors.As(err, &he) || he.Status != proto.StatusTooLarge || !strings.Contains(he.Message, "4194308 block bytes") ||
		!strings.Contains(he.Message, "4194304") || !strings.Contains(he.Message, "plain block read") || w.Done {
		t.Fatalf("Go client: %v", err)
	}
	// The hub's own check, for a client that sends it anyway.
	c := rawConn(t, th.path)
	req := proto.AppendHeader(nil, proto.Open, 0, 1)
	c.Write(proto.Finish(append(append(req, proto.OpenByName), "board1"...), 0))
	_, st, res := readReply(t, c)
	if st.Status != 0 {
		t.Fatalf("OPEN: %+v", st)
	}
	req = proto.AppendHeader(nil, proto.Batch, binary.LittleEndian.Uint16(res), 2)
	req = binary.LittleEndian.AppendUint32(req, 3)
	req = append(req, proto.Write)
	req = binary.LittleEndian.AppendUint32(req, 0x40)
	req = binary.LittleEndian.AppendUint32(req, 0x5a)
	req = binary.LittleEndian.AppendUint32(req, 0xFFFFFFFF)
	for _, n := range []uint32{half, half + 4} {
		req = append(req, proto.ReadBlock)
		req = binary.LittleEndian.AppendUint32(req, 0x1000000)
		req = binary.LittleEndian.AppendUint32(req, n)
	}
	c.Write(proto.Finish(req, 0))
	_, st, _ = readReply(t, c)
	if st.Status != proto.StatusTooLarge || st.Message != proto.BatchReadTooLarge(proto.MaxBatchRead+4) {
		t.Fatalf("hub: %s %q", proto.StatusName(st.Status), st.Message)
	}
	if v, err := d.Read(0x40); err != nil || v != 0 {
		t.Errorf("the refused batch ran its write: 0x40 = %#x, %v", v, err)
	}
}

// raw sends bytes on a fresh connection and returns it.
func rawConn(t *testing.T, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClients waits until the hub serves n connections: one that left is
// no longer counted once its goroutine has ended.
func waitClients(t *testing.T, th *testHub, n int64) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("the hub to serve %d clients", n), func() bool { return th.h.Status().Clients == n })
}

func readReply(t *testing.T, c net.Conn) (proto.Header, proto.ReplyStatus, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr, body, _, err := proto.ReadMessage(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, res, err := proto.ParseReply(body)
	if err != nil {
		t.Fatal(err)
	}
	return hdr, st, res
}

func TestMalformed(t *testing.T) {
	th := newTestHub(t)
	other := openDev(t, dial(t, th.path))
	c := rawConn(t, th.path)
	handle := openRaw(t, c)
	cases := []struct {
		name   string
		msg    []byte
		status uint8
	}{
		{"short READ", proto.Finish(append(proto.AppendHeader(nil, proto.Read, handle, 2), 1, 2), 0), proto.StatusBadMessage},
		{"unknown type", proto.Finish(proto.AppendHeader(nil, 0x77, handle, 3), 0), proto.StatusUnknownType},
		{"bad handle", proto.Finish(append(proto.AppendHeader(nil, proto.Read, 99, 4), 0, 0, 0, 0), 0), proto.StatusNoDevice},
		{"batch bad op", proto.Finish(append(proto.AppendHeader(nil, proto.Batch, handle, 5), 1, 0, 0, 0, 0x55), 0), proto.StatusBadMessage},
		{"batch truncated", proto.Finish(append(proto.AppendHeader(nil, proto.Batch, handle, 6), 2, 0, 0, 0, proto.Read, 0, 0, 0, 0), 0), proto.StatusBadMessage},
	}
	for _, cs := range cases {
		c.Write(cs.msg)
		hdr, st, _ := readReply(t, c)
		if st.Status != cs.status || hdr.Tag != binary.LittleEndian.Uint32(cs.msg[8:]) || st.Message == "" {
			t.Errorf("%s: status %s (%q), tag %d", cs.name, proto.StatusName(st.Status), st.Message, hdr.Tag)
		}
		// The other client is served meanwhile.
		if err := other.Write(0x80, 1, 0xFFFFFFFF); err != nil {
			t.Fatal(err)
		}
	}
	// The same connection still works.
	c.Write(proto.Finish(binary.LittleEndian.AppendUint32(proto.AppendHeader(nil, proto.Read, handle, 9), 0x80), 0))
	_, st, res := readReply(t, c)
	if st.Status != 0 || binary.LittleEndian.Uint32(res) != 1 {
		t.Errorf("read after malformed requests: %+v %x", st, res)
	}
	// A broken length: an error reply, then the hub closes this connection only.
	c.Write([]byte{3, 0, 0, 0, proto.Read, 0, 1, 0, 9, 0, 0, 0})
	_, st, _ = readReply(t, c)
	if st.Status != proto.StatusBadMessage {
		t.Errorf("bad length: %+v", st)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after a framing error: read %v, want EOF", err)
	}
	if _, err := other.Read(0x80); err != nil {
		t.Errorf("other client after the framing error: %v", err)
	}
}

// A client that sends a batch and leaves costs nobody anything: the batch
// stops, and others are served.
func TestDisconnectMidBatch(t *testing.T) {
	th := newTestHub(t)
	other := openDev(t, dial(t, th.path))
	c := rawConn(t, th.path)
	handle := openRaw(t, c)
	const n = 20000
	b := proto.AppendHeader(nil, proto.Batch, handle, 2)
	b = binary.LittleEndian.AppendUint32(b, n)
	for i := range n {
		b = append(b, proto.Write)
		b = binary.LittleEndian.AppendUint32(b, 0x1000)
		b = binary.LittleEndian.AppendUint32(b, uint32(i+1))
		b = binary.LittleEndian.AppendUint32(b, 0xFFFFFFFF)
	}
	c.Write(proto.Finish(b, 0))
	c.Close()
	// The connection's goroutine ends when the batch has stopped.
	waitClients(t, th, 1)
	v, err := other.Read(0x1000)
	if err != nil {
		t.Fatal(err)
	}
	if v == n {
		t.Errorf("the batch went on after the client left: all %d writes ran", n)
	}
}

func TestConcurrentClients(t *testing.T) {
	th := newTestHub(t)
	const clients, pairs = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			c, err := client.Dial(th.path)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			d, err := c.Device("board1")
			if err != nil {
				errs <- err
				return
			}
			for j := range pairs {
				addr := uint32(0x2000 + 4*i)
				v := uint32(i<<24 | j)
				if err := d.Write(addr, v, 0xFFFFFFFF); err != nil {
					errs <- err
					return
				}
				if got, err := d.Read(addr); err != nil || got != v {
					errs <- fmt.Errorf("client %d pair %d: read %#x, %v; want %#x", i, j, got, err, v)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := th.h.Status()
	if got := st.Devices[0].Ops["read"].Count; got != clients*pairs {
		t.Errorf("status counts %d reads, want %d", got, clients*pairs)
	}
}

func TestSocketLifecycle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "hub.sock")
	l, err := hub.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v, %v; want 0660", fi.Mode(), err)
	}
	if _, err := hub.ListenUnix(path); !errors.Is(err, hub.ErrRunning) || !strings.Contains(err.Error(), fmt.Sprintf("process %d (", os.Getpid())) {
		t.Errorf("second hub on the socket: %v, want ErrRunning naming this process", err)
	}
	if fi, err := os.Lstat(filepath.Dir(path)); err != nil || fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("socket directory %v %v, want drwx------", fi.Mode(), err)
	}
	l.Close()
	// A hub that crashed leaves its socket file: simulate one, it is replaced.
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket not left: %v", err)
	}
	l2, err := hub.ListenUnix(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()
	// A regular file in the way is never removed.
	os.WriteFile(path, []byte("x"), 0o600)
	if _, err := hub.ListenUnix(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("file in the way: %v", err)
	}
}

func TestNodes(t *testing.T) {
	th := newTestHubTable(t, "testdata/board.xml")
	d := openDev(t, dial(t, th.path))
	if !d.HasTable {
		t.Fatal("no table")
	}
	reset, err := d.Node("ctrl.reset")
	if err != nil || reset.Address != 0x100 || reset.Mask != 1 {
		t.Fatalf("ctrl.reset: %+v %v", reset, err)
	}
	if err := d.Write(0x100, 0xFFFFFFF0, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	if err := reset.Write(1); err != nil {
		t.Fatal(err)
	}
	if v, _ := d.Read(0x100); v != 0xFFFFFFF1 {
		t.Errorf("after ctrl.reset = 1 the word is %#x, want 0xfffffff1 (one masked write)", v)
	}
	frames := th.dev.Stats().ServedRMEMWrite
	if err := d.NodeWrite("ctrl.mode", 0x3); err != nil {
		t.Fatal(err)
	}
	if n := th.dev.Stats().ServedRMEMWrite - frames; n != 1 {
		t.Errorf("a bitfield write took %d RMEM writes, want 1", n)
	}
	if v, err := d.NodeRead("ctrl.mode"); err != nil || v != 3 {
		t.Errorf("ctrl.mode = %d, %v", v, err)
	}
	err = d.NodeWrite("ctrl.mode", 0x10)
	wantOp(t, err, wire.CodeLocalInvalid, false)
	err = d.NodeWrite("status.id", 1)
	wantOp(t, err, wire.CodeLocalInvalid, false)
	_, err = d.NodeRead("wo")
	wantOp(t, err, wire.CodeLocalInvalid, false)
	_, err = d.NodeRead("buf")
	wantOp(t, err, wire.CodeLocalInvalid, false)
	d.Write(0x104, 0xBEEF0000, 0xFFFFFFFF)
	if v, err := d.NodeRead("status.id"); err != nil || v != 0xBEEF {
		t.Errorf("status.id = %#x, %v", v, err)
	}
	var he *client.HubError
	if _, err := d.Node("ctrl.nope"); !errors.As(err, &he) || he.Name != "NO_NODE" {
		t.Errorf("unknown node: %v", err)
	}
	nodes, err := d.Nodes()
	if err != nil || len(nodes) < 5 || nodes[0].Name != "ctrl" {
		t.Errorf("nodes: %+v %v", nodes, err)
	}
	// The records say which nodes the hub never retries, and their words.
	for _, n := range nodes {
		if want := n.Name == "fifo"; n.Volatile != want || n.Words != 1 {
			t.Errorf("node %s: volatile %v words %d, want %v and 1", n.Name, n.Volatile, n.Words, want)
		}
	}
	// A device without a table answers NO_NODE.
	th2 := newTestHub(t)
	if _, err := openDev(t, dial(t, th2.path)).NodeRead("ctrl"); !errors.As(err, &he) || he.Name != "NO_NODE" {
		t.Errorf("no table: %v", err)
	}
}

// TestNodeRecords: the node records carry the volatile flag of TOML
// volatile = true nodes and the word count of multi-word LiteX CSRs.
func TestNodeRecords(t *testing.T) {
	for _, c := range []struct {
		table, node string
		volatile    bool
		words       uint8
	}{
		{"../examples/regs.toml", "irq.clear", true, 1},
		{"../examples/regs.toml", "ctrl.mode", false, 1},
		{"../addrtable/testdata/litex/csr.csv", "timer0_uptime_cycles", false, 2},
		{"../addrtable/testdata/litex/csr8.csv", "ctrl_scratch", false, 4},
	} {
		d := openDev(t, dial(t, newTestHubTable(t, c.table).path))
		n, err := d.Node(c.node)
		if err != nil {
			t.Fatalf("%s %s: %v", c.table, c.node, err)
		}
		if n.Volatile != c.volatile || n.Words != c.words {
			t.Errorf("%s %s: volatile %v words %d, want %v and %d", c.table, c.node, n.Volatile, n.Words, c.volatile, c.words)
		}
	}
}

// A client that leaves in the middle of a streamed block costs nobody
// anything: the block fails (its source never arrives), others are served.
func TestDisconnectMidStream(t *testing.T) {
	th := newTestHub(t)
	other := openDev(t, dial(t, th.path))
	c := rawConn(t, th.path)
	handle := openRaw(t, c)
	m := proto.AppendHeader(nil, proto.WriteBlock, handle, 2)
	m = binary.LittleEndian.AppendUint32(m, 0x1000000)
	binary.LittleEndian.PutUint32(m, uint32(len(m)-4+2<<20))
	c.Write(m)
	rx := th.dev.Stats().RxFrames
	c.Write(make([]byte, 1<<20))
	testutil.Eventually(t, "the block's first frames at the board", func() bool { return th.dev.Stats().RxFrames > rx })
	c.Close()
	waitClients(t, th, 1)
	if err := other.WriteBlock(0x1000000, make([]byte, 2<<20)); err != nil {
		t.Errorf("a block after the departed client's: %v", err)
	}
	st := th.h.Status().Devices[0].Ops["write_block"]
	if st.Errors["LOCAL_AXI_RD_SLVERR"] != 1 {
		t.Errorf("the departed client's block: %+v, want one LOCAL_AXI_RD_SLVERR", st)
	}
}

// The device's recovery policy applies to the hub's endpoints, except to
// the address table's volatile nodes, which get exactly one try.
func TestRetries(t *testing.T) {
	th := newTestHubWith(t, func(d *hub.DeviceConfig) {
		d.AddressTable = "testdata/board.xml"
		d.RMEMTimeout = 200 * time.Millisecond
		d.Retry = endpoint.RetryPolicy{Retries: 3, Deadline: 2 * time.Second}
	})
	d := openDev(t, dial(t, th.path))
	d.Write(0x20, 0x1234, 0xFFFFFFFF)
	dropNextResponse := func() {
		if err := th.sw.AddRule(mem.Rule{From: boardMAC, Action: mem.Drop, Count: 1}); err != nil {
			t.Fatal(err)
		}
	}
	dropNextResponse()
	if v, err := d.Read(0x20); err != nil || v != 0x1234 {
		t.Fatalf("read with a lost response: %#x, %v", v, err)
	}
	if r := th.h.Status().Devices[0].Endpoints["rmem"].Retries; r != 1 {
		t.Errorf("retries %d, want 1", r)
	}
	dropNextResponse()
	_, err := d.NodeRead("fifo")
	wantOp(t, err, wire.CodeTimeout, true)
	if r := th.h.Status().Devices[0].Endpoints["rmem"].Retries; r != 1 {
		t.Errorf("a volatile node was retried: retries %d, want 1", r)
	}
}

// With transport = reliable the hub's endpoints reach the device through
// the reliable transport, which recovers a lost frame below the endpoint.
func TestReliableTransport(t *testing.T) {
	th := newTestHubWith(t, func(d *hub.DeviceConfig) { d.Transport = rlink.Reliable })
	// Every endpoint of the device opens with the transport's window and
	// fragment ceiling, as the one-shot commands' do (package node).
	for k := range 3 {
		c := th.h.Devices()[0].Endpoint(hub.Kind(k)).Config()
		if c.Outstanding != node.Window || c.MaxFragment != node.FragmentCeiling(c.MaxFrame) {
			t.Errorf("%v endpoint: window %d, fragment %d; want %d and %d", hub.Kind(k), c.Outstanding, c.MaxFragment, node.Window, node.FragmentCeiling(c.MaxFrame))
		}
	}
	d := openDev(t, dial(t, th.path))
	if err := th.sw.AddRule(mem.Rule{From: boardMAC, Action: mem.Drop, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(0x20, 0x5555, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(0x20); err != nil || v != 0x5555 {
		t.Fatalf("read %#x, %v", v, err)
	}
	blk := make([]byte, 50000)
	rand.NewChaCha8([32]byte{3}).Read(blk)
	if err := d.WriteBlock(0x100000, blk); err != nil {
		t.Fatal(err)
	}
	if back, err := d.ReadBlock(0x100000, len(blk)); err != nil || !bytes.Equal(back, blk) {
		t.Fatalf("read_block: %v", err)
	}
	st := th.h.Status().Devices[0]
	if st.Transport != "reliable" || st.Endpoints["rmem"].Retransmitted == 0 {
		t.Errorf("status: transport %q, rmem retransmitted %d (a frame was dropped)", st.Transport, st.Endpoints["rmem"].Retransmitted)
	}
	if !strings.Contains(th.h.Config().PeerEntries(), `transport = "reliable"`) {
		t.Errorf("peer entries lack the transport:\n%s", th.h.Config().PeerEntries())
	}
	// The device's endpoints open with the one-shot commands' window and
	// fragments for the transport: a DMA block keeps the window in flight.
	for _, k := range []hub.Kind{hub.KindRMEM, hub.KindDMAWrite, hub.KindDMARead} {
		c := th.h.Devices()[0].Endpoint(k).Config()
		frag, window := rlink.EndpointLimits(c.MaxFrame)
		if c.Outstanding != window || c.MaxFragment != frag || window < 2 {
			t.Errorf("%v endpoint: window %d, fragment %d; the transport's are %d and %d", k, c.Outstanding, c.MaxFragment, window, frag)
		}
	}
}

func TestTCPToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "0", ":0", "127.0.0.1:0", "localhost:0"} {
		if _, err := hub.ListenTCP(addr, ""); err == nil || !strings.Contains(err.Error(), "token is required, loopback included") || !strings.Contains(err.Error(), "token_file") {
			t.Errorf("--listen %s without a token: %v", addr, err)
		}
	}
	l, err := hub.ListenTCP("0", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.Addr().String(), "127.0.0.1:") {
		t.Errorf("a bare port listens on %v, want loopback", l.Addr())
	}
	l.Close()
	th := newTestHub(t)
	th.h.SetToken("s3cret")
	tl, err := hub.ListenTCP("0.0.0.0:0", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	go th.h.Serve(tl, true)
	_, port, _ := net.SplitHostPort(tl.Addr().String())
	addr := "tcp://127.0.0.1:" + port
	if _, err := client.DialOptions(client.Options{Path: addr, Token: "wrong"}); err == nil || !strings.Contains(err.Error(), "AUTH") {
		t.Errorf("wrong token: %v", err)
	}
	// Without HELLO, a request is refused and the connection closed.
	nc, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write(proto.Finish(binary.LittleEndian.AppendUint32(proto.AppendHeader(nil, proto.Read, 1, 1), 0), 0))
	_, st, _ := readReply(t, nc)
	if st.Status != proto.StatusAuth {
		t.Errorf("request without HELLO: %s", proto.StatusName(st.Status))
	}
	nc.Close()
	c, err := client.DialOptions(client.Options{Path: addr, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.Device("board1")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(0, 7, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(0); err != nil || v != 7 {
		t.Errorf("over TCP: %d %v", v, err)
	}
	// The Python client proves the hub the same way.
	if out, err := pythonTCP(t, addr, "s3cret"); err != nil || out != "7\n" {
		t.Errorf("Python over TCP: %v %q", err, out)
	}
	if out, _ := pythonTCP(t, addr, "wrong"); !strings.Contains(out, "AUTH the server at tcp://") || !strings.Contains(out, "did not prove it holds the token") {
		t.Errorf("Python over TCP with a wrong token: %q", out)
	}
	// A client without CHALLENGE may still send the token itself; a proof
	// without a CHALLENGE is refused.
	for _, tc := range []struct {
		token string
		ok    bool
	}{{"s3cret", true}, {proto.ClientProof("s3cret", make([]byte, 32), make([]byte, 32)), false}} {
		nc, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Fatal(err)
		}
		req := proto.AppendStr16(binary.LittleEndian.AppendUint16(proto.AppendHeader(nil, proto.Hello, 0, 1), proto.Version), tc.token)
		nc.Write(proto.Finish(req, 0))
		if _, st, _ := readReply(t, nc); (st.Status == 0) != tc.ok {
			t.Errorf("HELLO with %q: %s %s", tc.token, proto.StatusName(st.Status), st.Message)
		}
		nc.Close()
	}
}

// A TCP server that does not hold the token (an impostor on the hub's
// port) cannot answer the client's CHALLENGE: the client refuses it, AUTH,
// and never sends the token, which the server never sees.
func TestTCPImpostor(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 2)
	impostor := func() {
		nc, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		var all []byte
		hdr, body, _, err := proto.ReadMessage(nc, nil)
		if err == nil {
			all = append(all, body...)
			// An answer of the right shape, from a server without the token.
			rep := proto.AppendReplyHeader(nil, hdr, proto.StatusOK, 0, "")
			nc.Write(proto.Finish(append(rep, bytes.Repeat([]byte{0x5A}, 64)...), 0))
			rest, _ := io.ReadAll(nc)
			all = append(all, rest...)
		}
		got <- all
	}
	go impostor()
	_, err = client.DialOptions(client.Options{Path: "tcp://" + ln.Addr().String(), Token: "s3cret-token"})
	var he *client.HubError
	if !errors.As(err, &he) || he.Status != proto.StatusAuth || !strings.Contains(he.Message, "did not prove it holds the token") {
		t.Errorf("an impostor's answer: %v", err)
	}
	if b := <-got; len(b) != proto.NonceLen || bytes.Contains(b, []byte("s3cret")) {
		t.Errorf("the impostor read %d bytes (%q), want the %d-byte nonce alone", len(b), b, proto.NonceLen)
	}
	go impostor()
	if out, _ := pythonTCP(t, "tcp://"+ln.Addr().String(), "s3cret-token"); !strings.Contains(out, "AUTH the server at tcp://") || !strings.Contains(out, "did not prove it holds the token") {
		t.Errorf("Python and an impostor: %q", out)
	}
	if b := <-got; len(b) != proto.NonceLen || bytes.Contains(b, []byte("s3cret")) {
		t.Errorf("the impostor read %d bytes from Python (%q), want the %d-byte nonce alone", len(b), b, proto.NonceLen)
	}
}

// pythonTCP reads word 0 of board1 through the hub at addr with the
// Python client and token; its output is the value, or the error's name
// and message.
func pythonTCP(t *testing.T, addr, token string) (string, error) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	cmd := exec.Command(py, "-c", `
import sys, oetp
try:
    print(oetp.connect(sys.argv[1], token=sys.argv[2]).device("board1").read(0))
except oetp.HubError as e:
    print(e.name, e.message)
`, addr, token)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join("..", "python"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Close does not hang on an operation that waits forever (timeout 0): the
// endpoints are closed after a grace period, which aborts it.
func TestCloseAbortsWaitingOperation(t *testing.T) {
	th := newTestHubWith(t, func(d *hub.DeviceConfig) { d.RMEMTimeout = 0 })
	d := openDev(t, dial(t, th.path))
	th.dev.SetPeer(0, endpoint.Peer{}) // the board never answers
	rx := th.dev.Stats().RxFrames
	errc := make(chan error, 1)
	go func() { _, err := d.Read(0); errc <- err }()
	testutil.Eventually(t, "the read's request at the board", func() bool { return th.dev.Stats().RxFrames > rx })
	done := make(chan struct{})
	go func() { th.h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on an operation without a timeout")
	}
	if err := <-errc; err == nil {
		t.Error("the aborted read succeeded")
	}
}

// A socket that never answers HELLO fails Dial after its timeout.
func TestDialTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mute.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mute := make(chan struct{})
	defer close(mute)
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			<-mute // never answers; closed when the test ends
		}
	}()
	t0 := time.Now()
	_, err = client.DialOptions(client.Options{Path: path, Timeout: 200 * time.Millisecond})
	if err == nil || time.Since(t0) > 3*time.Second {
		t.Errorf("dial of a mute socket: %v after %v", err, time.Since(t0))
	}
}

// A failed operation's error crosses the hub whole: the engine's code,
// cause, outcome, failed address and bytes done.
func TestErrorWhole(t *testing.T) {
	th := newTestHub(t)
	d := openDev(t, dial(t, th.path))
	f := d.MaxFragment
	if f <= 0 || f%4 != 0 {
		t.Fatalf("OPEN reports a fragment of %d bytes", f)
	}
	// A block whose second fragment meets the SLVERR range at 0x200000.
	tr, err := d.WriteBlockTransfer(0x200000-uint32(f), make([]byte, 2*f))
	oe := wantOp(t, err, wire.CodeRemoteAXIWrSlverr, true)
	if oe.Op != "DMA write" || oe.Addr != 0x200000 || oe.Bytes != uint64(f) || oe.OutcomeUnknown || tr.Bytes != uint64(f) || tr.Fragments != 1 {
		t.Errorf("failed block: %+v, transfer %+v; want DMA write failing at 0x200000 after %d bytes", oe, tr, f)
	}
	// The cause's sentinel survives the hub.
	th.dev.SetPeer(0, endpoint.Peer{})
	_, err = d.Read(0x10)
	oe = wantOp(t, err, wire.CodeTimeout, true)
	if !errors.Is(err, endpoint.ErrTimeout) || !oe.OutcomeUnknown || oe.Op != "RMEM read" || oe.Addr != 0x10 {
		t.Errorf("timeout through the hub: %+v (%v)", oe, err)
	}
	// The engine's own error for the same failure reads the same.
	want := endpoint.OpError{Op: "RMEM read", Addr: 0x10, Code: wire.CodeTimeout, Err: endpoint.ErrTimeout, OutcomeUnknown: true}
	if oe.Outcome() != want.Outcome() {
		t.Errorf("outcome %q, the engine says %q", oe.Outcome(), want.Outcome())
	}
	if d.Bound != time.Second || d.Deadline(0) != client.DeadlineMargin+time.Second {
		t.Errorf("device bound %v, deadline %v", d.Bound, d.Deadline(0))
	}
}
