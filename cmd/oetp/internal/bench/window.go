package bench

import "strings"

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
