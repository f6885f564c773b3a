package cronjob

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// wakeups calls fire(key) when the injected clock reaches the time set
// for key: one timer for all CronJobs, however many there are. The
// controller's work queue waits on the real clock; a CronJob must wake
// at its schedule on whatever clock the controller was given, so a test
// with a fake clock steps through hours of schedule in milliseconds.
type wakeups struct {
	clock clock.WithTicker
	fire  func(key string)

	mu      sync.Mutex
	seq     map[string]uint64 // key -> sequence of its current entry
	next    uint64
	h       wakeHeap
	changed chan struct{}
}

func newWakeups(clk clock.WithTicker, fire func(string)) *wakeups {
	return &wakeups{clock: clk, fire: fire, seq: map[string]uint64{}, changed: make(chan struct{}, 1)}
}

// set makes key fire at t, replacing any earlier setting.
func (w *wakeups) set(key string, t time.Time) {
	w.mu.Lock()
	w.next++
	w.seq[key] = w.next
	heap.Push(&w.h, wakeEntry{at: t, key: key, seq: w.next})
	if w.h.Len() > 2*len(w.seq)+1024 {
		w.compact()
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// compact drops the entries replaced by later sets (called with mu held),
// so a key set again and again does not grow the heap.
func (w *wakeups) compact() {
	live := w.h[:0]
	for _, e := range w.h {
		if w.seq[e.key] == e.seq {
			live = append(live, e)
		}
	}
	w.h = live
	heap.Init(&w.h)
}

// forget drops key's wake-up.
func (w *wakeups) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.seq, key)
}

// due pops the keys whose time has come and returns them with the next
// time to wake (zero: none). Entries replaced by a later set are dropped
// as they surface.
func (w *wakeups) due(now time.Time) ([]string, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []string
	for w.h.Len() > 0 {
		e := w.h[0]
		if w.seq[e.key] != e.seq {
			heap.Pop(&w.h)
			continue
		}
		if e.at.After(now) {
			return keys, e.at
		}
		heap.Pop(&w.h)
		delete(w.seq, e.key)
		keys = append(keys, e.key)
	}
	return keys, time.Time{}
}

// Run fires wake-ups until ctx ends.
func (w *wakeups) Run(ctx context.Context) error {
	for {
		keys, next := w.due(w.clock.Now())
		for _, k := range keys {
			w.fire(k)
		}
		var timer clock.Timer
		var timeout <-chan time.Time
		if !next.IsZero() {
			timer = w.clock.NewTimer(next.Sub(w.clock.Now()))
			timeout = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-timeout:
		case <-w.changed:
			if timer != nil {
				timer.Stop()
			}
		}
	}
}

type wakeEntry struct {
	at  time.Time
	key string
	seq uint64
}

type wakeHeap []wakeEntry

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wakeEntry)) }
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
