//go:build linux

package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/wire"
)

// The proc scenario's floor rows: the least that any implementation of
// `oetp dma write` or `oetp dma read` against `oetp serve` must do with the
// data, on the same veth pair, as two processes, with no protocol at all.
//
// A DMA write's pinger (this process, as the command) takes each fragment's
// payload from a source file of the block's size, in the page cache as the
// command's --in is, into the frame it sends; the echo (a process of its
// own, as serve is) copies the payload into a region of the block's size
// before it answers. A DMA read is the mirror: the echo takes the payload
// from its region into the reply, the pinger writes it to an output file.
// Each copy is done the cheapest honest way found (floorCopies): what the
// raw ping-pong, which moves one hot frame and no data, leaves out. The
// engine rows still count against the raw ping-pong; the floor is printed
// beside them. A floor below the target ratio at a block size is the proof
// that the target there is beyond any implementation on this medium.

// FloorFlag is the hidden flag of `oetp bench` that makes the raw echo
// process (RawEchoFlag) the floor rows' echo: its value is a floorSpec.
const FloorFlag = "raw-echo-floor"

// floorSpec is how the floor echo holds and moves its region: its size,
// and the ways of its copies.
type floorSpec struct {
	size int
	// huge: the region is an anonymous mapping with MADV_HUGEPAGE, not a
	// Go heap slice (whose pages are 4 KiB with THP on madvise).
	huge bool
	// gather: a read reply is sent with writev from the header, the
	// region and the tail, instead of being copied into a frame first.
	gather bool
}

func (f floorSpec) String() string {
	s := strconv.Itoa(f.size)
	if f.huge {
		s += ",huge"
	}
	if f.gather {
		s += ",gather"
	}
	return s
}

func parseFloorSpec(s string) (floorSpec, error) {
	var f floorSpec
	parts := strings.Split(s, ",")
	n, err := strconv.Atoi(parts[0])
	if err != nil || n <= 0 || n > MaxBlock {
		return f, fmt.Errorf("floor echo %q: want SIZE[,huge][,gather] with SIZE 1..%d bytes", s, MaxBlock)
	}
	f.size = n
	for _, p := range parts[1:] {
		switch p {
		case "huge":
			f.huge = true
		case "gather":
			f.gather = true
		default:
			return f, fmt.Errorf("floor echo %q: unknown option %q (huge, gather)", s, p)
		}
	}
	return f, nil
}

// floorFill is byte i of the floor echo's region as it starts: not
// procPattern, so that a write floor that moved nothing fails its check.
func floorFill(i int) byte { return byte(i*7 + 3) }

// floorRegion returns the echo's region of f.size bytes filled with
// floorFill (so that its pages are faulted in before the first round
// trip), and the function that releases it.
func floorRegion(f floorSpec) ([]byte, func(), error) {
	var b []byte
	release := func() {}
	if f.huge {
		m, err := unix.Mmap(-1, 0, f.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, nil, fmt.Errorf("floor region: %w", os.NewSyscallError("mmap", err))
		}
		_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
		b, release = m, func() { _ = unix.Munmap(m) }
	} else {
		b = make([]byte, f.size)
	}
	for i := range b {
		b[i] = floorFill(i)
	}
	return b, release, nil
}

// FloorEcho runs the floor rows' echo in this process on interface ifname
// of its network namespace, as RawEcho does, with the region spec names
// (a floorSpec): it copies each DMA_WRITE_REQ's payload into the region at
// the request's address (from remoteBase) before it answers with a
// DMA_WRITE_RSP, and answers each DMA_READ_REQ with a DMA_READ_RSP
// carrying the region's bytes at its address. It checks nothing of the
// protocol but that a request fits the region (one that does not is
// ignored). At the stop frame, or within the read timeout once stdin
// reaches its end, it writes "crc32 %08x" of the whole region to ready,
// then "cpu NS FRAMES": the CPU time of its loop's thread and the requests
// it answered, and returns.
func FloorEcho(ifname, spec string, stdin io.Reader, ready io.Writer) error {
	f, err := parseFloorSpec(spec)
	if err != nil {
		return err
	}
	s, far, err := openEchoSock("floor echo", ifname)
	if err != nil {
		return err
	}
	defer s.close()
	region, release, err := floorRegion(f)
	if err != nil {
		return err
	}
	defer release()
	s.drain()
	e := &floorEcho{s: s, region: region, gather: f.gather, far: far}
	done := make(chan error, 1)
	go func() { done <- e.loop() }()
	if _, err := fmt.Fprintln(ready, "ready"); err != nil {
		e.stop.Store(true)
		<-done
		return err
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		e.stop.Store(true)
	}()
	err = <-done
	if _, werr := fmt.Fprintf(ready, "crc32 %08x\ncpu %d %d\n", crc32.ChecksumIEEE(region), e.cpu, e.answered); err == nil {
		err = werr
	}
	return err
}

// floorEcho is the floor echo's loop state.
type floorEcho struct {
	s      *rawSock
	region []byte
	gather bool
	far    wire.MAC
	stop   atomic.Bool
	// cpu is the loop thread's CPU time in ns and answered the requests
	// it answered, set when the loop returns.
	cpu, answered int64
}

// The offsets of the DMA frames' fields (wire's layout).
const (
	floorAddrOff  = wire.ParamOffset + 4 // Addr of DMA_WRITE_REQ and DMA_READ_REQ
	floorLenOff   = wire.ParamOffset + 8 // Length
	floorWriteHdr = wire.ParamOffset + 12
	floorReadHdr  = wire.ParamOffset + 4
)

func (e *floorEcho) loop() error {
	if err := lockThread(-1); err != nil {
		return err
	}
	defer func() { e.cpu = threadCPU() }()
	buf := make([]byte, 9216)
	wrsp := retype(wire.AppendDMAWriteRsp(nil, wire.MAC{}, e.far, 0))
	out := make([]byte, 0, 9216)
	var iov [3]unix.Iovec
	for {
		n, err := e.s.read(buf)
		if err == errRawTimeout {
			if e.stop.Load() {
				return nil
			}
			continue
		}
		if err != nil {
			return err
		}
		if n < wire.ParamOffset {
			continue
		}
		if buf[15] == stopCmd {
			return nil
		}
		if n < floorLenOff+4 {
			continue
		}
		switch buf[15] {
		case byte(wire.DMAWriteReq):
			off, l, ok := e.span(buf)
			if !ok || n < floorWriteHdr+l {
				continue
			}
			copy(e.region[off:off+l], buf[floorWriteHdr:floorWriteHdr+l])
			copy(wrsp[:6], buf[6:12])
			copy(wrsp[wire.ParamOffset:wire.ParamOffset+4], buf[wire.ParamOffset:])
			if err := e.s.write(wrsp); err != nil {
				return err
			}
			e.answered++
		case byte(wire.DMAReadReq):
			off, l, ok := e.span(buf)
			if !ok {
				continue
			}
			var dst wire.MAC
			copy(dst[:], buf[6:12])
			rid := binary.LittleEndian.Uint32(buf[wire.ParamOffset:])
			frame, data := wire.GrowDMAReadRsp(out[:0], dst, e.far, rid, uint32(l))
			frame[12], frame[13] = rawEtherType>>8, rawEtherType&0xff
			if !e.gather {
				copy(data, e.region[off:off+l])
				err = e.s.write(frame)
			} else {
				err = e.s.writev(&iov, frame[:floorReadHdr], e.region[off:off+l], frame[floorReadHdr+l:])
			}
			if err != nil {
				return err
			}
			e.answered++
		}
	}
}

// threadCPU returns the calling thread's CPU time in ns (0 if unknown).
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// span returns the region offset and length a DMA request names, and
// whether they fit the region.
func (e *floorEcho) span(buf []byte) (off, l int, ok bool) {
	a := binary.LittleEndian.Uint32(buf[floorAddrOff:])
	n := binary.LittleEndian.Uint32(buf[floorLenOff:])
	if a < remoteBase || n == 0 || n > wire.MaxFragment || uint64(a-remoteBase)+uint64(n) > uint64(len(e.region)) {
		return 0, 0, false
	}
	return int(a - remoteBase), int(n), true
}

// writev sends one frame gathered from the three parts with writev(2),
// through iov (the caller's, so that nothing escapes per frame).
func (s *rawSock) writev(iov *[3]unix.Iovec, a, b, c []byte) error {
	parts := [3][]byte{a, b, c}
	cnt := 0
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		iov[cnt].Base = &p[0]
		iov[cnt].SetLen(len(p))
		cnt++
	}
	for {
		_, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(s.fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(cnt))
		runtime.KeepAlive(parts)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return os.NewSyscallError("writev", errno)
	}
}

// The floor pinger's copies (floorCopies): how a write takes its source
// and how a read puts its output.
const (
	floorPread   = "pread"   // pread(2) of the source into the frame
	floorGather  = "mmap"    // writev(2) of the header, an mmap of the source, the tail
	floorPwrite  = "pwrite"  // pwrite(2) of the reply's payload to the output
	floorMmapOut = "mmapout" // copy into an mmap of the output, fallocated and sized first
)

// floorCopies are the copies of the floor rows, by operation: the
// pinger's way and the echo's region. They are the cheapest measured on
// this VM (docs/benchmarks.md; Options.FloorWays measures the
// others): for writes pread into the frame (a gather send from an mmap of
// the source, its mapping counted, was the same within the noise); for
// reads pwrite (an mmap'd output is slower); a Go heap region (huge pages
// gained nothing), read replies copied (gathered from the region gained
// nothing).
var floorCopies = map[string]floorWay{
	opDMAWrite: {pinger: floorPread},
	opDMARead:  {pinger: floorPwrite},
}

// floorWays returns every way of op's floor copies.
func floorWays(op string) []floorWay {
	var out []floorWay
	pingers := []string{floorPread, floorGather}
	gathers := []bool{false}
	if op == opDMARead {
		pingers, gathers = []string{floorPwrite, floorMmapOut}, []bool{false, true}
	}
	for _, pg := range pingers {
		for _, huge := range []bool{false, true} {
			for _, g := range gathers {
				out = append(out, floorWay{pinger: pg, huge: huge, gather: g})
			}
		}
	}
	return out
}

// floorWay is one way of doing a floor row's copies.
type floorWay struct {
	pinger string // floorPread, floorGather, floorPwrite or floorMmapOut
	huge   bool   // the echo's region has huge pages (floorSpec.huge)
	gather bool   // the echo sends read replies from its region (floorSpec.gather)
}

func (w floorWay) String() string {
	s := w.pinger
	if w.huge {
		s += "+huge"
	}
	if w.gather {
		s += "+gather"
	}
	return s
}

// floorNote says what a floor row does.
func floorNote(op string, w floorWay) string {
	region := "a Go heap slice"
	if w.huge {
		region = "an anonymous mapping with MADV_HUGEPAGE"
	}
	var how string
	switch w.pinger {
	case floorPread:
		how = "the pinger preads each fragment's payload from a source file of the block's size (in the page cache, as dma write's --in) into its frame"
	case floorGather:
		how = "the pinger sends each fragment with writev from its header, an mmap of a source file of the block's size (in the page cache, as dma write's --in; mapped with MAP_POPULATE and unmapped within each block, timed) and the frame's tail"
	case floorPwrite:
		how = "the pinger pwrites each reply's payload to an output file (truncated and fallocated to the block's size before each block, untimed)"
	case floorMmapOut:
		how = "the pinger copies each reply's payload into an mmap of an output file (truncated, fallocated and sized before each block, untimed)"
	}
	if op == opDMAWrite {
		return fmt.Sprintf("floor: the least any dma write must do with the data, no protocol: %s; the echo, a process of its own as serve is, copies the payload into its region (%s, the block's size, prefaulted) before it answers", how, region)
	}
	send := "copies the payload from its region into the reply frame"
	if w.gather {
		send = "sends each reply with writev from its header, its region and its tail"
	}
	return fmt.Sprintf("floor: the least any dma read must do with the data, no protocol: the echo, a process of its own as serve is, %s (%s, the block's size, prefaulted); %s", send, region, how)
}

// floorStep returns the floor row of op on blocks of n bytes, with both
// sides pinned to cpu or free (cpu negative), done way w.
func (p *procEnv) floorStep(op string, n, cpu int, w floorWay) *step {
	v := p.raw
	where := "any CPU"
	if cpu >= 0 {
		where = "one CPU"
	}
	res := engineResult(ScenarioProc, op, n)
	s := &step{m: newMeter(true)}
	s.res = Result{Scenario: ScenarioProc, Name: "floor " + op + " " + where, Block: int64(n), Frames: res.Frames, Baseline: true, Info: true}
	if w != floorCopies[op] {
		s.res.Name += " " + w.String()
	}
	spec := floorSpec{size: n, huge: w.huge, gather: w.gather}
	frames, bytes := opCounts(op, n)
	want := p.floorWant(op, n)
	var used floorCPU
	s.round = func(d time.Duration, maxOps int64) error {
		echo, err := p.startFloorEcho(cpu, spec)
		if err != nil {
			return err
		}
		err = onThread(cpu, func() error {
			fp, err := p.newFloorPinger(op, n, w.pinger)
			if err != nil {
				return err
			}
			defer fp.close()
			v.near.drain()
			return fp.run(s.m, &used, d, maxOps, frames, bytes)
		})
		out, serr := echo.stopOut(v.near, stopFrame(v.farMAC, v.nearMAC))
		if err == nil {
			err = serr
		}
		if err == nil {
			err = checkFloorCRC(op, n, out, want)
		}
		used.addEcho(out)
		return err
	}
	s.after = func() error {
		s.res.Note = floorNote(op, w) + used.String()
		if op == opDMARead {
			return checkFloorOut(p.floorOutPath(n), n)
		}
		return nil
	}
	return s
}

// floorCPU is the CPU time of a floor row's two sides: the pinger's thread
// over the timed blocks, the echo's loop thread over its whole life (the
// warm-up block included), and the fragments of each.
type floorCPU struct {
	pinger, pingerFrags int64
	echo, echoFrags     int64
}

// addEcho adds the "cpu NS FRAMES" line of an echo process's output.
func (c *floorCPU) addEcho(out string) {
	for _, l := range strings.Split(out, "\n") {
		var ns, frags int64
		if _, err := fmt.Sscanf(l, "cpu %d %d", &ns, &frags); err == nil && frags > 0 {
			c.echo += ns
			c.echoFrags += frags
		}
	}
}

// String is the note's figure of CPU per fragment, or "".
func (c *floorCPU) String() string {
	if c.pingerFrags == 0 || c.echoFrags == 0 {
		return ""
	}
	return fmt.Sprintf("; CPU per fragment: pinger %.2f µs, echo %.2f µs", float64(c.pinger)/1e3/float64(c.pingerFrags), float64(c.echo)/1e3/float64(c.echoFrags))
}

// floorWant is the CRC-32 the floor echo's region has after a round of
// op on n bytes: the source's pattern after writes, its own fill after
// reads.
func (p *procEnv) floorWant(op string, n int) uint32 {
	var crc uint32
	var b [4096]byte
	for off := 0; off < n; off += len(b) {
		m := min(len(b), n-off)
		for i := range m {
			if op == opDMAWrite {
				b[i] = procPattern(off + i)
			} else {
				b[i] = floorFill(off + i)
			}
		}
		crc = crc32.Update(crc, crc32.IEEETable, b[:m])
	}
	return crc
}

func checkFloorCRC(op string, n int, out string, want uint32) error {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "crc32 "); ok {
			got, err := strconv.ParseUint(strings.TrimSpace(v), 16, 32)
			if err == nil && uint32(got) == want {
				return nil
			}
			return fmt.Errorf("floor %s of %d bytes: the echo's region has CRC-32 %s, want %08x", op, n, strings.TrimSpace(v), want)
		}
	}
	return fmt.Errorf("floor %s of %d bytes: the echo reported no CRC of its region: %q", op, n, out)
}

// checkFloorOut checks that the floor read's output file holds the echo's
// region as it started.
func checkFloorOut(path string, n int) error {
	err := checkFile(path, n, func(off int, b []byte) {
		for j := range b {
			b[j] = floorFill(off + j)
		}
	})
	if m := (*fileMismatch)(nil); errors.As(err, &m) && m.Off < 0 {
		return fmt.Errorf("floor dma-read of %d bytes: the output holds %d bytes", n, m.Size)
	} else if m != nil {
		return fmt.Errorf("floor dma-read of %d bytes: output byte %d is %#x, the echo's region holds %#x", n, m.Off, m.Got, m.Want)
	}
	return err
}

func (p *procEnv) floorOutPath(n int) string {
	return filepath.Join(p.dir, fmt.Sprintf("floor-out-%d.bin", n))
}

// startFloorEcho starts a FloorEcho process on the far host, as
// startRawEcho does.
func (p *procEnv) startFloorEcho(cpu int, spec floorSpec) (*rawProc, error) {
	return p.startEchoProc(cpu, "--"+FloorFlag, spec.String())
}

// floorPinger is the near side of a floor row: one block at a time, each
// fragment one request and one reply, with blocking system calls on a
// locked thread.
type floorPinger struct {
	s      *rawSock
	op     string
	way    string
	n      int
	near   wire.MAC
	far    wire.MAC
	frame  []byte
	buf    []byte
	iov    [3]unix.Iovec
	file   *os.File // the source (writes) or the output (reads)
	fd     int
	src    []byte // the source's mmap (floorGather)
	dst    []byte // the output's mmap of the current block (floorMmapOut)
	tmpl   []byte // the read request
	rspLen int    // a write's reply
}

func (p *procEnv) newFloorPinger(op string, n int, way string) (*floorPinger, error) {
	v := p.raw
	fp := &floorPinger{s: v.near, op: op, way: way, n: n, near: v.nearMAC, far: v.farMAC,
		frame: make([]byte, 0, 9216), buf: make([]byte, 9216), fd: -1}
	var err error
	switch op {
	case opDMAWrite:
		if fp.file, err = os.Open(p.srcPath(n)); err != nil {
			return nil, err
		}
		fp.fd = int(fp.file.Fd())
		fp.rspLen = len(wire.AppendDMAWriteRsp(nil, fp.near, fp.far, 0))
	case opDMARead:
		if fp.file, err = os.OpenFile(p.floorOutPath(n), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
			return nil, err
		}
		fp.fd = int(fp.file.Fd())
		fp.tmpl = retype(wire.AppendDMAReadReq(nil, fp.far, fp.near, 0, 0, 0))
	}
	return fp, nil
}

func (fp *floorPinger) close() {
	if fp.src != nil {
		_ = unix.Munmap(fp.src)
	}
	if fp.dst != nil {
		_ = unix.Munmap(fp.dst)
	}
	if fp.file != nil {
		fp.file.Close()
	}
}

// run times blocks for about d (at least procMinOps, at most maxOps),
// each alone: a read's output is prepared before each block, untimed.
func (fp *floorPinger) run(m *meter, c *floorCPU, d time.Duration, maxOps, frames, bytes int64) error {
	// Warm up: one block, the caches and page tables as in steady state.
	if err := fp.prepare(); err != nil {
		return err
	}
	if err := fp.block(); err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	defer func() {
		runtime.ReadMemStats(&ms)
		m.mallocs += ms.Mallocs - mallocs
	}()
	start := time.Now()
	for i := int64(0); i < maxOps && (i < procMinOps || time.Since(start) < d); i++ {
		if err := fp.prepare(); err != nil {
			return err
		}
		c0 := threadCPU()
		t0 := time.Now()
		if err := fp.block(); err != nil {
			m.fail()
			if m.failed >= maxFail {
				return err
			}
			continue
		}
		m.record(time.Since(t0), frames, bytes)
		c.pinger += threadCPU() - c0
		c.pingerFrags += frames / 2
	}
	return nil
}

// prepare readies a read's output for the next block as `oetp dma read`
// does before its operation: an empty file with n bytes reserved
// (FALLOC_FL_KEEP_SIZE), and for floorMmapOut sized to n and mapped.
func (fp *floorPinger) prepare() error {
	if fp.op != opDMARead {
		return nil
	}
	if fp.dst != nil {
		if err := unix.Munmap(fp.dst); err != nil {
			return os.NewSyscallError("munmap", err)
		}
		fp.dst = nil
	}
	if err := fp.file.Truncate(0); err != nil {
		return err
	}
	_ = unix.Fallocate(fp.fd, unix.FALLOC_FL_KEEP_SIZE, 0, int64(fp.n))
	if fp.way == floorMmapOut {
		if err := fp.file.Truncate(int64(fp.n)); err != nil {
			return err
		}
		m, err := unix.Mmap(fp.fd, 0, fp.n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("floor output: %w", os.NewSyscallError("mmap", err))
		}
		fp.dst = m
	}
	return nil
}

// block moves one block, fragment by fragment. With floorGather it maps
// the source first (MAP_POPULATE) and unmaps it after, as a command that
// sends one block from an mmap must: the mapping's page tables are part of
// its cost.
func (fp *floorPinger) block() error {
	if fp.way == floorGather {
		m, err := unix.Mmap(fp.fd, 0, fp.n, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("floor source: %w", os.NewSyscallError("mmap", err))
		}
		fp.src = m
		defer func() {
			_ = unix.Munmap(m)
			fp.src = nil
		}()
	}
	for off := 0; off < fp.n; off += wire.MaxFragment {
		l := min(wire.MaxFragment, fp.n-off)
		var err error
		if fp.op == opDMAWrite {
			err = fp.writeFragment(off, l)
		} else {
			err = fp.readFragment(off, l)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (fp *floorPinger) writeFragment(off, l int) error {
	frame, data := wire.GrowDMAWriteReq(fp.frame[:0], fp.far, fp.near, uint32(off), remoteBase+uint32(off), uint32(l))
	frame[12], frame[13] = rawEtherType>>8, rawEtherType&0xff
	var err error
	if fp.way == floorGather {
		err = fp.s.writev(&fp.iov, frame[:floorWriteHdr], fp.src[off:off+l], frame[floorWriteHdr+l:])
	} else {
		if err = preadFull(fp.fd, data, int64(off)); err != nil {
			return err
		}
		err = fp.s.write(frame)
	}
	if err != nil {
		return err
	}
	_, err = fp.reply(fp.rspLen)
	return err
}

func (fp *floorPinger) readFragment(off, l int) error {
	req := fp.tmpl
	binary.LittleEndian.PutUint32(req[wire.ParamOffset:], uint32(off))
	binary.LittleEndian.PutUint32(req[floorAddrOff:], remoteBase+uint32(off))
	binary.LittleEndian.PutUint32(req[floorLenOff:], uint32(l))
	if err := fp.s.write(req); err != nil {
		return err
	}
	rsp, err := fp.reply(wire.FrameLen(wire.DMAReadRsp, uint32(l)))
	if err != nil {
		return err
	}
	payload := rsp[floorReadHdr : floorReadHdr+l]
	if fp.way == floorMmapOut {
		copy(fp.dst[off:off+l], payload)
		return nil
	}
	return pwriteFull(fp.fd, payload, int64(off))
}

// reply waits for a reply of n bytes; frames of another length (late
// replies of an earlier exchange) are skipped.
func (fp *floorPinger) reply(n int) ([]byte, error) {
	for {
		m, err := fp.s.read(fp.buf)
		if err != nil {
			return nil, err
		}
		if m == n {
			return fp.buf[:m], nil
		}
	}
}

func preadFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pread(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("pread", err)
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

func pwriteFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("pwrite", err)
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// stopOut is stop, returning what the echo process wrote after its ready
// line.
func (r *rawProc) stopOut(from *rawSock, stop []byte) (string, error) {
	err := r.stop(from, stop)
	return r.out.String(), err
}
