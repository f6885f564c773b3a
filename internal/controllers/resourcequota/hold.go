package resourcequota

import (
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// admissionHold is how long after quota admission raised a quota's usage
// this controller will not lower it. Admission charges an object before
// it is stored, so for a moment the quota counts objects that neither
// storage nor our informers have yet; a recount in that moment would give
// their share back and let admission hand it out twice. Deletions are
// given back once the hold ends.
const admissionHold = 2 * time.Second

// quotaMemory is what the controller remembers between syncs of a quota:
// the status it last wrote (its informer may not have it yet, and
// comparing with an older copy would skip a needed write), and when
// someone else last raised its usage.
type quotaMemory struct {
	mu      sync.Mutex
	written map[string]*corev1.ResourceQuota
	raised  map[string]time.Time
}

// observe notes an update seen by the informer: a raise of used not
// written by us starts the hold.
func (m *quotaMemory) observe(key string, old, cur *corev1.ResourceQuota, now time.Time) {
	rose := false
	for n, v := range cur.Status.Used {
		if p, ok := old.Status.Used[n]; !ok || v.Cmp(p) > 0 {
			rose = true
			break
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.written[key]; ok && w.ResourceVersion == cur.ResourceVersion {
		return
	}
	if rose {
		if m.raised == nil {
			m.raised = map[string]time.Time{}
		}
		m.raised[key] = now
	}
}

// latest returns q, or the status we wrote last if it is newer.
func (m *quotaMemory) latest(key string, q *corev1.ResourceQuota) *corev1.ResourceQuota {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.written[key]
	if !ok {
		return q
	}
	a, errA := strconv.ParseInt(w.ResourceVersion, 10, 64)
	b, errB := strconv.ParseInt(q.ResourceVersion, 10, 64)
	if w.UID == q.UID && errA == nil && errB == nil && a > b {
		return w
	}
	delete(m.written, key)
	return q
}

func (m *quotaMemory) remember(key string, q *corev1.ResourceQuota) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written == nil || len(m.written) > 10000 {
		m.written = map[string]*corev1.ResourceQuota{}
	}
	m.written[key] = q
}

// holdUntil is when the hold on key ends (zero: none).
func (m *quotaMemory) holdUntil(key string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.raised[key]
	if !ok {
		return time.Time{}
	}
	return t.Add(admissionHold)
}

func (m *quotaMemory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.written, key)
	delete(m.raised, key)
}

// holdUsage keeps every used value of st at least what q has; it
// reports whether it raised any.
func holdUsage(st *corev1.ResourceQuotaStatus, q *corev1.ResourceQuota) bool {
	held := false
	for n, v := range st.Used {
		if p, ok := q.Status.Used[n]; ok && v.Cmp(p) < 0 {
			st.Used[n] = p.DeepCopy()
			held = true
		}
	}
	return held
}
