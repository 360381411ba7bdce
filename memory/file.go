package memory

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// File is a Space backed by a shared mapping of a file covering
// [Base, Base+Size): byte i of the file is address Base+i. Writes are
// visible live to every process that maps or reads the same file, and word
// accesses are atomic across those processes too. Accesses outside the
// range answer DECERR (bulk) or ok=false (word), exactly as for RAM.
//
// File is safe for concurrent use, except that Close must not run
// concurrently with accesses: the mapping disappears. After Close every
// access answers DECERR (bulk) or ok=false (word).
type File struct {
	bytesSpace
	path string

	mu     sync.Mutex    // serializes Close and Sync
	mapped []byte        // the whole mapping; nil once closed
	faults atomic.Uint64 // accesses that took a memory fault
}

var _ Space = (*File)(nil)

// Path returns the path the File was opened with.
func (f *File) Path() string { return f.path }

// The accesses of a File run with the runtime's panic-on-fault set: if the
// file loses its backing while mapped (another process truncates it, its
// filesystem runs out of space for a page first written), the access that
// touches the missing page takes a memory fault (SIGBUS), which would
// otherwise kill the process. Here it answers SLVERR (bulk) or ok=false
// (word): the target exists but failed the access. A bulk access that
// faults may have copied a prefix, as any failed access may.

// ReadAt copies [addr, addr+len(p)) into p, as for RAM; a memory fault
// answers SLVERR.
func (f *File) ReadAt(p []byte, addr uint32) (r Resp) {
	defer onFault(debug.SetPanicOnFault(true), &f.faults, func() { r = SLVERR })
	return f.bytesSpace.ReadAt(p, addr)
}

// WriteAt stores p at [addr, addr+len(p)), as for RAM; a memory fault
// answers SLVERR.
func (f *File) WriteAt(p []byte, addr uint32) (r Resp) {
	defer onFault(debug.SetPanicOnFault(true), &f.faults, func() { r = SLVERR })
	return f.bytesSpace.WriteAt(p, addr)
}

// ReadWord reads the word at addr atomically, as for RAM; a memory fault
// reports ok=false.
func (f *File) ReadWord(addr uint32) (data uint32, ok bool) {
	defer onFault(debug.SetPanicOnFault(true), &f.faults, func() { data, ok = 0, false })
	return f.bytesSpace.ReadWord(addr)
}

// WriteWord writes the masked word at addr atomically, as for RAM; a memory
// fault reports ok=false.
func (f *File) WriteWord(addr uint32, data, mask uint32) (ok bool) {
	defer onFault(debug.SetPanicOnFault(true), &f.faults, func() { ok = false })
	return f.bytesSpace.WriteWord(addr, data, mask)
}

// Touch warms the cache lines of an access, as for RAM; a memory fault
// stops it quietly (the access that follows answers SLVERR).
func (f *File) Touch(addr uint32, n int) (touched int) {
	defer onFault(debug.SetPanicOnFault(true), &f.faults, func() { touched = 0 })
	return f.bytesSpace.Touch(addr, n)
}

// Faults returns the number of accesses that took a memory fault since the
// File was opened.
func (f *File) Faults() uint64 { return f.faults.Load() }

// onFault is deferred by every access of a File with the previous
// panic-on-fault setting: it restores the setting and turns a memory fault
// into the access's error answer (set by answer), counting it in n. Any
// other panic continues.
func onFault(old bool, n *atomic.Uint64, answer func()) {
	debug.SetPanicOnFault(old)
	e := recover()
	if e == nil {
		return
	}
	if re, ok := e.(runtime.Error); ok {
		if _, ok := re.(interface{ Addr() uintptr }); ok {
			n.Add(1)
			answer()
			return
		}
	}
	panic(e)
}
