package monitor

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// attachSub is one attached client.
type attachSub struct {
	mu             sync.Mutex // one frame at a time
	conn           *os.File
	stdout, stderr bool
}

// send writes a frame; a client that does not read for 5s is dropped
// rather than stalling the container's output.
func (s *attachSub) send(kind byte, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return WriteFrame(s.conn, kind, p)
}

// serve accepts connections until l is closed (the process exits): one
// goroutine per connection, none while nobody is connected.
func (m *monitor) serve(l *listener) {
	for {
		conn, err := l.accept()
		if err != nil {
			return
		}
		go m.handle(conn)
	}
}

// handle serves one Request.
func (m *monitor) handle(conn *os.File) {
	br := bufio.NewReader(conn)
	line, err := br.ReadBytes('\n')
	if err != nil {
		conn.Close()
		return
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		fmt.Fprintf(conn, "error: %v\n", err)
		conn.Close()
		return
	}
	switch req.Op {
	case OpWait:
		<-m.exited
		b, _ := json.Marshal(m.status)
		conn.Write(append(b, '\n'))
		conn.Close()
	case OpReopen:
		err := m.log.Reopen()
		if err != nil {
			fmt.Fprintf(conn, "error: %v\n", err)
		} else {
			fmt.Fprintln(conn, "ok")
		}
		conn.Close()
	case OpResize:
		m.resize(req.Width, req.Height)
		fmt.Fprintln(conn, "ok")
		conn.Close()
	case OpAttach:
		m.attach(conn, br, req)
	default:
		fmt.Fprintf(conn, "error: unknown op %q\n", req.Op)
		conn.Close()
	}
}

// resize sets the pty's window size (with Tty; otherwise a no-op).
func (m *monitor) resize(w, h uint16) {
	if m.console == nil || w == 0 || h == 0 {
		return
	}
	if rc, err := m.console.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: w, Row: h})
		})
	}
}

// attach streams the container's output to conn and conn's frames to the
// container until either side goes.
func (m *monitor) attach(conn *os.File, br *bufio.Reader, req Request) {
	sub := &attachSub{conn: conn, stdout: req.Stdout, stderr: req.Stderr}
	fmt.Fprintln(conn, "ok")
	m.mu.Lock()
	if m.subs == nil { // exited already
		m.mu.Unlock()
		b, _ := json.Marshal(m.status)
		sub.send(FrameExit, b)
		conn.Close()
		return
	}
	m.subs[sub] = true
	m.mu.Unlock()
	// Reads frames from the client until it goes; stdin goes to the
	// container when the client asked for it and the container has one.
	for {
		kind, p, err := ReadFrame(br)
		if err != nil {
			break
		}
		switch kind {
		case FrameStdin:
			if req.Stdin && m.stdin != nil {
				m.stdin.Write(p)
			}
		case FrameStdinClose:
			if req.Stdin && m.stdin != nil && m.cfg.StdinOnce && !m.cfg.Tty {
				m.stdin.Close()
			}
		case FrameResize:
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

// fanout returns the tee function of a stream: each chunk goes to every
// attached client that asked for the stream.
func (m *monitor) fanout(kind byte) func([]byte) {
	return func(p []byte) {
		m.mu.Lock()
		var subs []*attachSub
		for s := range m.subs {
			if (kind == FrameStdout && s.stdout) || (kind == FrameStderr && s.stderr) {
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
