package monitor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"time"
)

// Log writes a container's output in the CRI log format the kubelet
// reads ("2016-10-06T00:17:09.669794202Z stdout F message"), one line
// per record, "P" for a piece of a line longer than MaxLineSize. It
// rotates by size: path becomes path.1, path.1 path.2 ... keeping
// maxFiles files in all. Its methods are safe for concurrent use.
type Log struct {
	mu       sync.Mutex
	path     string
	f        *os.File
	size     int64
	maxSize  int64
	maxFiles int
}

// MaxLineSize is the longest record: longer lines are split into "P"
// pieces of this size and a final "F" record, as containerd does.
const MaxLineSize = 16 << 10

// OpenLog opens (appends to) the log file name, creating its directory.
// An empty path gives a Log that discards everything.
func OpenLog(name string, maxSize int64, maxFiles int) (*Log, error) {
	l := &Log{path: name, maxSize: maxSize, maxFiles: maxFiles}
	if name == "" {
		return l, nil
	}
	if err := os.MkdirAll(path.Dir(name), 0o755); err != nil {
		return nil, err
	}
	return l, l.reopenLocked()
}

func (l *Log) reopenLocked() error {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Reopen reopens the log file, after someone else rotated it.
func (l *Log) Reopen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path == "" {
		return nil
	}
	return l.reopenLocked()
}

func (l *Log) rotateLocked() error {
	for i := l.maxFiles - 1; i >= 1; i-- {
		from := l.path
		if i > 1 {
			from = fmt.Sprintf("%s.%d", l.path, i-1)
		}
		to := fmt.Sprintf("%s.%d", l.path, i)
		if err := os.Rename(from, to); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if l.maxFiles <= 1 {
		os.Remove(l.path)
	}
	return l.reopenLocked()
}

// record writes one line.
func (l *Log) record(stream string, partial bool, line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	tag := "F"
	if partial {
		tag = "P"
	}
	var b bytes.Buffer
	b.Grow(len(line) + 48)
	b.WriteString(time.Now().UTC().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.Write(line)
	b.WriteByte('\n')
	if l.size > 0 && l.size+int64(b.Len()) > l.maxSize {
		if err := l.rotateLocked(); err != nil {
			fmt.Fprintln(os.Stderr, "log rotate:", err)
		}
	}
	n, _ := l.f.Write(b.Bytes())
	l.size += int64(n)
}

// Close closes the file; later records are dropped.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// CopyLines reads r until EOF or an error, splitting it into records of
// stream ("stdout" or "stderr") in l, and hands every raw chunk to tee
// (the attach fan-out; nil for none) as well. A last line without a
// newline is written when r ends.
func CopyLines(r io.Reader, l *Log, stream string, tee func([]byte)) {
	buf := make([]byte, 32<<10)
	var pending []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if tee != nil {
				tee(chunk)
			}
			pending = append(pending, chunk...)
			for {
				i := bytes.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				line := pending[:i]
				if len(line) > 0 && line[len(line)-1] == '\r' {
					line = line[:len(line)-1]
				}
				for len(line) > MaxLineSize {
					l.record(stream, true, line[:MaxLineSize])
					line = line[MaxLineSize:]
				}
				l.record(stream, false, line)
				pending = pending[i+1:]
			}
			for len(pending) >= MaxLineSize {
				l.record(stream, true, pending[:MaxLineSize])
				pending = pending[MaxLineSize:]
			}
			pending = append([]byte(nil), pending...)
		}
		if err != nil {
			if len(pending) > 0 {
				l.record(stream, false, pending)
			}
			return
		}
	}
}
