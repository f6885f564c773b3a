package apiserver

import (
	"context"
	"net/http"
	"strings"
	"sync"
)

// Fair sharing between the in-process components.
//
// In `rudder server` the controllers, the scheduler and the simulated
// nodes all write through the loopback transport, in one process on a few
// cores. Left alone, whoever has most requests in flight gets most of the
// CPU: the replica set controller creating 250 pods at once starves the
// scheduler binding them and the nodes starting them, pods pile up between
// the stages, and pod startup latency grows with the size of the rollout
// instead of staying flat. Upstream avoids this with API Priority and
// Fairness, which shares the server's concurrency out between flows.
//
// fairShare does the same for loopback writes: at most limit of them run
// at once, and when more wait, a free seat goes to the waiting flows in
// turn. A flow is one component's writes to one resource ("rudder-
// scheduler" creating pods/binding is one, its events another), so each
// stage of a pipeline gets an equal share and none can run ahead of the
// others. Reads and watches are not counted; nothing is refused, only
// queued, so what clients see is unchanged apart from the timing.
type fairShare struct {
	limit int

	mu    sync.Mutex
	inUse int
	flows map[string]*fairFlow
	// turn lists the flows with waiters, in the order they are served.
	turn []*fairFlow
}

type fairFlow struct {
	key     string
	waiting []chan struct{}
	queued  bool // in turn
}

func newFairShare(limit int) *fairShare {
	if limit <= 0 {
		return nil
	}
	return &fairShare{limit: limit, flows: map[string]*fairFlow{}}
}

// acquire waits for a seat for flow, or for ctx to end. release gives the
// seat back; call it once, when the request's handler has finished.
func (f *fairShare) acquire(ctx context.Context, flow string) (release func(), err error) {
	f.mu.Lock()
	if f.inUse < f.limit && len(f.turn) == 0 {
		f.inUse++
		f.mu.Unlock()
		return f.release, nil
	}
	fl := f.flows[flow]
	if fl == nil {
		fl = &fairFlow{key: flow}
		f.flows[flow] = fl
	}
	ready := make(chan struct{})
	fl.waiting = append(fl.waiting, ready)
	if !fl.queued {
		fl.queued = true
		f.turn = append(f.turn, fl)
	}
	f.mu.Unlock()

	select {
	case <-ready:
		return f.release, nil
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		select {
		case <-ready:
			// Granted as we gave up: pass the seat on.
			f.inUse--
			f.dispatch()
		default:
			f.forget(fl, ready)
		}
		return nil, ctx.Err()
	}
}

func (f *fairShare) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inUse--
	f.dispatch()
}

// dispatch hands free seats to the waiting flows in turn: the flow at the
// head gets one and goes to the back if it still has waiters. Called with
// mu held.
func (f *fairShare) dispatch() {
	for f.inUse < f.limit && len(f.turn) > 0 {
		fl := f.turn[0]
		f.turn = f.turn[1:]
		ready := fl.waiting[0]
		fl.waiting = fl.waiting[1:]
		f.inUse++
		close(ready)
		if len(fl.waiting) > 0 {
			f.turn = append(f.turn, fl)
		} else {
			fl.queued = false
			delete(f.flows, fl.key)
		}
	}
}

// forget removes a waiter that gave up. Called with mu held.
func (f *fairShare) forget(fl *fairFlow, ready chan struct{}) {
	for i, w := range fl.waiting {
		if w == ready {
			fl.waiting = append(fl.waiting[:i], fl.waiting[i+1:]...)
			break
		}
	}
	if len(fl.waiting) > 0 {
		return
	}
	for i, t := range f.turn {
		if t == fl {
			f.turn = append(f.turn[:i], f.turn[i+1:]...)
			break
		}
	}
	fl.queued = false
	delete(f.flows, fl.key)
}

// fairFlowOf names the flow of a loopback request, or "" for one that is
// not shared out (reads, watches): the component (its user agent, up to
// the first "/") and the resource written.
func fairFlowOf(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	agent, _, _ := strings.Cut(r.Header.Get("User-Agent"), "/")
	return agent + " " + resourceOfPath(r.URL.Path)
}

// resourceOfPath picks the resource out of an API path:
// /api/v1/namespaces/ns/pods/name/status → pods,
// /apis/apps/v1/replicasets → replicasets. Good enough to tell flows apart;
// anything else is "".
func resourceOfPath(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return "namespaces"
	}
	return parts[0]
}
