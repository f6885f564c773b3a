package framework

import (
	"sync"
	"sync/atomic"
)

// Whether helpers pay depends on the machine at the moment, not only on
// its core count: on a quiet two-core machine they make the scheduling
// loop ~20 % faster, but when the other core is shared (another process,
// or a hypervisor running something else on it) waiting for them made
// the loop twice as slow as working alone. So the pool measures both
// ways on the live work: a short trial with helpers, a short trial
// alone, then a long run of whichever took less time per item, and
// again.
const (
	trialSections = 256  // sections in each trial
	runSections   = 4096 // sections in each run after the trials
	// helpersGain is how much faster per item the helpers must be to
	// be used: within it, working alone is as fast and spares a core.
	helpersGain = 1.1
)

type trialPhase uint8

const (
	trialHelpers trialPhase = iota // trying helpers
	trialAlone                     // trying alone
	trialRun                       // working the chosen way
)

// trial holds the measurements; the zero value starts with the helpers'
// trial.
type trial struct {
	// alone is the current way, read by every section.
	alone atomic.Bool

	mu      sync.Mutex
	phase   trialPhase
	done    int   // sections finished in this phase
	ns      int64 // their time
	items   int64 // and items
	helpers float64
}

// solo says whether the next section works alone.
func (t *trial) solo() bool { return t.alone.Load() }

// record adds a section that took ns for items items.
func (t *trial) record(ns int64, items int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done++
	t.ns += ns
	t.items += int64(items)
	limit := trialSections
	if t.phase == trialRun {
		limit = runSections
	}
	if t.done < limit {
		return
	}
	perItem := float64(t.ns) / float64(max(t.items, 1))
	switch t.phase {
	case trialHelpers:
		t.helpers = perItem
		t.phase = trialAlone
		t.alone.Store(true)
	case trialAlone:
		t.phase = trialRun
		t.alone.Store(!(t.helpers*helpersGain < perItem))
	case trialRun:
		t.phase = trialHelpers
		t.alone.Store(false)
	}
	t.done, t.ns, t.items = 0, 0, 0
}
