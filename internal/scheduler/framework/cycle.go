package framework

import "sync/atomic"

// StateKey names one plugin's data in a CycleState.
type StateKey string

// StateData is data a plugin keeps for one scheduling cycle. Clone must
// return a copy that can be changed without affecting the original
// (preemption clones the state to try removing pods); data that is never
// changed after PreFilter may return itself.
type StateData interface {
	Clone() StateData
}

// CycleState carries plugin data through one pod's scheduling cycle.
//
// Concurrency: Write only from single-threaded extension points (PreFilter,
// PreScore, Reserve, and the AddPod/RemovePod extensions on a state the
// caller owns); Read from anywhere, including the parallel Filter and
// Score calls. That is why there is no lock.
type CycleState struct {
	// A handful of plugins write here: a linear scan of a short slice
	// beats hashing on the per-node hot path, and equal constant keys
	// compare by pointer first.
	data []stateEntry
	// SkipFilter and SkipScore list plugins that returned Skip from
	// PreFilter / PreScore in this cycle; the framework fills them.
	SkipFilter map[string]bool
	SkipScore  map[string]bool
	// ActiveFilters, when set by the framework after PreFilter, are the
	// Filter plugins not skipped in this cycle, so that the per-node loop
	// does no map lookups.
	ActiveFilters []FilterPlugin
	// RecordPluginMetrics says this cycle is one of the sampled ones whose
	// plugin calls are timed (scheduler_plugin_execution_duration_seconds),
	// as upstream samples a tenth of its cycles. PerNodeTimed counts the
	// per-node calls (Filter, Score) timed so far: only the first few
	// nodes' are, or timing thousands of calls would cost more than the
	// cycle.
	RecordPluginMetrics bool
	PerNodeTimed        atomic.Int32
}

type stateEntry struct {
	key  StateKey
	data StateData
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: make([]stateEntry, 0, 12)}
}

// Read returns the data under key, or nil.
func (c *CycleState) Read(key StateKey) StateData {
	for i := range c.data {
		if c.data[i].key == key {
			return c.data[i].data
		}
	}
	return nil
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, d StateData) {
	for i := range c.data {
		if c.data[i].key == key {
			c.data[i].data = d
			return
		}
	}
	c.data = append(c.data, stateEntry{key, d})
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	for i := range c.data {
		if c.data[i].key == key {
			c.data = append(c.data[:i], c.data[i+1:]...)
			return
		}
	}
}

// Clone copies the state, cloning every value.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	n := &CycleState{data: make([]stateEntry, len(c.data), cap(c.data)), SkipFilter: c.SkipFilter, SkipScore: c.SkipScore, ActiveFilters: c.ActiveFilters}
	for i, e := range c.data {
		n.data[i] = stateEntry{e.key, e.data.Clone()}
	}
	return n
}
