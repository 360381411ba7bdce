//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
)

// processMasks returns the affinity of every thread of process pid.
func processMasks(pid int) (map[int]unix.CPUSet, error) {
	names, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	out := map[int]unix.CPUSet{}
	for _, d := range names {
		tid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil {
			out[tid] = s
		}
	}
	return out, nil
}

// onOneCPU reports whether every thread of the process may run on one and
// the same CPU only.
func onOneCPU(masks map[int]unix.CPUSet) bool {
	var first *unix.CPUSet
	for _, s := range masks {
		if s.Count() != 1 || first != nil && s != *first {
			return false
		}
		first = &s
	}
	return first != nil
}

// TestPlacementOverVeth: with the default --placement auto, serve follows
// its client's CPU (every thread on that one CPU once a DMA write has
// come in, cpu_moves counted, placement=auto in the ready line) and a
// one-shot dma write keeps every thread on one CPU while it runs; with
// --placement off neither process changes any thread's affinity.
func TestPlacementOverVeth(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	if mine.Count() < 2 {
		t.Skipf("the test may run on %d CPU: nothing to place", mine.Count())
	}
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.bin")
	writeFile(t, in, make([]byte, 1<<20))
	for _, place := range []string{"auto", "off"} {
		t.Run(place, func(t *testing.T) {
			tn := netns.NewPair(t)
			h1, h2 := tn.Host(0), tn.Host(1)
			srv := startServe(t, bin, h1, "--iface", "eth0", "--region", "0:1M", "--peer", netClient+",mode=dma-write",
				"--json-events", "--placement", place)
			if !strings.Contains(srv.stderr.String(), "placement="+place) {
				t.Errorf("ready line does not say placement=%s:\n%s", place, srv.stderr.String())
			}
			start, err := processMasks(srv.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			// A paced write lasts about 0.5 s: long enough to look at
			// the one-shot's threads while it runs.
			cmd := h2.Command(bin, "dma", "write", "--iface", "eth0", "--peer", netServer, "--addr", "0", "--in", in,
				"--rate", "2M", "--json", "--placement", place)
			var out, errOut syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			client := map[int]unix.CPUSet{}
			clientPlaced := false
			for running := true; running; {
				select {
				case <-exited:
					running = false
				case <-time.After(5 * time.Millisecond):
					if m, err := processMasks(cmd.Process.Pid); err == nil && len(m) > 0 {
						if onOneCPU(m) {
							clientPlaced = true
						}
						for tid, s := range m {
							client[tid] = s
						}
					}
				}
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(out.String(), `"ok":true`) {
				t.Fatalf("dma write: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
			}
			masks, err := processMasks(srv.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			moves := srv.stats()["cpu_moves"]
			if place == "auto" {
				if !onOneCPU(masks) {
					t.Errorf("serve after a 1 MiB write: its threads are not all on one CPU: %v", masks)
				}
				if moves == nil || moves.(float64) < 1 {
					t.Errorf("serve's cpu_moves %v after the write, want at least 1", moves)
				}
				if !clientPlaced {
					t.Errorf("the dma write's threads were never all on one CPU while it ran: %v", client)
				}
				return
			}
			main := start[serveMain(start)]
			for tid, s := range masks {
				if s != main {
					t.Errorf("--placement off: serve thread %d may run on %d CPUs, its main thread on %d", tid, s.Count(), main.Count())
				}
			}
			if moves != float64(0) {
				t.Errorf("--placement off: cpu_moves %v, want 0", moves)
			}
			for tid, s := range client {
				if s.Count() < 2 {
					t.Errorf("--placement off: the dma write's thread %d ran on %d CPU", tid, s.Count())
				}
			}
		})
	}
}

// serveMain returns the lowest thread ID: the process's main thread.
func serveMain(m map[int]unix.CPUSet) int {
	low := -1
	for tid := range m {
		if low < 0 || tid < low {
			low = tid
		}
	}
	return low
}
