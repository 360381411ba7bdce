//go:build !linux

package netns

import (
	"errors"
	"fmt"
	"runtime"
)

var errNoNetns = fmt.Errorf("netns: network namespaces need Linux, not %s: %w", runtime.GOOS, errors.ErrUnsupported)

type nsHandle struct{}

func (*nsHandle) do(func() error) error    { return errNoNetns }
func (*nsHandle) path() string             { return "" }
func (*nsHandle) setMTU(string, int) error { return errNoNetns }
func (*nsHandle) setUp(string, bool) error { return errNoNetns }
func (*nsHandle) close() error             { return nil }

func build(Topology) (*Net, error) { return nil, errNoNetns }

// Available reports why test networks cannot be built here: they need Linux.
func Available() error { return errNoNetns }
