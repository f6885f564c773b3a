package replicaset

import (
	"sync"
	"time"
)

// statusBatcher spaces out the syncs that events which only change a
// ReplicaSet's counts ask for (see StatusBatchPeriod). The next such
// sync of a key starts no sooner than period after the previous sync of
// that key ended: a delay counted from the event alone would, once one
// sync takes longer than the period (10,000 pods to recount on a busy
// machine), start the next at once, and the controller would recount
// without pause. Events that may call for creating or deleting pods do
// not come through here; they queue the key at once.
type statusBatcher struct {
	period time.Duration
	now    func() time.Time
	// after queues key after d (the work queue's AddAfter).
	after func(key string, d time.Duration)

	mu   sync.Mutex
	keys map[string]*batchState
}

type batchState struct {
	running   bool      // a sync of the key is under way
	pending   bool      // an event came during it
	scheduled bool      // queued, its sync not yet begun
	lastEnd   time.Time // when the last sync ended
}

func newStatusBatcher(period time.Duration, now func() time.Time, after func(string, time.Duration)) *statusBatcher {
	return &statusBatcher{period: period, now: now, after: after, keys: map[string]*batchState{}}
}

// enqueue asks for a sync of key for the sake of its status.
func (b *statusBatcher) enqueue(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.keys[key]
	if st == nil {
		st = &batchState{}
		b.keys[key] = st
	}
	switch {
	case st.running:
		st.pending = true
	case st.scheduled:
		// Already coming: this event joins it.
	default:
		st.scheduled = true
		d := time.Duration(0)
		if !st.lastEnd.IsZero() {
			d = max(st.lastEnd.Add(b.period).Sub(b.now()), 0)
		}
		b.after(key, d)
	}
}

// begin marks the start of a sync of key, whatever queued it: the
// sync sees every event before it.
func (b *statusBatcher) begin(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.keys[key]
	if st == nil {
		st = &batchState{}
		b.keys[key] = st
	}
	st.running, st.scheduled, st.pending = true, false, false
}

// end marks the end of a sync of key; events during it are served one
// period later.
func (b *statusBatcher) end(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.keys[key]
	if st == nil {
		return
	}
	st.running = false
	st.lastEnd = b.now()
	if st.pending {
		st.pending, st.scheduled = false, true
		b.after(key, b.period)
	}
}

// forget drops key's state (its object is gone).
func (b *statusBatcher) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.keys[key]; st != nil && !st.running {
		delete(b.keys, key)
	}
}
