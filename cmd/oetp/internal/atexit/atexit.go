// Package atexit undoes what a long command (bench, demo, conformance run)
// made, when a signal ends it before it could undo it itself: the command
// registers each undo (a scratch directory to remove) while the thing
// exists, and the signal handler runs them, stops the processes the
// command started, and exits.
package atexit

import "sync"

var (
	mu    sync.Mutex
	next  int
	undos = map[int]func(){}
)

// Add registers undo; the returned function unregisters it (call it once
// the command has undone the thing itself).
func Add(undo func()) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	id := next
	next++
	undos[id] = undo
	return func() {
		mu.Lock()
		delete(undos, id)
		mu.Unlock()
	}
}

// Run stops every process this process started (and theirs), then runs
// the registered undos, newest first, each once.
func Run() {
	killDescendants()
	mu.Lock()
	ids := make([]int, 0, len(undos))
	for id := range undos {
		ids = append(ids, id)
	}
	fs := make([]func(), 0, len(ids))
	for len(ids) > 0 {
		newest := 0
		for i, id := range ids {
			if id > ids[newest] {
				newest = i
			}
		}
		fs = append(fs, undos[ids[newest]])
		delete(undos, ids[newest])
		ids = append(ids[:newest], ids[newest+1:]...)
	}
	mu.Unlock()
	for _, f := range fs {
		f()
	}
}
