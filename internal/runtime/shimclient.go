package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rudder-dev/rudder/internal/runtime/monitor"
)

// ShimSubcommand is os.Args[1] of a container's monitor process. The
// monitor package's init runs the monitor and exits when it sees it, in
// any binary that links this package: nothing needs to call ShimMain.
const ShimSubcommand = monitor.Subcommand

// ShimMain runs the monitor (monitor.Main); it returns its exit code.
func ShimMain(args []string) int { return monitor.Main(args) }

// The monitor's contract types, under this package's names.
type (
	shimConfig  = monitor.Config
	shimRequest = monitor.Request
	exitStatus  = monitor.ExitStatus
)

// Shared with the monitor rather than written twice.
var (
	writeFileAtomic = monitor.WriteFileAtomic
	runcMessage     = monitor.RuncMessage
)

// startShim writes the monitor's config and starts it in its own
// session. It returns once runc create has finished: the shim's pid and
// the container's init pid, or runc's error.
func (r *Runtime) startShim(ctx context.Context, st *containerState, cfg shimConfig) error {
	dir := r.containerStateDir(st.ID)
	cfgPath := filepath.Join(dir, "shim.json")
	if err := monitor.WriteJSON(cfgPath, cfg); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "shim.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	cmd := exec.Command(r.cfg.ShimBinary, ShimSubcommand, cfgPath)
	if exe, err := os.Executable(); err == nil && r.cfg.ShimBinary == "/proc/self/exe" {
		cmd.Args[0] = filepath.Base(exe) // for ps; the path above is what runs
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	// A monitor lives as long as its container: collect at +25% rather
	// than +100%, with one P (per-P caches and GC workers cost memory;
	// 2.2 -> 1.6 MiB private). Set here because the monitor's start
	// must not wait for runtime/debug (see monitor/doc.go).
	cmd.Env = append(os.Environ(), "GOGC=25", "GOMAXPROCS=1")
	if err := cmd.Start(); err != nil {
		readyW.Close()
		return fmt.Errorf("start monitor: %w", err)
	}
	readyW.Close()
	// Reap the shim whenever it exits; after a restart of the runtime
	// it is a child of the subreaper or init instead.
	go cmd.Wait()

	type line struct {
		s   string
		err error
	}
	lc := make(chan line, 1)
	go func() {
		s, err := bufio.NewReader(readyR).ReadString('\n')
		lc <- line{s, err}
	}()
	var l line
	select {
	case l = <-lc:
	case <-ctx.Done():
		cmd.Process.Kill()
		return fmt.Errorf("waiting for the monitor: %w", ctx.Err())
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		return fmt.Errorf("the monitor did not report in 2m")
	}
	s := strings.TrimSpace(l.s)
	if msg, ok := strings.CutPrefix(s, "error: "); ok {
		return fmt.Errorf("%s", msg)
	}
	pidStr, ok := strings.CutPrefix(s, "ok ")
	if !ok {
		tail, _ := os.ReadFile(filepath.Join(dir, "shim.log"))
		return fmt.Errorf("the monitor failed (%v): %s", l.err, strings.TrimSpace(string(tail)))
	}
	st.Pid, _ = strconv.Atoi(pidStr)
	st.ShimPid = cmd.Process.Pid
	st.ShimStart = procStartTime(st.ShimPid)
	return nil
}

// procStartTime is field 22 of /proc/PID/stat: with the pid, it names a
// process uniquely across pid reuse. 0 when the process is gone.
func procStartTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

func (r *Runtime) shimAlive(st *containerState) bool {
	return st.ShimPid > 0 && st.ShimStart != 0 && procStartTime(st.ShimPid) == st.ShimStart
}

func (r *Runtime) shimSocket(st *containerState) string {
	return filepath.Join(st.Bundle, "a.sock")
}

// shimCall sends one request and returns the monitor's connection.
func (r *Runtime) shimCall(st *containerState, req shimRequest) (net.Conn, *bufio.Reader, error) {
	conn, err := net.DialTimeout("unix", r.shimSocket(st), 5*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("monitor of %s: %w", st.ID, err)
	}
	b, _ := json.Marshal(req)
	if _, err := conn.Write(append(b, '\n')); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("monitor of %s: %w", st.ID, err)
	}
	return conn, bufio.NewReader(conn), nil
}

// shimOK sends a request answered by one "ok" line.
func (r *Runtime) shimOK(st *containerState, req shimRequest) error {
	conn, br, err := r.shimCall(st, req)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("monitor of %s: %w", st.ID, err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		return fmt.Errorf("monitor of %s: %s", st.ID, line)
	}
	return nil
}

// readExitFile returns the exit status the monitor left, if any.
func (r *Runtime) readExitFile(id string) (exitStatus, bool) {
	var es exitStatus
	if err := monitor.ReadJSON(filepath.Join(r.containerStateDir(id), "exit.json"), &es); err != nil {
		return es, false
	}
	return es, true
}

// waitExit waits until the container's init has exited and the exit
// file is written, up to timeout. It reports whether it exited.
func (r *Runtime) waitExit(ctx context.Context, st *containerState, timeout time.Duration) bool {
	if _, ok := r.readExitFile(st.ID); ok {
		return true
	}
	deadline := time.Now().Add(timeout)
	if conn, br, err := r.shimCall(st, shimRequest{Op: monitor.OpWait}); err == nil {
		defer conn.Close()
		conn.SetReadDeadline(deadline)
		stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
		defer stop()
		if _, err := br.ReadString('\n'); err == nil {
			// The exit file is written before waiters are answered.
			_, ok := r.readExitFile(st.ID)
			return ok
		}
		_, ok := r.readExitFile(st.ID)
		return ok
	}
	// No monitor: fall back to the exit file and the process itself.
	for {
		if _, ok := r.readExitFile(st.ID); ok {
			return true
		}
		if !r.shimAlive(st) && (st.Pid <= 0 || procStartTime(st.Pid) == 0) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
