package kubelet

import "time"

// Back-off of container restarts and image pulls, as upstream's kubelet
// keeps it (flowcontrol.Backoff): an entry per key holds the current
// delay and the event that set it. A container that stopped at t is in
// back-off while now-t < delay; the next restart doubles the delay up to
// the maximum; an entry whose last event is older than twice the maximum
// (10 min for restarts) starts over from the initial delay.
//
// The plan only reads entries and returns the updated one with the
// action that uses it; the pod worker stores it when the action ran.
// Nothing here sleeps or reads a clock.

// Back-off limits (upstream's kubelet: 10 s doubling to 300 s for both).
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 300 * time.Second
)

// backoffEntry is one key's back-off.
type backoffEntry struct {
	Delay time.Duration
	Last  time.Time // the event the delay counts from
	// Err is the last failure (image pulls); empty for restarts.
	Err string
}

// expired: the last event is so old that the key starts over.
func (e backoffEntry) expired(event time.Time) bool {
	return event.Sub(e.Last) > 2*backoffMax
}

// inBackoff reports whether an action caused by event must still wait at
// now, and until when.
func inBackoff(e *backoffEntry, event, now time.Time) (bool, time.Time) {
	if e == nil || e.expired(event) {
		return false, time.Time{}
	}
	until := event.Add(e.Delay)
	return now.Before(until), until
}

// nextBackoff is the entry after an action caused by event.
func nextBackoff(e *backoffEntry, event time.Time) backoffEntry {
	if e == nil || e.expired(event) {
		return backoffEntry{Delay: backoffInitial, Last: event}
	}
	return backoffEntry{Delay: min(2*e.Delay, backoffMax), Last: event}
}
