package replicaset

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Every sync looks at every pod of its ReplicaSet: does it match the
// selector, does it carry every template label. At 10,000 pods that is
// tens of thousands of label-map lookups spread over the heap, per sync.
// The answers change only when the pod or the ReplicaSet's spec does, and
// the informer never changes a cached pod in place (an update brings a
// new object), so a sync remembers them per pod object and the next sync
// computes them only for pods that changed since.

// labelFacts are a pod's answers for one ReplicaSet spec.
type labelFacts struct{ selected, fullyLabeled bool }

// labelMemo holds the answers for one ReplicaSet at one generation.
type labelMemo struct {
	uid  types.UID
	gen  int64
	sel  labelMatcher
	tmpl labelMatcher
	pods map[*corev1.Pod]labelFacts
}

// labelMemos are the memos of every ReplicaSet, by key. A key is synced
// by one worker at a time, so a memo needs no lock of its own.
type labelMemos struct {
	mu sync.Mutex
	m  map[string]*labelMemo
}

func newLabelMemos() *labelMemos { return &labelMemos{m: map[string]*labelMemo{}} }

// get returns key's memo for rs's current spec, empty if the spec (its
// generation) or the object changed.
func (ms *labelMemos) get(key string, rs *appsv1.ReplicaSet, selector labels.Selector) *labelMemo {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m := ms.m[key]
	if m == nil || m.uid != rs.UID || m.gen != rs.Generation {
		m = &labelMemo{
			uid: rs.UID, gen: rs.Generation,
			sel: matcherFor(selector), tmpl: matcherForSet(rs.Spec.Template.Labels),
			pods: map[*corev1.Pod]labelFacts{},
		}
		ms.m[key] = m
	}
	return m
}

func (ms *labelMemos) forget(key string) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	delete(ms.m, key)
}

func (m *labelMemo) facts(p *corev1.Pod) labelFacts {
	f, ok := m.pods[p]
	if !ok {
		f = labelFacts{selected: m.sel.matches(p.Labels), fullyLabeled: m.tmpl.matches(p.Labels)}
		m.pods[p] = f
	}
	return f
}

func (m *labelMemo) selected(p *corev1.Pod) bool     { return m.facts(p).selected }
func (m *labelMemo) fullyLabeled(p *corev1.Pod) bool { return m.facts(p).fullyLabeled }

// sweep drops the objects the last sync did not see (older versions of
// updated pods, deleted pods) once they are a fifth of the memo, so it
// holds on to few stale pods and is rebuilt rarely.
func (m *labelMemo) sweep(seen []*corev1.Pod) {
	if len(m.pods) <= len(seen)+len(seen)/4+64 {
		return
	}
	fresh := make(map[*corev1.Pod]labelFacts, len(seen))
	for _, p := range seen {
		if f, ok := m.pods[p]; ok {
			fresh[p] = f
		}
	}
	m.pods = fresh
}

// writtenStatus remembers each key's last successful status write. A
// sync that follows soon after the previous one (the last awaited pod
// seen, a batch period passed) may read the ReplicaSet from a cache
// that has not yet received that write; writing on top of the cached
// copy would then fail with a conflict and cost a quorum read and a
// second write, with the worker waiting on both. When the cache still
// shows the very version the write replaced, the written result is the
// newer one, and the sync starts from it.
type writtenStatus struct {
	mu sync.Mutex
	m  map[string]writtenEntry
}

type writtenEntry struct {
	fromRV string // the version the write replaced
	rs     *appsv1.ReplicaSet
	orig   runtime.Object
}

func newWrittenStatus() *writtenStatus { return &writtenStatus{m: map[string]writtenEntry{}} }

func (w *writtenStatus) remember(key, fromRV string, rs *appsv1.ReplicaSet, orig runtime.Object) {
	if rs == nil || orig == nil || fromRV == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m[key] = writtenEntry{fromRV: fromRV, rs: rs, orig: orig}
}

func (w *writtenStatus) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// newest returns the written copy of key if the cached one (rs, orig) is
// the version it replaced, else the cached one (and forgets the written
// copy, which the cache has caught up with or which another write
// superseded).
func (w *writtenStatus) newest(key string, rs *appsv1.ReplicaSet, orig runtime.Object) (*appsv1.ReplicaSet, runtime.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[key]
	if !ok {
		return rs, orig
	}
	if e.fromRV == rs.ResourceVersion && e.rs.UID == rs.UID && e.rs.Generation == rs.Generation {
		return e.rs, e.orig
	}
	delete(w.m, key)
	return rs, orig
}
