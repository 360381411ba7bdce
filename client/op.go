package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// DeadlineMargin is added to the device's own bound in an operation's
// default deadline: the hub's and the sockets' share.
const DeadlineMargin = 2 * time.Second

// WithContext returns the device with operations that also end when ctx is
// done: the connection is then closed (it cannot carry another request)
// and the operation fails with TIMEOUT, its cause wrapping ctx.Err() and
// ErrHub, and OutcomeUnknown if the request had reached the hub.
func (d *Device) WithContext(ctx context.Context) *Device {
	c := *d
	c.ctx = ctx
	return &c
}

// Deadline is the deadline of an operation on n block bytes (0 for a
// register): Options.OpTimeout if set, else DeadlineMargin plus the
// device's bound for one operation or fragment (its timeout, times its
// tries, within its retry deadline) for every fragment of the block and
// one more. 0 means none: the device waits forever (timeout 0), or
// Options.OpTimeout is negative.
func (d *Device) Deadline(n int) time.Duration {
	switch {
	case d.c.opTimeout < 0:
		return 0
	case d.c.opTimeout > 0:
		return d.c.opTimeout
	case d.Bound == 0:
		return 0
	}
	frags := 1
	if n > 0 && d.MaxFragment > 0 {
		frags += (n + d.MaxFragment - 1) / d.MaxFragment
	}
	return DeadlineMargin + time.Duration(frags)*d.Bound
}

// opState is a device operation in progress; the client's lock is held.
type opState struct {
	d    *Device
	name string // the engine's operation name: "RMEM read", "DMA write", ...
	addr uint32
	dl   time.Duration
	stop func() bool // stops the context's watch; nil without one
}

// begin starts operation name at addr on n block bytes: it sets the
// connection's deadline and watches the device's context.
func (d *Device) begin(name string, addr uint32, n int) opState {
	c := d.c
	c.sent = false
	o := opState{d: d, name: name, addr: addr, dl: d.Deadline(n)}
	if c.err != nil {
		return o
	}
	if o.dl > 0 {
		c.nc.SetDeadline(time.Now().Add(o.dl))
	} else {
		c.nc.SetDeadline(time.Time{})
	}
	if d.ctx != nil && d.ctx.Done() != nil {
		nc := c.nc
		o.stop = context.AfterFunc(d.ctx, func() { interrupt(nc) })
	}
	return o
}

// end finishes the operation: a failure of the connection becomes the
// engine's error, with the outcome the client knows.
func (o *opState) end(err error) error {
	c := o.d.c
	fired := o.stop != nil && !o.stop()
	if fired && c.err == nil {
		// The context ended as the reply arrived: the connection was
		// shut down all the same.
		c.err = &connError{fmt.Errorf("oetp hub: connection to %s: closed when the operation's context ended", c.Path)}
		c.nc.Close()
	}
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) && oe.Op == "" {
		oe.Op = o.name
	}
	var ce *connError
	if !errors.As(err, &ce) {
		return err
	}
	e := &OpError{Op: o.name, Addr: o.addr, Code: wire.CodeLocalAXIS, OutcomeUnknown: c.sent}
	switch {
	case fired:
		e.Code = wire.CodeTimeout
		e.Err = fmt.Errorf("%w (the %w to %s was closed)", context.Cause(o.d.ctx), ErrHub, c.Path)
	case isTimeout(err):
		e.Code = wire.CodeTimeout
		e.Err = fmt.Errorf("%w: no reply from the hub at %s within the operation's deadline of %v (%w)", ErrHub, c.Path, o.dl, endpoint.ErrTimeout)
	case !c.sent:
		e.Err = fmt.Errorf("%w to %s failed before the request reached the hub: %v", ErrHub, c.Path, errors.Unwrap(ce.err))
	default:
		e.Err = fmt.Errorf("%w to %s was lost before the reply: %v", ErrHub, c.Path, errors.Unwrap(ce.err))
	}
	return e
}

// isTimeout reports whether a connection error is a deadline's: the
// runtime's, or a blocking socket's SO_RCVTIMEO / SO_SNDTIMEO.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.EAGAIN)
}

// interrupt makes the connection's blocked reads and writes return.
func interrupt(nc conn) {
	if s, ok := nc.(interface{ shutdown() }); ok {
		s.shutdown()
		return
	}
	nc.SetDeadline(time.Unix(1, 0))
}
