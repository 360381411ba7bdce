package bench

import (
	"fmt"
	"strings"
)

// windowRowPrefix starts the name of a windowed raw exchange row (the
// reliable scenario's limit, window_linux.go).
const windowRowPrefix = "raw window"

// windowGoal is the goal of a reliable DMA row against the windowed raw
// exchange: 0.8 from 64 MiB blocks, 0.6 below.
func windowGoal(block int64) float64 {
	if block >= 64<<20 {
		return 0.8
	}
	return 0.6
}

// isWindowRow reports whether r is a windowed exchange row.
func isWindowRow(r *Result) bool { return strings.HasPrefix(r.Name, windowRowPrefix) }

// parallelCallers is the number of goroutines of the parallel RMEM rows,
// and the requests the raw pipelined exchange keeps in flight.
const parallelCallers = 32

// rawParallelName names the raw pipelined RMEM exchange's row, the limit of
// the parallel RMEM rows.
var rawParallelName = fmt.Sprintf("parallel raw 24↔24 ×%d in flight", parallelCallers)

// rmemGoal is the goal of RMEM reads from parallelCallers goroutines
// through the reliable transport against the raw pipelined exchange.
const rmemGoal = 0.8

// windowFloorRowPrefix starts the names of the windowed floor's rows.
const windowFloorRowPrefix = "floor window"
