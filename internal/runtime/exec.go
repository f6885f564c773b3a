package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/monitor"
	"github.com/rudder-dev/rudder/internal/runtime/streaming"
)

// runningContainer returns the state of a running container.
func (r *Runtime) runningContainer(id string) (containerState, error) {
	c, err := r.lookupContainer(id)
	if err != nil {
		return containerState{}, err
	}
	c.mu.Lock()
	st := r.refresh(c)
	c.mu.Unlock()
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return st, fmt.Errorf("container %s is %s, not running: %w", st.ID, stateName(st.State), errPrecondition)
	}
	return st, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// ExecSync runs a command in the container and returns its output and
// exit code; past the timeout the command is killed and the call fails
// with DeadlineExceeded.
func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if len(req.GetCmd()) == 0 {
		return nil, grpcError(fmt.Errorf("exec: no command: %w", errInvalid))
	}
	st, err := r.runningContainer(req.GetContainerId())
	if err != nil {
		return nil, grpcError(err)
	}
	if t := req.GetTimeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	// Both must fit in one 16 MiB gRPC message.
	stdout := &limitedBuffer{max: 8 << 20}
	stderr := &limitedBuffer{max: 8 << 20}
	code, err := r.execProcess(ctx, &st, req.GetCmd(), nil, stdout, stderr, false, nil)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, status.Errorf(codes.DeadlineExceeded, "command %q timed out after %ds", strings.Join(req.GetCmd(), " "), req.GetTimeout())
		}
		return nil, grpcError(err)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(code)}, nil
}

// execProcess runs `runc exec` in the foreground. With tty, runc gets a
// pty of ours as its terminal and relays it to the container's; a
// resize of ours reaches runc as SIGWINCH. When ctx ends the process is
// killed by its pid.
func (r *Runtime) execProcess(ctx context.Context, st *containerState, cmdArgs []string, stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan streaming.TerminalSize) (int, error) {
	pidFile := filepath.Join(st.Bundle, "exec-"+newID()[:12]+".pid")
	defer os.Remove(pidFile)
	args := []string{"--root", r.runc.root, "exec", "--pid-file", pidFile}
	if tty {
		args = append(args, "--tty")
	}
	args = append(args, st.ID)
	args = append(args, cmdArgs...)
	cmd := exec.Command(r.runc.bin, args...)
	var runcErr limitedBuffer
	runcErr.max = 64 << 10
	var master *os.File
	var copies sync.WaitGroup
	if tty {
		m, slave, err := pty.Open()
		if err != nil {
			return -1, fmt.Errorf("exec: pty: %w", err)
		}
		master = m
		// Resizes may arrive until the end: Setsize must not race Close.
		var mmu sync.Mutex
		finished := make(chan struct{})
		defer func() {
			close(finished)
			mmu.Lock()
			master.Close()
			mmu.Unlock()
		}()
		go func() {
			for {
				select {
				case sz, ok := <-resize:
					if !ok {
						return
					}
					mmu.Lock()
					select {
					case <-finished:
					default:
						pty.Setsize(master, &pty.Winsize{Cols: sz.Width, Rows: sz.Height})
					}
					mmu.Unlock()
				case <-finished:
					return
				}
			}
		}()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		defer slave.Close()
		if stdout != nil {
			copies.Add(1)
			go func() { defer copies.Done(); io.Copy(stdout, master) }()
		}
		if stdin != nil {
			go io.Copy(master, stdin)
		}
	} else {
		if stdin != nil {
			// Our own pipe: a client that never closes stdin must not
			// keep Wait from returning once the process is gone.
			inR, inW, err := os.Pipe()
			if err != nil {
				return -1, err
			}
			defer inW.Close()
			defer inR.Close()
			cmd.Stdin = inR
			go func() { io.Copy(inW, stdin); inW.Close() }()
		}
		cmd.Stdout = stdout
		cmd.Stderr = io.MultiWriter(&runcErr)
		if stderr != nil {
			cmd.Stderr = io.MultiWriter(stderr, &runcErr)
		}
	}
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	if tty {
		// The child has its own copy; ours would keep the master from EOF.
		cmd.Stdin.(*os.File).Close()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		return -1, ctx.Err()
	}
	if tty {
		master.SetReadDeadline(time.Now().Add(time.Second))
		copies.Wait()
	}
	if werr == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if _, err := os.Stat(pidFile); err != nil && ee.ExitCode() == 255 {
			// runc failed before the process started.
			return -1, fmt.Errorf("exec in %s: %s", st.ID, runcMessage(runcErr.String()))
		}
		return ee.ExitCode(), nil
	}
	return -1, fmt.Errorf("exec: %w", werr)
}

func (r *Runtime) streamServer() (StreamServer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.streaming == nil {
		return nil, status.Error(codes.Unavailable, "this runtime has no streaming server")
	}
	return r.streaming, nil
}

// Exec returns the URL where the kubelet's client streams an exec.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if len(req.GetCmd()) == 0 {
		return nil, grpcError(fmt.Errorf("exec: no command: %w", errInvalid))
	}
	if !req.GetStdin() && !req.GetStdout() && !req.GetStderr() {
		return nil, grpcError(fmt.Errorf("exec: one of stdin, stdout and stderr is required: %w", errInvalid))
	}
	if _, err := r.runningContainer(req.GetContainerId()); err != nil {
		return nil, grpcError(err)
	}
	s, err := r.streamServer()
	if err != nil {
		return nil, err
	}
	resp, err := s.GetExec(req)
	return resp, grpcError(err)
}

// Attach returns the URL where the kubelet's client attaches.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if _, err := r.runningContainer(req.GetContainerId()); err != nil {
		return nil, grpcError(err)
	}
	s, err := r.streamServer()
	if err != nil {
		return nil, err
	}
	resp, err := s.GetAttach(req)
	return resp, grpcError(err)
}

// PortForward returns the URL where the kubelet's client forwards ports.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if _, err := r.lookupSandbox(req.GetPodSandboxId()); err != nil {
		return nil, grpcError(err)
	}
	s, err := r.streamServer()
	if err != nil {
		return nil, err
	}
	resp, err := s.GetPortForward(req)
	return resp, grpcError(err)
}

// StreamRuntime is the runtime as the streaming server drives it.
func (r *Runtime) StreamRuntime() streaming.Runtime { return streamRuntime{r} }

type streamRuntime struct{ r *Runtime }

func (s streamRuntime) Exec(ctx context.Context, containerID string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan streaming.TerminalSize) (int, error) {
	st, err := s.r.runningContainer(containerID)
	if err != nil {
		return -1, err
	}
	var out, errw io.Writer
	if stdout != nil {
		out = stdout
	}
	if stderr != nil {
		errw = stderr
	}
	return s.r.execProcess(ctx, &st, cmd, stdin, out, errw, tty, resize)
}

// Attach connects to the container's monitor, which fans the
// container's output out to every attached client.
func (s streamRuntime) Attach(ctx context.Context, containerID string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan streaming.TerminalSize) error {
	st, err := s.r.runningContainer(containerID)
	if err != nil {
		return err
	}
	conn, br, err := s.r.shimCall(&st, shimRequest{Op: monitor.OpAttach, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil})
	if err != nil {
		return err
	}
	defer conn.Close()
	if line, err := br.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ok" {
		return fmt.Errorf("attach %s: %q %v", containerID, line, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var wmu sync.Mutex
	send := func(kind byte, p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return monitor.WriteFrame(conn, kind, p)
	}
	if stdin != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := stdin.Read(buf)
				if n > 0 && send(monitor.FrameStdin, buf[:n]) != nil {
					return
				}
				if err != nil {
					send(monitor.FrameStdinClose, nil)
					return
				}
			}
		}()
	}
	if resize != nil {
		go func() {
			for sz := range resize {
				p := make([]byte, 4)
				binary.BigEndian.PutUint16(p, sz.Width)
				binary.BigEndian.PutUint16(p[2:], sz.Height)
				if send(monitor.FrameResize, p) != nil {
					return
				}
			}
		}()
	}
	for {
		kind, p, err := monitor.ReadFrame(br)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("attach %s: %w", containerID, err)
		}
		switch kind {
		case monitor.FrameStdout:
			if stdout != nil {
				stdout.Write(p)
			}
		case monitor.FrameStderr:
			if stderr != nil {
				stderr.Write(p)
			}
		case monitor.FrameExit:
			return nil
		}
	}
}

// PortForward dials 127.0.0.1:port from inside the sandbox's network
// namespace and copies both ways until one side closes.
func (s streamRuntime) PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error {
	sb, err := s.r.lookupSandbox(podSandboxID)
	if err != nil {
		return err
	}
	if port <= 0 || port > 65535 {
		return fmt.Errorf("port %d: %w", port, errInvalid)
	}
	s.r.mu.Lock()
	netns := sb.st.NetNS
	s.r.mu.Unlock()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	var conn net.Conn
	if netns == "" {
		conn, err = net.Dial("tcp", addr)
	} else {
		conn, err = dialInNetNS(netns, addr)
	}
	if err != nil {
		return fmt.Errorf("port-forward to %s in sandbox %s: %w", addr, podSandboxID, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close(); stream.Close() })
	defer stop()
	go func() {
		io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	// Done when the pod's side has said all it will say.
	_, err = io.Copy(stream, conn)
	if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
