//go:build !race

package testutil

// Race reports whether the test binary has the race detector.
const Race = false
