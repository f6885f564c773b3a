package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// lockFileName is the file in the data directory a running server holds
// an exclusive flock on. etcd's own bbolt lock would also keep a second
// server out, but it waits for the lock forever, silently; ours is taken
// first, without waiting, so a second server fails at once and says why.
const lockFileName = "rudder.lock"

// dataDirLock is a held lock on a data directory. The kernel drops it when
// the process dies, so a crashed server never leaves a stale lock behind.
type dataDirLock struct {
	f *os.File
}

// lockDataDir takes the data directory's lock, or fails naming the lock
// file and the process that holds it.
func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := "another process"
		if data, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(string(bytes.TrimSpace(data))); perr == nil {
				holder = "process " + strconv.Itoa(pid)
			}
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use: %s holds the lock %s (is another rudder server running on it?)", dir, holder, path)
		}
		return nil, fmt.Errorf("data directory lock %s: %w", path, err)
	}
	// The PID is only for the message above: the flock is the lock.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataDirLock{f: f}, nil
}

// release drops the lock. The file stays: removing it would let a server
// starting at this moment lock a file the next one no longer sees.
func (l *dataDirLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
