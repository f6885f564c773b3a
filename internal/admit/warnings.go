package admit

import (
	"context"
	"sync"
)

// Warnings: a plugin may admit a write and still tell the client something
// ("would violate PodSecurity ..."). The API server puts a recorder in each
// request's context; AddWarning hands it a message, which the server sends
// as a "Warning: 299 - ..." response header (kubectl prints it on stderr).
// The mechanism is general; PodSecurity, webhooks and policies use it.

type warningsKey struct{}

type warningRecorder struct {
	mu   sync.Mutex
	seen map[string]bool
	add  func(string)
}

// WithWarnings returns a context whose warnings go to add, each distinct
// message once: a write retried after a conflict runs admission again and
// must not repeat itself. add is called on the request's goroutine, before
// the response is written.
func WithWarnings(ctx context.Context, add func(msg string)) context.Context {
	return context.WithValue(ctx, warningsKey{}, &warningRecorder{seen: map[string]bool{}, add: add})
}

// AddWarning sends a warning to the client of the request ctx belongs to;
// without a recorder (a write the server makes itself) it does nothing.
func AddWarning(ctx context.Context, msg string) {
	r, ok := ctx.Value(warningsKey{}).(*warningRecorder)
	if !ok || msg == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[msg] {
		return
	}
	r.seen[msg] = true
	r.add(msg)
}
