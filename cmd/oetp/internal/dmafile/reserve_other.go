//go:build !linux

package dmafile

// reserve does nothing here: see stream_linux.go.
func (o *Output) Reserve(n int64) {}
