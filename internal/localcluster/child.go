package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/rudder-dev/rudder/internal/netns"
)

// child supervises one node's agent: a `rudder agent` process started
// inside the node's network namespace and cgroup, restarted with backoff
// when it exits, stopped by PID (SIGTERM, then SIGKILL) at the end.
//
// The process is forked from a thread that has entered the node's
// namespace: a forked child starts in its parent thread's namespaces.
// run locks its goroutine to that thread for the child's whole life and
// never unlocks it; the thread ends with the goroutine. This also keeps
// Pdeathsig sound: the kernel signals the child when the thread that
// forked it ends, and that thread ends only after the last child exits
// (or when this process dies, which is when the signal is wanted).
type child struct {
	name    string
	ns      *netns.NS
	exe     string
	args    []string
	logPath string
	cg      cgroupHost
	cgroup  string // where the agent process goes
	backoff backoff
	grace   time.Duration // SIGTERM to SIGKILL

	mu          sync.Mutex
	pid         int
	starts      int
	started     chan struct{} // closed at the first start, or the first failure to
	startedOnce sync.Once
	done        chan struct{} // run returned
	startErr    error         // why the first start failed
}

// backoff is the restart delay: min after a run that lasted stable,
// doubling up to max after quicker exits.
type backoff struct {
	min, max, stable time.Duration
}

// run supervises until ctx ends, then stops the process.
func (c *child) run(ctx context.Context) {
	runtime.LockOSThread() // never unlocked: see child
	defer close(c.done)
	if err := c.ns.Enter(); err != nil {
		c.setStartErr(fmt.Errorf("node %s: %w", c.name, err))
		return
	}
	delay := c.backoff.min
	for {
		began := time.Now()
		err := c.runOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) >= c.backoff.stable {
			delay = c.backoff.min
		}
		slog.Warn("node agent exited; restarting", "node", c.name, "err", err, "in", delay, "log", c.logPath)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, c.backoff.max)
	}
}

// setStartErr records why the first start failed.
func (c *child) setStartErr(err error) {
	c.mu.Lock()
	if c.starts == 0 && c.startErr == nil {
		c.startErr = err
	}
	c.mu.Unlock()
	c.startedOnce.Do(func() { close(c.started) })
}

// runOnce starts the agent, places it in its cgroup and waits for it to
// exit, or stops it when ctx ends.
func (c *child) runOnce(ctx context.Context) error {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.setStartErr(err)
		return err
	}
	defer logf.Close()
	cmd := exec.Command(c.exe, c.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// The agent stops when this process dies, whatever the way.
		Pdeathsig: syscall.SIGTERM,
		// A terminal's ^C reaches this process only, which stops the
		// nodes in order.
		Setpgid: true,
	}
	if err := cmd.Start(); err != nil {
		err = fmt.Errorf("starting the agent of node %s: %w", c.name, err)
		c.setStartErr(err)
		return err
	}
	if err := c.cg.addProc(c.cgroup, cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		c.setStartErr(err)
		return err
	}
	c.mu.Lock()
	c.pid = cmd.Process.Pid
	c.starts++
	c.mu.Unlock()
	c.startedOnce.Do(func() { close(c.started) })
	slog.Info("node agent started", "node", c.name, "pid", cmd.Process.Pid, "log", c.logPath)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		c.mu.Lock()
		c.pid = 0
		c.mu.Unlock()
	}()
	select {
	case err := <-exited:
		if err == nil {
			err = errors.New("exited with status 0")
		}
		return err
	case <-ctx.Done():
	}
	// os.Process signals through a pidfd: never another process that
	// reused the PID.
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(c.grace):
		slog.Warn("node agent did not stop in time; killing it", "node", c.name, "pid", cmd.Process.Pid, "grace", c.grace)
		cmd.Process.Kill()
		<-exited
	}
	return nil
}

// PID is the running agent's, 0 between runs.
func (c *child) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Starts counts the agent's starts (1 + restarts).
func (c *child) Starts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts
}
