package plugins

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// dpTestBase is the start time of the oldest test pod; later offsets are
// younger pods.
var dpTestBase = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

type dpPodOpt func(*corev1.Pod)

func dpStarted(minutes int) dpPodOpt {
	return func(p *corev1.Pod) {
		t := metav1.NewTime(dpTestBase.Add(time.Duration(minutes) * time.Minute))
		p.Status.StartTime = &t
	}
}

func dpLabels(kv ...string) dpPodOpt {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func dpTestPod(name string, prio int32, milliCPU int64, opts ...dpPodOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			Priority:      &prio,
			SchedulerName: "default-scheduler",
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)},
			}}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// dpTestNode is a node with milliCPU allocatable and the given pods bound.
func dpTestNode(name string, milliCPU int64, pods ...*corev1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:  *resource.NewMilliQuantity(milliCPU, resource.DecimalSI),
			corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI),
		}},
	})
	for _, p := range pods {
		p.Spec.NodeName = name
		ni.AddPod(framework.NewPodInfo(p))
	}
	return ni
}

func dpTestPDB(name string, allowed int32, kv ...string) *policyv1.PodDisruptionBudget {
	sel := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		sel[kv[i]] = kv[i+1]
	}
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: sel}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// dpFitFilter is a test-only resource filter: the pod's cpu request must
// fit in what the node has left, and the node must have a pod slot left.
type dpFitFilter struct{}

func (dpFitFilter) Name() string { return "dpFit" }

func (dpFitFilter) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	var reasons []string
	if ni.Allocatable.AllowedPodNumber > 0 && int64(len(ni.Pods))+1 > ni.Allocatable.AllowedPodNumber {
		reasons = append(reasons, "Too many pods")
	}
	if framework.PodRequests(pod, false).MilliCPU > ni.Allocatable.MilliCPU-ni.Requested.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

// dpBlockerPlugin is a test-only PreFilter+Filter whose Filter reads only
// its cycle state: a node is blocked while it runs a pod labelled
// blocker=true. The count lives in the state, so the pod only fits after
// preemption if the RemovePod extension ran on the dry run's state copy.
type dpBlockerPlugin struct{}

type dpBlockerState map[string]int

func (s dpBlockerState) Clone() framework.StateData {
	c := make(dpBlockerState, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

const dpBlockerKey framework.StateKey = "dpBlocker"

func (dpBlockerPlugin) Name() string { return "dpBlocker" }

func (dpBlockerPlugin) PreFilter(_ context.Context, state *framework.CycleState, _ *corev1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	s := dpBlockerState{}
	for _, ni := range nodes {
		for _, pi := range ni.Pods {
			if pi.Pod.Labels["blocker"] == "true" {
				s[ni.Name()]++
			}
		}
	}
	state.Write(dpBlockerKey, s)
	return nil, nil
}

func (p dpBlockerPlugin) PreFilterExtensions() framework.PreFilterExtensions { return p }

func (dpBlockerPlugin) AddPod(_ context.Context, state *framework.CycleState, _ *corev1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if pi.Pod.Labels["blocker"] == "true" {
		state.Read(dpBlockerKey).(dpBlockerState)[ni.Name()]++
	}
	return nil
}

func (dpBlockerPlugin) RemovePod(_ context.Context, state *framework.CycleState, _ *corev1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if pi.Pod.Labels["blocker"] == "true" {
		state.Read(dpBlockerKey).(dpBlockerState)[ni.Name()]--
	}
	return nil
}

func (dpBlockerPlugin) Filter(_ context.Context, state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if state.Read(dpBlockerKey).(dpBlockerState)[ni.Name()] > 0 {
		return framework.NewStatus(framework.Unschedulable, "blocked")
	}
	return nil
}

// dpRecorder records events as "<victim>: <note>".
type dpRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *dpRecorder) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s: %s", regarding.(*corev1.Pod).Name, reason, fmt.Sprintf(note, args...)))
}

func (r *dpRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.events)
	slices.Sort(out)
	return out
}

// dpHandle is the package's testHandle with an event recorder the test
// can read back.
type dpHandle struct {
	*testHandle
	rec *dpRecorder
}

func (h *dpHandle) EventRecorder() events.EventRecorder { return h.rec }

type dpSetup struct {
	h      *dpHandle
	pl     *dpPlugin
	client *fake.Clientset
	state  *framework.CycleState
}

// dpNewSetup builds a snapshot of nodes, a fake clientset holding every
// pod on them plus objs, the plugin with the given filters, and a cycle
// state on which the PreFilter plugins already ran.
func dpNewSetup(t testing.TB, args runtime.Object, nodes []*framework.NodeInfo, filters []framework.FilterPlugin, preFilters []framework.PreFilterPlugin, objs ...runtime.Object) *dpSetup {
	t.Helper()
	for _, ni := range nodes {
		for _, pi := range ni.Pods {
			objs = append(objs, pi.Pod.DeepCopy())
		}
	}
	th := newTestHandle(framework.NewSnapshot(nodes...), objs...)
	th.filters = filters
	th.preFilters = preFilters
	h := &dpHandle{testHandle: th, rec: &dpRecorder{}}
	p, err := NewDefaultPreemption(context.Background(), args, h)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*dpPlugin)
	pl.offset = func(int) int { return 0 }
	pl.now = func() time.Time { return dpTestBase.Add(time.Hour) }
	th.start(t)
	state := framework.NewCycleState()
	for _, pf := range preFilters {
		if _, st := pf.PreFilter(context.Background(), state, nil, th.snapshot.List()); !st.IsSuccess() {
			t.Fatalf("prefilter: %v", st)
		}
	}
	return &dpSetup{h: h, pl: pl, client: th.client.(*fake.Clientset), state: state}
}

// deleted lists the names of pods deleted through the clientset.
func (s *dpSetup) deleted() []string {
	var out []string
	for _, a := range s.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, d.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// dpUnschedulable marks every node Unschedulable, as the fit filter would.
func dpUnschedulable(nodes []*framework.NodeInfo) framework.NodeToStatus {
	m := framework.NodeToStatus{}
	for _, ni := range nodes {
		m[ni.Name()] = framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
	}
	return m
}

func TestDefaultPreemptionPostFilter(t *testing.T) {
	never := corev1.PreemptNever
	terminating := func(p *corev1.Pod) {
		now := metav1.NewTime(dpTestBase)
		p.DeletionTimestamp = &now
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler}}
	}
	nominatedTo := func(node string) dpPodOpt { return func(p *corev1.Pod) { p.Status.NominatedNodeName = node } }

	tests := []struct {
		name      string
		nodes     func() []*framework.NodeInfo
		objs      []runtime.Object
		preemptor *corev1.Pod
		// statuses defaults to every node Unschedulable.
		statuses func(nodes []*framework.NodeInfo) framework.NodeToStatus

		wantResult  bool // a non-nil PostFilterResult
		wantNode    string
		wantCode    framework.Code
		wantMsg     string
		wantVictims []string
	}{
		{
			name: "lowest-priority pods on the node are the victims",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{dpTestNode("n1", 1000,
					dpTestPod("p1", 1, 300), dpTestPod("p2", 2, 300), dpTestPod("p3", 3, 300))}
			},
			preemptor:   dpTestPod("high", 100, 400),
			wantResult:  true,
			wantNode:    "n1",
			wantVictims: []string{"p1"},
		},
		{
			name: "node whose victim has the lowest priority is chosen",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{
					dpTestNode("n1", 1000, dpTestPod("a", 10, 1000)),
					dpTestNode("n2", 1000, dpTestPod("b", 5, 1000)),
					dpTestNode("n3", 1000, dpTestPod("c", 20, 1000)),
				}
			},
			preemptor:   dpTestPod("high", 100, 500),
			wantResult:  true,
			wantNode:    "n2",
			wantVictims: []string{"b"},
		},
		{
			name: "reprieve leaves the fewest victims, the most recently started ones",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{dpTestNode("n1", 1000,
					dpTestPod("q2", 1, 250, dpStarted(2)), dpTestPod("q4", 1, 250, dpStarted(4)),
					dpTestPod("q1", 1, 250, dpStarted(1)), dpTestPod("q3", 1, 250, dpStarted(3)))}
			},
			preemptor:   dpTestPod("high", 100, 500),
			wantResult:  true,
			wantNode:    "n1",
			wantVictims: []string{"q3", "q4"},
		},
		{
			name: "smaller sum of victim priorities wins at equal highest priority",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{
					dpTestNode("n1", 1000, dpTestPod("a1", 1, 500), dpTestPod("a2", 1, 500)),
					dpTestNode("n2", 1000, dpTestPod("b", 1, 1000)),
				}
			},
			preemptor:   dpTestPod("high", 100, 1000),
			wantResult:  true,
			wantNode:    "n2",
			wantVictims: []string{"b"},
		},
		{
			name: "PDB-protected pod is reprieved before an unprotected one",
			nodes: func() []*framework.NodeInfo {
				// Without the PDB, db (younger, so less important)
				// would be the victim.
				return []*framework.NodeInfo{dpTestNode("n1", 1000,
					dpTestPod("db", 1, 500, dpStarted(5), dpLabels("app", "db")),
					dpTestPod("web", 1, 500, dpStarted(1)))}
			},
			objs:        []runtime.Object{dpTestPDB("db-pdb", 0, "app", "db")},
			preemptor:   dpTestPod("high", 100, 500),
			wantResult:  true,
			wantNode:    "n1",
			wantVictims: []string{"web"},
		},
		{
			name: "node without PDB violations beats a lower-priority victim under a PDB",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{
					dpTestNode("n1", 1000, dpTestPod("db", 1, 1000, dpLabels("app", "db"))),
					dpTestNode("n2", 1000, dpTestPod("web", 5, 1000)),
				}
			},
			objs:        []runtime.Object{dpTestPDB("db-pdb", 0, "app", "db")},
			preemptor:   dpTestPod("high", 100, 500),
			wantResult:  true,
			wantNode:    "n2",
			wantVictims: []string{"web"},
		},
		{
			name: "PDB with a disruption left is not violated",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{
					dpTestNode("n1", 1000, dpTestPod("db", 1, 1000, dpLabels("app", "db"))),
					dpTestNode("n2", 1000, dpTestPod("web", 5, 1000)),
				}
			},
			objs:        []runtime.Object{dpTestPDB("db-pdb", 1, "app", "db")},
			preemptor:   dpTestPod("high", 100, 500),
			wantResult:  true,
			wantNode:    "n1",
			wantVictims: []string{"db"},
		},
		{
			name: "PDB-violating victim is used when nothing else helps",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{dpTestNode("n1", 1000, dpTestPod("db", 1, 1000, dpLabels("app", "db")))}
			},
			objs:        []runtime.Object{dpTestPDB("db-pdb", 0, "app", "db")},
			preemptor:   dpTestPod("high", 100, 500),
			wantResult:  true,
			wantNode:    "n1",
			wantVictims: []string{"db"},
		},
		{
			name: "preemptionPolicy Never does not preempt",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{dpTestNode("n1", 1000, dpTestPod("low", 1, 1000))}
			},
			preemptor: dpTestPod("high", 100, 500, func(p *corev1.Pod) { p.Spec.PreemptionPolicy = &never }),
			wantCode:  framework.Unschedulable,
			wantMsg:   "preemption: not eligible due to preemptionPolicy=Never.",
		},
		{
			name: "equal-priority pods are never victims",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{dpTestNode("n1", 1000, dpTestPod("peer", 100, 1000))}
			},
			preemptor:  dpTestPod("high", 100, 500),
			wantResult: true,
			wantCode:   framework.Unschedulable,
			wantMsg:    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		},
		{
			name: "no candidate: the message counts each node's reason",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{
					dpTestNode("n1", 1000, dpTestPod("peer", 100, 1000)),
					dpTestNode("n2", 200, dpTestPod("small", 1, 200)),
					dpTestNode("n3", 1000, dpTestPod("x", 1, 1000)),
					dpTestNode("n4", 1000, dpTestPod("y", 1, 1000)),
				}
			},
			preemptor: dpTestPod("high", 100, 500),
			statuses: func([]*framework.NodeInfo) framework.NodeToStatus {
				return framework.NodeToStatus{
					"n1": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
					"n2": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
					"n3": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector"),
					// n4 absent: excluded by PreFilter.
				}
			},
			wantResult: true,
			wantCode:   framework.Unschedulable,
			wantMsg: "preemption: 0/4 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, " +
				"2 Preemption is not helpful for scheduling.",
		},
		{
			name: "no Unschedulable node: preemption is not helpful anywhere",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{dpTestNode("n1", 1000, dpTestPod("x", 1, 1000)), dpTestNode("n2", 1000)}
			},
			preemptor: dpTestPod("high", 100, 500),
			statuses: func([]*framework.NodeInfo) framework.NodeToStatus {
				return framework.NodeToStatus{"n1": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint")}
			},
			wantResult: true,
			wantCode:   framework.Unschedulable,
			wantMsg:    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
		},
		{
			name: "waits while its earlier victim on the nominated node terminates",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{
					dpTestNode("n1", 1000, dpTestPod("going", 1, 1000, terminating)),
					dpTestNode("n2", 1000, dpTestPod("other", 1, 1000)),
				}
			},
			preemptor: dpTestPod("high", 100, 500, nominatedTo("n1")),
			wantCode:  framework.Unschedulable,
			wantMsg:   "preemption: not eligible due to a terminating pod on the nominated node.",
		},
		{
			name: "preempts again once the nominated node cannot be helped",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{
					dpTestNode("n1", 1000, dpTestPod("going", 1, 1000, terminating)),
					dpTestNode("n2", 1000, dpTestPod("other", 1, 1000)),
				}
			},
			preemptor: dpTestPod("high", 100, 500, nominatedTo("n1")),
			statuses: func([]*framework.NodeInfo) framework.NodeToStatus {
				return framework.NodeToStatus{
					"n1": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint"),
					"n2": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
				}
			},
			wantResult:  true,
			wantNode:    "n2",
			wantVictims: []string{"other"},
		},
		{
			name: "priority class gives a pod without spec.priority its priority",
			nodes: func() []*framework.NodeInfo {
				return []*framework.NodeInfo{dpTestNode("n1", 1000, dpTestPod("low", 5, 1000))}
			},
			objs: []runtime.Object{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}},
			preemptor: dpTestPod("high", 0, 500, func(p *corev1.Pod) {
				p.Spec.Priority = nil
				p.Spec.PriorityClassName = "high"
			}),
			wantResult:  true,
			wantNode:    "n1",
			wantVictims: []string{"low"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := tc.nodes()
			s := dpNewSetup(t, nil, nodes, []framework.FilterPlugin{dpFitFilter{}}, nil, tc.objs...)
			statuses := dpUnschedulable(nodes)
			if tc.statuses != nil {
				statuses = tc.statuses(nodes)
			}
			res, st := s.pl.PostFilter(context.Background(), s.state, tc.preemptor, statuses)
			if st.Code() != tc.wantCode || st.Message() != tc.wantMsg {
				t.Fatalf("status = %v %q, want %v %q", st.Code(), st.Message(), tc.wantCode, tc.wantMsg)
			}
			if (res != nil) != tc.wantResult {
				t.Fatalf("result = %+v, want non-nil: %v", res, tc.wantResult)
			}
			if res != nil && res.NominatedNodeName != tc.wantNode {
				t.Errorf("nominated node = %q, want %q", res.NominatedNodeName, tc.wantNode)
			}
			if got := s.deleted(); !slices.Equal(got, tc.wantVictims) {
				t.Errorf("deleted pods = %v, want %v", got, tc.wantVictims)
			}
		})
	}
}

// TestDefaultPreemptionPrepare checks what the cluster sees after a
// successful preemption.
func TestDefaultPreemptionPrepare(t *testing.T) {
	ctx := context.Background()
	v1, v2 := dpTestPod("v1", 1, 500), dpTestPod("v2", 2, 500)
	keep := dpTestPod("keep", 50, 0)
	nodes := []*framework.NodeInfo{dpTestNode("n1", 1000, v1, v2, keep)}
	// Pods waiting for n1 after earlier preemptions: the lower-priority one
	// loses its nomination, the higher-priority one keeps it.
	lowNom := dpTestPod("low-nominated", 10, 100, func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" })
	highNom := dpTestPod("high-nominated", 500, 100, func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" })
	s := dpNewSetup(t, nil, nodes, []framework.FilterPlugin{dpFitFilter{}}, nil, lowNom, highNom)
	s.h.nominated["n1"] = []*framework.PodInfo{framework.NewPodInfo(highNom), framework.NewPodInfo(lowNom)}

	preemptor := dpTestPod("preemptor", 100, 1000)
	res, st := s.pl.PostFilter(ctx, s.state, preemptor, dpUnschedulable(nodes))
	if !st.IsSuccess() || res == nil || res.NominatedNodeName != "n1" {
		t.Fatalf("PostFilter = %+v, %v; want n1, Success", res, st)
	}

	pods := s.client.CoreV1().Pods("default")
	for _, name := range []string{"v1", "v2"} {
		if _, err := pods.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("victim %s: get err = %v, want NotFound", name, err)
		}
	}
	if _, err := pods.Get(ctx, "keep", metav1.GetOptions{}); err != nil {
		t.Errorf("reprieved pod was deleted: %v", err)
	}
	if p, _ := pods.Get(ctx, "low-nominated", metav1.GetOptions{}); p == nil || p.Status.NominatedNodeName != "" {
		t.Errorf("lower-priority nominated pod still nominated: %+v", p)
	}
	if p, _ := pods.Get(ctx, "high-nominated", metav1.GetOptions{}); p == nil || p.Status.NominatedNodeName != "n1" {
		t.Errorf("higher-priority nominated pod lost its nomination: %+v", p)
	}

	// Each victim is marked DisruptionTarget before it is deleted, so
	// that the preemptor's next attempt knows to wait for it.
	conditioned := map[string]bool{}
	for _, a := range s.client.Actions() {
		switch a := a.(type) {
		case clienttesting.PatchAction:
			if a.GetSubresource() == "status" && slices.Contains([]string{"v1", "v2"}, a.GetName()) {
				conditioned[a.GetName()] = true
			}
		case clienttesting.DeleteAction:
			if !conditioned[a.GetName()] {
				t.Errorf("%s deleted before its DisruptionTarget condition was set", a.GetName())
			}
		}
	}

	want := []string{
		"v1 Preempted: Preempted by pod uid-preemptor on node n1",
		"v2 Preempted: Preempted by pod uid-preemptor on node n1",
	}
	if got := s.h.rec.list(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

// TestDefaultPreemptionPreFilterExtensions checks that the dry run keeps
// PreFilter state in step with the pods it removes and adds back, on a
// copy: the caller's state is untouched.
func TestDefaultPreemptionPreFilterExtensions(t *testing.T) {
	nodes := []*framework.NodeInfo{dpTestNode("n1", 1000,
		dpTestPod("blocker", 1, 0, dpLabels("blocker", "true")),
		dpTestPod("filler", 2, 400))}
	bp := dpBlockerPlugin{}
	s := dpNewSetup(t, nil, nodes, []framework.FilterPlugin{dpFitFilter{}, bp}, []framework.PreFilterPlugin{bp})

	res, st := s.pl.PostFilter(context.Background(), s.state, dpTestPod("high", 100, 500), dpUnschedulable(nodes))
	if !st.IsSuccess() || res.NominatedNodeName != "n1" {
		t.Fatalf("PostFilter = %+v, %v", res, st)
	}
	if got := s.deleted(); !slices.Equal(got, []string{"blocker"}) {
		t.Errorf("deleted = %v, want only the blocker (filler fits alongside)", got)
	}
	if n := s.state.Read(dpBlockerKey).(dpBlockerState)["n1"]; n != 1 {
		t.Errorf("caller's cycle state changed: blocker count %d, want 1", n)
	}
}

func TestDefaultPreemptionCandidateLimit(t *testing.T) {
	var nodes []*framework.NodeInfo
	for i := range 300 {
		nodes = append(nodes, dpTestNode(fmt.Sprintf("n%03d", i), 1000, dpTestPod(fmt.Sprintf("p%03d", i), 1, 1000)))
	}
	pct, abs := int32(10), int32(20)
	s := dpNewSetup(t, &configv1.DefaultPreemptionArgs{MinCandidateNodesPercentage: &pct, MinCandidateNodesAbsolute: &abs},
		nodes, []framework.FilterPlugin{dpFitFilter{}}, nil)
	want := dpNumCandidates(len(nodes), pct, abs)
	if want != 30 {
		t.Fatalf("dpNumCandidates = %d, want 30 (10%% of 300)", want)
	}
	cands, statuses, errs := s.pl.dryRun(context.Background(), s.state, dpTestPod("high", 100, 500), nodes, nil, 7, want)
	if len(cands) != want || len(statuses) != 0 || len(errs) != 0 {
		t.Errorf("dry run: %d candidates, %d statuses, errs %v; want %d, 0, none", len(cands), len(statuses), errs, want)
	}
}

func TestDPNumCandidates(t *testing.T) {
	tests := []struct {
		name          string
		nodes         int
		pct, absolute int32
		want          int
	}{
		{"absolute floor", 500, 10, 100, 100},
		{"percentage above floor", 5000, 10, 100, 500},
		{"never more than the nodes", 30, 10, 100, 30},
		{"percentage only", 1000, 5, 0, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := dpNumCandidates(tc.nodes, tc.pct, tc.absolute); got != tc.want {
				t.Errorf("dpNumCandidates(%d, %d, %d) = %d, want %d", tc.nodes, tc.pct, tc.absolute, got, tc.want)
			}
		})
	}
}

func TestDPPickCandidate(t *testing.T) {
	now := dpTestBase.Add(time.Hour)
	prio := func(p *corev1.Pod) int32 { return *p.Spec.Priority }
	pod := func(prio int32, started int) *corev1.Pod { return dpTestPod("x", prio, 0, dpStarted(started)) }
	cand := func(node string, pdb int, victims ...*corev1.Pod) *dpCandidate {
		return &dpCandidate{node: node, numPDBViolations: pdb, victims: victims}
	}
	tests := []struct {
		name  string
		cands []*dpCandidate
		want  string
	}{
		{"fewest PDB violations first", []*dpCandidate{cand("a", 1, pod(1, 0)), cand("b", 0, pod(50, 0), pod(40, 0))}, "b"},
		{"lowest highest-victim priority", []*dpCandidate{cand("a", 0, pod(10, 0)), cand("b", 0, pod(5, 0), pod(5, 0), pod(5, 0))}, "b"},
		{"smallest priority sum", []*dpCandidate{cand("a", 0, pod(5, 0), pod(4, 0)), cand("b", 0, pod(5, 0), pod(3, 0))}, "b"},
		{"negative priorities still sum by count", []*dpCandidate{cand("a", 0, pod(-5, 0), pod(-5, 0)), cand("b", 0, pod(-5, 0))}, "b"},
		{"fewest victims", []*dpCandidate{cand("a", 0, pod(5, 0), pod(0, 0)), cand("b", 0, pod(5, 0))}, "b"},
		{"latest start of the highest-priority victims", []*dpCandidate{
			cand("a", 0, pod(5, 10), pod(5, 1)), // earliest of its top victims: minute 1
			cand("b", 0, pod(5, 3), pod(5, 4)),  // minute 3
		}, "b"},
		{"first on a full tie", []*dpCandidate{cand("a", 0, pod(5, 1)), cand("b", 0, pod(5, 1))}, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := dpPickCandidate(tc.cands, prio, now); got.node != tc.want {
				t.Errorf("picked %s, want %s", got.node, tc.want)
			}
		})
	}
}

func TestNewDefaultPreemptionArgs(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	tests := []struct {
		name     string
		args     runtime.Object
		wantPct  int32
		wantAbs  int32
		wantFail bool
	}{
		{name: "nil args take defaults", args: nil, wantPct: 10, wantAbs: 100},
		{name: "unset fields take defaults", args: &configv1.DefaultPreemptionArgs{MinCandidateNodesAbsolute: i32(5)}, wantPct: 10, wantAbs: 5},
		{name: "percentage above 100", args: &configv1.DefaultPreemptionArgs{MinCandidateNodesPercentage: i32(101)}, wantFail: true},
		{name: "negative absolute", args: &configv1.DefaultPreemptionArgs{MinCandidateNodesAbsolute: i32(-1)}, wantFail: true},
		{name: "both zero", args: &configv1.DefaultPreemptionArgs{MinCandidateNodesPercentage: i32(0), MinCandidateNodesAbsolute: i32(0)}, wantFail: true},
		{name: "wrong type", args: &configv1.NodeResourcesFitArgs{}, wantFail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewDefaultPreemption(context.Background(), tc.args, newTestHandle(framework.NewEmptySnapshot()))
			if tc.wantFail {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*dpPlugin)
			if pl.Name() != DefaultPreemptionName || pl.minPercentage != tc.wantPct || pl.minAbsolute != tc.wantAbs {
				t.Errorf("got %s %d%% %d, want %s %d%% %d", pl.Name(), pl.minPercentage, pl.minAbsolute, DefaultPreemptionName, tc.wantPct, tc.wantAbs)
			}
		})
	}
}

// BenchmarkPreemption runs PostFilter on a cluster where every node is
// full of lower-priority pods, so every node is a candidate and the dry
// run stops after max(100, 10%) of them. Victim deletions hit a clientset
// without those pods (NotFound), keeping the run about the decision.
func BenchmarkPreemption(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			nodes := make([]*framework.NodeInfo, n)
			for i := range nodes {
				var pods []*corev1.Pod
				for j := range 8 {
					pods = append(pods, dpTestPod(fmt.Sprintf("p-%d-%d", i, j), int32(j+i%7), 500, dpStarted(j)))
				}
				nodes[i] = dpTestNode(fmt.Sprintf("node-%04d", i), 4000, pods...)
			}
			th := newTestHandle(framework.NewSnapshot(nodes...))
			th.filters = []framework.FilterPlugin{dpFitFilter{}}
			p, err := NewDefaultPreemption(context.Background(), nil, th)
			if err != nil {
				b.Fatal(err)
			}
			th.start(b)
			statuses := dpUnschedulable(nodes)
			preemptor := dpTestPod("preemptor", 1000, 1200)
			state := framework.NewCycleState()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, st := p.(framework.PostFilterPlugin).PostFilter(context.Background(), state, preemptor, statuses)
				if !st.IsSuccess() || res.NominatedNodeName == "" {
					b.Fatalf("PostFilter = %+v, %v", res, st)
				}
			}
		})
	}
}
