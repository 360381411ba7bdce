//go:build !linux

package placement

// Set is a set of CPUs.
type Set struct{}

// Count returns 0.
func (Set) Count() int { return 0 }

// IsSet returns false.
func (Set) IsSet(int) bool { return false }

// Set does nothing.
func (*Set) Set(int) {}

// Allowed fails: thread placement needs Linux.
func Allowed() (Set, error) { return Set{}, ErrUnsupported }

// Current returns -1.
func Current() int { return -1 }

// Pin fails: thread placement needs Linux.
func Pin(int, Set) error { return ErrUnsupported }

// Restore fails: thread placement needs Linux.
func Restore(Set) error { return ErrUnsupported }
