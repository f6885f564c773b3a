package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long a controller trusts its own record of
// pending creates and deletes. A watch event can be lost for good (an
// informer relist that misses a short-lived pod, a create that timed out
// on the client but never happened); after this long the record is
// ignored and the controller syncs from what its informer shows.
const ExpectationsTimeout = 5 * time.Minute

// Expectations remember, per controller key, the creations and deletions
// a controller has asked for and not yet seen in its informer.
//
// The problem they solve: a controller that creates 5 pods and is woken
// again before the informer has delivered them would count too few pods
// and create 5 more. So a sync that acts first records what it expects
// (ExpectCreations / ExpectDeletions), the informer's event handlers
// tick the record down as the objects arrive (CreationObserved /
// DeletionObserved), and the next sync only manages replicas once
// SatisfiedExpectations says everything asked for has been seen.
//
// Deletions are tracked by pod key (or UID, the caller's choice, used
// consistently), not counted: a pod is seen deleted twice (its
// deletionTimestamp, then its removal) and only the first may count.
//
// All methods are safe for concurrent use.
type Expectations struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	records map[string]*expectation
}

type expectation struct {
	adds      int
	deletes   map[string]struct{}
	timestamp time.Time
}

// NewExpectations returns an empty record; a nil clock is the real one.
func NewExpectations(clk clock.PassiveClock) *Expectations {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Expectations{clock: clk, records: map[string]*expectation{}}
}

// ExpectCreations replaces key's record: n creations are pending and no
// deletions.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records[key] = &expectation{adds: n, timestamp: e.clock.Now()}
}

// ExpectDeletions replaces key's record: the pods named by podKeys are
// pending deletion and no creations.
func (e *Expectations) ExpectDeletions(key string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &expectation{deletes: make(map[string]struct{}, len(podKeys)), timestamp: e.clock.Now()}
	for _, k := range podKeys {
		r.deletes[k] = struct{}{}
	}
	e.records[key] = r
}

// RaiseExpectations adds to key's pending creations and deletions
// without resetting the record's age (for controllers that act in
// several steps within one sync).
func (e *Expectations) RaiseExpectations(key string, adds int, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	if r == nil {
		r = &expectation{timestamp: e.clock.Now()}
		e.records[key] = r
	}
	r.adds += adds
	if len(podKeys) > 0 && r.deletes == nil {
		r.deletes = make(map[string]struct{}, len(podKeys))
	}
	for _, k := range podKeys {
		r.deletes[k] = struct{}{}
	}
}

// LowerExpectations marks adds creations and the deletions of podKeys as
// seen (or as never going to happen: a create that failed). Pod keys not
// pending are ignored, so a deletion is counted once however often it is
// observed.
func (e *Expectations) LowerExpectations(key string, adds int, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	if r == nil {
		return
	}
	r.adds -= adds
	for _, k := range podKeys {
		delete(r.deletes, k)
	}
}

// CreationObserved marks one creation for key as seen.
func (e *Expectations) CreationObserved(key string) {
	e.LowerExpectations(key, 1, nil)
}

// DeletionObserved marks the deletion of podKey for key as seen.
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.records[key]; r != nil {
		delete(r.deletes, podKey)
	}
}

// DeleteExpectations forgets key (its object was deleted; one created
// again under the same name starts clean).
func (e *Expectations) DeleteExpectations(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.records, key)
}

// SatisfiedExpectations reports whether key's controller may act: it has
// no record (never acted, or restarted), everything it asked for has been
// seen, or the record is older than ExpectationsTimeout.
func (e *Expectations) SatisfiedExpectations(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	if r == nil {
		return true
	}
	if r.adds <= 0 && len(r.deletes) == 0 {
		return true
	}
	return e.clock.Since(r.timestamp) > ExpectationsTimeout
}

// Pending returns key's outstanding creations and deletions (adds may be
// negative after surprise creations), and whether a record exists.
func (e *Expectations) Pending(key string) (adds, deletes int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.records[key]
	if r == nil {
		return 0, 0, false
	}
	return r.adds, len(r.deletes), true
}
