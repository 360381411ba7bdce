//go:build linux

package bench

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// The windowed raw exchange: the medium's limit for the reliable
// transport's DMA rows. The near side (a locked OS thread of the bench)
// keeps windowDepth requests in flight with the frame sizes of a reliable
// DMA fragment (8192-byte requests and 20-byte replies for writes, 28-byte
// requests and 8192-byte replies for reads), sending with sendmmsg(2) and
// receiving with blocking recvmmsg(2) in batches of up to streamBatch: each
// batch of replies is answered by as many new requests in one call. The far
// side is a process of its own (WindowEcho, as `oetp serve` is) that reads
// requests in recvmmsg batches and answers each batch with one sendmmsg,
// one reply per request. No protocol, no goroutine per frame, no copy
// beyond the kernel's: what two processes and the kernel's per-packet path
// allow for the exchange a reliable DMA block makes.

// WindowEchoFlag is the hidden flag of `oetp bench` that runs WindowEcho:
// the reliable scenario starts the binary with it in the far namespace.
const WindowEchoFlag = "raw-window-echo"

// windowDepth is the requests the windowed exchange keeps in flight: the
// reliable transport's window.
const windowDepth = node.Window

// windowFrameLen is the length of the windowed exchange's large frames: a
// reliable frame carrying a full fragment.
const windowFrameLen = wire.MaxFrameLen

// windowFrames returns the request and reply of the windowed exchange in
// op's direction, with the baseline's EtherType: a DMA_WRITE_REQ of
// windowFrameLen bytes and its 20-byte DMA_WRITE_RSP, or a 28-byte
// DMA_READ_REQ and its DMA_READ_RSP padded to windowFrameLen bytes.
func windowFrames(op string, near, far wire.MAC) (req, rsp []byte) {
	payload := make([]byte, wire.MaxFragment)
	switch op {
	case opDMAWrite:
		req = wire.AppendDMAWriteReq(nil, far, near, 1, remoteBase, payload)
		rsp = wire.AppendDMAWriteRsp(nil, near, far, 1)
	case opDMARead:
		req = wire.AppendDMAReadReq(nil, far, near, 1, remoteBase, wire.MaxFragment)
		rsp = wire.AppendDMAReadRsp(nil, near, far, 1, payload)
		rsp = append(rsp, make([]byte, windowFrameLen-len(rsp))...)
	default:
		panic("bench: no windowed exchange for " + op)
	}
	return retype(req), retype(rsp)
}

// The windowed floor: the windowed raw exchange doing the work with the
// data that any implementation of the reliable transport must do on each
// side, and nothing of the protocol. The sending side copies each
// fragment's payload (windowFloorFrag bytes, a reliable fragment) from a
// block of the row's size into its frame and puts the CRC32C of the frame
// (the transport's integrity check, wire/reliable.CRC) in its last four
// octets; the receiving side checks that CRC32C and copies the payload
// into a block of that size: for writes the near side sends from the
// block and the echo copies into its region at the request's address, for
// reads the echo sends from its region at the request's address and the
// near side copies into its block. The engine→serve DMA rows print their
// ratio to it beside their ratio to the windowed raw exchange, and the
// floor's own ratio to that exchange says how much of the medium's limit
// the data work leaves on these CPUs. The sending side copies where it
// could gather from the block instead: the copy measured faster or the
// same (docs/benchmarks.md), as for the ping-pong floor (floorCopies).

// floorRecvBatch is the most frames each side of the windowed floor
// receives at once: half the window, as the engine's receive loop reads
// (endpoint's rxBatch), so that the answers to the first half leave
// while the second half is handled. With the window's 32 in one batch the
// two sides take turns with their copies.
const floorRecvBatch = windowDepth / 2

// windowFloorFrag is the payload a windowed floor frame carries: a
// reliable DMA fragment.
var windowFloorFrag = int(node.FragmentCeiling(wire.MaxFrameLen))

// sealFloor puts the CRC32C of f[:len(f)-4] in f's last four octets.
func sealFloor(f []byte) {
	binary.LittleEndian.PutUint32(f[len(f)-4:], reliable.CRC(f[:len(f)-4]))
}

// floorSealed reports whether f's last four octets hold the CRC32C of the
// rest (sealFloor).
func floorSealed(f []byte) bool {
	return len(f) > 4 && binary.LittleEndian.Uint32(f[len(f)-4:]) == reliable.CRC(f[:len(f)-4])
}

// windowFloorSpan returns where in a region of size bytes the request
// frame f asks for windowFloorFrag bytes (its Addr from remoteBase), and
// false when they do not fit.
func windowFloorSpan(f []byte, size int) (int, bool) {
	if len(f) < floorLenOff+4 {
		return 0, false
	}
	a := binary.LittleEndian.Uint32(f[floorAddrOff:])
	if a < remoteBase || uint64(a-remoteBase)+uint64(windowFloorFrag) > uint64(size) {
		return 0, false
	}
	return int(a - remoteBase), true
}

// WindowEcho runs the far side of the windowed raw exchange on interface
// ifname of this process's network namespace: it reads requests in
// recvmmsg batches and answers each batch with one sendmmsg, a reply per
// request chosen by its Cmd octet and addressed to its source. With floor
// (a floor echo's SIZE, see FloorFlag; "" for none) it is the windowed
// floor's echo: it keeps a region of SIZE bytes, checks each DMA write
// request's CRC32C and copies its payload into the region at its address
// before it answers, and answers each DMA read request with the region's
// bytes at its address and their frame's CRC32C; a request that fails its
// check or does not fit the region gets no reply, and makes the echo
// return an error at the stop frame. It writes "ready" to ready once its
// socket is bound (and its region filled), and returns at the stop frame,
// or within the read timeout once stdin reaches its end (the parent is
// gone).
func WindowEcho(ifname, floor string, stdin io.Reader, ready io.Writer) error {
	var region []byte
	if floor != "" {
		f, err := parseFloorSpec(floor)
		if err != nil {
			return err
		}
		if f.gather {
			return fmt.Errorf("windowed floor echo %q: gather is the ping-pong floor's; the windowed floor copies", floor)
		}
		var release func()
		if region, release, err = floorRegion(f); err != nil {
			return err
		}
		defer release()
	}
	s, far, err := openEchoSock("windowed echo", ifname)
	if err != nil {
		return err
	}
	defer s.close()
	var replies [256][]byte
	for _, op := range []string{opDMAWrite, opDMARead} {
		req, rsp := windowFrames(op, wire.MAC{}, far)
		replies[req[15]] = rsp
	}
	// The floor's read replies, one per message of a batch: each carries
	// its own payload until the batch is sent.
	var reads [][]byte
	if region != nil {
		reads = make([][]byte, streamBatch)
		for i := range reads {
			reads[i] = slices.Clone(replies[byte(wire.DMAReadReq)])
		}
	}
	var refused int
	if err := lockThread(-1); err != nil {
		return err
	}
	s.drain()
	if _, err := fmt.Fprintln(ready, "ready"); err != nil {
		return err
	}
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(gone)
	}()
	in, bufs := newRecvBatch()
	if region != nil {
		in = newMmsgBatch(bufs[:floorRecvBatch])
	}
	out := &mmsgBatch{msgs: make([]unix.Mmsghdr, streamBatch), iov: make([]unix.Iovec, streamBatch)}
	for i := range out.msgs {
		out.msgs[i].Hdr.Iov = &out.iov[i]
		out.msgs[i].Hdr.SetIovlen(1)
	}
	for {
		n, err := in.recvmmsg(s.fd)
		if err == errRawTimeout {
			select {
			case <-gone:
				return nil
			default:
				continue
			}
		}
		if err != nil {
			return err
		}
		k, stop := 0, false
		for i := range n {
			b := bufs[i][:in.msgs[i].Len]
			if len(b) < wire.ParamOffset {
				continue
			}
			if b[15] == stopCmd {
				stop = true
				break
			}
			r := replies[b[15]]
			if r == nil {
				continue
			}
			if region != nil {
				off, ok := windowFloorSpan(b, len(region))
				switch {
				case !ok || b[15] == byte(wire.DMAWriteReq) && (len(b) != windowFrameLen || !floorSealed(b)):
					refused++
					continue
				case b[15] == byte(wire.DMAWriteReq):
					copy(region[off:off+windowFloorFrag], b[floorWriteHdr:])
				default:
					r = reads[k]
					copy(r[floorReadHdr:floorReadHdr+windowFloorFrag], region[off:])
				}
			}
			copy(r[0:6], b[6:12])
			if region != nil && len(r) == windowFrameLen {
				sealFloor(r) // over the destination too
			}
			out.iov[k].Base = &r[0]
			out.iov[k].SetLen(len(r))
			k++
		}
		for i := 0; i < k; {
			m, err := out.sendmmsgN(s.fd, i, k)
			if err != nil {
				return err
			}
			i += m
		}
		if stop {
			if refused > 0 {
				return fmt.Errorf("windowed floor echo: %d requests failed their CRC32C or did not fit the %d-byte region", refused, len(region))
			}
			return nil
		}
	}
}

// processCPU returns the CPU time this process has used.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// window returns the windowed raw exchange in op's direction, its echo a
// process of its own: a baseline, the limit of the reliable DMA rows. MB/s
// counts a reliable fragment's payload per exchange, as the DMA rows count
// their blocks; the note gives the CPU time of both sides per exchange.
func (e *reliableEnv) window(op string) *step {
	ha, hb := e.n.Host(0), e.n.Host(1)
	req, rsp := windowFrames(op, ha.MAC(), hb.MAC())
	pipe := &rawPipe{near: e.raw.near, req: req, rsp: rsp, depth: windowDepth, external: true}
	label := frameLabel(len(req), len(rsp))
	m := newMeter(false)
	m.noAllocs = true
	s := &step{m: m}
	s.res = Result{Scenario: ScenarioReliable, Name: fmt.Sprintf("%s %s ×%d in flight", windowRowPrefix, label, windowDepth),
		Frames: label, Baseline: true}
	frag := int64(node.FragmentCeiling(wire.MaxFrameLen))
	var echoCPU time.Duration
	s.round = func(d time.Duration, _ int64) error {
		echo, err := startEchoCmd(e.bin, hb, -1, "--"+WindowEchoFlag, hb.IfName())
		if err != nil {
			return err
		}
		n, el, err := pipe.round(d)
		if serr := echo.stop(e.raw.near, stopFrame(hb.MAC(), ha.MAC())); err == nil {
			err = serr
		}
		if ps := echo.cmd.ProcessState; ps != nil {
			echoCPU += ps.UserTime() + ps.SystemTime()
		}
		if err != nil {
			return err
		}
		m.ops += n
		m.frames += 2 * n
		m.bytes += n * frag
		m.elapsed += el
		return nil
	}
	s.after = func() error {
		if m.ops > 0 {
			s.res.Note = fmt.Sprintf("%d requests in flight, sendmmsg/recvmmsg batches of up to %d, blocking receive, the echo a process of its own answering each batch with one sendmmsg; MB/s counts %d payload bytes per exchange; CPU per exchange, both sides: %.2f µs (near thread %.2f, echo process %.2f)",
				windowDepth, streamBatch, frag, float64(pipe.cpu+echoCPU)/float64(m.ops)/1e3,
				float64(pipe.cpu)/float64(m.ops)/1e3, float64(echoCPU)/float64(m.ops)/1e3)
		}
		return nil
	}
	return s
}
