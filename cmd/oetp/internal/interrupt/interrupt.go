// Package interrupt makes SIGINT (Ctrl-C) and SIGTERM interrupt a command
// of oetp. A one-shot command (rmem, dma, regs) runs its operation under
// Context: the signal cancels it, the command reports what it reports on
// any failure (bytes done, the failed address, whether it may have
// executed) as "interrupted by SIGINT", and Wrap turns its error into an
// *Error, whose exit status is 128 + the signal's number (130, 143), as a
// shell reports a command killed by the signal. A long command (bench,
// demo, conformance run) runs its work through Run, which undoes what the
// work made (package atexit) when the work does not return in time.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/atexit"
)

// Grace is how long a command has, after the signal, to report and return
// on its own; then the process exits anyway (a wait that does not watch
// the context: the role lock, the transport's handshake).
const Grace = 600 * time.Millisecond

// interrupted holds the signal that interrupted this process's command, nil
// before one arrived. A process runs one command; the in-process tests send
// no signals.
var interrupted atomic.Pointer[os.Signal]

// Signal returns the signal that interrupted the command, or nil.
func Signal() os.Signal {
	if p := interrupted.Load(); p != nil {
		return *p
	}
	return nil
}

// Error is the error of an interrupted command: exit status 128 + the
// signal's number.
type Error struct {
	sig os.Signal
	err error
}

func (e *Error) Error() string { return e.err.Error() }
func (e *Error) Unwrap() error { return e.err }

// ExitCode is 130 for SIGINT, 143 for SIGTERM.
func (e *Error) ExitCode() int { return exitCode(e.sig) }

func exitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// Name is "SIGINT" or "SIGTERM".
func Name(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// Context is the context of a one-shot command's operation: it is
// cancelled on SIGINT or SIGTERM, which the command then reports as
// interrupted (see Wrap). If the command has not returned Grace after the
// signal, the process prints that it was interrupted and exits with 128 +
// the signal's number: every command ends within a second of the signal,
// whatever it waits for. The returned function stops watching the signals;
// defer it.
func Context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(cmd.Context())
	commandCtx.Store(&ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			interrupted.Store(&sig)
			cancel()
			select {
			case <-done:
			case <-time.After(Grace):
				fmt.Fprintf(cmd.ErrOrStderr(), "oetp: interrupted by %s before the command could report: an operation in progress may have executed\n", Name(sig))
				os.Exit(exitCode(sig))
			}
		case <-done:
		}
	}()
	var once atomic.Bool
	return ctx, func() {
		if once.CompareAndSwap(false, true) {
			signal.Stop(sigs)
			close(done)
		}
		cancel()
	}
}

// commandCtx is the context of the process's one-shot command (Context),
// for what opens its route (the hub's dial and OPEN).
var commandCtx atomic.Pointer[context.Context]

// CommandContext returns the command's context: cancelled on SIGINT or
// SIGTERM; Background outside a one-shot command.
func CommandContext() context.Context {
	if p := commandCtx.Load(); p != nil {
		return *p
	}
	return context.Background()
}

// Wrap turns a failed command's error into its interrupted form when a
// signal interrupted the command: exit status 128 + the signal's number.
// Other errors, and any error without a signal, are returned as they are.
func Wrap(err error) error {
	sig := Signal()
	if err == nil || sig == nil {
		return err
	}
	var ie *Error
	if errors.As(err, &ie) {
		return err
	}
	return &Error{sig: sig, err: err}
}

// Run runs a long command's work (bench, demo, conformance run) until it
// returns or SIGINT/SIGTERM arrives. On the signal, the work's context is
// cancelled and it has grace to return, undoing what it made itself; if it
// has not (or grace is 0: the work does not watch the context), the
// registered undos run (atexit: its processes stopped, its scratch files
// removed; its namespaces go with its processes). Either way the command
// returns an interrupted error naming what, exit status 128 + the signal's
// number, within a second of the signal.
func Run(cmd *cobra.Command, what string, grace time.Duration, work func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- work(ctx) }()
	select {
	case err := <-done:
		return err
	case sig := <-sigs:
		interrupted.Store(&sig)
		cancel()
		select {
		case <-done:
		case <-time.After(grace):
			atexit.Run()
		}
		return &Error{sig: sig, err: fmt.Errorf("%s interrupted by %s: stopped, and its processes, namespaces and scratch files removed; its results are incomplete", what, Name(sig))}
	}
}
