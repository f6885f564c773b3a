package quota

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestServiceUsage(t *testing.T) {
	ports := func(n int, nodePort int32) []corev1.ServicePort {
		var out []corev1.ServicePort
		for i := range n {
			out = append(out, corev1.ServicePort{Port: int32(80 + i), NodePort: nodePort})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		spec corev1.ServiceSpec
		want string
	}{
		{"cluster IP", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports(2, 0)},
			"count/services=1 services=1 services.loadbalancers=0 services.nodeports=0"},
		{"node port counts each port", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports(3, 0)},
			"count/services=1 services=1 services.loadbalancers=0 services.nodeports=3"},
		{"load balancer counts itself and its node ports", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports(2, 0)},
			"count/services=1 services=1 services.loadbalancers=1 services.nodeports=2"},
		{"load balancer without node ports counts only explicit ones",
			corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: new(false),
				Ports: append(ports(1, 30080), ports(2, 0)...)},
			"count/services=1 services=1 services.loadbalancers=1 services.nodeports=1"},
		{"external name", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName},
			"count/services=1 services=1 services.loadbalancers=0 services.nodeports=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(ServiceUsage(&corev1.Service{Spec: tc.spec})); got != tc.want {
				t.Errorf("usage\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func claim(class *string, annotation, request, allocated string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	pvc.Spec.StorageClassName = class
	if annotation != "" {
		pvc.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: annotation}
	}
	if request != "" {
		pvc.Spec.Resources.Requests = rl("storage=" + request)
	}
	if allocated != "" {
		pvc.Status.AllocatedResources = rl("storage=" + allocated)
	}
	return pvc
}

func TestPVCUsage(t *testing.T) {
	gold := "gold"
	for _, tc := range []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want string
	}{
		{"no class", claim(nil, "", "10Gi", ""),
			"count/persistentvolumeclaims=1 persistentvolumeclaims=1 requests.storage=10Gi"},
		{"charged to its class", claim(&gold, "", "10Gi", ""),
			"count/persistentvolumeclaims=1 gold.storageclass.storage.k8s.io/persistentvolumeclaims=1 gold.storageclass.storage.k8s.io/requests.storage=10Gi persistentvolumeclaims=1 requests.storage=10Gi"},
		{"the beta annotation wins", claim(&gold, "silver", "1Gi", ""),
			"count/persistentvolumeclaims=1 persistentvolumeclaims=1 requests.storage=1Gi silver.storageclass.storage.k8s.io/persistentvolumeclaims=1 silver.storageclass.storage.k8s.io/requests.storage=1Gi"},
		{"a larger allocation counts", claim(nil, "", "10Gi", "20Gi"),
			"count/persistentvolumeclaims=1 persistentvolumeclaims=1 requests.storage=20Gi"},
		{"a smaller allocation does not", claim(nil, "", "10Gi", "5Gi"),
			"count/persistentvolumeclaims=1 persistentvolumeclaims=1 requests.storage=10Gi"},
		{"fractions round up to whole bytes", claim(nil, "", "1500m", ""),
			"count/persistentvolumeclaims=1 persistentvolumeclaims=1 requests.storage=2"},
		{"no request", claim(nil, "", "", ""),
			"count/persistentvolumeclaims=1 persistentvolumeclaims=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(PVCUsage(tc.pvc)); got != tc.want {
				t.Errorf("usage\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestCountTarget(t *testing.T) {
	for _, tc := range []struct {
		name corev1.ResourceName
		gr   schema.GroupResource
		ok   bool
	}{
		{"configmaps", corev1.Resource("configmaps"), true},
		{"secrets", corev1.Resource("secrets"), true},
		{"resourcequotas", corev1.Resource("resourcequotas"), true},
		{"replicationcontrollers", corev1.Resource("replicationcontrollers"), true},
		{"count/configmaps", corev1.Resource("configmaps"), true},
		{"count/deployments.apps", schema.GroupResource{Group: "apps", Resource: "deployments"}, true},
		{"count/widgets.example.com", schema.GroupResource{Group: "example.com", Resource: "widgets"}, true},
		{"count/pods", schema.GroupResource{}, false}, // the pod Evaluator's
		{"count/services", schema.GroupResource{}, false},
		{"count/persistentvolumeclaims", schema.GroupResource{}, false},
		{"pods", schema.GroupResource{}, false},
		{"requests.cpu", schema.GroupResource{}, false},
		{"count/", schema.GroupResource{}, false},
	} {
		t.Run(string(tc.name), func(t *testing.T) {
			gr, ok := CountTarget(tc.name)
			if gr != tc.gr || ok != tc.ok {
				t.Errorf("CountTarget = %v, %v; want %v, %v", gr, ok, tc.gr, tc.ok)
			}
		})
	}
	if got := countName(schema.GroupResource{Group: "apps", Resource: "deployments"}); got != "count/deployments.apps" {
		t.Errorf("countName = %s", got)
	}
}

// fixture is a namespace's objects, served to the evaluators as caches
// would.
type fixture struct {
	pods     []*corev1.Pod
	services []*corev1.Service
	claims   []*corev1.PersistentVolumeClaim
	counts   map[schema.GroupResource]int
	failPods bool
}

func (f *fixture) evaluators() []Evaluator {
	evs := []Evaluator{
		NewPodEvaluator(func(string) ([]*corev1.Pod, error) {
			if f.failPods {
				return nil, errors.New("cache unavailable")
			}
			return f.pods, nil
		}),
		NewServiceEvaluator(func(string) ([]*corev1.Service, error) { return f.services, nil }),
		NewPVCEvaluator(func(string) ([]*corev1.PersistentVolumeClaim, error) { return f.claims, nil }),
	}
	for gr, n := range f.counts {
		evs = append(evs, NewCountEvaluator(gr, func(string) ([]runtime.Object, error) {
			return make([]runtime.Object, n), nil
		}))
	}
	return evs
}

func quota(hard string, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"},
		Spec:       corev1.ResourceQuotaSpec{Hard: rl(hard), Scopes: scopes},
	}
}

func TestCalculateUsage(t *testing.T) {
	grace := int64(30)
	mixed := &fixture{
		pods: []*corev1.Pod{
			pod(ctr("a", "cpu=100m,memory=1Gi", "cpu=1")),
			pod(ctr("a", "cpu=250m", "")),
			pod(ctr("a", "", "")),
			with(pod(ctr("a", "", "")), func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }),
			with(pod(ctr("a", "cpu=4", "")), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			with(pod(ctr("a", "cpu=1", "")), func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: t0}
				p.DeletionGracePeriodSeconds = &grace
			}),
		},
		services: []*corev1.Service{
			{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}},
			{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}},
		},
		claims: []*corev1.PersistentVolumeClaim{claim(new("gold"), "", "5Gi", ""), claim(nil, "", "1Gi", "")},
		counts: map[schema.GroupResource]int{
			corev1.Resource("configmaps"):            3,
			{Group: "apps", Resource: "deployments"}: 2,
			corev1.Resource("secrets"):               7,
		},
	}
	for _, tc := range []struct {
		name      string
		fix       *fixture
		quota     *corev1.ResourceQuota
		want      string
		untilSecs int // seconds after t0; 0: none
		err       string
	}{
		{name: "object counts and compute",
			fix:       mixed,
			quota:     quota("pods=10,count/pods=10,requests.cpu=10,limits.cpu=10,configmaps=10,count/deployments.apps=5,secrets=10"),
			want:      "configmaps=3 count/deployments.apps=2 count/pods=6 limits.cpu=1 pods=5 requests.cpu=1350m secrets=7",
			untilSecs: 30},
		{name: "services and storage",
			fix:   mixed,
			quota: quota("services=5,services.nodeports=5,services.loadbalancers=1,requests.storage=100Gi,persistentvolumeclaims=5,gold.storageclass.storage.k8s.io/requests.storage=10Gi,gold.storageclass.storage.k8s.io/persistentvolumeclaims=2"),
			want:  "gold.storageclass.storage.k8s.io/persistentvolumeclaims=1 gold.storageclass.storage.k8s.io/requests.storage=5Gi persistentvolumeclaims=2 requests.storage=6Gi services=2 services.loadbalancers=0 services.nodeports=2"},
		{name: "BestEffort counts only best-effort pods",
			fix:   mixed,
			quota: quota("pods=10", corev1.ResourceQuotaScopeBestEffort),
			want:  "pods=2"},
		{name: "NotBestEffort counts the others",
			fix:       mixed,
			quota:     quota("pods=10,requests.cpu=10", corev1.ResourceQuotaScopeNotBestEffort),
			want:      "pods=3 requests.cpu=1350m",
			untilSecs: 30},
		{name: "a priority class selector",
			fix: mixed,
			quota: func() *corev1.ResourceQuota {
				q := quota("pods=10")
				q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
					{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}},
				}}
				return q
			}(),
			want: "pods=1"},
		{name: "nothing to count is zero, not absent",
			fix:   &fixture{},
			quota: quota("pods=1,requests.memory=1Gi,services=1,configmaps=1"),
			want:  "pods=0 requests.memory=0 services=0"},
		{name: "a resource no Evaluator knows is not measured",
			fix:   mixed,
			quota: quota("pods=10,count/widgets.example.com=3"),
			want:  "pods=5", untilSecs: 30},
		{name: "a failing evaluator measures nothing, the others still do",
			fix:   &fixture{failPods: true, services: mixed.services},
			quota: quota("pods=10,services=5"),
			want:  "services=2",
			err:   "cache unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			used, measured, until, err := CalculateUsage(tc.quota, tc.fix.evaluators(), t0)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := show(mask(used, measured)); got != tc.want {
				t.Errorf("used\n got %s\nwant %s", got, tc.want)
			}
			var wantUntil time.Time
			if tc.untilSecs > 0 {
				wantUntil = t0.Add(time.Duration(tc.untilSecs) * time.Second)
			}
			if !until.Equal(wantUntil) {
				t.Errorf("until = %v, want %v", until, wantUntil)
			}
		})
	}
}

func TestNewStatus(t *testing.T) {
	q := quota("pods=10,requests.cpu=4,example.com/widgets=3")
	st, dirty := NewStatus(q, rl("pods=2,requests.cpu=500m"), []corev1.ResourceName{"pods", "requests.cpu"})
	if !dirty {
		t.Error("first status not dirty")
	}
	if show(st.Hard) != "example.com/widgets=3 pods=10 requests.cpu=4" || show(st.Used) != "pods=2 requests.cpu=500m" {
		t.Errorf("status hard %s used %s", show(st.Hard), show(st.Used))
	}

	t.Run("unchanged by value is not dirty", func(t *testing.T) {
		q := q.DeepCopy()
		q.Status = corev1.ResourceQuotaStatus{Hard: rl("pods=10,requests.cpu=4000m,example.com/widgets=3"), Used: rl("pods=2,requests.cpu=0.5")}
		if _, dirty := NewStatus(q, rl("pods=2,requests.cpu=500m"), []corev1.ResourceName{"pods", "requests.cpu"}); dirty {
			t.Error("dirty, though only the formats differ")
		}
	})
	t.Run("unmeasured names keep their old used value", func(t *testing.T) {
		q := q.DeepCopy()
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: rl("pods=2,requests.cpu=1,example.com/widgets=1")}
		st, dirty := NewStatus(q, rl("pods=3"), []corev1.ResourceName{"pods"})
		if !dirty || show(st.Used) != "example.com/widgets=1 pods=3 requests.cpu=1" {
			t.Errorf("used %s dirty %v", show(st.Used), dirty)
		}
	})
	t.Run("names dropped from hard leave used", func(t *testing.T) {
		q := quota("pods=10")
		q.Status = corev1.ResourceQuotaStatus{Hard: rl("pods=10,secrets=5"), Used: rl("pods=1,secrets=2")}
		st, dirty := NewStatus(q, rl("pods=1"), []corev1.ResourceName{"pods"})
		if !dirty || show(st.Hard) != "pods=10" || show(st.Used) != "pods=1" {
			t.Errorf("hard %s used %s dirty %v", show(st.Hard), show(st.Used), dirty)
		}
	})
	t.Run("a changed hard limit is dirty", func(t *testing.T) {
		q := quota("pods=20")
		q.Status = corev1.ResourceQuotaStatus{Hard: rl("pods=10"), Used: rl("pods=1")}
		if _, dirty := NewStatus(q, rl("pods=1"), []corev1.ResourceName{"pods"}); !dirty {
			t.Error("not dirty")
		}
	})
}
