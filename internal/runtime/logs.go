package runtime

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// criLog writes a container's output in the CRI log format the kubelet
// reads ("2016-10-06T00:17:09.669794202Z stdout F message"), one line
// per record, "P" for a piece of a line longer than maxLine. It rotates
// by size: path becomes path.1, path.1 path.2 ... keeping maxFiles
// files in all.
type criLog struct {
	mu       sync.Mutex
	path     string
	f        *os.File
	size     int64
	maxSize  int64
	maxFiles int
}

const maxLogLine = 16 << 10

func openCRILog(path string, maxSize int64, maxFiles int) (*criLog, error) {
	l := &criLog{path: path, maxSize: maxSize, maxFiles: maxFiles}
	if path == "" {
		return l, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return l, l.reopenLocked()
}

func (l *criLog) reopenLocked() error {
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
func (l *criLog) Reopen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.path == "" {
		return nil
	}
	return l.reopenLocked()
}

func (l *criLog) rotateLocked() error {
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
func (l *criLog) record(stream string, partial bool, line []byte) {
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

func (l *criLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// copyLines reads r until EOF, splitting it into log records of stream,
// and hands every raw chunk to tee (the attach fan-out) as well.
func copyLines(r io.Reader, l *criLog, stream string, tee func([]byte)) {
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
				for len(line) > maxLogLine {
					l.record(stream, true, line[:maxLogLine])
					line = line[maxLogLine:]
				}
				l.record(stream, false, line)
				pending = pending[i+1:]
			}
			for len(pending) >= maxLogLine {
				l.record(stream, true, pending[:maxLogLine])
				pending = pending[maxLogLine:]
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
