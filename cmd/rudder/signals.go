package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// shutdownGrace is how long a command may take to stop after SIGTERM or
// SIGINT. A server stops in a few seconds (5 s at most for open
// requests); past the grace something is stuck in a step that does not
// watch its context, and the process exits rather than ignore the signal.
var shutdownGrace = 20 * time.Second

// signalContext is the context every command runs under: the first SIGINT
// or SIGTERM cancels it, so the command shuts down cleanly; a second
// signal, or the grace running out, ends the process at once with one
// line on stderr. Whatever state rudder is in, a signal stops it.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-ctx.Done():
			return // the command ended on its own
		}
		cancel()
		select {
		case again := <-sigs:
			fmt.Fprintf(os.Stderr, "rudder: %v again, exiting now\n", again)
		case <-time.After(shutdownGrace):
			fmt.Fprintf(os.Stderr, "rudder: still running %v after %v, exiting\n", shutdownGrace, sig)
		}
		os.Exit(1)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}
