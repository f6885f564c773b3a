package monitor

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
)

// Config is what the runtime tells a monitor, in the JSON file named on
// its command line.
type Config struct {
	ID          string // the container's ID, as runc knows it
	Bundle      string // the OCI bundle (config.json, rootfs); runc.log goes here
	Runc        string // runc's path
	RuncRoot    string // runc --root
	PidFile     string // where runc writes the container init's pid
	Socket      string // the monitor's socket: attach, wait, resize, reopen
	Console     string // console socket path for runc, with Tty
	ExitFile    string // where the ExitStatus goes, atomically
	LogPath     string // the CRI log; "" discards output
	LogMaxSize  int64
	LogMaxFiles int
	Tty         bool
	Stdin       bool
	StdinOnce   bool
	// OOMFile is the memory cgroup's file with an oom_kill counter
	// (memory.oom_control in v1, memory.events in v2); "" when there is
	// no memory cgroup.
	OOMFile string
}

// ExitStatus is what the monitor writes to Config.ExitFile when the
// container's init exits, and sends in a FrameExit.
type ExitStatus struct {
	ExitCode   int32 // 128+signal when killed by a signal
	FinishedAt int64 // unix nanoseconds
	OOMKilled  bool  // the memory cgroup's oom_kill counter is non-zero
	Signal     string
}

// Ops of a Request.
const (
	// OpAttach is answered "ok", then frames flow both ways until the
	// client goes or the container exits (a FrameExit, then close).
	OpAttach = "attach"
	// OpWait is answered with the ExitStatus JSON line once the
	// container has exited and the exit file is written.
	OpWait = "wait"
	// OpResize resizes the pty (with Tty); answered "ok".
	OpResize = "resize"
	// OpReopen reopens the CRI log after someone rotated it; answered
	// "ok" or "error: ...".
	OpReopen = "reopen"
)

// Request is the one JSON line a client sends on a new connection to the
// monitor's socket.
type Request struct {
	Op                    string
	Stdin, Stdout, Stderr bool   // attach: which streams the client wants
	Width, Height         uint16 // resize
}

// Frame kinds of an attach stream. A frame is a kind byte, a big-endian
// uint32 length and the payload.
const (
	FrameStdin      byte = 0 // client to monitor
	FrameStdout     byte = 1
	FrameStderr     byte = 2
	FrameStdinClose byte = 3 // client to monitor: stdin hit EOF
	FrameResize     byte = 4 // client to monitor; payload: width, height as uint16 BE
	FrameExit       byte = 5 // payload: ExitStatus JSON; the monitor then closes
)

// maxFrame bounds a frame's payload, so a corrupt length cannot make the
// reader allocate gigabytes.
const maxFrame = 1 << 20

// WriteFrame writes one frame in a single Write, so frames written under
// a lock never interleave.
func WriteFrame(w io.Writer, kind byte, p []byte) error {
	if len(p) > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds %d", len(p), maxFrame)
	}
	b := make([]byte, 5, 5+len(p))
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:], uint32(len(p)))
	_, err := w.Write(append(b, p...))
	return err
}

// ReadFrame reads one frame.
func ReadFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds %d", n, maxFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, fmt.Errorf("frame payload: %w", err)
	}
	return hdr[0], p, nil
}

// WriteJSON writes v to path atomically (WriteFileAtomic, mode 0600).
func WriteJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b, 0o600)
}

// ReadJSON reads path into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// WriteFileAtomic writes b to name through a synced temporary file in the
// same directory and a rename: a crash leaves either the old file or the
// new one, never a torn write, and a failure leaves no temporary file.
func WriteFileAtomic(name string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(path.Dir(name), "."+path.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
