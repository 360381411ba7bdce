package main

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

// This file makes SIGINT (Ctrl-C) and SIGTERM interrupt a one-shot
// command: its operation's context is cancelled, the command reports what
// it reports on any failure (bytes done, the failed address, whether it
// may have executed) as "interrupted by SIGINT", and the process exits
// with 128 + the signal's number (130, 143), as a shell reports a command
// killed by the signal.

// interruptGrace is how long a command has, after the signal, to report
// and return on its own; then the process exits anyway (a wait that does
// not watch the context: the role lock, the transport's handshake).
const interruptGrace = 600 * time.Millisecond

// interrupted holds the signal that interrupted this process's one-shot
// command, nil before one arrived. A process runs one command; the
// in-process tests send no signals.
var interrupted atomic.Pointer[os.Signal]

// interruptSignal returns the signal that interrupted the command, or nil.
func interruptSignal() os.Signal {
	if p := interrupted.Load(); p != nil {
		return *p
	}
	return nil
}

// interruptError is the error of an interrupted command: exit status
// 128 + the signal's number.
type interruptError struct {
	sig os.Signal
	err error
}

func (e *interruptError) Error() string { return e.err.Error() }
func (e *interruptError) Unwrap() error { return e.err }

// exitCode is 130 for SIGINT, 143 for SIGTERM.
func (e *interruptError) exitCode() int { return signalExitCode(e.sig) }

func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// signalName is "SIGINT" or "SIGTERM".
func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// opContext is the context of a one-shot command's operation: it is
// cancelled on SIGINT or SIGTERM, which the command then reports as
// interrupted (see interruptedError). If the command has not returned
// interruptGrace after the signal, the process prints that it was
// interrupted and exits with 128 + the signal's number: every command ends
// within a second of the signal, whatever it waits for. The returned
// function stops watching the signals; defer it.
func opContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
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
			case <-time.After(interruptGrace):
				fmt.Fprintf(cmd.ErrOrStderr(), "oetp: interrupted by %s before the command could report: an operation in progress may have executed\n", signalName(sig))
				os.Exit(signalExitCode(sig))
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

// commandCtx is the context of the process's one-shot command (opContext),
// for what opens its route (the hub's dial and OPEN).
var commandCtx atomic.Pointer[context.Context]

// commandContext returns the command's context: cancelled on SIGINT or
// SIGTERM; Background outside a one-shot command.
func commandContext() context.Context {
	if p := commandCtx.Load(); p != nil {
		return *p
	}
	return context.Background()
}

// interruptedError turns a failed command's error into its interrupted
// form when a signal interrupted the command: exit status 128 + the
// signal's number. Other errors, and any error without a signal, are
// returned as they are.
func interruptedError(err error) error {
	sig := interruptSignal()
	if err == nil || sig == nil {
		return err
	}
	var ie *interruptError
	if errors.As(err, &ie) {
		return err
	}
	return &interruptError{sig: sig, err: err}
}

// runInterruptible runs a long command's work (bench, demo, conformance
// run) until it returns or SIGINT/SIGTERM arrives. On the signal, the
// work's context is cancelled and it has grace to return, undoing what it
// made itself; if it has not (or grace is 0: the work does not watch the
// context), the registered undos run (atexit: its processes stopped, its
// scratch files removed; its namespaces go with its processes). Either way
// the command returns an interrupted error naming what, exit status 128 +
// the signal's number, within a second of the signal.
func runInterruptible(cmd *cobra.Command, what string, grace time.Duration, work func(ctx context.Context) error) error {
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
		return &interruptError{sig: sig, err: fmt.Errorf("%s interrupted by %s: stopped, and its processes, namespaces and scratch files removed; its results are incomplete", what, signalName(sig))}
	}
}
