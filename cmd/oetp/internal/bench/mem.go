package bench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// MACs on the in-process switch: the engine pair and the baseline pair.
var (
	memMACA   = stationMAC(0x01, 0x01)
	memMACB   = stationMAC(0x01, 0x02)
	memMACRaw = stationMAC(0x01, 0x03)
	memMACEch = stationMAC(0x01, 0x04)
	memMACFlp = stationMAC(0x01, 0x05) // the floor's pinger
	memMACFle = stationMAC(0x01, 0x06) // the floor's echo
)

// memPort is a port of the in-process switch as the baseline and floor
// rows use it: written, filled in place (link.FillWriter) and read in a
// loop (link.Looper), with no protocol.
type memPort interface {
	node.Medium
	ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error
	WriteFill(frame []byte, at, m int, fill func(data []byte) bool) (bool, error)
}

// attachRaw attaches mac to sw for a row with no protocol.
func attachRaw(sw *node.Switch, mac wire.MAC) (memPort, error) {
	m, err := sw.Attach(mac)
	if err != nil {
		return nil, err
	}
	p, ok := m.(memPort)
	if !ok {
		m.Close()
		return nil, fmt.Errorf("switch port %v: %T reads in no loop or fills no frame", mac, m)
	}
	return p, nil
}

// memEcho answers frames on a switch port with prepared replies chosen by
// the request's Cmd octet, until the port closes: the far side of the
// in-process baseline.
func memEcho(p memPort, replies map[wire.Cmd][]byte, done chan<- error) {
	var table [256][]byte
	for c, f := range replies {
		table[c] = f
	}
	bufs := [][]byte{make([]byte, p.MaxFrame())}
	sizes := make([]int, 1)
	var werr error
	// ReadLoop, like the engine's receive loop: the port hands over its
	// queue slots instead of copying frames out.
	err := p.ReadLoop(bufs, sizes, func(n int) bool {
		if n == 1 && sizes[0] > wire.ParamOffset {
			if rsp := table[bufs[0][15]]; rsp != nil {
				if werr = p.Write(rsp); werr != nil {
					return false
				}
			}
		}
		return true
	})
	if errors.Is(err, node.ErrClosed) {
		err = nil
	}
	if werr != nil {
		err = werr
	}
	done <- err
}

// memRawStep is the baseline of op on the in-process switch: one goroutine
// writes the request frame to a port and reads the reply from it, another
// echoes, no protocol work.
func memRawStep(p memPort, op string) *step {
	reqF, rspF := rawFrames(op, memMACRaw, memMACEch)
	s := &step{m: newMeter(true)}
	s.res = Result{Scenario: ScenarioMem, Name: "raw " + frameLabel(len(reqF), len(rspF)),
		Frames: frameLabel(len(reqF), len(rspF)), Baseline: true}
	bufs := [][]byte{make([]byte, p.MaxFrame())}
	sizes := make([]int, 1)
	// Reads with ReadLoop, as the engine does: no copy out of the queue.
	reply := func(n int) bool { return sizes[0] != len(rspF) }
	rt := func() error {
		if err := p.Write(reqF); err != nil {
			return err
		}
		return p.ReadLoop(bufs, sizes, reply)
	}
	s.round = s.m.warmOnce(2, bytesPerOp(op), rt)
	return s
}

// memEnv is the in-process switch with an engine pair and a baseline
// pair of ports.
type memEnv struct {
	p         *pair
	raw, echo memPort
	floor     *memFloor
	done      chan error
}

// newMemEnv builds the in-process medium for blocks up to maxBlock bytes.
func newMemEnv(maxBlock int) (*memEnv, error) {
	sw, err := node.NewSwitch(node.SwitchConfig{})
	if err != nil {
		return nil, err
	}
	ports := make([]memPort, 4)
	for i, mac := range []wire.MAC{memMACA, memMACB, memMACRaw, memMACEch} {
		if ports[i], err = attachRaw(sw, mac); err != nil {
			for _, p := range ports[:i] {
				p.Close()
			}
			return nil, err
		}
	}
	m := &memEnv{raw: ports[2], echo: ports[3], done: make(chan error, 1)}
	if m.p, err = newPair(ports[0], ports[1], maxBlock); err != nil {
		m.raw.Close()
		m.echo.Close()
		return nil, err
	}
	if m.floor, err = newMemFloor(sw, maxBlock); err != nil {
		m.p.close()
		m.raw.Close()
		m.echo.Close()
		return nil, err
	}
	replies := map[wire.Cmd][]byte{}
	for _, op := range []string{opRMEMRead, opDMAWrite, opDMARead} {
		req, rsp := rawFrames(op, memMACRaw, memMACEch)
		replies[wire.Cmd(req[15])] = rsp
	}
	go memEcho(m.echo, replies, m.done)
	return m, nil
}

func (m *memEnv) scenario() string { return ScenarioMem }

func (m *memEnv) bases(op string) []*step { return []*step{memRawStep(m.raw, op)} }

func (m *memEnv) engine(op string, n int) *step { return engineStep(ScenarioMem, m.p, op, n) }

// extra returns the floor rows of a DMA op, one per block size.
func (m *memEnv) extra(op string, blocks []int64) []*step {
	if op == opRMEMRead {
		return nil
	}
	var out []*step
	for _, b := range blocks {
		out = append(out, m.floor.step(op, int(b)))
	}
	return out
}

// post adds to each DMA engine row how it compares with the floor row of
// its block.
func (m *memEnv) post(op string, engines []*step) {
	floors := map[int64]*Result{}
	for _, e := range engines {
		if r := &e.res; r.Info && strings.HasPrefix(r.Name, "floor ") {
			floors[r.Block] = r
		}
	}
	for _, e := range engines {
		r := &e.res
		f := floors[r.Block]
		if r.Info || f == nil || f.MBps <= 0 {
			continue
		}
		if r.Note != "" {
			r.Note += "; "
		}
		r.Note += fmt.Sprintf("%.2f× the MB/s of the %s row (%.0f MB/s, %.2f× the raw ping-pong)", r.MBps/f.MBps, f.Name, f.MBps, f.Ratio)
	}
}

func (m *memEnv) close() error {
	m.p.close()
	m.raw.Close()
	m.echo.Close()
	ferr := m.floor.close()
	if err := <-m.done; err != nil {
		return fmt.Errorf("in-process echo: %w", err)
	}
	return ferr
}

// runMem runs the engine on the in-process switch: an RMEM read, then DMA
// writes and reads of every block size, each next to a raw ping-pong of the
// same frame sizes on the same switch.
func runMem(o *Options) ([]Result, error) {
	m, err := newMemEnv(o.maxBlock())
	if err != nil {
		return nil, err
	}
	return runEnv(o, m)
}

// The mem scenario's floor rows: the least that any implementation of a DMA
// block on the in-process switch must do with the data, with no protocol
// at all. A DMA write's pinger takes each fragment's payload from a source
// buffer of the block's size into the frame it writes (straight into the
// receiving port's queue slot, link.FillWriter, as the engine does), and the
// echo copies the payload out of the slot it was handed into a region of
// the block's size before it answers. A DMA read is the mirror: the echo
// fills the reply's payload from its region, the pinger copies it into a
// destination buffer. The frames are the engine's: full fragments, the last
// one the rest of the block, the header built per frame. What the raw
// ping-pong leaves out is the two copies, of data that is not hot in the
// cache of the CPU that copies it. The engine rows still count against the
// raw ping-pong; the floor is printed beside them (in their notes). A floor
// below the target ratio at a block size is the proof that the target there
// is beyond any implementation on this medium.

// floorPattern is byte i of the floor echo's region as it starts, unlike
// the pinger's buffer, so that a write floor that moved nothing fails its
// check.
func floorPattern(i int) byte { return byte(i*13 + 1) }

// memFloor is the floor's pair of ports, its echo and their buffers.
type memFloor struct {
	ping, echo memPort
	buf        []byte // the pinger's source (write) or destination (read)
	region     []byte // the echo's memory
	done       chan error
}

// newMemFloor attaches the floor's ports to sw and starts its echo, with
// buffers of maxBlock bytes.
func newMemFloor(sw *node.Switch, maxBlock int) (*memFloor, error) {
	ping, err := attachRaw(sw, memMACFlp)
	if err != nil {
		return nil, err
	}
	echo, err := attachRaw(sw, memMACFle)
	if err != nil {
		ping.Close()
		return nil, err
	}
	f := &memFloor{ping: ping, echo: echo, buf: make([]byte, maxBlock), region: make([]byte, maxBlock), done: make(chan error, 1)}
	for i := range f.buf {
		f.buf[i] = byte(i*31 + 7)
		f.region[i] = floorPattern(i)
	}
	go f.serve()
	return f, nil
}

// serve is the floor's echo: it answers each DMA_WRITE_REQ after copying
// its payload into the region at its address, and each DMA_READ_REQ with a
// DMA_READ_RSP whose payload it fills from the region, until the port
// closes.
func (f *memFloor) serve() {
	p := f.echo
	bufs := [][]byte{make([]byte, p.MaxFrame())}
	sizes := make([]int, 1)
	tx := make([]byte, 0, p.MaxFrame())
	var src []byte // the region's bytes a read reply carries
	fill := func(d []byte) bool { copy(d, src); return true }
	var werr error
	err := p.ReadLoop(bufs, sizes, func(n int) bool {
		fr := wire.Frame(bufs[0][:sizes[0]])
		if n != 1 || len(fr) < wire.ParamOffset+12 {
			return true
		}
		off, l := int(fr.Address()-remoteBase), int(fr.Length())
		switch wire.Cmd(fr[15]) {
		case wire.DMAWriteReq:
			copy(f.region[off:off+l], fr.Payload(uint32(l)))
			werr = p.Write(wire.AppendDMAWriteRsp(tx[:0], fr.Src(), memMACFle, fr.RequestID()))
		case wire.DMAReadReq:
			src = f.region[off : off+l]
			rsp, _ := wire.GrowDMAReadRsp(tx[:0], fr.Src(), memMACFle, fr.RequestID(), uint32(l))
			_, werr = p.WriteFill(rsp, wire.ParamOffset+4, l, fill)
		}
		return werr == nil
	})
	if errors.Is(err, node.ErrClosed) {
		err = nil
	}
	if werr != nil {
		err = werr
	}
	f.done <- err
}

func (f *memFloor) close() error {
	f.ping.Close()
	f.echo.Close()
	if err := <-f.done; err != nil {
		return fmt.Errorf("in-process floor echo: %w", err)
	}
	return nil
}

// step measures the floor of op (a DMA write or read) on blocks of n
// bytes: one operation moves a block, fragment by fragment, each waiting
// for its reply, as the engine does.
func (f *memFloor) step(op string, n int) *step {
	p := f.ping
	res := engineResult(ScenarioMem, op, n)
	s := &step{m: newMeter(true)}
	s.res = Result{Scenario: ScenarioMem, Name: "floor " + op, Block: int64(n), Frames: res.Frames, Baseline: true, Info: true,
		Note: "the least any implementation moving the data must do: the raw ping-pong of the engine's frames, " +
			"plus copying each fragment's payload from a " + SizeString(int64(n)) + " buffer into the frame written " +
			"(into the receiving port's slot) and out of the frame received into a " + SizeString(int64(n)) + " buffer"}
	bufs := [][]byte{make([]byte, p.MaxFrame())}
	sizes := make([]int, 1)
	tx := make([]byte, 0, p.MaxFrame())
	var rid uint32
	var src []byte // a write fragment's source bytes
	fill := func(d []byte) bool { copy(d, src); return true }
	var got int // a read reply's frame length
	reply := func(int) bool { got = sizes[0]; return false }
	var moved int // bytes of the buffers the floor has moved, from 0
	block := func() error {
		for off := 0; off < n; off += wire.MaxFragment {
			l := min(wire.MaxFragment, n-off)
			addr := uint32(remoteBase + off)
			rid++
			if op == opDMAWrite {
				frame, _ := wire.GrowDMAWriteReq(tx[:0], memMACFle, memMACFlp, rid, addr, uint32(l))
				src = f.buf[off : off+l]
				if _, err := p.WriteFill(frame, wire.ParamOffset+12, l, fill); err != nil {
					return err
				}
			} else if err := p.Write(wire.AppendDMAReadReq(tx[:0], memMACFle, memMACFlp, rid, addr, uint32(l))); err != nil {
				return err
			}
			if err := p.ReadLoop(bufs, sizes, reply); err != nil {
				return err
			}
			if op == opDMARead {
				if want := wire.FrameLen(wire.DMAReadRsp, uint32(l)); got != want {
					return fmt.Errorf("floor read reply of %d bytes, want %d", got, want)
				}
				copy(f.buf[off:off+l], wire.Frame(bufs[0][:got]).Payload(uint32(l)))
			}
			moved = max(moved, off+l)
		}
		return nil
	}
	frames, bytes := opCounts(op, n)
	s.round = s.m.warmOnce(frames, bytes, block)
	// The data arrived: the region holds the source (write), the buffer
	// the region (read). The echo is idle, and its copies happened before
	// its last reply was read.
	s.after = func() error {
		for i := range moved {
			if f.region[i] != f.buf[i] {
				return fmt.Errorf("floor %s of %d bytes: byte %d is %#x at the echo, %#x at the pinger", op, n, i, f.region[i], f.buf[i])
			}
		}
		return nil
	}
	return s
}
