//go:build !linux

package main

// reserve does nothing here: see stream_linux.go.
func (o *dmaOutput) reserve(n int64) {}
