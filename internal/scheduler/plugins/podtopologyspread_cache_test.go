package plugins

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// TestPodTopologySpreadCacheMatchesRecount mutates a cluster at random
// (pods come and go, nodes are relabeled, tainted, added, removed and
// reordered) and checks after every step that a plugin reusing its counts
// across cycles decides exactly as one counting from scratch.
func TestPodTopologySpreadCacheMatchesRecount(t *testing.T) {
	// Few nodes empty zones and make per-node minimums move; many take
	// the parallel recount path.
	for _, nodes := range []int{8, 100} {
		t.Run(fmt.Sprintf("%d nodes", nodes), func(t *testing.T) { ptsCacheScenario(t, nodes) })
	}
}

func ptsCacheScenario(t *testing.T, initialNodes int) {
	rng := rand.New(rand.NewSource(int64(initialNodes)))
	zones := []string{"A", "B", "C", "D"}
	newNode := func(i int) *framework.NodeInfo {
		name := fmt.Sprintf("n%d", i)
		l := map[string]string{corev1.LabelHostname: name, "pool": "main"}
		if rng.Intn(8) > 0 {
			l[ptsZone] = zones[rng.Intn(len(zones))]
		}
		if rng.Intn(5) == 0 {
			l["pool"] = "other"
		}
		return naNodeInfo(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}})
	}
	podSeq := 0
	newPod := func(node string) *corev1.Pod {
		podSeq++
		p := ptsPod(fmt.Sprintf("e%d", podSeq), node, "app", []string{"web", "db"}[rng.Intn(2)])
		if rng.Intn(6) == 0 {
			p.Namespace = "other"
		}
		if rng.Intn(10) == 0 {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}

	var list []*framework.NodeInfo
	for i := 0; i < initialNodes; i++ {
		ni := newNode(i)
		for k := rng.Intn(4); k > 0; k-- {
			ni.AddPod(framework.NewPodInfo(newPod(ni.Name())))
		}
		list = append(list, ni)
	}
	nextNode := len(list)

	honor := ptr.To(corev1.NodeInclusionPolicyHonor)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: types.UID("p"), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": "main"},
			Tolerations:  []corev1.Toleration{{Key: "soft", Operator: corev1.TolerationOpExists}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
				{MaxSkew: 1, TopologyKey: ptsZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel, NodeTaintsPolicy: honor},
				{MaxSkew: 2, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel, MinDomains: ptr.To[int32](3)},
				{MaxSkew: 1, TopologyKey: ptsZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel},
				{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel, NodeTaintsPolicy: honor},
			},
		},
	}

	h := newTestHandle(framework.NewSnapshot(list...))
	p, err := NewPodTopologySpread(context.Background(), nil, h)
	if err != nil {
		t.Fatal(err)
	}
	h.start(t)
	warm := p.(*PodTopologySpread)

	decide := func(pl *PodTopologySpread, snap *framework.Snapshot) string {
		ctx := context.Background()
		state := framework.NewCycleState()
		var out string
		if _, s := pl.PreFilter(ctx, state, pod, snap.NodeInfoList); !s.IsSuccess() {
			t.Fatalf("PreFilter: %v", s)
		}
		var feasible []*framework.NodeInfo
		for _, ni := range snap.NodeInfoList {
			s := pl.Filter(ctx, state, pod, ni)
			out += fmt.Sprintf("%s:%v ", ni.Name(), s.Code())
			if s.IsSuccess() || rng.Intn(3) == 0 {
				feasible = append(feasible, ni)
			}
		}
		if len(feasible) == 0 {
			return out
		}
		if s := pl.PreScore(ctx, state, pod, feasible); !s.IsSuccess() {
			t.Fatalf("PreScore: %v", s)
		}
		for _, ni := range feasible {
			v, s := pl.Score(ctx, state, pod, ni)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			out += fmt.Sprintf("%s=%d ", ni.Name(), v)
		}
		return out
	}

	for step := 0; step < 300; step++ {
		switch op := rng.Intn(8); op {
		case 0, 1: // a pod lands
			ni := list[rng.Intn(len(list))]
			ni.AddPod(framework.NewPodInfo(newPod(ni.Name())))
		case 2: // a pod leaves
			ni := list[rng.Intn(len(list))]
			if len(ni.Pods) > 0 {
				if err := ni.RemovePod(ni.Pods[rng.Intn(len(ni.Pods))].Pod); err != nil {
					t.Fatal(err)
				}
			}
		case 3: // relabel: move zone or lose it
			ni := list[rng.Intn(len(list))]
			n := ni.Node().DeepCopy()
			if rng.Intn(3) == 0 {
				delete(n.Labels, ptsZone)
			} else {
				n.Labels[ptsZone] = zones[rng.Intn(len(zones))]
			}
			ni.SetNode(n)
		case 4: // taint or untaint
			ni := list[rng.Intn(len(list))]
			n := ni.Node().DeepCopy()
			if len(n.Spec.Taints) > 0 {
				n.Spec.Taints = nil
			} else {
				key := []string{"soft", "hard"}[rng.Intn(2)]
				n.Spec.Taints = []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoSchedule}}
			}
			ni.SetNode(n)
		case 5: // a node leaves
			if len(list) > initialNodes/2 {
				i := rng.Intn(len(list))
				list = append(list[:i:i], list[i+1:]...)
			}
		case 6: // a node joins
			list = append(list, newNode(nextNode))
			nextNode++
		case 7: // the list is reordered
			rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
		}
		snap := framework.NewSnapshot(list...)
		h.snapshot = snap
		fresh := &PodTopologySpread{handle: h, parallelizer: warm.parallelizer, defaults: warm.defaults, systemDefaulted: warm.systemDefaulted,
			services: warm.services, controllers: warm.controllers, replicaSets: warm.replicaSets, statefulSets: warm.statefulSets}
		seed := rng.Int63()
		rng.Seed(seed)
		got := decide(warm, snap)
		rng.Seed(seed)
		want := decide(fresh, snap)
		if got != want {
			t.Fatalf("step %d: cached and recounted decisions differ\ncached:    %s\nrecounted: %s", step, got, want)
		}
	}
}
