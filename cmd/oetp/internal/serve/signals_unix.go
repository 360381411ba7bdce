//go:build unix

package serve

import (
	"os"
	"syscall"
)

// statsSignals make `serve` print its counters.
var statsSignals = []os.Signal{syscall.SIGUSR1}
