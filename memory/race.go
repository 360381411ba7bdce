//go:build race

package memory

// raceEnabled is true in builds with the race detector; see Touch.
const raceEnabled = true
