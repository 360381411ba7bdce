//go:build !linux

package dmafile

// reserve does nothing here: see reserve_linux.go.
func (o *Output) reserve(n int64) {}
