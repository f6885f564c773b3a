package serviceendpoints

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TriggerTimes computes the endpoints.kubernetes.io/last-change-trigger-time
// annotation: the time of the earliest change, since the previous sync of a
// Service, that this sync's endpoints reflect. Consumers (kube-proxy's
// network programming latency metric, for one) read it as "this object
// reflects changes made as late as that". A change is a pod's Ready
// condition moving (its lastTransitionTime) or the Service being created;
// the first sync of a Service after a controller starts reports the
// Service's creation.
//
// A pod that changed twice between two syncs counts once, at its later
// time: the value is an approximation, as upstream's is.
//
// Compute must not run concurrently for one Service (the work queue
// guarantees it); calls for different Services may.
type TriggerTimes struct {
	mu    sync.Mutex
	state map[string]triggerState // by "namespace/name"
}

type triggerState struct {
	service time.Time            // the Service's creation time seen last
	pods    map[string]time.Time // pod name -> Ready transition seen last
}

// NewTriggerTimes returns an empty tracker.
func NewTriggerTimes() *TriggerTimes {
	return &TriggerTimes{state: map[string]triggerState{}}
}

// Compute records what this sync sees and returns the time to publish;
// zero means publish none (remove the annotation).
func (t *TriggerTimes) Compute(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := ServiceKey(svc.Namespace, svc.Name)
	t.mu.Lock()
	prev, known := t.state[key]
	t.mu.Unlock()

	var earliest time.Time
	consider := func(at time.Time) {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	next := triggerState{service: svc.CreationTimestamp.Time, pods: make(map[string]time.Time, len(pods))}
	for _, pod := range pods {
		at := readyTransition(pod)
		if at.IsZero() {
			continue
		}
		next.pods[pod.Name] = at
		if at.After(prev.pods[pod.Name]) {
			consider(at)
		}
	}
	if next.service.After(prev.service) {
		consider(next.service)
	}
	t.mu.Lock()
	t.state[key] = next
	t.mu.Unlock()
	if !known {
		return svc.CreationTimestamp.Time
	}
	return earliest
}

// Forget drops a deleted Service's record.
func (t *TriggerTimes) Forget(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.state, ServiceKey(namespace, name))
}
