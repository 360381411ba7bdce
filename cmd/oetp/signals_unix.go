//go:build unix

package main

import (
	"os"
	"syscall"
)

// statsSignals make `serve` print its counters.
var statsSignals = []os.Signal{syscall.SIGUSR1}
