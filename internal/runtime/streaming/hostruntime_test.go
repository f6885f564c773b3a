package streaming

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/creack/pty"
)

// hostRuntime is the Runtime the tests drive the server against: it runs
// real processes on the host and forwards to real loopback TCP ports. The
// seam under test is the Runtime interface, so no container is needed.
type hostRuntime struct {
	mu      sync.Mutex
	resizes []TerminalSize
	// resized receives each size as it is applied.
	resized chan TerminalSize
}

func newHostRuntime() *hostRuntime {
	return &hostRuntime{resized: make(chan TerminalSize, 16)}
}

func (h *hostRuntime) Exec(ctx context.Context, _ string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) (int, error) {
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	if tty {
		return h.execTTY(c, stdin, stdout, resize)
	}
	if stdout != nil {
		c.Stdout = stdout
	}
	if stderr != nil {
		c.Stderr = stderr
	}
	if stdin != nil {
		// Not c.Stdin: Wait would then wait for the client to end stdin
		// even after the process has exited.
		w, err := c.StdinPipe()
		if err != nil {
			return -1, err
		}
		go func() {
			_, _ = io.Copy(w, stdin)
			_ = w.Close()
		}()
	}
	return exitCode(c.Run())
}

func (h *hostRuntime) execTTY(c *exec.Cmd, stdin io.Reader, stdout io.Writer, resize <-chan TerminalSize) (int, error) {
	ptmx, err := pty.StartWithSize(c, &pty.Winsize{Cols: 10, Rows: 5})
	if err != nil {
		return -1, fmt.Errorf("start on a pty: %w", err)
	}
	defer ptmx.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case sz, ok := <-resize:
				if !ok {
					return
				}
				if err := pty.Setsize(ptmx, &pty.Winsize{Cols: sz.Width, Rows: sz.Height}); err != nil {
					return
				}
				h.mu.Lock()
				h.resizes = append(h.resizes, sz)
				h.mu.Unlock()
				h.resized <- sz
			case <-done:
				return
			}
		}
	}()
	if stdin != nil {
		go func() { _, _ = io.Copy(ptmx, stdin) }()
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		if stdout != nil {
			// EIO once the process and its children have exited.
			_, _ = io.Copy(stdout, ptmx)
		}
	}()
	code, err := exitCode(c.Wait())
	<-copied
	return code, err
}

func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode(), nil
	default:
		return -1, err
	}
}

// Attach stands in for a container's main process with cat: what the
// client types comes back on stdout.
func (h *hostRuntime) Attach(ctx context.Context, id string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) error {
	code, err := h.Exec(ctx, id, []string{"cat"}, stdin, stdout, stderr, tty, resize)
	if err == nil && code != 0 {
		err = fmt.Errorf("cat exited with %d", code)
	}
	return err
}

// PortForward connects to port on the host's loopback (the sandbox ID is
// ignored) and copies until the port's side is done.
func (h *hostRuntime) PortForward(ctx context.Context, _ string, port int32, stream io.ReadWriteCloser) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	defer conn.Close()
	go func() {
		_, _ = io.Copy(conn, stream)
		_ = conn.(*net.TCPConn).CloseWrite()
	}()
	fromPort := make(chan error, 1)
	go func() {
		_, err := io.Copy(stream, conn)
		fromPort <- err
	}()
	select {
	case err := <-fromPort:
		return err
	case <-ctx.Done():
		return nil
	}
}

// echoServer listens on a loopback port and echoes every connection back.
func echoServer(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func requireSh(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"sh", "cat", "stty"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: %v", tool, err)
		}
	}
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skipf("no /dev/ptmx: %v", err)
	}
}
