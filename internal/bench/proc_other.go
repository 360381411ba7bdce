//go:build !linux

package bench

func procUnavailable(*Options) string { return vethUnavailable() }

func runProc(*Options) ([]Result, error) { return nil, nil }
