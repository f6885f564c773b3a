package admission

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	rqPodsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	rqServicesGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	rqClaimsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	rqConfigGVR   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// rqList: rqList("pods", "10", "requests.cpu", "1").
func rqList(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// rqQuota is a quota the controller has synced: status.hard = hard,
// status.used = used.
func rqQuota(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}

func rqPod(name string, containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "app", Image: "x"}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{Containers: containers}}
}

func rqContainer(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "x", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func rqService(typ corev1.ServiceType, ports int) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", ResourceVersion: "5"}, Spec: corev1.ServiceSpec{Type: typ}}
	for i := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: int32(80 + i)})
	}
	return svc
}

func rqClaim(size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", ResourceVersion: "5"},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: rqList("storage", size)}}}
}

// rqExpect checks that err is nil (want "") or a 403 whose message ends
// with want.
func rqExpect(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want 403 ending %q", err, want)
	}
	if !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("message\n  %s\nwant it to end\n  %s", err.Error(), want)
	}
}

func TestResourceQuotaCheck(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	burstable := rqPod("p", rqContainer("app", rqList("cpu", "500m", "memory", "64Mi"), nil))
	cases := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		attrs  Attributes
		// want is "" to admit, else the end of the 403's message.
		want string
		// used is each quota's status.used after the write (by name;
		// missing: unchanged).
		used map[string]corev1.ResourceList
	}{
		{
			name:   "under the limit is charged",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rqList("pods", "10"), rqList("pods", "9"))},
			attrs:  Attributes{Operation: Create, Resource: rqPodsGVR, Object: rqPod("p")},
			used:   map[string]corev1.ResourceList{"q": rqList("pods", "10")},
		},
		{
			name:   "at the limit is refused",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rqList("pods", "10"), rqList("pods", "10"))},
			attrs:  Attributes{Operation: Create, Resource: rqPodsGVR, Object: rqPod("p")},
			want:   `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10`,
		},
		{
			name: "every exceeded resource is named, sorted; the others are not",
			quotas: []*corev1.ResourceQuota{rqQuota("compute",
				rqList("pods", "10", "requests.cpu", "1", "requests.memory", "1Gi"),
				rqList("pods", "10", "requests.cpu", "800m", "requests.memory", "0"))},
			attrs: Attributes{Operation: Create, Resource: rqPodsGVR, Object: burstable},
			want:  "exceeded quota: compute, requested: pods=1,requests.cpu=500m, used: pods=10,requests.cpu=800m, limited: pods=10,requests.cpu=1",
		},
		{
			name:   "containers must state what cpu and memory quotas limit",
			quotas: []*corev1.ResourceQuota{rqQuota("compute", rqList("limits.cpu", "4", "requests.memory", "1Gi"), rqList("limits.cpu", "0", "requests.memory", "0"))},
			attrs: Attributes{Operation: Create, Resource: rqPodsGVR, Object: rqPod("p",
				rqContainer("b", nil, rqList("cpu", "1")), rqContainer("a", nil, nil))},
			want: "failed quota: compute: must specify limits.cpu for: a; requests.memory for: a,b",
		},
		{
			name:   "init containers must state them too",
			quotas: []*corev1.ResourceQuota{rqQuota("compute", rqList("cpu", "4"), rqList("cpu", "0"))},
			attrs: func() Attributes {
				p := rqPod("p", rqContainer("app", rqList("cpu", "1"), nil))
				p.Spec.InitContainers = []corev1.Container{rqContainer("init", nil, nil)}
				return Attributes{Operation: Create, Resource: rqPodsGVR, Object: p}
			}(),
			want: "failed quota: compute: must specify cpu for: init",
		},
		{
			name:   "a limit the controller has not measured is unknown",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rqList("pods", "10", "requests.cpu", "2"), rqList("pods", "1"))},
			attrs:  Attributes{Operation: Create, Resource: rqPodsGVR, Object: burstable},
			want:   "status unknown for quota: q, resources: requests.cpu",
		},
		{
			name: "a quota the controller has not synced yet covers nothing, as upstream",
			quotas: []*corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"},
				Spec: corev1.ResourceQuotaSpec{Hard: rqList("pods", "0")}}},
			attrs: Attributes{Operation: Create, Resource: rqPodsGVR, Object: rqPod("p")},
		},
		{
			name:   "a BestEffort quota charges a best-effort pod",
			quotas: []*corev1.ResourceQuota{rqQuota("be", rqList("pods", "1"), rqList("pods", "1"), corev1.ResourceQuotaScopeBestEffort)},
			attrs:  Attributes{Operation: Create, Resource: rqPodsGVR, Object: rqPod("p")},
			want:   "exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1",
		},
		{
			name:   "a BestEffort quota leaves a burstable pod alone",
			quotas: []*corev1.ResourceQuota{rqQuota("be", rqList("pods", "1"), rqList("pods", "1"), corev1.ResourceQuotaScopeBestEffort)},
			attrs:  Attributes{Operation: Create, Resource: rqPodsGVR, Object: burstable},
		},
		{
			name: "a PriorityClass selector charges only the classes it names",
			quotas: []*corev1.ResourceQuota{func() *corev1.ResourceQuota {
				q := rqQuota("high", rqList("pods", "0"), rqList("pods", "0"))
				q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
					{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}
				return q
			}()},
			attrs: func() Attributes {
				p := rqPod("p")
				p.Spec.PriorityClassName = "low"
				return Attributes{Operation: Create, Resource: rqPodsGVR, Object: p}
			}(),
		},
		{
			name: "every covering quota is charged; the first to refuse answers",
			quotas: []*corev1.ResourceQuota{
				rqQuota("a-pods", rqList("pods", "5"), rqList("pods", "1")),
				rqQuota("b-cpu", rqList("requests.cpu", "1"), rqList("requests.cpu", "0")),
				rqQuota("c-full", rqList("count/pods", "3"), rqList("count/pods", "3")),
			},
			attrs: Attributes{Operation: Create, Resource: rqPodsGVR, Object: burstable},
			want:  "exceeded quota: c-full, requested: count/pods=1, used: count/pods=3, limited: count/pods=3",
		},
		{
			name: "names a quota does not limit are not added to its usage",
			quotas: []*corev1.ResourceQuota{
				rqQuota("a-pods", rqList("pods", "5"), rqList("pods", "1")),
				rqQuota("b-cpu", rqList("requests.cpu", "1"), rqList("requests.cpu", "0")),
			},
			attrs: Attributes{Operation: Create, Resource: rqPodsGVR, Object: burstable},
			used: map[string]corev1.ResourceList{
				"a-pods": rqList("pods", "2"),
				"b-cpu":  rqList("requests.cpu", "500m"),
			},
		},
		{
			name:   "other kinds are counted",
			quotas: []*corev1.ResourceQuota{rqQuota("objects", rqList("configmaps", "2", "count/configmaps", "5"), rqList("configmaps", "2", "count/configmaps", "2"))},
			attrs:  Attributes{Operation: Create, Resource: rqConfigGVR, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}},
			want:   `configmaps "c" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`,
		},
		{
			name:   "a service turning NodePort is charged its node ports",
			quotas: []*corev1.ResourceQuota{rqQuota("svc", rqList("services", "5", "services.nodeports", "1"), rqList("services", "1", "services.nodeports", "0"))},
			attrs: Attributes{Operation: Update, Resource: rqServicesGVR, Name: "svc",
				Object: rqService(corev1.ServiceTypeNodePort, 2), OldObject: rqService(corev1.ServiceTypeClusterIP, 2)},
			want: "exceeded quota: svc, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1",
		},
		{
			name:   "a service update that costs nothing more writes nothing",
			quotas: []*corev1.ResourceQuota{rqQuota("svc", rqList("services", "1"), rqList("services", "1"))},
			attrs: Attributes{Operation: Update, Resource: rqServicesGVR, Name: "svc",
				Object: rqService(corev1.ServiceTypeNodePort, 1), OldObject: rqService(corev1.ServiceTypeClusterIP, 1)},
		},
		{
			name:   "a growing claim is charged the growth",
			quotas: []*corev1.ResourceQuota{rqQuota("storage", rqList("requests.storage", "10Gi"), rqList("requests.storage", "8Gi"))},
			attrs:  Attributes{Operation: Update, Resource: rqClaimsGVR, Name: "data", Object: rqClaim("6Gi"), OldObject: rqClaim("5Gi")},
			used:   map[string]corev1.ResourceList{"storage": rqList("requests.storage", "9Gi")},
		},
		{
			name:   "a claim growing past the limit is refused",
			quotas: []*corev1.ResourceQuota{rqQuota("storage", rqList("requests.storage", "10Gi"), rqList("requests.storage", "8Gi"))},
			attrs:  Attributes{Operation: Update, Resource: rqClaimsGVR, Name: "data", Object: rqClaim("8Gi"), OldObject: rqClaim("5Gi")},
			want:   `persistentvolumeclaims "data" is forbidden: exceeded quota: storage, requested: requests.storage=3Gi, used: requests.storage=8Gi, limited: requests.storage=10Gi`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.attrs
			a.Namespace = "ns"
			if a.Name == "" {
				a.Name = a.Object.(metav1.Object).GetName()
			}
			m, ok := rqHandles(&a)
			if !ok {
				t.Fatal("quota does not handle the write")
			}
			before := make([]*corev1.ResourceQuota, len(tc.quotas))
			for i, q := range tc.quotas {
				before[i] = q.DeepCopy()
			}
			out, err := rqCheck(tc.quotas, &a, m, now)
			rqExpect(t, err, tc.want)
			for i, q := range tc.quotas {
				if !rqEqualLists(q.Status.Used, before[i].Status.Used) {
					t.Errorf("quota %s was modified in place", q.Name)
				}
			}
			if err != nil {
				return
			}
			for i, q := range out {
				want, changed := tc.used[q.Name]
				if !changed {
					if q != tc.quotas[i] {
						t.Errorf("quota %s changed to %v, want unchanged", q.Name, q.Status.Used)
					}
					continue
				}
				if !rqEqualLists(q.Status.Used, want) {
					t.Errorf("quota %s used = %v, want %v", q.Name, q.Status.Used, want)
				}
			}
		})
	}
}

func rqEqualLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		o, ok := b[n]
		if !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

func TestResourceQuotaHandles(t *testing.T) {
	pod, svc := rqPod("p"), rqService(corev1.ServiceTypeClusterIP, 1)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	cases := []struct {
		name  string
		attrs Attributes
		want  bool
	}{
		{"pod create", Attributes{Operation: Create, Resource: rqPodsGVR, Namespace: "ns", Object: pod}, true},
		{"pod update: resources cannot change there", Attributes{Operation: Update, Resource: rqPodsGVR, Namespace: "ns", Object: pod, OldObject: pod}, false},
		{"pod resize", Attributes{Operation: Update, Resource: rqPodsGVR, Subresource: "resize", Namespace: "ns", Object: pod, OldObject: pod}, true},
		{"pod status", Attributes{Operation: Update, Resource: rqPodsGVR, Subresource: "status", Namespace: "ns", Object: pod, OldObject: pod}, false},
		{"pod delete", Attributes{Operation: Delete, Resource: rqPodsGVR, Namespace: "ns", OldObject: pod}, false},
		{"service update", Attributes{Operation: Update, Resource: rqServicesGVR, Namespace: "ns", Object: svc, OldObject: svc}, true},
		{"configmap create", Attributes{Operation: Create, Resource: rqConfigGVR, Namespace: "ns", Object: cm}, true},
		{"configmap update: a count cannot change", Attributes{Operation: Update, Resource: rqConfigGVR, Namespace: "ns", Object: cm, OldObject: cm}, false},
		{"events are never under quota", Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Namespace: "ns", Object: &corev1.Event{}}, false},
		{"cluster-scoped", Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Object: &corev1.Namespace{}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := rqHandles(&tc.attrs); got != tc.want {
				t.Errorf("handles = %v, want %v", got, tc.want)
			}
		})
	}
}

// rqStore is an in-memory ResourceQuota store with compare-and-swap
// status writes: our own ObjectSource and StatusWriter, so the plugin's
// batching and retries can be driven without a server. cache, when set,
// is what non-fresh lists return (a watch cache a moment behind).
type rqStore struct {
	mu     sync.Mutex
	rev    int64
	quotas map[string]*corev1.ResourceQuota
	cache  []runtime.Object
	lag    bool
	// beforeWrite runs before each status write, outside the lock: a
	// chance to write as another writer would.
	beforeWrite func()
	writes      atomic.Int64
	conflicts   atomic.Int64
	freshLists  atomic.Int64
}

func newRQStore(qs ...*corev1.ResourceQuota) *rqStore {
	s := &rqStore{quotas: map[string]*corev1.ResourceQuota{}}
	for _, q := range qs {
		s.put(q.DeepCopy())
	}
	return s
}

func (s *rqStore) put(q *corev1.ResourceQuota) {
	s.rev++
	q.ResourceVersion = strconv.FormatInt(s.rev, 10)
	s.quotas[q.Name] = q
}

func (s *rqStore) get(name string) *corev1.ResourceQuota {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quotas[name].DeepCopy()
}

// foreign writes a status as another writer (the controller) would.
func (s *rqStore) foreign(name string, used corev1.ResourceList) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.quotas[name].DeepCopy()
	q.Status.Used = used
	s.put(q)
}

func (s *rqStore) GetObject(context.Context, schema.GroupVersionResource, string, string) (runtime.Object, error) {
	return nil, fmt.Errorf("not used")
}

func (s *rqStore) ListObjects(_ context.Context, gvr schema.GroupVersionResource, namespace string, fresh bool) ([]runtime.Object, error) {
	if gvr != resourceQuotasGVR {
		return nil, fmt.Errorf("unexpected list of %s", gvr)
	}
	if fresh {
		s.freshLists.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lag && !fresh {
		return s.cache, nil
	}
	// Shared, as a watch cache's are: stored quotas are replaced on
	// write, never modified.
	var out []runtime.Object
	for _, q := range s.quotas {
		if q.Namespace == namespace {
			out = append(out, q)
		}
	}
	return out, nil
}

func (s *rqStore) UpdateObjectStatus(_ context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	if s.beforeWrite != nil {
		s.beforeWrite()
	}
	s.writes.Add(1)
	in := obj.(*corev1.ResourceQuota)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.quotas[in.Name]
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), in.Name)
	}
	if cur.ResourceVersion != in.ResourceVersion {
		s.conflicts.Add(1)
		return nil, apierrors.NewConflict(gvr.GroupResource(), in.Name, fmt.Errorf("the object has been modified"))
	}
	next := cur.DeepCopy()
	next.Status = *in.Status.DeepCopy()
	s.put(next)
	return next, nil
}

func rqCreate(name string) *Attributes {
	return &Attributes{Operation: Create, Resource: rqPodsGVR, Namespace: "ns", Name: name, Object: rqPod(name)}
}

func TestResourceQuotaCommits(t *testing.T) {
	ctx := context.Background()
	t.Run("an admitted create is stored in status.used before it is admitted", func(t *testing.T) {
		s := newRQStore(rqQuota("q", rqList("pods", "2"), rqList("pods", "0")))
		p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
		rqExpect(t, p.Validate(ctx, rqCreate("a")), "")
		if got := s.get("q").Status.Used[corev1.ResourcePods]; got.Value() != 1 {
			t.Fatalf("used pods = %v, want 1", got.String())
		}
		rqExpect(t, p.Validate(ctx, rqCreate("b")), "")
		rqExpect(t, p.Validate(ctx, rqCreate("c")), "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2")
	})
	t.Run("a dry run is judged but not charged", func(t *testing.T) {
		s := newRQStore(rqQuota("q", rqList("pods", "1"), rqList("pods", "0")))
		p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
		a := rqCreate("a")
		a.DryRun = true
		rqExpect(t, p.Validate(ctx, a), "")
		rqExpect(t, p.Validate(ctx, a), "")
		if s.writes.Load() != 0 {
			t.Fatalf("%d status writes for dry runs", s.writes.Load())
		}
		s.foreign("q", rqList("pods", "1"))
		rqExpect(t, p.Validate(ctx, a), "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1")
	})
	t.Run("a lost compare-and-swap is judged again on the stored quota", func(t *testing.T) {
		s := newRQStore(rqQuota("q", rqList("pods", "10"), rqList("pods", "5")))
		p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
		var once sync.Once
		// The controller counts 10 pods between our read and our write.
		s.beforeWrite = func() { once.Do(func() { s.foreign("q", rqList("pods", "10")) }) }
		rqExpect(t, p.Validate(ctx, rqCreate("a")), "exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10")
		if s.conflicts.Load() != 1 || s.freshLists.Load() == 0 {
			t.Fatalf("conflicts = %d, fresh lists = %d; want a conflict then a fresh read", s.conflicts.Load(), s.freshLists.Load())
		}
	})
	t.Run("its own writes are read back while the cache is behind", func(t *testing.T) {
		q := rqQuota("q", rqList("pods", "3"), rqList("pods", "0"))
		s := newRQStore(q)
		s.lag, s.cache = true, []runtime.Object{s.get("q")} // the cache never moves
		p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
		for _, n := range []string{"a", "b", "c"} {
			rqExpect(t, p.Validate(ctx, rqCreate(n)), "")
		}
		rqExpect(t, p.Validate(ctx, rqCreate("d")), "exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3")
		if s.conflicts.Load() != 0 {
			t.Fatalf("%d conflicts: the plugin wrote from the stale cache", s.conflicts.Load())
		}
	})
	t.Run("a namespace the cache shows empty is confirmed in storage", func(t *testing.T) {
		s := newRQStore(rqQuota("q", rqList("pods", "1"), rqList("pods", "1")))
		s.lag = true // the cache has not seen the quota yet
		p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
		rqExpect(t, p.Validate(ctx, rqCreate("a")), "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1")
	})
	t.Run("a store that keeps failing is an error, not an admission", func(t *testing.T) {
		s := newRQStore(rqQuota("q", rqList("pods", "10"), rqList("pods", "0")))
		p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
		n := 0
		s.beforeWrite = func() { n++; s.foreign("q", rqList("pods", strconv.Itoa(n%3))) }
		if err := p.Validate(ctx, rqCreate("a")); !apierrors.IsConflict(err) {
			t.Fatalf("got %v, want the 409 after %d retries", err, rqRetries)
		}
	})
}

// TestResourceQuotaConcurrent: 100 creates at once against pods=10 admit
// exactly 10, in far fewer status writes than creates.
func TestResourceQuotaConcurrent(t *testing.T) {
	s := newRQStore(rqQuota("q", rqList("pods", "10"), rqList("pods", "0")))
	p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			err := p.Validate(context.Background(), rqCreate(fmt.Sprintf("p%d", i)))
			switch {
			case err == nil:
				admitted.Add(1)
			case apierrors.IsForbidden(err) && strings.HasSuffix(err.Error(), "exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10"):
				refused.Add(1)
			default:
				t.Errorf("unexpected: %v", err)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 10 || refused.Load() != 90 {
		t.Fatalf("admitted %d, refused %d; want 10 and 90", admitted.Load(), refused.Load())
	}
	if got := s.get("q").Status.Used[corev1.ResourcePods]; got.Value() != 10 {
		t.Fatalf("used pods = %s, want 10", got.String())
	}
	if s.writes.Load() > 10 {
		t.Errorf("%d status writes for 10 admissions", s.writes.Load())
	}
	t.Logf("%d status writes", s.writes.Load())
	if len(p.queues) != 0 {
		t.Errorf("%d namespace queues left behind", len(p.queues))
	}
}

// TestResourceQuotaLeaderGivesUp: a request whose client gives up while it
// leads a batch still decides the others.
func TestResourceQuotaLeaderGivesUp(t *testing.T) {
	s := newRQStore(rqQuota("q", rqList("pods", "10"), rqList("pods", "0")))
	p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
	writing, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	s.beforeWrite = func() { first.Do(func() { close(writing); <-release }) }
	ctx, cancel := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() { leaderDone <- p.Validate(ctx, rqCreate("leader")) }()
	<-writing
	followerDone := make(chan error, 1)
	go func() { followerDone <- p.Validate(context.Background(), rqCreate("follower")) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	close(release)
	if err := <-leaderDone; err != nil {
		t.Fatalf("leader: %v", err)
	}
	select {
	case err := <-followerDone:
		rqExpect(t, err, "")
	case <-time.After(5 * time.Second):
		t.Fatal("the follower was stranded")
	}
	if got := s.get("q").Status.Used[corev1.ResourcePods]; got.Value() != 2 {
		t.Fatalf("used pods = %s, want 2", got.String())
	}
}

// BenchmarkResourceQuotaValidate is the plugin's own cost per pod create
// in a namespace with one covering quota, its status write going to an
// in-memory store: the judgement, the copy and the bookkeeping, without
// etcd.
func BenchmarkResourceQuotaValidate(b *testing.B) {
	s := newRQStore(rqQuota("q", rqList("pods", "1000000000", "requests.cpu", "1000000", "requests.memory", "1Pi"),
		rqList("pods", "0", "requests.cpu", "0", "requests.memory", "0")))
	p := NewResourceQuota(ResourceQuotaConfig{Objects: s, Status: s})
	pod := rqPod("p", rqContainer("app", rqList("cpu", "100m", "memory", "64Mi"), nil))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Validate(ctx, &Attributes{Operation: Create, Resource: rqPodsGVR, Namespace: "ns", Name: "p", Object: pod}); err != nil {
			b.Fatal(err)
		}
	}
}
