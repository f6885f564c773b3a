package controllertest

import (
	"testing"
	"time"
)

// PollInterval is how often Eventually and Consistently check their
// condition: short enough not to slow a test down much, long enough not
// to load a busy machine's API server.
const PollInterval = 50 * time.Millisecond

// Eventually checks cond at once and then every PollInterval until it
// returns true, and fails the test with cond's last message if timeout
// passes first. The message should say what cond saw ("2 of 3 pods
// ready"), so a failure explains itself.
func Eventually(t testing.TB, timeout time.Duration, cond func() (ok bool, msg string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", timeout, msg)
		}
		time.Sleep(PollInterval)
	}
}

// Consistently checks cond every PollInterval for d and fails the test
// with cond's message the first time it returns false: the way to show
// a controller did not do what it must not (delete an object still
// owned, evict a pod that tolerates the taint) in the time it would
// have taken to do it.
func Consistently(t testing.TB, d time.Duration, cond func() (ok bool, msg string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			t.Fatal(msg)
		}
		time.Sleep(PollInterval)
	}
}
