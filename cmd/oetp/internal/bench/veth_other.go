//go:build !linux

package bench

import "runtime"

func vethUnavailable() string {
	return "the veth scenario needs Linux network namespaces, not " + runtime.GOOS
}

func runVeth(*Options) ([]Result, error) { return nil, nil }

func runReliable(*Options) ([]Result, error) { return nil, nil }
