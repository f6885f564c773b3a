package nodelifecycle

import (
	"slices"
	"time"
)

// zoneState is how a zone's nodes fare as a whole; it sets how fast the
// zone's unhealthy nodes get NoExecute taints.
type zoneState string

const (
	stateInitial           zoneState = "Initial"
	stateNormal            zoneState = "Normal"
	statePartialDisruption zoneState = "PartialDisruption"
	stateFullDisruption    zoneState = "FullDisruption"
)

// zoneCount is how many of a zone's counted nodes are Ready and not.
type zoneCount struct{ ready, notReady int }

// computeZoneState: no Ready node is a full disruption; at least 3
// NotReady making up at least threshold of the zone is a partial one.
func computeZoneState(c zoneCount, threshold float64) zoneState {
	switch {
	case c.ready == 0 && c.notReady > 0:
		return stateFullDisruption
	case c.notReady > 2 && float64(c.notReady)/float64(c.notReady+c.ready) >= threshold:
		return statePartialDisruption
	}
	return stateNormal
}

// disruptionPlan is what one pass changes in the zones.
type disruptionPlan struct {
	// states is every counted zone's state after the pass.
	states map[string]zoneState
	// qps holds the new tainting rate of each zone whose rate changes.
	qps map[string]float64
	// enterFull: every zone just went into full disruption; the caller
	// removes the NoExecute taints from every node.
	enterFull bool
	// exitFull: some zone just came out of an all-zones full disruption;
	// the caller gives every node a fresh grace period.
	exitFull bool
}

// planDisruption decides zone states and tainting rates from the states
// of the last pass (prev) and this pass's counts (zones with counted
// nodes only; a zone missing from prev was Initial).
//
// When every zone has no Ready node the likelier story is that the
// controller (or the control plane's network) is cut off, not that
// every machine died, so tainting stops everywhere. Otherwise a zone in
// full disruption is tainted at the normal rate (its nodes are probably
// really gone) and a partially disrupted one slowly, or not at all when
// it is small.
func planDisruption(prev map[string]zoneState, counts map[string]zoneCount, cfg *Config) disruptionPlan {
	p := disruptionPlan{states: make(map[string]zoneState, len(counts)), qps: map[string]float64{}}
	if len(counts) == 0 {
		return p
	}
	next := make(map[string]zoneState, len(counts))
	allAre, allWas := true, true
	for z, c := range counts {
		next[z] = computeZoneState(c, cfg.UnhealthyZoneThreshold)
		if next[z] != stateFullDisruption {
			allAre = false
		}
		was, ok := prev[z]
		if !ok {
			was = stateInitial
		}
		p.states[z] = was
		if was != stateFullDisruption {
			allWas = false
		}
	}
	switch {
	case allAre && allWas:
		// Still cut off: nothing changes.
	case allAre:
		p.enterFull = true
		for z := range counts {
			p.states[z] = stateFullDisruption
			p.qps[z] = 0
		}
	case allWas:
		p.exitFull = true
		for z, c := range counts {
			p.states[z] = next[z]
			p.qps[z] = zoneQPS(next[z], c.ready+c.notReady, cfg)
		}
	default:
		for z, c := range counts {
			if p.states[z] != next[z] {
				p.states[z] = next[z]
				p.qps[z] = zoneQPS(next[z], c.ready+c.notReady, cfg)
			}
		}
	}
	return p
}

// zoneQPS is the tainting rate for a zone of size nodes in state.
func zoneQPS(state zoneState, size int, cfg *Config) float64 {
	if state == statePartialDisruption {
		if size > cfg.LargeClusterSizeThreshold {
			return cfg.SecondaryEvictionLimiterQPS
		}
		return 0
	}
	return cfg.EvictionLimiterQPS
}

// limiter is a token bucket holding at most one token, refilled at qps
// per second: a zone taints at most one node at once, then one per
// 1/qps. qps <= 0 lets nothing through.
type limiter struct {
	qps  float64
	last time.Time // when the last token was taken; zero: bucket full
}

// tryAccept takes the token if there is one at now.
func (l *limiter) tryAccept(now time.Time) bool {
	if l.qps <= 0 {
		return false
	}
	if !l.last.IsZero() && now.Sub(l.last) < time.Duration(float64(time.Second)/l.qps) {
		return false
	}
	l.last = now
	return true
}

// setQPS changes the rate; a bucket just emptied stays empty, so a rate
// change never grants an extra token.
func (l *limiter) setQPS(qps float64) { l.qps = qps }

// nodeQueue is a zone's first-in first-out queue of node names waiting
// for a NoExecute taint, each at most once.
type nodeQueue struct {
	names []string
	in    map[string]bool
}

func (q *nodeQueue) add(name string) {
	if q.in[name] {
		return
	}
	if q.in == nil {
		q.in = map[string]bool{}
	}
	q.in[name] = true
	q.names = append(q.names, name)
}

func (q *nodeQueue) remove(name string) {
	if !q.in[name] {
		return
	}
	delete(q.in, name)
	q.names = slices.DeleteFunc(q.names, func(n string) bool { return n == name })
}

func (q *nodeQueue) has(name string) bool { return q.in[name] }

// zone is the monitor's memory of one zone.
type zone struct {
	state zoneState
	lim   limiter
	queue nodeQueue
}
