package memory

import "sync"

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

	mu     sync.Mutex // serializes Close and Sync
	mapped []byte     // the whole mapping; nil once closed
}

var _ Space = (*File)(nil)

// Path returns the path the File was opened with.
func (f *File) Path() string { return f.path }
