package replicaset

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
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
