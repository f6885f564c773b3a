package plugins

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// fitRL builds a ResourceList from name, quantity pairs.
func fitRL(kv ...string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

// fitNode is a node with the given allocatable.
func fitNode(name string, alloc corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name)},
		Status:     corev1.NodeStatus{Allocatable: alloc, Capacity: alloc},
	}
}

// fitNodeInfo is the node with pods already on it.
func fitNodeInfo(node *corev1.Node, pods ...*corev1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}

var fitPodSeq int

// fitPod is a pod with one container per request list (nil: no requests).
func fitPod(reqs ...corev1.ResourceList) *corev1.Pod {
	fitPodSeq++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: fmt.Sprintf("pod-%d", fitPodSeq), UID: types.UID(fmt.Sprintf("uid-%d", fitPodSeq)),
	}}
	for i, r := range reqs {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("c%d", i), Image: "app", Resources: corev1.ResourceRequirements{Requests: r},
		})
	}
	return p
}

func fitWithInit(p *corev1.Pod, sidecar bool, r corev1.ResourceList) *corev1.Pod {
	c := corev1.Container{Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)), Image: "init", Resources: corev1.ResourceRequirements{Requests: r}}
	if sidecar {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	return p
}

func fitNewPlugin(t testing.TB, args runtime.Object) *NodeResourcesFit {
	t.Helper()
	p, err := NewNodeResourcesFit(context.Background(), args, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*NodeResourcesFit)
}

func TestNodeResourcesFitFilter(t *testing.T) {
	const ext = "example.com/aaa"
	node := fitNode("n", fitRL("cpu", "10", "memory", "20", "pods", "32", ext, "5", "ephemeral-storage", "20", "hugepages-2Mi", "10"))
	used := fitPod(fitRL("cpu", "5", "memory", "19", ext, "3", "ephemeral-storage", "15", "hugepages-2Mi", "5"))
	overhead := fitPod(fitRL("cpu", "1", "memory", "1"))
	overhead.Spec.Overhead = fitRL("cpu", "3", "memory", "1")

	tests := []struct {
		name    string
		args    *configv1.NodeResourcesFitArgs
		pod     *corev1.Pod
		ni      *framework.NodeInfo
		code    framework.Code
		reasons []string
	}{
		{name: "no requests always fits", pod: fitPod(nil), ni: fitNodeInfo(node, used), code: framework.Success},
		{name: "fits in what is left", pod: fitPod(fitRL("cpu", "5", "memory", "1")), ni: fitNodeInfo(node, used), code: framework.Success},
		{name: "insufficient cpu and memory are both listed",
			pod: fitPod(fitRL("cpu", "6", "memory", "2")), ni: fitNodeInfo(node, used),
			code: framework.Unschedulable, reasons: []string{"Insufficient cpu", "Insufficient memory"}},
		{name: "init containers run one at a time: max, not sum",
			pod: fitWithInit(fitWithInit(fitPod(fitRL("cpu", "1")), false, fitRL("cpu", "5")), false, fitRL("cpu", "4")),
			ni:  fitNodeInfo(node, used), code: framework.Success},
		{name: "an init container larger than what is left",
			pod: fitWithInit(fitPod(fitRL("cpu", "1")), false, fitRL("cpu", "6")), ni: fitNodeInfo(node, used),
			code: framework.Unschedulable, reasons: []string{"Insufficient cpu"}},
		{name: "sidecars add to the containers",
			pod: fitWithInit(fitPod(fitRL("cpu", "3")), true, fitRL("cpu", "3")), ni: fitNodeInfo(node, used),
			code: framework.Unschedulable, reasons: []string{"Insufficient cpu"}},
		{name: "an init container after a sidecar runs beside it",
			// peak = sidecar 2 + init 4 = 6 > 5 left, though each alone fits
			pod: fitWithInit(fitWithInit(fitPod(fitRL("cpu", "1")), true, fitRL("cpu", "2")), false, fitRL("cpu", "4")),
			ni:  fitNodeInfo(node, used), code: framework.Unschedulable, reasons: []string{"Insufficient cpu"}},
		{name: "overhead counts", pod: overhead, ni: fitNodeInfo(node, used),
			code: framework.Unschedulable, reasons: []string{"Insufficient memory"}},
		{name: "overhead fits on an empty node", pod: overhead, ni: fitNodeInfo(node), code: framework.Success},
		{name: "extended resource used up", pod: fitPod(fitRL(ext, "3")), ni: fitNodeInfo(node, used),
			code: framework.Unschedulable, reasons: []string{"Insufficient " + ext}},
		{name: "extended resource the node lacks is unresolvable",
			pod: fitPod(fitRL("example.com/bbb", "1")), ni: fitNodeInfo(node),
			code: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient example.com/bbb"}},
		{name: "zero extended request is not checked", pod: fitPod(fitRL("example.com/bbb", "0")), ni: fitNodeInfo(node), code: framework.Success},
		{name: "ignored resource by name",
			args: &configv1.NodeResourcesFitArgs{IgnoredResources: []string{"example.com/bbb"}},
			pod:  fitPod(fitRL("example.com/bbb", "1")), ni: fitNodeInfo(node), code: framework.Success},
		{name: "ignored resource group",
			args: &configv1.NodeResourcesFitArgs{IgnoredResourceGroups: []string{"example.com"}},
			pod:  fitPod(fitRL("example.com/bbb", "1", ext, "9")), ni: fitNodeInfo(node), code: framework.Success},
		{name: "ignoring applies to extended resources only",
			args: &configv1.NodeResourcesFitArgs{IgnoredResources: []string{"hugepages-2Mi"}},
			pod:  fitPod(fitRL("hugepages-2Mi", "6")), ni: fitNodeInfo(node, used),
			code: framework.Unschedulable, reasons: []string{"Insufficient hugepages-2Mi"}},
		{name: "ephemeral storage", pod: fitPod(fitRL("ephemeral-storage", "6")), ni: fitNodeInfo(node, used),
			code: framework.Unschedulable, reasons: []string{"Insufficient ephemeral-storage"}},
		{name: "several scalars are listed in name order",
			pod:     fitPod(fitRL("example.com/zzz", "1", "example.com/bbb", "1", ext, "3")),
			ni:      fitNodeInfo(node, used),
			code:    framework.UnschedulableAndUnresolvable,
			reasons: []string{"Insufficient example.com/aaa", "Insufficient example.com/bbb", "Insufficient example.com/zzz"}},
		{name: "request above the whole node is unresolvable",
			pod: fitPod(fitRL("cpu", "11")), ni: fitNodeInfo(node),
			code: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient cpu"}},
		{name: "too many pods is resolvable by preemption",
			pod:  fitPod(nil),
			ni:   fitNodeInfo(fitNode("small", fitRL("cpu", "10", "memory", "20", "pods", "1")), fitPod(nil)),
			code: framework.Unschedulable, reasons: []string{"Too many pods"}},
		{name: "too many pods and insufficient cpu",
			pod:  fitPod(fitRL("cpu", "10")),
			ni:   fitNodeInfo(fitNode("small", fitRL("cpu", "10", "memory", "20", "pods", "1")), fitPod(fitRL("cpu", "1"))),
			code: framework.Unschedulable, reasons: []string{"Too many pods", "Insufficient cpu"}},
		{name: "node without a pods allocatable takes no pods",
			pod: fitPod(nil), ni: fitNodeInfo(fitNode("nopods", fitRL("cpu", "10"))),
			code: framework.Unschedulable, reasons: []string{"Too many pods"}},
		{name: "pod-level requests replace the container sum",
			pod: func() *corev1.Pod {
				p := fitPod(fitRL("cpu", "1"), fitRL("cpu", "1"))
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: fitRL("cpu", "6")}
				return p
			}(),
			ni: fitNodeInfo(node, used), code: framework.Unschedulable, reasons: []string{"Insufficient cpu"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args runtime.Object
			if tc.args != nil {
				args = tc.args
			}
			p := fitNewPlugin(t, args)
			state := framework.NewCycleState()
			if _, s := p.PreFilter(context.Background(), state, tc.pod, nil); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			got := p.Filter(context.Background(), state, tc.pod, tc.ni)
			if got.Code() != tc.code {
				t.Errorf("code = %v, want %v (%v)", got.Code(), tc.code, got)
			}
			if !reflect.DeepEqual(got.Reasons(), tc.reasons) {
				t.Errorf("reasons = %q, want %q", got.Reasons(), tc.reasons)
			}
		})
	}
}

func TestNodeResourcesFitFilterWithoutPreFilter(t *testing.T) {
	p := fitNewPlugin(t, nil)
	s := p.Filter(context.Background(), framework.NewCycleState(), fitPod(nil), fitNodeInfo(fitNode("n", fitRL("pods", "1"))))
	if s.Code() != framework.Error {
		t.Fatalf("got %v, want an Error status", s)
	}
}

func TestNodeResourcesFitArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    runtime.Object
		wantErr bool
	}{
		{name: "nil args are the defaults", args: nil},
		{name: "empty args are defaulted", args: &configv1.NodeResourcesFitArgs{}},
		{name: "zero weight defaults to 1", args: &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
			Type: configv1.MostAllocated, Resources: []configv1.ResourceSpec{{Name: "cpu"}}}}},
		{name: "wrong args type", args: &configv1.NodeAffinityArgs{}, wantErr: true},
		{name: "unknown strategy", args: &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{Type: "Random"}}, wantErr: true},
		{name: "ratio without shape", args: &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{Type: configv1.RequestedToCapacityRatio}}, wantErr: true},
		{name: "shape not increasing", args: &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
			Type:                     configv1.RequestedToCapacityRatio,
			RequestedToCapacityRatio: &configv1.RequestedToCapacityRatioParam{Shape: []configv1.UtilizationShapePoint{{Utilization: 50, Score: 1}, {Utilization: 50, Score: 2}}},
		}}, wantErr: true},
		{name: "shape score above 10", args: &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
			Type:                     configv1.RequestedToCapacityRatio,
			RequestedToCapacityRatio: &configv1.RequestedToCapacityRatioParam{Shape: []configv1.UtilizationShapePoint{{Utilization: 0, Score: 11}}},
		}}, wantErr: true},
		{name: "weight above 100", args: &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
			Type: configv1.LeastAllocated, Resources: []configv1.ResourceSpec{{Name: "cpu", Weight: 101}}}}, wantErr: true},
		{name: "resource group with a slash", args: &configv1.NodeResourcesFitArgs{IgnoredResourceGroups: []string{"example.com/aaa"}}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before runtime.Object
			if tc.args != nil {
				before = tc.args.DeepCopyObject()
			}
			_, err := NewNodeResourcesFit(context.Background(), tc.args, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.args != nil && !reflect.DeepEqual(before, tc.args) {
				t.Errorf("the factory changed the caller's args")
			}
		})
	}
}

func fitStrategy(typ configv1.ScoringStrategyType, res []configv1.ResourceSpec, shape ...configv1.UtilizationShapePoint) *configv1.NodeResourcesFitArgs {
	s := &configv1.ScoringStrategy{Type: typ, Resources: res}
	if len(shape) > 0 {
		s.RequestedToCapacityRatio = &configv1.RequestedToCapacityRatioParam{Shape: shape}
	}
	return &configv1.NodeResourcesFitArgs{ScoringStrategy: s}
}

func TestNodeResourcesFitScore(t *testing.T) {
	const ext = "example.com/aaa"
	// The pod asks for 3000m cpu and 5000 bytes of memory over two
	// containers; node "small" has 4000m/10000, node "big" 6000m/10000.
	pod := fitPod(fitRL("cpu", "1000m", "memory", "2000"), fitRL("cpu", "2000m", "memory", "3000"))
	small := fitNode("small", fitRL("cpu", "4000m", "memory", "10000", "pods", "10"))
	big := fitNode("big", fitRL("cpu", "6000m", "memory", "10000", "pods", "10"))
	withExt := fitNode("ext", fitRL("cpu", "4000m", "memory", "10000", "pods", "10", ext, "4"))
	mib := fitNode("mib", fitRL("cpu", "1000m", "memory", "1000Mi", "pods", "10"))
	cpuMem := []configv1.ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
	linear := []configv1.UtilizationShapePoint{{Utilization: 0, Score: 0}, {Utilization: 100, Score: 10}}

	tests := []struct {
		name string
		args *configv1.NodeResourcesFitArgs
		pod  *corev1.Pod
		ni   *framework.NodeInfo
		want int64
	}{
		// cpu (4000-3000)*100/4000 = 25, memory 50: (25+50)/2 = 37
		{name: "least allocated, defaults", pod: pod, ni: fitNodeInfo(small), want: 37},
		{name: "least allocated, bigger node", pod: pod, ni: fitNodeInfo(big), want: 50},
		// (25*2 + 50*1)/3 = 33
		{name: "least allocated, weighted",
			args: fitStrategy(configv1.LeastAllocated, []configv1.ResourceSpec{{Name: "cpu", Weight: 2}, {Name: "memory", Weight: 1}}),
			pod:  pod, ni: fitNodeInfo(small), want: 33},
		// cpu 3000*100/4000 = 75, memory 50: 125/2 = 62 (truncated)
		{name: "most allocated", args: fitStrategy(configv1.MostAllocated, cpuMem), pod: pod, ni: fitNodeInfo(small), want: 62},
		{name: "most allocated caps an overfull resource at 100",
			args: fitStrategy(configv1.MostAllocated, cpuMem),
			pod:  fitPod(fitRL("cpu", "8000m", "memory", "5000")), ni: fitNodeInfo(small), want: 75},
		{name: "least allocated scores an overfull resource 0",
			pod: fitPod(fitRL("cpu", "8000m", "memory", "5000")), ni: fitNodeInfo(small), want: 25},
		// utilization 75 and 50 through the identity shape: round(62.5) = 63
		{name: "requested to capacity ratio rounds",
			args: fitStrategy(configv1.RequestedToCapacityRatio, cpuMem, linear...), pod: pod, ni: fitNodeInfo(small), want: 63},
		// cpu 75 → 0 + (100-0)*(75-50)/50 = 50; memory 50 → 0, left out of the average
		{name: "requested to capacity ratio, broken shape, zero scores left out",
			args: fitStrategy(configv1.RequestedToCapacityRatio, cpuMem,
				configv1.UtilizationShapePoint{Utilization: 0, Score: 10}, configv1.UtilizationShapePoint{Utilization: 50, Score: 0}, configv1.UtilizationShapePoint{Utilization: 100, Score: 10}),
			pod: pod, ni: fitNodeInfo(small), want: 50},
		// cpu 75 lies before the first point (80, 2): flat at 2*10 = 20; memory too.
		{name: "requested to capacity ratio, flat before the first point",
			args: fitStrategy(configv1.RequestedToCapacityRatio, cpuMem,
				configv1.UtilizationShapePoint{Utilization: 80, Score: 2}, configv1.UtilizationShapePoint{Utilization: 90, Score: 8}),
			pod: pod, ni: fitNodeInfo(small), want: 20},
		// defaults 100m / 200Mi: cpu 90, memory 80 → 85
		{name: "pod without requests gets the scoring defaults", pod: fitPod(nil), ni: fitNodeInfo(mib), want: 85},
		// an existing no-request pod counts 100m/200Mi too: cpu 80, memory 60 → 70
		{name: "existing pods without requests count the defaults",
			pod: fitPod(fitRL("cpu", "100m", "memory", "200Mi")), ni: fitNodeInfo(mib, fitPod(nil)), want: 70},
		// ext: (4-1)*100/4 = 75 → (25+50+75)/3 = 50
		{name: "extended resource the pod requests is scored",
			args: fitStrategy(configv1.LeastAllocated, append(cpuMem, configv1.ResourceSpec{Name: ext, Weight: 1})),
			pod:  fitPod(fitRL("cpu", "1000m", "memory", "2000", ext, "1"), fitRL("cpu", "2000m", "memory", "3000")),
			ni:   fitNodeInfo(withExt), want: 50},
		{name: "extended resource the pod does not request is left out",
			args: fitStrategy(configv1.LeastAllocated, append(cpuMem, configv1.ResourceSpec{Name: ext, Weight: 1})),
			pod:  pod, ni: fitNodeInfo(withExt), want: 37},
		{name: "extended resource the node lacks is left out",
			args: fitStrategy(configv1.LeastAllocated, append(cpuMem, configv1.ResourceSpec{Name: ext, Weight: 1})),
			pod:  fitPod(fitRL("cpu", "1000m", "memory", "2000", ext, "1"), fitRL("cpu", "2000m", "memory", "3000")),
			ni:   fitNodeInfo(small), want: 37},
		{name: "node with no allocatable scores 0", pod: pod, ni: fitNodeInfo(fitNode("empty", nil)), want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args runtime.Object
			if tc.args != nil {
				args = tc.args
			}
			p := fitNewPlugin(t, args)
			state := framework.NewCycleState()
			if s := p.PreScore(context.Background(), state, tc.pod, []*framework.NodeInfo{tc.ni}); !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			got, s := p.Score(context.Background(), state, tc.pod, tc.ni)
			if !s.IsSuccess() {
				t.Fatalf("Score: %v", s)
			}
			if got != tc.want {
				t.Errorf("score = %d, want %d", got, tc.want)
			}
			// Without PreScore the plugin computes the same.
			if again, _ := p.Score(context.Background(), framework.NewCycleState(), tc.pod, tc.ni); again != got {
				t.Errorf("score without PreScore = %d, want %d", again, got)
			}
		})
	}
}

func TestNodeResourcesFitHints(t *testing.T) {
	p := fitNewPlugin(t, nil)
	target := fitPod(fitRL("cpu", "2", "example.com/gpu", "1"))
	assigned := func(p *corev1.Pod) *corev1.Pod { p = p.DeepCopy(); p.Spec.NodeName = "n"; return p }
	bigPod := assigned(fitPod(fitRL("cpu", "4", "memory", "1Gi")))
	smallerCPU := bigPod.DeepCopy()
	smallerCPU.Spec.Containers[0].Resources.Requests = fitRL("cpu", "1", "memory", "1Gi")
	smallerMem := bigPod.DeepCopy()
	smallerMem.Spec.Containers[0].Resources.Requests = fitRL("cpu", "4", "memory", "512Mi")
	node := fitNode("n", fitRL("cpu", "4", "pods", "10", "example.com/gpu", "1"))
	noGPU := fitNode("n", fitRL("cpu", "4", "pods", "10"))
	moreCPU := fitNode("n", fitRL("cpu", "8", "pods", "10", "example.com/gpu", "1"))
	moreMem := fitNode("n", fitRL("cpu", "4", "memory", "8Gi", "pods", "10", "example.com/gpu", "1"))
	morePods := fitNode("n", fitRL("cpu", "4", "pods", "20", "example.com/gpu", "1"))

	tests := []struct {
		name     string
		fn       framework.QueueingHintFn
		old, new interface{}
		want     framework.QueueingHint
	}{
		{name: "deleted assigned pod", fn: p.hintPodEvent, old: bigPod, want: framework.Queue},
		{name: "deleted pending pod", fn: p.hintPodEvent, old: fitPod(fitRL("cpu", "4")), want: framework.QueueSkip},
		{name: "deleted nominated pod", fn: p.hintPodEvent, old: func() *corev1.Pod {
			q := fitPod(fitRL("cpu", "4"))
			q.Status.NominatedNodeName = "n"
			return q
		}(), want: framework.Queue},
		{name: "scaled-down cpu the target wants", fn: p.hintPodEvent, old: bigPod, new: smallerCPU, want: framework.Queue},
		{name: "scaled-down memory the target does not want", fn: p.hintPodEvent, old: bigPod, new: smallerMem, want: framework.QueueSkip},
		{name: "the target itself scaled down", fn: p.hintPodEvent, old: target, new: target, want: framework.Queue},
		{name: "node added that fits", fn: p.hintNodeEvent, new: node, want: framework.Queue},
		{name: "node added without the extended resource", fn: p.hintNodeEvent, new: noGPU, want: framework.QueueSkip},
		{name: "node grew in cpu", fn: p.hintNodeEvent, old: node, new: moreCPU, want: framework.Queue},
		{name: "node grew in memory the pod does not want", fn: p.hintNodeEvent, old: node, new: moreMem, want: framework.QueueSkip},
		{name: "node grew in pod capacity", fn: p.hintNodeEvent, old: node, new: morePods, want: framework.Queue},
		{name: "node gained the extended resource", fn: p.hintNodeEvent, old: noGPU, new: node, want: framework.Queue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(target, tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
	events, _ := p.EventsToRegister(context.Background())
	if len(events) != 2 || events[0].Event.Resource != framework.PodResource || events[1].Event.ActionType&framework.UpdateNodeAllocatable == 0 {
		t.Errorf("events = %+v", events)
	}
}

// BenchmarkFitFilterScore runs the per-node hot path of NodeResourcesFit
// (Filter, then Score on the default LeastAllocated strategy) and
// BalancedAllocation's Score over 5,000 nodes with 10 pods each, and
// reports the cost per node. PreFilter/PreScore run once per pod.
func BenchmarkFitFilterScore(b *testing.B) {
	const numNodes = 5000
	nodes := make([]*framework.NodeInfo, numNodes)
	for i := range nodes {
		n := fitNode(fmt.Sprintf("node-%d", i), fitRL("cpu", "32", "memory", "128Gi", "pods", "110", "ephemeral-storage", "100Gi", "example.com/gpu", "8"))
		var pods []*corev1.Pod
		for j := 0; j < 10; j++ {
			pods = append(pods, fitPod(fitRL("cpu", "500m", "memory", "1Gi")))
		}
		nodes[i] = fitNodeInfo(n, pods...)
	}
	fit := fitNewPlugin(b, nil)
	bal, _ := NewNodeResourcesBalancedAllocation(context.Background(), nil, nil)
	balanced := bal.(*NodeResourcesBalancedAllocation)
	pod := fitPod(fitRL("cpu", "1", "memory", "2Gi", "example.com/gpu", "1"))
	ctx := context.Background()

	b.ReportAllocs()
	b.ResetTimer()
	var sink int64
	for i := 0; i < b.N; i++ {
		state := framework.NewCycleState()
		fit.PreFilter(ctx, state, pod, nodes)
		fit.PreScore(ctx, state, pod, nodes)
		balanced.PreScore(ctx, state, pod, nodes)
		for _, ni := range nodes {
			if s := fit.Filter(ctx, state, pod, ni); s != nil {
				b.Fatalf("unexpected %v", s)
			}
			s1, _ := fit.Score(ctx, state, pod, ni)
			s2, _ := balanced.Score(ctx, state, pod, ni)
			sink += s1 + s2
		}
	}
	b.StopTimer()
	if sink == 0 {
		b.Fatal("no scores")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/numNodes, "ns/node")
}
