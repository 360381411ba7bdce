package atexit

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// killDescendants sends SIGKILL to every descendant of this process (the
// servers and echo processes a benchmark runs in its namespaces, which
// would keep the namespaces alive) and waits, up to 300 ms, until they are
// gone: a killed child stays a zombie until reaped, but has left its
// namespaces.
func killDescendants() {
	kids := Descendants(os.Getpid())
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for _, pid := range kids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// Descendants lists the processes below pid, from /proc: what Run stops,
// and what a test checks is gone.
func Descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := parent(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// parent is pid's parent from /proc/PID/stat (the field after the state,
// which follows the command name in parentheses), 0 if unknown.
func parent(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(string(f[1]))
	return pp
}

// alive reports whether pid still runs (a zombie has left its namespaces:
// not alive).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}
