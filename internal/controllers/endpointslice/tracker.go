package endpointslice

import (
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// sliceTracker remembers, per Service, the version of every slice this
// controller last wrote, and the slices it deleted, until the informer
// shows them. It answers two questions:
//
//   - is the cache behind our own writes (stale)? A sync planned from a
//     cache that does not yet show the slice it just created would create
//     it again; one that shows an older version would undo its own
//     update. Such a sync is refused and retried.
//   - is an event news (shouldSync)? The events of our own writes need no
//     sync; a slice changed or deleted by someone else does.
//
// A version is the slice's metadata.generation, which upstream's API
// server bumps on every change outside metadata. A server that leaves
// generation at zero is read by resourceVersion instead, which in rudder
// is the etcd revision and so grows with every write.
//
// All methods are safe for concurrent use.
type sliceTracker struct {
	mu        sync.Mutex
	byService map[types.NamespacedName]map[types.UID]sliceVersion
	// serviceUID is the Service each record was made for: a Service
	// deleted and created again under one name starts a clean record.
	serviceUID map[types.NamespacedName]types.UID
}

// sliceVersion is a written slice's version; gone means we deleted it.
type sliceVersion struct {
	gen  int64
	rv   uint64
	gone bool
}

func versionOf(s *discoveryv1.EndpointSlice) sliceVersion {
	rv, _ := strconv.ParseUint(s.ResourceVersion, 10, 64)
	return sliceVersion{gen: s.Generation, rv: rv}
}

// newer reports whether v is a later write than w.
func (v sliceVersion) newer(w sliceVersion) bool {
	if v.gen > 0 && w.gen > 0 {
		return v.gen > w.gen
	}
	return v.rv > w.rv
}

func newSliceTracker() *sliceTracker {
	return &sliceTracker{
		byService:  map[types.NamespacedName]map[types.UID]sliceVersion{},
		serviceUID: map[types.NamespacedName]types.UID{},
	}
}

// serviceOf names the Service a slice belongs to, by its label.
func serviceOf(s *discoveryv1.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}
}

// has reports whether the slice is tracked.
func (t *sliceTracker) has(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.byService[serviceOf(s)][s.UID]
	return ok
}

// shouldSync reports whether an add or update event for s is news: the
// slice is not one we wrote, or someone wrote it after us.
func (t *sliceTracker) shouldSync(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.byService[serviceOf(s)][s.UID]
	return !ok || v.gone || versionOf(s).newer(v)
}

// stale reports whether the cached slices of svc lag behind our writes:
// one is older than we wrote it, one we deleted is still there, or one we
// wrote is not there yet.
func (t *sliceTracker) stale(svc *corev1.Service, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	if uid, ok := t.serviceUID[nn]; ok && uid != svc.UID {
		delete(t.byService, nn)
	}
	t.serviceUID[nn] = svc.UID
	tracked := t.byService[nn]
	if len(tracked) == 0 {
		return false
	}
	seen := make(map[types.UID]bool, len(cached))
	for _, s := range cached {
		seen[s.UID] = true
		if v, ok := tracked[s.UID]; ok && (v.gone || v.newer(versionOf(s))) {
			return true
		}
	}
	for uid, v := range tracked {
		if !v.gone && !seen[uid] {
			return true
		}
	}
	return false
}

// wrote records a slice as the API server returned it from our create or
// update.
func (t *sliceTracker) wrote(s *discoveryv1.EndpointSlice) {
	t.set(s, versionOf(s))
}

// deleting records that we deleted s.
func (t *sliceTracker) deleting(s *discoveryv1.EndpointSlice) {
	t.set(s, sliceVersion{gone: true})
}

func (t *sliceTracker) set(s *discoveryv1.EndpointSlice, v sliceVersion) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := serviceOf(s)
	m := t.byService[nn]
	if m == nil {
		m = map[types.UID]sliceVersion{}
		t.byService[nn] = m
	}
	m[s.UID] = v
}

// deleted forgets a slice the informer saw deleted, and reports whether
// we expected it (we deleted it, or never wrote it).
func (t *sliceTracker) deleted(s *discoveryv1.EndpointSlice) (expected bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.byService[serviceOf(s)]
	v, ok := m[s.UID]
	delete(m, s.UID)
	return !ok || v.gone
}

// forget drops a deleted Service's record.
func (t *sliceTracker) forget(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := types.NamespacedName{Namespace: namespace, Name: name}
	delete(t.byService, nn)
	delete(t.serviceUID, nn)
}
