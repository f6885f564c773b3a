package streaming

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// tokenCache holds the requests GetExec, GetAttach and GetPortForward
// accepted, each under a random token that works once and only until it
// expires. A token is the only credential a streaming URL carries, so it
// must be unguessable (128 random bits) and short-lived.
type tokenCache struct {
	clock    clock.PassiveClock
	ttl      time.Duration
	maxItems int

	mu    sync.Mutex
	items map[string]tokenEntry
}

type tokenEntry struct {
	req     any // *runtimeapi.ExecRequest, *AttachRequest or *PortForwardRequest
	expires time.Time
}

func newTokenCache(c clock.PassiveClock, ttl time.Duration, maxItems int) *tokenCache {
	return &tokenCache{clock: c, ttl: ttl, maxItems: maxItems, items: make(map[string]tokenEntry)}
}

// insert stores req and returns its token. It fails with
// ErrTooManyRequests while maxItems unexpired tokens are outstanding.
func (c *tokenCache) insert(req any) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(b[:])

	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.items) >= c.maxItems {
		c.evictExpiredLocked(now)
		if len(c.items) >= c.maxItems {
			return "", fmt.Errorf("%w: %d streaming requests outstanding", ErrTooManyRequests, len(c.items))
		}
	}
	c.items[token] = tokenEntry{req: req, expires: now.Add(c.ttl)}
	return token, nil
}

// consume returns the request stored under token and forgets it, if the
// token exists, has not expired and its request satisfies match. A token
// presented at the wrong endpoint is left in place, so a client's mistake
// does not burn it.
func (c *tokenCache) consume(token string, match func(any) bool) (any, bool) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[token]
	if !ok {
		return nil, false
	}
	if !now.Before(e.expires) {
		delete(c.items, token)
		return nil, false
	}
	if !match(e.req) {
		return nil, false
	}
	delete(c.items, token)
	return e.req, true
}

func (c *tokenCache) evictExpiredLocked(now time.Time) {
	for t, e := range c.items {
		if !now.Before(e.expires) {
			delete(c.items, t)
		}
	}
}

func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
