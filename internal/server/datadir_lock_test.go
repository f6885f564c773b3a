//go:build unix

package server

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDataDirLocked checks that a second server on a data directory in use
// fails at once, naming the lock and the process holding it, instead of
// waiting forever on etcd's database lock; and that the lock is free again
// once the first server has stopped.
func TestDataDirLocked(t *testing.T) {
	t.Run("held by another process", func(t *testing.T) {
		dir := t.TempDir()
		child := startCrashChild(t, dir)
		err := startWithin(t, dir, 5*time.Second)
		wantLockError(t, err, dir, child.cmd.Process.Pid)
	})

	t.Run("held in this process, free after stop", func(t *testing.T) {
		dir := t.TempDir()
		first, err := Start(context.Background(), Config{DataDir: dir, Controllers: []string{"-*"}, DisableScheduler: true})
		if err != nil {
			t.Fatal(err)
		}
		wantLockError(t, startWithin(t, dir, 5*time.Second), dir, os.Getpid())
		first.Stop()
		second, err := Start(context.Background(), Config{DataDir: dir, Controllers: []string{"-*"}, DisableScheduler: true})
		if err != nil {
			t.Fatalf("start after the first stopped: %v", err)
		}
		second.Stop()
	})
}

// startWithin starts a server on dir and fails the test unless Start
// returns within d; it returns Start's error (stopping a server that did
// start).
func startWithin(t *testing.T, dir string, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*d)
	defer cancel()
	begin := time.Now()
	srv, err := Start(ctx, Config{DataDir: dir, Controllers: []string{"-*"}, DisableScheduler: true})
	if took := time.Since(begin); took > d {
		t.Errorf("Start took %v, want a refusal at once", took)
	}
	if err == nil {
		srv.Stop()
	}
	return err
}

func wantLockError(t *testing.T, err error, dir string, pid int) {
	t.Helper()
	if err == nil {
		t.Fatal("a second server started on a data directory in use")
	}
	msg := err.Error()
	for _, want := range []string{dir + "/rudder.lock", "process " + strconv.Itoa(pid)} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q is not one line", msg)
	}
}
