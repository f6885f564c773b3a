package plugins

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

const ptsZone = "zone"

// ptsNode makes a node with a hostname label and, unless zone is "", a
// zone label; extra labels are key=value pairs.
func ptsNode(name, zone string, extra ...string) *corev1.Node {
	l := map[string]string{corev1.LabelHostname: name}
	if zone != "" {
		l[ptsZone] = zone
	}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// ptsPod makes a pod in namespace "default" on node (unscheduled if "")
// with labels given as key=value pairs.
func ptsPod(name, node string, kv ...string) *corev1.Pod {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: l},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// ptsSpread is a constraint selecting pods with label sel=""; sel "" means
// a nil selector.
func ptsSpread(maxSkew int32, key string, action corev1.UnsatisfiableConstraintAction, sel string) corev1.TopologySpreadConstraint {
	c := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: action}
	if sel != "" {
		c.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: sel, Operator: metav1.LabelSelectorOpExists}}}
	}
	return c
}

func ptsWith(p *corev1.Pod, cs ...corev1.TopologySpreadConstraint) *corev1.Pod {
	p.Spec.TopologySpreadConstraints = cs
	return p
}

// ptsSnapshot puts each existing pod on the node its spec names.
func ptsSnapshot(nodes []*corev1.Node, pods []*corev1.Pod) *framework.Snapshot {
	infos := make([]*framework.NodeInfo, len(nodes))
	byName := map[string]*framework.NodeInfo{}
	for i, n := range nodes {
		infos[i] = naNodeInfo(n)
		byName[n.Name] = infos[i]
	}
	for _, p := range pods {
		byName[p.Spec.NodeName].AddPod(framework.NewPodInfo(p))
	}
	return framework.NewSnapshot(infos...)
}

func ptsNew(t testing.TB, snap *framework.Snapshot, args runtime.Object, objs ...runtime.Object) *PodTopologySpread {
	t.Helper()
	h := newTestHandle(snap, objs...)
	p, err := NewPodTopologySpread(context.Background(), args, h)
	if err != nil {
		t.Fatalf("NewPodTopologySpread: %v", err)
	}
	h.start(t)
	return p.(*PodTopologySpread)
}

// ptsFilterAll runs PreFilter and Filter over every node and returns, per
// node, "" for a fit or "<code>: <reason>".
func ptsFilterAll(t *testing.T, pl *PodTopologySpread, snap *framework.Snapshot, pod *corev1.Pod) (map[string]string, *framework.CycleState) {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, snap.NodeInfoList); !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	return ptsFilterWith(pl, state, snap, pod), state
}

func ptsFilterWith(pl *PodTopologySpread, state *framework.CycleState, snap *framework.Snapshot, pod *corev1.Pod) map[string]string {
	got := map[string]string{}
	for _, ni := range snap.NodeInfoList {
		s := pl.Filter(context.Background(), state, pod, ni)
		got[ni.Name()] = ""
		if !s.IsSuccess() {
			got[ni.Name()] = s.String()
		}
	}
	return got
}

var (
	ptsSkewFail  = framework.Unschedulable.String() + ": " + ErrReasonTopologySpread
	ptsLabelFail = framework.UnschedulableAndUnresolvable.String() + ": " + ErrReasonTopologySpreadMissingLabel
)

func TestPodTopologySpreadFilter(t *testing.T) {
	// Three zones holding 2/1/1 pods labeled foo.
	threeZones := []*corev1.Node{ptsNode("a1", "A"), ptsNode("a2", "A"), ptsNode("b1", "B"), ptsNode("c1", "C")}
	twoOneOne := []*corev1.Pod{ptsPod("p1", "a1", "foo", ""), ptsPod("p2", "a2", "foo", ""), ptsPod("p3", "b1", "foo", ""), ptsPod("p4", "c1", "foo", "")}
	zone1 := ptsSpread(1, ptsZone, corev1.DoNotSchedule, "foo")

	tests := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  map[string]string
	}{
		{
			// A: 2+1-1 = 2 > 1; B and C: 1+1-1 = 1.
			name:  "maxSkew 1 across 3 zones",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), zone1),
			nodes: threeZones, pods: twoOneOne,
			want: map[string]string{"a1": ptsSkewFail, "a2": ptsSkewFail, "b1": "", "c1": ""},
		},
		{
			name:  "a pod outside its own selector does not add itself",
			pod:   ptsWith(ptsPod("p", "", "bar", ""), zone1),
			nodes: threeZones, pods: twoOneOne,
			want: map[string]string{"a1": "", "a2": "", "b1": "", "c1": ""},
		},
		{
			name:  "maxSkew 2 tolerates zone A",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), ptsSpread(2, ptsZone, corev1.DoNotSchedule, "foo")),
			nodes: threeZones, pods: twoOneOne,
			want: map[string]string{"a1": "", "a2": "", "b1": "", "c1": ""},
		},
		{
			// x has no zone: rejected as unresolvable, and its pods are
			// in no domain (else C would be behind).
			name:  "node missing the topology label",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), zone1),
			nodes: append(append([]*corev1.Node{}, threeZones...), ptsNode("x", "")),
			pods:  append(append([]*corev1.Pod{}, twoOneOne...), ptsPod("x1", "x", "foo", ""), ptsPod("x2", "x", "foo", "")),
			want:  map[string]string{"a1": ptsSkewFail, "a2": ptsSkewFail, "b1": "", "c1": "", "x": ptsLabelFail},
		},
		{
			// Two domains with 1 pod each, but minDomains 3: the global
			// minimum is taken as 0, so 1+1-0 = 2 > 1 everywhere.
			name: "fewer domains than minDomains",
			pod: ptsWith(ptsPod("p", "", "foo", ""), func() corev1.TopologySpreadConstraint {
				c := zone1
				c.MinDomains = ptr.To[int32](3)
				return c
			}()),
			nodes: []*corev1.Node{ptsNode("a1", "A"), ptsNode("b1", "B")},
			pods:  []*corev1.Pod{ptsPod("p1", "a1", "foo", ""), ptsPod("p2", "b1", "foo", "")},
			want:  map[string]string{"a1": ptsSkewFail, "b1": ptsSkewFail},
		},
		{
			name: "as many domains as minDomains",
			pod: ptsWith(ptsPod("p", "", "foo", ""), func() corev1.TopologySpreadConstraint {
				c := zone1
				c.MinDomains = ptr.To[int32](2)
				return c
			}()),
			nodes: []*corev1.Node{ptsNode("a1", "A"), ptsNode("b1", "B")},
			pods:  []*corev1.Pod{ptsPod("p1", "a1", "foo", ""), ptsPod("p2", "b1", "foo", "")},
			want:  map[string]string{"a1": "", "b1": ""},
		},
		{
			// C's node fails the pod's nodeSelector: with Honor (the
			// default) zone C is not a domain, the minimum is 1 (A).
			name: "nodeAffinityPolicy Honor drops domains the pod cannot use",
			pod: func() *corev1.Pod {
				p := ptsWith(ptsPod("p", "", "foo", ""), zone1)
				p.Spec.NodeSelector = map[string]string{"pool": "main"}
				return p
			}(),
			nodes: []*corev1.Node{ptsNode("a1", "A", "pool", "main"), ptsNode("b1", "B", "pool", "main"), ptsNode("c1", "C", "pool", "other")},
			pods:  []*corev1.Pod{ptsPod("p1", "a1", "foo", ""), ptsPod("p2", "b1", "foo", ""), ptsPod("p3", "b1", "foo", "")},
			want:  map[string]string{"a1": "", "b1": ptsSkewFail, "c1": ""},
		},
		{
			name: "nodeAffinityPolicy Ignore keeps them",
			pod: func() *corev1.Pod {
				c := zone1
				c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
				p := ptsWith(ptsPod("p", "", "foo", ""), c)
				p.Spec.NodeSelector = map[string]string{"pool": "main"}
				return p
			}(),
			nodes: []*corev1.Node{ptsNode("a1", "A", "pool", "main"), ptsNode("b1", "B", "pool", "main"), ptsNode("c1", "C", "pool", "other")},
			pods:  []*corev1.Pod{ptsPod("p1", "a1", "foo", ""), ptsPod("p2", "b1", "foo", ""), ptsPod("p3", "b1", "foo", "")},
			want:  map[string]string{"a1": ptsSkewFail, "b1": ptsSkewFail, "c1": ""},
		},
		{
			name: "nodeTaintsPolicy Honor drops tainted domains",
			pod: func() *corev1.Pod {
				c := zone1
				c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
				return ptsWith(ptsPod("p", "", "foo", ""), c)
			}(),
			nodes: []*corev1.Node{ptsNode("a1", "A"), ptsNode("b1", "B"), func() *corev1.Node {
				n := ptsNode("c1", "C")
				n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
				return n
			}()},
			pods: []*corev1.Pod{ptsPod("p1", "a1", "foo", ""), ptsPod("p2", "b1", "foo", ""), ptsPod("p3", "b1", "foo", "")},
			want: map[string]string{"a1": "", "b1": ptsSkewFail, "c1": ""},
		},
		{
			name: "nodeTaintsPolicy Ignore (default) keeps them",
			pod:  ptsWith(ptsPod("p", "", "foo", ""), zone1),
			nodes: []*corev1.Node{ptsNode("a1", "A"), ptsNode("b1", "B"), func() *corev1.Node {
				n := ptsNode("c1", "C")
				n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
				return n
			}()},
			pods: []*corev1.Pod{ptsPod("p1", "a1", "foo", ""), ptsPod("p2", "b1", "foo", ""), ptsPod("p3", "b1", "foo", "")},
			want: map[string]string{"a1": ptsSkewFail, "b1": ptsSkewFail, "c1": ""},
		},
		{
			// Only pods with the same hash count: A has none, B one.
			name: "matchLabelKeys narrows to the pod's revision",
			pod: func() *corev1.Pod {
				c := zone1
				c.MatchLabelKeys = []string{"hash"}
				return ptsWith(ptsPod("p", "", "foo", "", "hash", "v2"), c)
			}(),
			nodes: []*corev1.Node{ptsNode("a1", "A"), ptsNode("b1", "B"), ptsNode("c1", "C")},
			pods: []*corev1.Pod{
				ptsPod("p1", "a1", "foo", "", "hash", "v1"), ptsPod("p2", "a1", "foo", "", "hash", "v1"),
				ptsPod("p3", "b1", "foo", "", "hash", "v2"),
			},
			want: map[string]string{"a1": "", "b1": ptsSkewFail, "c1": ""},
		},
		{
			name:  "without matchLabelKeys every revision counts",
			pod:   ptsWith(ptsPod("p", "", "foo", "", "hash", "v2"), zone1),
			nodes: []*corev1.Node{ptsNode("a1", "A"), ptsNode("b1", "B"), ptsNode("c1", "C")},
			pods: []*corev1.Pod{
				ptsPod("p1", "a1", "foo", "", "hash", "v1"), ptsPod("p2", "a1", "foo", "", "hash", "v1"),
				ptsPod("p3", "b1", "foo", "", "hash", "v2"),
			},
			want: map[string]string{"a1": ptsSkewFail, "b1": ptsSkewFail, "c1": ""},
		},
		{
			name:  "pods of other namespaces and terminating pods do not count",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), zone1),
			nodes: []*corev1.Node{ptsNode("a1", "A"), ptsNode("b1", "B")},
			pods: []*corev1.Pod{
				func() *corev1.Pod { p := ptsPod("o1", "a1", "foo", ""); p.Namespace = "other"; return p }(),
				func() *corev1.Pod { p := ptsPod("t1", "a1", "foo", ""); p.DeletionTimestamp = &metav1.Time{}; return p }(),
				ptsPod("p1", "b1", "foo", ""),
			},
			want: map[string]string{"a1": "", "b1": ptsSkewFail},
		},
		{
			name:  "hostname: each node is a domain",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), ptsSpread(1, corev1.LabelHostname, corev1.DoNotSchedule, "foo")),
			nodes: []*corev1.Node{ptsNode("n1", "A"), ptsNode("n2", "A"), ptsNode("n3", "B")},
			pods:  []*corev1.Pod{ptsPod("p1", "n1", "foo", ""), ptsPod("p2", "n1", "foo", ""), ptsPod("p3", "n3", "foo", "")},
			want:  map[string]string{"n1": ptsSkewFail, "n2": "", "n3": ptsSkewFail},
		},
		{
			// Zone: A=1, B=2 (min 1). Hostname: n1=1, n2=0, n3=2 (min 0).
			// n1: zone 1+1-1=1 ok, host 1+1=2 fails; n2: both ok;
			// n3: zone 2+1-1=2 fails.
			name: "zone and hostname constraints must both hold",
			pod: ptsWith(ptsPod("p", "", "foo", ""),
				zone1, ptsSpread(1, corev1.LabelHostname, corev1.DoNotSchedule, "foo")),
			nodes: []*corev1.Node{ptsNode("n1", "A"), ptsNode("n2", "A"), ptsNode("n3", "B")},
			pods:  []*corev1.Pod{ptsPod("p1", "n1", "foo", ""), ptsPod("p2", "n3", "foo", ""), ptsPod("p3", "n3", "foo", "")},
			want:  map[string]string{"n1": ptsSkewFail, "n2": "", "n3": ptsSkewFail},
		},
		{
			// Upstream counts no existing pods against a selector without
			// requirements, so every zone looks empty.
			name: "an empty labelSelector counts no existing pods",
			pod: ptsWith(ptsPod("p", "", "foo", ""), corev1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: ptsZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{},
			}),
			nodes: threeZones, pods: twoOneOne,
			want: map[string]string{"a1": "", "a2": "", "b1": "", "c1": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ptsSnapshot(tc.nodes, tc.pods)
			pl := ptsNew(t, snap, nil)
			got, _ := ptsFilterAll(t, pl, snap, tc.pod)
			for n, want := range tc.want {
				if got[n] != want {
					t.Errorf("node %s: got %q, want %q", n, got[n], want)
				}
			}
		})
	}
}

func TestPodTopologySpreadPreFilterSkip(t *testing.T) {
	snap := ptsSnapshot([]*corev1.Node{ptsNode("a1", "A")}, nil)
	pl := ptsNew(t, snap, nil)
	tests := []struct {
		name string
		pod  *corev1.Pod
	}{
		{name: "no constraints and no owner", pod: ptsPod("p", "", "foo", "")},
		{name: "only ScheduleAnyway constraints", pod: ptsWith(ptsPod("p", "", "foo", ""), ptsSpread(1, ptsZone, corev1.ScheduleAnyway, "foo"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, s := pl.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, snap.NodeInfoList); !s.IsSkip() {
				t.Fatalf("want Skip, got %v", s)
			}
		})
	}
	t.Run("only DoNotSchedule constraints skip PreScore", func(t *testing.T) {
		pod := ptsWith(ptsPod("p", "", "foo", ""), ptsSpread(1, ptsZone, corev1.DoNotSchedule, "foo"))
		if s := pl.PreScore(context.Background(), framework.NewCycleState(), pod, snap.NodeInfoList); !s.IsSkip() {
			t.Fatalf("want Skip, got %v", s)
		}
	})
}

// TestPodTopologySpreadAddRemovePod checks the PreFilter extensions that
// preemption and nominated pods use, on clones of the state.
func TestPodTopologySpreadAddRemovePod(t *testing.T) {
	nodes := []*corev1.Node{ptsNode("a1", "A"), ptsNode("a2", "A"), ptsNode("b1", "B"), ptsNode("c1", "C")}
	pods := []*corev1.Pod{ptsPod("p1", "a1", "foo", ""), ptsPod("p2", "a2", "foo", ""), ptsPod("p3", "b1", "foo", ""), ptsPod("p4", "c1", "foo", "")}
	pod := ptsWith(ptsPod("p", "", "foo", ""), ptsSpread(1, ptsZone, corev1.DoNotSchedule, "foo"))
	snap := ptsSnapshot(nodes, pods)
	pl := ptsNew(t, snap, nil)
	base := map[string]string{"a1": ptsSkewFail, "a2": ptsSkewFail, "b1": "", "c1": ""}

	other := ptsPod("o", "c1", "foo", "")
	other.Namespace = "other"
	tests := []struct {
		name   string
		remove bool
		pod    *corev1.Pod
		node   string
		want   map[string]string
	}{
		// A drops to 1: every zone has 1.
		{name: "removing a victim in the crowded zone", remove: true, pod: pods[0], node: "a1", want: map[string]string{"a1": "", "a2": "", "b1": "", "c1": ""}},
		// B drops to 0, the new minimum: only B fits.
		{name: "removing the only pod of a zone lowers the minimum", remove: true, pod: pods[2], node: "b1", want: map[string]string{"a1": ptsSkewFail, "a2": ptsSkewFail, "b1": "", "c1": ptsSkewFail}},
		{name: "adding a nominated pod fills a zone", pod: ptsPod("n", "c1", "foo", ""), node: "c1", want: map[string]string{"a1": ptsSkewFail, "a2": ptsSkewFail, "b1": "", "c1": ptsSkewFail}},
		{name: "a pod of another namespace changes nothing", pod: other, node: "c1", want: base},
		{name: "a pod outside the selector changes nothing", pod: ptsPod("n", "c1", "bar", ""), node: "c1", want: base},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, state := ptsFilterAll(t, pl, snap, pod)
			if fmt.Sprint(got) != fmt.Sprint(base) {
				t.Fatalf("before: %v", got)
			}
			clone := state.Clone()
			ni, _ := snap.Get(tc.node)
			var s *framework.Status
			if tc.remove {
				s = pl.RemovePod(context.Background(), clone, pod, framework.NewPodInfo(tc.pod), ni)
			} else {
				s = pl.AddPod(context.Background(), clone, pod, framework.NewPodInfo(tc.pod), ni)
			}
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if after := ptsFilterWith(pl, clone, snap, pod); fmt.Sprint(after) != fmt.Sprint(tc.want) {
				t.Errorf("after: got %v, want %v", after, tc.want)
			}
			if orig := ptsFilterWith(pl, state, snap, pod); fmt.Sprint(orig) != fmt.Sprint(base) {
				t.Errorf("the original state changed: %v", orig)
			}
		})
	}
}

// ptsScoreAll runs PreScore, Score on the feasible nodes and NormalizeScore.
func ptsScoreAll(t *testing.T, pl *PodTopologySpread, snap *framework.Snapshot, feasible []string, pod *corev1.Pod) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	var nodes []*framework.NodeInfo
	for _, n := range feasible {
		ni, err := snap.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, ni)
	}
	if s := pl.PreScore(ctx, state, pod, nodes); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	scores := make([]framework.NodeScore, len(nodes))
	for i, ni := range nodes {
		v, s := pl.Score(ctx, state, pod, ni)
		if !s.IsSuccess() {
			t.Fatal(s)
		}
		scores[i] = framework.NodeScore{Name: ni.Name(), Score: v}
	}
	if s := pl.NormalizeScore(ctx, state, pod, scores); !s.IsSuccess() {
		t.Fatal(s)
	}
	got := map[string]int64{}
	for _, s := range scores {
		got[s.Name] = s.Score
	}
	return got
}

// ptsPods makes count pods on node with the given labels.
func ptsPods(node string, count int, kv ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < count; i++ {
		out = append(out, ptsPod(fmt.Sprintf("%s-%v-%d", node, kv, i), node, kv...))
	}
	return out
}

func ptsConcat(lists ...[]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// The expected scores are worked out by hand in the comments; the cases
// mirror upstream's scoring tests. Raw score per node: Σ count·ln(D+2) +
// (maxSkew-1), rounded, D = number of domains among feasible nodes; then
// 100·(max+min-raw)/max.
func TestPodTopologySpreadScore(t *testing.T) {
	host1 := ptsSpread(1, corev1.LabelHostname, corev1.ScheduleAnyway, "foo")
	hosts := func(names ...string) []*corev1.Node {
		var out []*corev1.Node
		for _, n := range names {
			out = append(out, ptsNode(n, ""))
		}
		return out
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		nodes    []*corev1.Node
		pods     []*corev1.Pod
		feasible []string // nil: all nodes
		want     map[string]int64
	}{
		{
			name:  "no existing pods: all equal",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), host1),
			nodes: hosts("a", "b"),
			want:  map[string]int64{"a": 100, "b": 100},
		},
		{
			// w = ln 6 = 1.79; raw a=3.58→4, b=1.79→2, c=0, d=5.38→5;
			// a = 100(5+0-4)/5 = 20, b = 60, c = 100, d = 0.
			name:  "hostname, pods spread 2/1/0/3",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), host1),
			nodes: hosts("a", "b", "c", "d"),
			pods:  ptsConcat(ptsPods("a", 2, "foo", ""), ptsPods("b", 1, "foo", ""), ptsPods("d", 3, "foo", "")),
			want:  map[string]int64{"a": 20, "b": 60, "c": 100, "d": 0},
		},
		{
			// maxSkew 2 adds 1: a=5, b=3, c=1, d=6; a = 100(7-5)/6 = 33.
			name:  "hostname, pods spread 2/1/0/3, maxSkew 2",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), ptsSpread(2, corev1.LabelHostname, corev1.ScheduleAnyway, "foo")),
			nodes: hosts("a", "b", "c", "d"),
			pods:  ptsConcat(ptsPods("a", 2, "foo", ""), ptsPods("b", 1, "foo", ""), ptsPods("d", 3, "foo", "")),
			want:  map[string]int64{"a": 33, "b": 66, "c": 100, "d": 16},
		},
		{
			// Only a, b, x feasible; y's pods still crowd zone2.
			// w = ln 4 = 1.386; zone1 = 6 → 8.3→8, zone2 = 4 → 5.5→6;
			// a, b = 100(14-8)/8 = 75, x = 100.
			name:     "zone, 3 of 4 nodes feasible, counts from all nodes",
			pod:      ptsWith(ptsPod("p", "", "foo", ""), ptsSpread(1, ptsZone, corev1.ScheduleAnyway, "foo")),
			nodes:    []*corev1.Node{ptsNode("a", "zone1"), ptsNode("b", "zone1"), ptsNode("x", "zone2"), ptsNode("y", "zone2")},
			pods:     ptsConcat(ptsPods("a", 4, "foo", ""), ptsPods("b", 2, "foo", ""), ptsPods("x", 1, "foo", ""), ptsPods("y", 3, "foo", "")),
			feasible: []string{"a", "b", "x"},
			want:     map[string]int64{"a": 75, "b": 75, "x": 100},
		},
		{
			// b lacks the hostname label: scored 0 and not a domain,
			// so w = ln(2+2); a = 4·1.386 → 6, x → 1; a = 100(7-6)/6 = 16.
			name: "a feasible node missing the key is ignored",
			pod:  ptsWith(ptsPod("p", "", "foo", ""), host1),
			nodes: []*corev1.Node{ptsNode("a", ""), {ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"n": "b"}}},
				ptsNode("x", ""), ptsNode("y", "")},
			pods:     ptsConcat(ptsPods("a", 4, "foo", ""), ptsPods("b", 2, "foo", ""), ptsPods("x", 1, "foo", ""), ptsPods("y", 3, "foo", "")),
			feasible: []string{"a", "b", "x"},
			want:     map[string]int64{"a": 16, "b": 0, "x": 100},
		},
		{
			// zone(foo): zone1 = 2, zone2 = 1, w = ln 4; host(bar):
			// a0 b1 x0 y1, w = ln 6. Raw a=2.77→3, b=4.56→5, x=1.39→1,
			// y=3.18→3; a = 100(6-3)/5 = 60, b = 20, x = 100, y = 60.
			name: "zone and hostname constraints with different selectors",
			pod: ptsWith(ptsPod("p", "", "foo", "", "bar", ""),
				ptsSpread(1, ptsZone, corev1.ScheduleAnyway, "foo"),
				ptsSpread(1, corev1.LabelHostname, corev1.ScheduleAnyway, "bar")),
			nodes: []*corev1.Node{ptsNode("a", "zone1"), ptsNode("b", "zone1"), ptsNode("x", "zone2"), ptsNode("y", "zone2")},
			pods: ptsConcat(ptsPods("a", 1, "foo", ""), ptsPods("b", 1, "foo", "", "bar", ""),
				ptsPods("y", 1, "foo", ""), ptsPods("y", 1, "bar", "")),
			want: map[string]int64{"a": 60, "b": 20, "x": 100, "y": 60},
		},
		{
			// a counts 1 (the other namespace does not), b 2:
			// w = ln 4; a = 1.39→1, b = 2.77→3; a = 100, b = 100(4-3)/3 = 33.
			name:  "pods of other namespaces do not count",
			pod:   ptsWith(ptsPod("p", "", "foo", ""), host1),
			nodes: hosts("a", "b"),
			pods: ptsConcat(ptsPods("a", 1, "foo", ""), ptsPods("b", 2, "foo", ""),
				func() []*corev1.Pod { p := ptsPod("o", "a", "foo", ""); p.Namespace = "other"; return []*corev1.Pod{p} }()),
			want: map[string]int64{"a": 100, "b": 33},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ptsSnapshot(tc.nodes, tc.pods)
			pl := ptsNew(t, snap, nil)
			feasible := tc.feasible
			if feasible == nil {
				for _, n := range tc.nodes {
					feasible = append(feasible, n.Name)
				}
			}
			got := ptsScoreAll(t, pl, snap, feasible, tc.pod)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func ptsOwnedBy(p *corev1.Pod, kind, name string) *corev1.Pod {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, Controller: ptr.To(true)}}
	return p
}

// TestPodTopologySpreadSystemDefaults: a pod without constraints spreads
// with the System defaults (hostname maxSkew 3, zone maxSkew 5) among the
// pods its ReplicaSet selects.
func TestPodTopologySpreadSystemDefaults(t *testing.T) {
	zoneKey := corev1.LabelTopologyZone
	node := func(name, zone string) *corev1.Node {
		n := ptsNode(name, "")
		if zone != "" {
			n.Labels[zoneKey] = zone
		}
		return n
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	existing := ptsConcat(ptsPods("n1", 2, "app", "web"), ptsPods("n3", 1, "app", "web"), ptsPods("n2", 3, "app", "db"))
	tests := []struct {
		name     string
		pod      *corev1.Pod
		nodes    []*corev1.Node
		objs     []runtime.Object
		wantSkip bool
		want     map[string]int64
	}{
		{
			// hostname w = ln 5 = 1.609, zone w = ln 4 = 1.386;
			// zoneA (n1, n2) = 2, zoneB (n3) = 1.
			// n1 = 2·1.609+2 + 2·1.386+4 = 11.99 → 12
			// n2 = 0+2 + 2.77+4 = 8.77 → 9;  n3 = 1.61+2 + 1.39+4 = 9.0 → 9
			// n1 = 100(21-12)/12 = 75; n2 = n3 = 100.
			name:  "pod owned by a ReplicaSet",
			pod:   ptsOwnedBy(ptsPod("p", "", "app", "web"), "ReplicaSet", "web"),
			nodes: []*corev1.Node{node("n1", "A"), node("n2", "A"), node("n3", "B")},
			objs:  []runtime.Object{rs},
			want:  map[string]int64{"n1": 75, "n2": 100, "n3": 100},
		},
		{
			// n4 has no zone: with System defaults it is still scored (by
			// hostname) and lands in a "" zone domain: hostname w = ln 6,
			// zone w = ln 5 (A, B, "").
			// n1 = 3.58+2 + 3.22+4 = 12.8 → 13; n2 = 2 + 3.22+4 → 9;
			// n3 = 1.79+2 + 1.61+4 = 9.4 → 9; n4 = 0+2 → 2.
			// n1 = 100(15-13)/13 = 15, n2 = n3 = 600/13 = 46, n4 = 100.
			name:  "a node without a zone label still spreads by hostname",
			pod:   ptsOwnedBy(ptsPod("p", "", "app", "web"), "ReplicaSet", "web"),
			nodes: []*corev1.Node{node("n1", "A"), node("n2", "A"), node("n3", "B"), node("n4", "")},
			objs:  []runtime.Object{rs},
			want:  map[string]int64{"n1": 15, "n2": 46, "n3": 46, "n4": 100},
		},
		{
			name:  "a Service selecting the pod gives the same selector",
			pod:   ptsPod("p", "", "app", "web"),
			nodes: []*corev1.Node{node("n1", "A"), node("n2", "A"), node("n3", "B")},
			objs: []runtime.Object{&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}},
			}},
			want: map[string]int64{"n1": 75, "n2": 100, "n3": 100},
		},
		{
			name:     "a pod without owner or Service has no default constraints",
			pod:      ptsPod("p", "", "app", "web"),
			nodes:    []*corev1.Node{node("n1", "A")},
			objs:     []runtime.Object{rs},
			wantSkip: true,
		},
		{
			name:     "an owner that is not in the cache gives no selector",
			pod:      ptsOwnedBy(ptsPod("p", "", "app", "web"), "ReplicaSet", "gone"),
			nodes:    []*corev1.Node{node("n1", "A")},
			wantSkip: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			have := map[string]bool{}
			for _, n := range tc.nodes {
				have[n.Name] = true
			}
			for _, p := range existing {
				if have[p.Spec.NodeName] {
					pods = append(pods, p)
				}
			}
			snap := ptsSnapshot(tc.nodes, pods)
			pl := ptsNew(t, snap, nil, tc.objs...)
			if tc.wantSkip {
				if s := pl.PreScore(context.Background(), framework.NewCycleState(), tc.pod, snap.NodeInfoList); !s.IsSkip() {
					t.Fatalf("want Skip, got %v", s)
				}
				return
			}
			if _, s := pl.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, snap.NodeInfoList); !s.IsSkip() {
				t.Errorf("System defaults are ScheduleAnyway; PreFilter must Skip, got %v", s)
			}
			var names []string
			for _, n := range tc.nodes {
				names = append(names, n.Name)
			}
			if got := ptsScoreAll(t, pl, snap, names, tc.pod); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPodTopologySpreadListDefaults: List defaulting with a DoNotSchedule
// default filters pods of a ReplicaSet.
func TestPodTopologySpreadListDefaults(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	nodes := []*corev1.Node{ptsNode("a1", "A"), ptsNode("b1", "B")}
	snap := ptsSnapshot(nodes, ptsPods("a1", 1, "app", "web"))
	args := &configv1.PodTopologySpreadArgs{
		DefaultingType:     configv1.ListDefaulting,
		DefaultConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: ptsZone, WhenUnsatisfiable: corev1.DoNotSchedule}},
	}
	pl := ptsNew(t, snap, args, rs)
	pod := ptsOwnedBy(ptsPod("p", "", "app", "web"), "ReplicaSet", "web")
	got, _ := ptsFilterAll(t, pl, snap, pod)
	if want := map[string]string{"a1": ptsSkewFail, "b1": ""}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestNewPodTopologySpreadArgs(t *testing.T) {
	c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: ptsZone, WhenUnsatisfiable: corev1.DoNotSchedule}
	tests := []struct {
		name string
		args runtime.Object
		ok   bool
	}{
		{name: "nil is System", args: nil, ok: true},
		{name: "empty is System", args: &configv1.PodTopologySpreadArgs{}, ok: true},
		{name: "List without constraints", args: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting}, ok: true},
		{name: "List with a constraint", args: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting, DefaultConstraints: []corev1.TopologySpreadConstraint{c}}, ok: true},
		{name: "System with constraints", args: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.SystemDefaulting, DefaultConstraints: []corev1.TopologySpreadConstraint{c}}},
		{name: "unknown defaulting type", args: &configv1.PodTopologySpreadArgs{DefaultingType: "Zones"}},
		{
			name: "a default constraint with a selector",
			args: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting, DefaultConstraints: []corev1.TopologySpreadConstraint{func() corev1.TopologySpreadConstraint {
				d := c
				d.LabelSelector = &metav1.LabelSelector{}
				return d
			}()}},
		},
		{name: "duplicate default constraints", args: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting, DefaultConstraints: []corev1.TopologySpreadConstraint{c, c}}},
		{name: "wrong args type", args: &configv1.NodeAffinityArgs{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPodTopologySpread(context.Background(), tc.args, newTestHandle(framework.NewEmptySnapshot()))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestPodTopologySpreadQueueingHints(t *testing.T) {
	snap := framework.NewEmptySnapshot()
	pl := ptsNew(t, snap, nil)
	pod := ptsWith(ptsPod("p", "", "foo", ""), func() corev1.TopologySpreadConstraint {
		c := ptsSpread(1, ptsZone, corev1.DoNotSchedule, "foo")
		c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
		return c
	}())
	tainted := ptsNode("n", "A")
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	otherNS := ptsPod("q", "n", "foo", "")
	otherNS.Namespace = "other"
	withToleration := ptsWith(ptsPod("p", "", "foo", ""), pod.Spec.TopologySpreadConstraints...)
	withToleration.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}

	tests := []struct {
		name     string
		fn       framework.QueueingHintFn
		old, new interface{}
		want     framework.QueueingHint
	}{
		{name: "matching pod assigned", fn: pl.ptsHintPod, new: ptsPod("q", "n", "foo", ""), want: framework.Queue},
		{name: "non-matching pod assigned", fn: pl.ptsHintPod, new: ptsPod("q", "n", "bar", ""), want: framework.QueueSkip},
		{name: "unassigned pod", fn: pl.ptsHintPod, new: ptsPod("q", "", "foo", ""), want: framework.QueueSkip},
		{name: "pod of another namespace", fn: pl.ptsHintPod, new: otherNS, want: framework.QueueSkip},
		{name: "matching pod deleted", fn: pl.ptsHintPod, old: ptsPod("q", "n", "foo", ""), want: framework.Queue},
		{name: "label change into the selector", fn: pl.ptsHintPod, old: ptsPod("q", "n", "bar", ""), new: ptsPod("q", "n", "foo", ""), want: framework.Queue},
		{name: "irrelevant label change", fn: pl.ptsHintPod, old: ptsPod("q", "n", "foo", ""), new: ptsPod("q", "n", "foo", "", "x", "y"), want: framework.QueueSkip},
		{name: "the pod gained a toleration with taints Honor", fn: pl.ptsHintPod, old: pod, new: withToleration, want: framework.Queue},
		{name: "node with the key added", fn: pl.ptsHintNode, new: ptsNode("n", "A"), want: framework.Queue},
		{name: "node without the key added", fn: pl.ptsHintNode, new: ptsNode("n", ""), want: framework.QueueSkip},
		{name: "node got the key", fn: pl.ptsHintNode, old: ptsNode("n", ""), new: ptsNode("n", "A"), want: framework.Queue},
		{name: "node moved zone", fn: pl.ptsHintNode, old: ptsNode("n", "A"), new: ptsNode("n", "B"), want: framework.Queue},
		{name: "node taints changed", fn: pl.ptsHintNode, old: tainted, new: ptsNode("n", "A"), want: framework.Queue},
		{name: "unrelated node label", fn: pl.ptsHintNode, old: ptsNode("n", "A"), new: ptsNode("n", "A", "x", "y"), want: framework.QueueSkip},
		{name: "node with the key deleted", fn: pl.ptsHintNode, old: ptsNode("n", "A"), want: framework.Queue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(pod, tc.old, tc.new)
			if err != nil || got != tc.want {
				t.Fatalf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
