//go:build !unix

package serve

import "os"

// statsSignals make `serve` print its counters: none where there is no
// SIGUSR1 (Windows); the counters are printed at exit.
var statsSignals []os.Signal
