//go:build !race

package main

// raceEnabled is true when the tests run with -race: the oetp binary they
// build is then race-checked too.
const raceEnabled = false
