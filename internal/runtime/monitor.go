package runtime

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// The monitor's socket speaks one request per connection: a JSON line
// (shimRequest), then for "attach" a stream of frames both ways.
type shimRequest struct {
	Op                    string // attach, wait, resize, reopen
	Stdin, Stdout, Stderr bool
	Width, Height         uint16
}

// Frame kinds of an attach stream: a byte kind, a big-endian uint32
// length, the payload.
const (
	frameStdin      = 0
	frameStdout     = 1
	frameStderr     = 2
	frameStdinClose = 3
	frameResize     = 4 // payload: width, height as uint16 BE
	frameExit       = 5 // payload: exitStatus JSON; the monitor then closes
)

func writeFrame(w io.Writer, kind byte, p []byte) error {
	hdr := make([]byte, 5, 5+len(p))
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	_, err := w.Write(append(hdr, p...))
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > 1<<20 {
		return 0, nil, fmt.Errorf("frame of %d bytes", n)
	}
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return hdr[0], p, err
}

// monitor is the shim's state.
type monitor struct {
	cfg     shimConfig
	log     *criLog
	stdin   io.WriteCloser // nil without stdin
	console *os.File       // pty master, with tty

	mu       sync.Mutex
	subs     map[*attachSub]bool
	exited   chan struct{}
	status   exitStatus
	attached bool // a stdin-once attach happened
}

type attachSub struct {
	mu             sync.Mutex
	conn           net.Conn
	stdout, stderr bool
}

func (s *attachSub) send(kind byte, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return writeFrame(s.conn, kind, p)
}

// runShim creates the container with runc, reports "ok PID" or
// "error: ..." on ready, then serves its socket and waits for the
// container's init to exit.
func runShim(cfg shimConfig, ready *os.File) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(ready, fmt.Errorf("subreaper: %w", err))
	}
	m := &monitor{cfg: cfg, subs: map[*attachSub]bool{}, exited: make(chan struct{})}
	var err error
	if m.log, err = openCRILog(cfg.LogPath, cfg.LogMaxSize, cfg.LogMaxFiles); err != nil {
		return fail(ready, err)
	}
	os.Remove(cfg.Socket)
	l, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		return fail(ready, err)
	}
	defer os.Remove(cfg.Socket)
	copying, pid, err := m.create()
	if err != nil {
		return fail(ready, err)
	}
	fmt.Fprintf(ready, "ok %d\n", pid)
	ready.Close()
	go m.serve(l)
	// What the binary's package initialisers allocated is garbage now:
	// give it back, for the monitor lives as long as its container.
	debug.FreeOSMemory()

	st := m.reap(pid)
	// Output written before the exit is drained; a background process
	// that inherited the pipes must not hold the monitor forever.
	select {
	case <-copying:
	case <-time.After(2 * time.Second):
	}
	st.OOMKilled = oomKilled(cfg.OOMFile)
	if err := writeJSON(cfg.ExitFile, st); err != nil {
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
		s.send(frameExit, b)
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
func (m *monitor) create() (<-chan struct{}, int, error) {
	runcLog := m.cfg.Bundle + "/runc.log"
	args := []string{"--root", m.cfg.RuncRoot, "--log", runcLog, "--log-format", "json", "create", "--bundle", m.cfg.Bundle, "--pid-file", m.cfg.PidFile}
	cmd := exec.Command(m.cfg.Runc, args...)
	var runcOut strings.Builder
	copying := make(chan struct{})
	var closeAfter []*os.File
	var consoleErr chan error
	var consoleL *net.UnixListener
	if m.cfg.Tty {
		os.Remove(m.cfg.Console)
		var err error
		consoleL, err = net.ListenUnix("unix", &net.UnixAddr{Name: m.cfg.Console, Net: "unix"})
		if err != nil {
			return nil, 0, err
		}
		defer os.Remove(m.cfg.Console)
		defer consoleL.Close()
		cmd.Args = append(cmd.Args, "--console-socket", m.cfg.Console)
		consoleErr = make(chan error, 1)
		go func() {
			f, err := receiveConsole(consoleL)
			m.console = f
			consoleErr <- err
		}()
		cmd.Stdout, cmd.Stderr = &runcOut, &runcOut
	} else {
		outR, outW, err := os.Pipe()
		if err != nil {
			return nil, 0, err
		}
		errR, errW, err := os.Pipe()
		if err != nil {
			return nil, 0, err
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		closeAfter = append(closeAfter, outW, errW)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); copyLines(outR, m.log, "stdout", m.fanout(frameStdout)) }()
		go func() { defer wg.Done(); copyLines(errR, m.log, "stderr", m.fanout(frameStderr)) }()
		go func() { wg.Wait(); close(copying) }()
		if m.cfg.Stdin {
			inR, inW, err := os.Pipe()
			if err != nil {
				return nil, 0, err
			}
			cmd.Stdin = inR
			closeAfter = append(closeAfter, inR)
			m.stdin = inW
		}
		// runc writes its own errors to stderr too: the container's
		// log then tells why it failed to start, as with containerd.
	}
	cmd.Args = append(cmd.Args, m.cfg.ID)
	err := cmd.Run()
	for _, f := range closeAfter {
		f.Close()
	}
	if err != nil {
		msg := runcLogError(runcLog)
		if msg == "" {
			msg = runcMessage(runcOut.String())
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
		go func() { copyLines(m.console, m.log, "stdout", m.fanout(frameStdout)); close(copying) }()
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

// receiveConsole accepts runc's connection and takes the pty master
// passed with SCM_RIGHTS.
func receiveConsole(l *net.UnixListener) (*os.File, error) {
	conn, err := l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("console control message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("console fd: %v", err)
	}
	return os.NewFile(uintptr(fds[0]), "pty-master"), nil
}

// fanout returns the tee function of a stream: each chunk goes to every
// attached client that asked for the stream.
func (m *monitor) fanout(kind byte) func([]byte) {
	return func(p []byte) {
		m.mu.Lock()
		var subs []*attachSub
		for s := range m.subs {
			if (kind == frameStdout && s.stdout) || (kind == frameStderr && s.stderr) {
				subs = append(subs, s)
			}
		}
		m.mu.Unlock()
		for _, s := range subs {
			if err := s.send(kind, p); err != nil {
				m.mu.Lock()
				delete(m.subs, s)
				m.mu.Unlock()
				s.conn.Close()
			}
		}
	}
}

// reap waits for pid, the container's init, reaping every other child
// (runc, orphans re-parented to this subreaper) on the way.
func (m *monitor) reap(pid int) exitStatus {
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
			return exitStatus{ExitCode: 255, FinishedAt: time.Now().UnixNano()}
		}
		if got != pid {
			continue
		}
		st := exitStatus{FinishedAt: time.Now().UnixNano()}
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

func (m *monitor) serve(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go m.handle(conn)
	}
}

func (m *monitor) handle(conn net.Conn) {
	br := bufio.NewReader(conn)
	line, err := br.ReadBytes('\n')
	if err != nil {
		conn.Close()
		return
	}
	var req shimRequest
	if err := json.Unmarshal(line, &req); err != nil {
		fmt.Fprintf(conn, "error: %v\n", err)
		conn.Close()
		return
	}
	switch req.Op {
	case "wait":
		<-m.exited
		b, _ := json.Marshal(m.status)
		conn.Write(append(b, '\n'))
		conn.Close()
	case "reopen":
		err := m.log.Reopen()
		if err != nil {
			fmt.Fprintf(conn, "error: %v\n", err)
		} else {
			fmt.Fprintln(conn, "ok")
		}
		conn.Close()
	case "resize":
		m.resize(req.Width, req.Height)
		fmt.Fprintln(conn, "ok")
		conn.Close()
	case "attach":
		m.attach(conn, br, req)
	default:
		fmt.Fprintf(conn, "error: unknown op %q\n", req.Op)
		conn.Close()
	}
}

func (m *monitor) resize(w, h uint16) {
	if m.console != nil && w > 0 && h > 0 {
		pty.Setsize(m.console, &pty.Winsize{Cols: w, Rows: h})
	}
}

func (m *monitor) attach(conn net.Conn, br *bufio.Reader, req shimRequest) {
	sub := &attachSub{conn: conn, stdout: req.Stdout, stderr: req.Stderr}
	fmt.Fprintln(conn, "ok")
	m.mu.Lock()
	if m.subs == nil { // exited already
		m.mu.Unlock()
		b, _ := json.Marshal(m.status)
		sub.send(frameExit, b)
		conn.Close()
		return
	}
	m.subs[sub] = true
	m.mu.Unlock()
	// Reads frames from the client until it goes; stdin goes to the
	// container when the client asked for it and the container has one.
	for {
		kind, p, err := readFrame(br)
		if err != nil {
			break
		}
		switch kind {
		case frameStdin:
			if req.Stdin && m.stdin != nil {
				m.stdin.Write(p)
			}
		case frameStdinClose:
			if req.Stdin && m.stdin != nil && m.cfg.StdinOnce && !m.cfg.Tty {
				m.stdin.Close()
			}
		case frameResize:
			if len(p) == 4 {
				m.resize(binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:]))
			}
		}
	}
	m.mu.Lock()
	if m.subs != nil {
		delete(m.subs, sub)
	}
	m.mu.Unlock()
	if req.Stdin && m.cfg.StdinOnce && m.stdin != nil && !m.cfg.Tty {
		m.stdin.Close()
	}
	conn.Close()
}
