package streaming

// This file is the contract between the streaming server and the CRI
// runtime that uses it. Written before the implementation; keep the
// signatures unless both sides agree.

import (
	"context"
	"io"
)

// TerminalSize is a tty's size in character cells.
type TerminalSize struct {
	Width, Height uint16
}

// Runtime is what the streaming server needs from the container runtime.
// Every method blocks until the operation ends; the streams are closed
// by the caller afterwards. ctx ends when the client's connection does
// (or the server stops): the operation should stop then. A resize channel
// is closed when the client's resize stream ends. Methods are called
// concurrently, one goroutine per session (per forwarded connection for
// PortForward).
type Runtime interface {
	// Exec runs cmd in the running container and returns its exit
	// code. stdin, stdout, stderr may be nil. With tty, stderr is nil
	// and resize delivers the terminal's size changes.
	Exec(ctx context.Context, containerID string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) (exitCode int, err error)
	// Attach connects to the container's main process's stdio.
	Attach(ctx context.Context, containerID string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) error
	// PortForward copies stream to and from port inside the pod
	// sandbox's network namespace until either side closes.
	PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error
}
