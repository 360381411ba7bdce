// Package testutil holds the leaf helpers tests share: contexts, polling,
// patterns, the race detector's flag and the build of the command. It
// imports nothing of the module: the helpers that need the engine or a link
// live beside what they need (endpoint/endpointtest,
// link/afpacket/afpackettest, link/pcap/pcaptest).
//
// It is imported by test files only.
package testutil

import (
	"context"
	"testing"
	"time"
)

// WaitLong bounds every wait; it is only reached when a test is failing.
const WaitLong = 10 * time.Second

// Background is context.Background, short for the many calls of a test.
func Background() context.Context { return context.Background() }

// Eventually polls cond every 200 µs until it holds, for at most WaitLong.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// Pattern returns n bytes that differ from their neighbours and from
// another seed's: byte i is 7*i + seed. A test that writes it and reads it
// back sees a byte moved, lost or doubled.
func Pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}
