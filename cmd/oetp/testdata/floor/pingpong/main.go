// Command pingpong is the floor of a request and its reply between two Go
// processes over a Unix socket, for BenchmarkHub: what the hub's hop costs
// before the hub does anything. Default runtime settings, the net package's
// Dial, Read and Write (the runtime's poller), no pinning.
//
//	pingpong echo SOCKET         listen, answer each 16-byte message with itself
//	pingpong client SOCKET N     N round trips; prints {"ops":N,"seconds":S,"p50_ns":P}
//
// The echo prints "ready" once it listens and exits when its client has
// gone.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"time"
)

const msgLen = 16

func main() {
	if len(os.Args) < 3 {
		fail(fmt.Errorf("usage: pingpong echo SOCKET | pingpong client SOCKET N"))
	}
	switch os.Args[1] {
	case "echo":
		fail(echo(os.Args[2]))
	case "client":
		n, err := strconv.Atoi(os.Args[3])
		if err != nil || n < 1 {
			fail(fmt.Errorf("N: %q is not a positive count", os.Args[3]))
		}
		fail(client(os.Args[2], n))
	default:
		fail(fmt.Errorf("unknown mode %q", os.Args[1]))
	}
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
}

func echo(path string) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	c, err := l.Accept()
	if err != nil {
		return err
	}
	l.Close()
	buf := make([]byte, msgLen)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
}

func client(path string, n int) error {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	req, rep := make([]byte, msgLen), make([]byte, msgLen)
	lat := make([]time.Duration, n)
	round := func(i int) error {
		req[0] = byte(i)
		if _, err := c.Write(req); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, rep); err != nil {
			return err
		}
		if rep[0] != req[0] {
			return fmt.Errorf("round %d: reply %d to request %d", i, rep[0], req[0])
		}
		return nil
	}
	for i := range 100 { // warm up, untimed
		if err := round(i); err != nil {
			return err
		}
	}
	t0 := time.Now()
	prev := t0
	for i := range n {
		if err := round(i); err != nil {
			return err
		}
		now := time.Now()
		lat[i] = now.Sub(prev)
		prev = now
	}
	secs := time.Since(t0).Seconds()
	slices.Sort(lat)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"ops": n, "seconds": secs, "p50_ns": lat[n/2].Nanoseconds()})
}
