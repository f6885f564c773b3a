package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Subcommand is os.Args[1] of a monitor process: the runtime runs
// `<its own executable> runtime-shim CONFIG.json`.
const Subcommand = "runtime-shim"

// init runs the monitor when this process is one, before the packages
// that sort after this one (the heavy k8s.io, go.etcd.io,
// google.golang.org ones) are initialised, and exits: see doc.go. In any
// other process it does nothing.
func init() {
	if len(os.Args) > 1 && os.Args[1] == Subcommand {
		os.Exit(Main(os.Args[2:]))
	}
}

// Main is the monitor: args is the config file's path. It returns the
// process's exit code: 0 once the container has exited and its exit
// file is written, 1 when the container could not be created (the
// reason went to the ready pipe, fd 3), 2 for bad usage or config.
func Main(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: runtime-shim CONFIG.json")
		return 2
	}
	// The monitor lives as long as its container: keep its per-P caches
	// and GC workers few, however many CPUs the host has, when the
	// runtime did not choose (it sets GOMAXPROCS=1, and GOGC: package
	// runtime/debug would delay this package's init, see doc.go).
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) > 2 {
		runtime.GOMAXPROCS(2)
	}
	var cfg Config
	if err := ReadJSON(args[0], &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "runtime-shim: config:", err)
		return 2
	}
	if cfg.ID == "" || cfg.Bundle == "" || cfg.Socket == "" || cfg.PidFile == "" || cfg.ExitFile == "" || !strings.HasPrefix(cfg.Runc, "/") {
		fmt.Fprintln(os.Stderr, "runtime-shim: config: ID, Bundle, Socket, PidFile, ExitFile and an absolute Runc are required")
		return 2
	}
	ready := os.NewFile(3, "ready")
	if err := run(cfg, ready); err != nil {
		fmt.Fprintln(os.Stderr, "runtime-shim:", err)
		return 1
	}
	return 0
}

// monitor is the state of one container's monitor.
type monitor struct {
	cfg     Config
	log     *Log
	stdin   io.WriteCloser // nil without stdin
	console *os.File       // pty master, with tty

	mu     sync.Mutex
	subs   map[*attachSub]bool // nil once the container has exited
	exited chan struct{}
	status ExitStatus // set before exited is closed
}

// run creates the container with runc, reports "ok PID" or "error: ..."
// on ready, then serves its socket and waits for the container's init
// to exit.
func run(cfg Config, ready *os.File) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(ready, fmt.Errorf("subreaper: %w", err))
	}
	m := &monitor{cfg: cfg, subs: map[*attachSub]bool{}, exited: make(chan struct{})}
	var err error
	if m.log, err = OpenLog(cfg.LogPath, cfg.LogMaxSize, cfg.LogMaxFiles); err != nil {
		return fail(ready, err)
	}
	os.Remove(cfg.Socket)
	l, err := listenUnix(cfg.Socket)
	if err != nil {
		return fail(ready, err)
	}
	defer os.Remove(cfg.Socket)
	copying, pid, err := m.create()
	if err != nil {
		l.Close()
		return fail(ready, err)
	}
	fmt.Fprintf(ready, "ok %d\n", pid)
	ready.Close()
	go m.serve(l)
	// Whatever start-up allocated is garbage now: collect it, and the
	// scavenger returns it to the OS, for the monitor lives as long as
	// its container.
	runtime.GC()

	st := m.reap(pid)
	// Output written before the exit is drained; a background process
	// that inherited the pipes must not hold the monitor forever.
	select {
	case <-copying:
	case <-time.After(2 * time.Second):
	}
	st.OOMKilled = oomKilled(cfg.OOMFile)
	if err := WriteJSON(cfg.ExitFile, st); err != nil {
		fmt.Fprintln(os.Stderr, "runtime-shim: exit file:", err)
	}
	m.log.Close()
	m.mu.Lock()
	m.status = st
	close(m.exited)
	subs := m.subs
	m.subs = nil
	m.mu.Unlock()
	b, _ := json.Marshal(st)
	for s := range subs {
		s.send(FrameExit, b)
		s.conn.Close()
	}
	// Give "wait" callers a moment to read their answer.
	time.Sleep(50 * time.Millisecond)
	return nil
}

func fail(ready *os.File, err error) error {
	fmt.Fprintf(ready, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	ready.Close()
	return err
}

// create runs `runc create` with stdio the monitor owns, and returns a
// channel closed when the container's output is drained, and its pid.
// (os.StartProcess, not os/exec: see "Why a package of its own".)
func (m *monitor) create() (<-chan struct{}, int, error) {
	runcLog := m.cfg.Bundle + "/runc.log"
	args := []string{m.cfg.Runc, "--root", m.cfg.RuncRoot, "--log", runcLog, "--log-format", "json", "create", "--bundle", m.cfg.Bundle, "--pid-file", m.cfg.PidFile}
	copying := make(chan struct{})
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, 0, err
	}
	stdio := []*os.File{devNull, nil, nil} // runc's stdin, stdout, stderr
	closeAfter := []*os.File{devNull}
	var consoleErr chan error
	var runcOut *os.File // runc's own output, with tty
	if m.cfg.Tty {
		os.Remove(m.cfg.Console)
		consoleL, err := listenUnix(m.cfg.Console)
		if err != nil {
			return nil, 0, err
		}
		defer os.Remove(m.cfg.Console)
		defer consoleL.Close()
		args = append(args, "--console-socket", m.cfg.Console)
		consoleErr = make(chan error, 1)
		go func() {
			f, err := receiveConsole(consoleL)
			m.console = f
			consoleErr <- err
		}()
		var outW *os.File
		if runcOut, outW, err = os.Pipe(); err != nil {
			return nil, 0, err
		}
		defer runcOut.Close()
		stdio[1], stdio[2] = outW, outW
		closeAfter = append(closeAfter, outW)
	} else {
		outR, outW, err := os.Pipe()
		if err != nil {
			return nil, 0, err
		}
		errR, errW, err := os.Pipe()
		if err != nil {
			return nil, 0, err
		}
		// runc writes its own errors to stderr too: the container's
		// log then tells why it failed to start, as with containerd.
		stdio[1], stdio[2] = outW, errW
		closeAfter = append(closeAfter, outW, errW)
		// Two copiers; the last one to finish closes copying.
		var left atomic.Int32
		left.Store(2)
		copyStream := func(r *os.File, stream string, kind byte) {
			CopyLines(r, m.log, stream, m.fanout(kind))
			r.Close()
			if left.Add(-1) == 0 {
				close(copying)
			}
		}
		go copyStream(outR, "stdout", FrameStdout)
		go copyStream(errR, "stderr", FrameStderr)
		if m.cfg.Stdin {
			inR, inW, err := os.Pipe()
			if err != nil {
				return nil, 0, err
			}
			stdio[0] = inR
			closeAfter = append(closeAfter, inR)
			m.stdin = inW
		}
	}
	args = append(args, m.cfg.ID)
	proc, err := os.StartProcess(m.cfg.Runc, args, &os.ProcAttr{Files: stdio, Env: runcEnv()})
	if err == nil {
		var st *os.ProcessState
		if st, err = proc.Wait(); err == nil && !st.Success() {
			err = errors.New(st.String())
		}
	}
	for _, f := range closeAfter {
		f.Close()
	}
	if err != nil {
		msg := runcLogError(runcLog)
		if msg == "" && runcOut != nil {
			// Bounded: a process runc left behind may hold the pipe.
			runcOut.SetReadDeadline(time.Now().Add(time.Second))
			b, _ := io.ReadAll(io.LimitReader(runcOut, 64<<10))
			msg = RuncMessage(string(b))
		}
		return nil, 0, fmt.Errorf("runc create: %w: %s", err, msg)
	}
	if m.cfg.Tty {
		select {
		case err := <-consoleErr:
			if err != nil {
				return nil, 0, fmt.Errorf("console: %w", err)
			}
		case <-time.After(10 * time.Second):
			return nil, 0, errors.New("console: runc sent no pty")
		}
		go func() { CopyLines(m.console, m.log, "stdout", m.fanout(FrameStdout)); close(copying) }()
		if m.cfg.Stdin {
			m.stdin = m.console
		}
	}
	b, err := os.ReadFile(m.cfg.PidFile)
	if err != nil {
		return nil, 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, 0, fmt.Errorf("pid file: %w", err)
	}
	return copying, pid, nil
}

// runcLogError returns the last error runc wrote to its JSON log.
func runcLogError(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	msg := ""
	for _, line := range strings.Split(string(b), "\n") {
		var rec struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil && (rec.Level == "error" || rec.Level == "fatal") {
			msg = rec.Msg
		}
	}
	return msg
}

// runcEnv is the monitor's environment without the Go runtime settings
// meant for the monitor alone (runc is a Go program too).
func runcEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMAXPROCS=") {
			env = append(env, kv)
		}
	}
	return env
}

// RuncMessage extracts the message from runc's logrus-formatted output
// (`time=... level=error msg="..."`), or returns the output trimmed.
func RuncMessage(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "msg=\""); i >= 0 {
		if q, err := strconv.QuotedPrefix(s[i+4:]); err == nil {
			if uq, err := strconv.Unquote(q); err == nil {
				return uq
			}
		}
	}
	return s
}

// receiveConsole accepts runc's connection and takes the pty master
// it passes.
func receiveConsole(l *listener) (*os.File, error) {
	conn, err := l.accept()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return receiveFd(conn, "pty master")
}

// reap waits for pid, the container's init, reaping every other child
// (runc, orphans re-parented to this subreaper) on the way.
func (m *monitor) reap(pid int) ExitStatus {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// Not our child (should not happen with the subreaper): poll.
			for unix.Kill(pid, 0) == nil {
				time.Sleep(100 * time.Millisecond)
			}
			return ExitStatus{ExitCode: 255, FinishedAt: time.Now().UnixNano()}
		}
		if got != pid {
			continue
		}
		st := ExitStatus{FinishedAt: time.Now().UnixNano()}
		switch {
		case ws.Exited():
			st.ExitCode = int32(ws.ExitStatus())
		case ws.Signaled():
			st.ExitCode = 128 + int32(ws.Signal())
			st.Signal = unix.SignalName(ws.Signal())
		}
		return st
	}
}

// oomKilled reads the memory cgroup's oom_kill counter.
func oomKilled(file string) bool {
	if file == "" {
		return false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}
