package controllertest_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// recorder is a testing.TB whose Fatal records the message and ends
// the goroutine, as the real one does, so a test can see its helper fail.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) {
	r.failure = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// failure runs f with a recorder and returns what it failed with, or "".
func failure(t *testing.T, f func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failure
}

// afterCalls is a condition that holds from its nth call on.
func afterCalls(n int) func() (bool, string) {
	calls := 0
	return func() (bool, string) {
		calls++
		return calls >= n, fmt.Sprintf("call %d", calls)
	}
}

func TestEventually(t *testing.T) {
	tests := []struct {
		name    string
		cond    func() (bool, string)
		timeout time.Duration
		want    string // failure prefix; "" for none
	}{
		{"holds at once", afterCalls(1), 0, ""},
		{"holds after a few polls", afterCalls(3), time.Second, ""},
		{"never holds: fails with the last message", func() (bool, string) { return false, "2 of 3 ready" }, 120 * time.Millisecond, "timed out after 120ms: 2 of 3 ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got := failure(t, func(tb testing.TB) { controllertest.Eventually(tb, tt.timeout, tt.cond) })
			if got != tt.want {
				t.Errorf("failure %q, want %q", got, tt.want)
			}
			if tt.want != "" && time.Since(start) < tt.timeout {
				t.Errorf("gave up after %v, before the %v timeout", time.Since(start), tt.timeout)
			}
		})
	}
}

func TestConsistently(t *testing.T) {
	tests := []struct {
		name string
		cond func() (bool, string)
		want string
	}{
		{"holds throughout", func() (bool, string) { return true, "" }, ""},
		{"breaks on the third poll", func() func() (bool, string) {
			calls := 0
			return func() (bool, string) {
				calls++
				return calls < 3, fmt.Sprintf("deleted on call %d", calls)
			}
		}(), "deleted on call 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got := failure(t, func(tb testing.TB) { controllertest.Consistently(tb, 300*time.Millisecond, tt.cond) })
			if got != tt.want {
				t.Errorf("failure %q, want %q", got, tt.want)
			}
			if tt.want == "" && time.Since(start) < 300*time.Millisecond {
				t.Errorf("returned after %v, before the 300ms were up", time.Since(start))
			}
		})
	}
}
