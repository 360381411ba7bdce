// Package dmafile streams the files of `oetp dma write --in` and `dma read
// --out`: nothing holds a whole block in memory, whatever its size.
//
// A regular file is a memory.Space the engine itself reads or writes
// fragment by fragment, in one DMA block; the space reads ahead and
// gathers writes a chunk (128 KiB) at a time. A pipe,
// FIFO or terminal has no size and no offsets: `dma write` reads it in
// chunks of a whole number of fragments and sends each chunk as a block of
// its own, so the wire carries exactly the fragments one block would;
// `dma read` writes the fragments to it in order as they arrive.
package dmafile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// streamChunk is the size of a chunk read from a pipe, rounded down to a
// whole number of fragments.
const streamChunk = 4 << 20

// wholeSpace is the size of the whole 32-bit address space.
const wholeSpace = uint64(1) << 32

// fileSpace is an *os.File as a memory.Space: address a is file offset
// base+a. When failed is set, it keeps the first write error there: the
// engine's code for it (LOCAL_AXI_WR_SLVERR) does not say "no space left
// on device".
type fileSpace struct {
	f      *os.File
	base   int64
	failed *firstError
}

// firstError keeps the first error set.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (e *firstError) set(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

func (e *firstError) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (s fileSpace) ReadAt(p []byte, addr uint32) memory.Resp {
	if _, err := s.f.ReadAt(p, s.base+int64(addr)); err != nil {
		return memory.SLVERR // a read error, or the file shrank
	}
	return memory.OKAY
}

func (s fileSpace) WriteAt(p []byte, addr uint32) memory.Resp {
	if _, err := s.f.WriteAt(p, s.base+int64(addr)); err != nil {
		if s.failed != nil {
			s.failed.set(cli.OSError(err))
		}
		return memory.SLVERR
	}
	return memory.OKAY
}

func (s fileSpace) ReadWord(addr uint32) (uint32, bool) {
	var b [4]byte
	ok := s.ReadAt(b[:], addr) == memory.OKAY
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, ok
}

func (s fileSpace) WriteWord(addr, data, mask uint32) bool { return false } // DMA only

// seqSpace is a writer that takes bytes in order (a pipe, a FIFO) as a
// memory.Space for DMAReadInto, which writes each fragment once, in order.
// The first error sticks.
type seqSpace struct {
	w    io.Writer
	next uint32
	err  error
}

func (s *seqSpace) WriteAt(p []byte, addr uint32) memory.Resp {
	if s.err == nil && addr != s.next {
		s.err = fmt.Errorf("out of order write at offset %d, want %d", addr, s.next)
	}
	if s.err == nil {
		_, s.err = s.w.Write(p)
	}
	if s.err != nil {
		return memory.SLVERR
	}
	s.next += uint32(len(p))
	return memory.OKAY
}

func (s *seqSpace) ReadAt(p []byte, addr uint32) memory.Resp      { return memory.SLVERR }
func (s *seqSpace) ReadWord(addr uint32) (uint32, bool)           { return 0, false }
func (s *seqSpace) WriteWord(addr uint32, data, mask uint32) bool { return false }

// Input is the opened --in.
type Input struct {
	Name  string   // as errors name it: the path, or "standard input"
	File  *os.File // a regular file: read at offsets; nil for a stream
	Base  int64    // file offset of the first byte
	Size  int64    // bytes, when File != nil
	r     io.Reader
	close func()
}

// Close closes the input's file, if the command opened one.
func (in *Input) Close() { in.close() }

// Space is the regular file's bytes as a memory.Space from address 0 (nil
// for a stream).
func (in *Input) Space() memory.Space {
	if in.File == nil {
		return nil
	}
	return fileSpace{f: in.File, base: in.Base}
}

// OpenInput opens --in (- for standard input) and, for a regular file,
// checks its size against the address space from addr before anything is
// read. Its errors are usage errors.
func OpenInput(stdin io.Reader, in string, addr uint32) (*Input, error) {
	d := &Input{Name: in, r: stdin, close: func() {}}
	if in == "-" {
		d.Name = "standard input"
		if f, ok := stdin.(*os.File); ok {
			d.File = f
		}
	} else {
		f, err := os.Open(in)
		if err != nil {
			return nil, cli.Usagef("--in %s", cli.FileWords(err))
		}
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, cli.Usagef("--in %s is a directory: give a file (or - for standard input)", in)
		}
		d.r, d.File, d.close = f, f, func() { f.Close() }
	}
	if d.File != nil {
		st, err := d.File.Stat()
		if err != nil {
			d.close()
			return nil, cli.Usagef("--in %s: %v", d.Name, err)
		}
		if !st.Mode().IsRegular() {
			d.File = nil // a pipe, FIFO or device: read in chunks
			return d, nil
		}
		if in == "-" {
			if d.Base, err = d.File.Seek(0, io.SeekCurrent); err != nil {
				d.Base = 0
			}
		}
		d.Size = st.Size() - d.Base
		if d.Size <= 0 {
			d.close()
			return nil, cli.Usagef("--in %s is empty: a DMA block carries at least one byte", d.Name)
		}
		if room := wholeSpace - uint64(addr); uint64(d.Size) > room {
			d.close()
			return nil, cli.Usagef("--in %s holds %d bytes: from --addr %#x they end past the 4 GiB address space (room for %d bytes)", d.Name, d.Size, addr, room)
		}
	}
	return d, nil
}

// FragmentSize is the fragment size the endpoint's blocks use.
func FragmentSize(ep *endpoint.Endpoint) int {
	c := ep.Config()
	return max(4, int(min(c.MaxFragment&^3, wire.FragmentCeiling(c.MaxFrame))))
}

// add accumulates the transfer of one block.
func add(t *endpoint.Transfer, b endpoint.Transfer) {
	t.Bytes += b.Bytes
	t.Fragments += b.Fragments
	t.Retries += b.Retries
}

// WithProgress returns ctx that reports the bytes done of the whole
// transfer to fn (endpoint.WithProgress), also for a transfer Write sends
// as several blocks.
func WithProgress(ctx context.Context, fn func(uint64)) context.Context {
	return context.WithValue(endpoint.WithProgress(ctx, fn), progressKey{}, fn)
}

// progressKey holds the progress function in a context, for blocks that
// report into one transfer at an offset (see WithOffset).
type progressKey struct{}

// WithOffset shifts the progress of a block that starts off bytes into the
// whole transfer that progress draws.
func WithOffset(ctx context.Context, off uint64) context.Context {
	fn, _ := ctx.Value(progressKey{}).(func(uint64))
	if fn == nil || off == 0 {
		return ctx
	}
	return endpoint.WithProgress(ctx, func(done uint64) { fn(off + done) })
}

// Write writes the input to addr: a regular file in one block read
// by the engine (two halves for exactly 4 GiB, which one uint32 length
// cannot express), anything else in chunks.
func Write(ctx context.Context, ep *endpoint.Endpoint, addr uint32, in *Input) (endpoint.Transfer, error) {
	var total endpoint.Transfer
	if in.File != nil {
		for off := int64(0); off < in.Size; {
			n := in.Size - off
			if n > math.MaxUint32 {
				n = 1 << 31 // exactly 4 GiB from address 0
			}
			src := &readSpace{fileSpace: fileSpace{f: in.File, base: in.Base + off}, size: n}
			t, err := ep.DMAWriteFrom(WithOffset(ctx, uint64(off)), 0, addr+uint32(off), src, 0, uint32(n))
			add(&total, t)
			if err != nil {
				return total, err
			}
			off += n
		}
		return total, nil
	}
	frag := FragmentSize(ep)
	err := in.Chunks(addr, streamChunk/frag*frag, func(off uint64, p []byte) error {
		t, err := ep.DMAWrite(WithOffset(ctx, off), 0, addr+uint32(off), p)
		add(&total, t)
		return err
	})
	return total, err
}

// chunks reads a stream input (a pipe, a FIFO, standard input) in chunks of
// chunk bytes and calls write for each with its offset from addr, in order,
// until the input ends or write fails. It refuses input beyond the 4 GiB
// address space (a usage error when nothing was written yet) and empty
// input, and says how many bytes were written before a read error.
func (in *Input) Chunks(addr uint32, chunk int, write func(off uint64, p []byte) error) error {
	buf := make([]byte, chunk)
	var off uint64
	for {
		n, rerr := io.ReadFull(in.r, buf)
		if n > 0 {
			if room := wholeSpace - uint64(addr) - off; uint64(n) > room {
				err := fmt.Errorf("--in %s: more than the %d bytes from --addr %#x to the end of the 4 GiB address space; the first %d bytes were written", in.Name, wholeSpace-uint64(addr), addr, off)
				if off == 0 {
					err = cli.Usagef("%v", err)
				}
				return err
			}
			if err := write(off, buf[:n]); err != nil {
				return err
			}
			off += uint64(n)
		}
		switch {
		case errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF):
			if off == 0 {
				return cli.Usagef("--in %s is empty: a DMA block carries at least one byte", in.Name)
			}
			return nil
		case rerr != nil:
			return fmt.Errorf("--in %s: after %d bytes: %w", in.Name, off, rerr)
		}
	}
}

// Output is the --out of `dma read`: a temporary file beside a regular
// (or new) file, renamed over it once the whole block arrived, so that a
// failed read leaves the old file as it was; or a stream (standard output,
// a FIFO, a device) written in order as the data arrives.
type Output struct {
	path   string
	tmp    *os.File    // regular files
	ws     *writeSpace // tmp as the engine writes it
	w      *seqSpace   // streams
	close  func() error
	failed firstError // the first error writing tmp
}

// OpenOutput checks before anything is sent that --out can be written.
func OpenOutput(stdout io.Writer, out string) (*Output, error) {
	if out == "-" {
		return &Output{path: out, w: &seqSpace{w: stdout}, close: func() error { return nil }}, nil
	}
	st, err := os.Stat(out)
	switch {
	case err == nil && st.IsDir():
		return nil, cli.Usagef("--out %s is a directory: give a file name in it (or - for standard output)", out)
	case err == nil && !st.Mode().IsRegular():
		f, err := os.OpenFile(out, os.O_WRONLY, 0)
		if err != nil {
			return nil, cli.Usagef("--out: %v", err)
		}
		return &Output{path: out, w: &seqSpace{w: f}, close: f.Close}, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, cli.Usagef("--out: %v", err)
	}
	mode := os.FileMode(0o644)
	if err == nil {
		mode = st.Mode().Perm()
		// The directory must take the temporary file, and the file itself
		// must be writable: check both before anything is sent.
		f, err := os.OpenFile(out, os.O_WRONLY, 0)
		if err != nil {
			return nil, cli.Usagef("--out: %v", err)
		}
		f.Close()
	}
	// The temporary file's name is not the user's: errors name --out and
	// its directory.
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".oetp-*")
	if err != nil {
		return nil, cli.Usagef("--out %s: cannot create a file in %s: %v", out, filepath.Dir(out), cli.OSError(err))
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, cli.Usagef("--out %s: %v", out, cli.OSError(err))
	}
	o := &Output{path: out, tmp: tmp, close: func() error { return nil }}
	o.ws = &writeSpace{fileSpace: fileSpace{f: tmp, failed: &o.failed}}
	return o, nil
}

// Reserve says the block is n bytes long: the chunk that holds its last
// byte is written out with it, so that a failed write fails the block.
// For a regular file it also allocates the disk before the read.
func (o *Output) Reserve(n int64) {
	if o.ws != nil {
		o.ws.end = n
	}
	o.reserve(n)
}

// space is where DMAReadInto writes.
func (o *Output) Space() memory.Space {
	if o.tmp != nil {
		return o.ws
	}
	return o.w
}

// writeErr is the first error writing the received data (a full disk), nil
// if none.
func (o *Output) WriteErr() error {
	if o.w != nil {
		return o.w.err
	}
	return o.failed.get()
}

// finish renames the temporary file over --out when ok, or removes it.
func (o *Output) Finish(ok bool) error {
	if o.tmp == nil {
		return o.close()
	}
	name := o.tmp.Name()
	var err error
	if ok && !o.ws.Flush() {
		err = o.failed.get()
	}
	if cerr := o.tmp.Close(); err == nil {
		err = cerr
	}
	o.tmp = nil
	if ok && err == nil {
		if err = os.Rename(name, o.path); err == nil {
			return nil
		}
	}
	os.Remove(name)
	if err != nil {
		return fmt.Errorf("--out %s: %w", o.path, cli.OSError(err))
	}
	return nil
}
