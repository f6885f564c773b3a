//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const stuckChildEnv = "RUDDER_SIGNALS_STUCK_CHILD"

// TestSignalsStuckHelper is not a test of its own: it is a rudder process
// stuck in a step that ignores its context, which the signal tests stop.
func TestSignalsStuckHelper(t *testing.T) {
	if os.Getenv(stuckChildEnv) == "" {
		t.Skip("helper process of TestSignalsEndAStuckProcess")
	}
	shutdownGrace = 500 * time.Millisecond
	_, stop := signalContext()
	defer stop()
	os.Stdout.WriteString("stuck\n")
	select {} // never looks at the context, like a blocked start-up step
}

// TestSignalsEndAStuckProcess checks that SIGTERM ends a rudder process
// even when it is stuck and never returns to look at its context: after
// the grace, or at once on a second signal, with one line saying why.
func TestSignalsEndAStuckProcess(t *testing.T) {
	cases := []struct {
		name    string
		signals int
		within  time.Duration
		line    string
	}{
		{name: "grace runs out", signals: 1, within: 10 * time.Second, line: "rudder: still running 500ms after terminated, exiting"},
		{name: "second signal", signals: 2, within: 5 * time.Second, line: "rudder: terminated again, exiting now"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignalsStuckHelper$")
			cmd.Env = append(os.Environ(), stuckChildEnv+"=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			buf := make([]byte, 6)
			if _, err := out.Read(buf); err != nil || string(buf) != "stuck\n" {
				t.Fatalf("helper did not start: %q %v", buf, err)
			}
			go func() { exited <- cmd.Wait() }()
			start := time.Now()
			for range tc.signals {
				cmd.Process.Signal(syscall.SIGTERM)
				time.Sleep(50 * time.Millisecond) // the second must come after the first was handled
			}
			select {
			case err := <-exited:
				exited <- err
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 1 {
					t.Errorf("exit %v, want code 1", err)
				}
			case <-time.After(tc.within):
				t.Fatalf("still running %v after SIGTERM", time.Since(start))
			}
			if got := strings.TrimSpace(stderr.String()); got != tc.line {
				t.Errorf("stderr %q, want %q", got, tc.line)
			}
		})
	}
}
