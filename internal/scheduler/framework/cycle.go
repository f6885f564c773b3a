package framework

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
	data map[StateKey]StateData
	// SkipFilter and SkipScore list plugins that returned Skip from
	// PreFilter / PreScore in this cycle; the framework fills them.
	SkipFilter map[string]bool
	SkipScore  map[string]bool
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{data: make(map[StateKey]StateData, 8)}
}

// Read returns the data under key, or nil.
func (c *CycleState) Read(key StateKey) StateData { return c.data[key] }

// Write stores data under key.
func (c *CycleState) Write(key StateKey, d StateData) { c.data[key] = d }

// Delete removes key.
func (c *CycleState) Delete(key StateKey) { delete(c.data, key) }

// Clone copies the state, cloning every value.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	n := &CycleState{data: make(map[StateKey]StateData, len(c.data)), SkipFilter: c.SkipFilter, SkipScore: c.SkipScore}
	for k, v := range c.data {
		n.data[k] = v.Clone()
	}
	return n
}
