package plugins

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// ptsBenchCluster builds nodes spread over 3 zones with pods per node
// existing pods, alternating between app=web and app=db.
func ptsBenchCluster(nodes, podsPerNode int) *framework.Snapshot {
	infos := make([]*framework.NodeInfo, nodes)
	for i := range infos {
		name := fmt.Sprintf("node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname:      name,
			corev1.LabelTopologyZone:  fmt.Sprintf("zone-%d", i%3),
			"node.kubernetes.io/pool": "default",
		}}}
		ni := framework.NewNodeInfo()
		ni.SetNode(node)
		for j := 0; j < podsPerNode; j++ {
			app := "web"
			if (i+j)%2 == 1 {
				app = "db"
			}
			pname := fmt.Sprintf("%s-%s-%d", name, app, j)
			ni.AddPod(framework.NewPodInfo(&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: pname, Namespace: "default", UID: types.UID(pname), Labels: map[string]string{"app": app, "pod-template-hash": "abc"}},
				Spec:       corev1.PodSpec{NodeName: name},
			}))
		}
		infos[i] = ni
	}
	return framework.NewSnapshot(infos...)
}

// ptsCPUTime is the process's user+system CPU time. The benchmarks report
// CPU per op besides wall time: on a shared machine wall time mostly
// measures the neighbours, and CPU time is what bounds pods/s.
func ptsCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ptsBench runs fn b.N times and reports CPU ns per op.
func ptsBench(b *testing.B, fn func(i int)) {
	b.ReportAllocs()
	b.ResetTimer()
	start := ptsCPUTime()
	for i := 0; i < b.N; i++ {
		fn(i)
	}
	b.ReportMetric(float64(ptsCPUTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkPodTopologySpread: 5000 nodes in 3 zones, 10k existing pods,
// a pod with one zone constraint (maxSkew 1, matchLabelKeys) of each kind.
// PreFilter/PreScore ops are one pod's precomputation over all nodes,
// either from nothing (cold) or after one node changed (the steady state
// of scheduling replicas); Filter/Score ops are one node.
func BenchmarkPodTopologySpread(b *testing.B) {
	snap := ptsBenchCluster(5000, 2)
	pl := ptsNew(b, snap, nil)
	ctx := context.Background()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	pod := func(action corev1.UnsatisfiableConstraintAction) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p", Labels: map[string]string{"app": "web", "pod-template-hash": "abc"}},
			Spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: action,
				LabelSelector: sel, MatchLabelKeys: []string{"pod-template-hash"},
			}}},
		}
	}
	hard, soft := pod(corev1.DoNotSchedule), pod(corev1.ScheduleAnyway)
	nodes := snap.NodeInfoList
	// As upstream's percentageOfNodesToScore at 5,000 nodes (10%), the
	// scheduler stops filtering after 500 feasible nodes.
	feasible := nodes[:500]

	// churn changes one node per op, as a cycle that assumed a pod does:
	// the cache recounts that node only.
	extra := framework.NewPodInfo(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "extra", Namespace: "default", UID: "extra", Labels: map[string]string{"app": "web", "pod-template-hash": "abc"}}})
	churn := func(i int) {
		ni := nodes[(i/2)%len(nodes)]
		if i%2 == 0 {
			ni.AddPod(extra)
		} else if err := ni.RemovePod(extra.Pod); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("PreFilter/cold", func(b *testing.B) {
		ptsBench(b, func(int) {
			pl.counter = ptsCounter{}
			if _, s := pl.PreFilter(ctx, framework.NewCycleState(), hard, nodes); !s.IsSuccess() {
				b.Fatal(s)
			}
		})
	})
	b.Run("PreFilter/one-node-changed", func(b *testing.B) {
		ptsBench(b, func(i int) {
			churn(i)
			if _, s := pl.PreFilter(ctx, framework.NewCycleState(), hard, nodes); !s.IsSuccess() {
				b.Fatal(s)
			}
		})
	})
	byHost := hard.DeepCopy()
	byHost.Spec.TopologySpreadConstraints[0].TopologyKey = corev1.LabelHostname
	b.Run("PreFilter/hostname-one-node-changed", func(b *testing.B) {
		ptsBench(b, func(i int) {
			churn(i)
			if _, s := pl.PreFilter(ctx, framework.NewCycleState(), byHost, nodes); !s.IsSuccess() {
				b.Fatal(s)
			}
		})
	})
	b.Run("Filter", func(b *testing.B) {
		state := framework.NewCycleState()
		if _, s := pl.PreFilter(ctx, state, hard, nodes); !s.IsSuccess() {
			b.Fatal(s)
		}
		ptsBench(b, func(i int) { pl.Filter(ctx, state, hard, nodes[i%len(nodes)]) })
	})
	b.Run("PreScore/cold", func(b *testing.B) {
		ptsBench(b, func(int) {
			pl.counter = ptsCounter{}
			if s := pl.PreScore(ctx, framework.NewCycleState(), soft, feasible); !s.IsSuccess() {
				b.Fatal(s)
			}
		})
	})
	b.Run("PreScore/one-node-changed", func(b *testing.B) {
		ptsBench(b, func(i int) {
			churn(i)
			if s := pl.PreScore(ctx, framework.NewCycleState(), soft, feasible); !s.IsSuccess() {
				b.Fatal(s)
			}
		})
	})
	// The System default hostname constraint at density scale: every op
	// is one cycle's PreScore and Score of the 500 feasible nodes, after
	// one node changed; Score counts each node's own matching pods.
	softHost := soft.DeepCopy()
	softHost.Spec.TopologySpreadConstraints[0].TopologyKey = corev1.LabelHostname
	softHost.Spec.TopologySpreadConstraints[0].MaxSkew = 3
	b.Run("PreScore+Score/hostname-500-feasible", func(b *testing.B) {
		ptsBench(b, func(i int) {
			churn(i)
			state := framework.NewCycleState()
			if s := pl.PreScore(ctx, state, softHost, feasible); !s.IsSuccess() {
				b.Fatal(s)
			}
			for _, ni := range feasible {
				if _, s := pl.Score(ctx, state, softHost, ni); !s.IsSuccess() {
					b.Fatal(s)
				}
			}
		})
	})
	b.Run("Score", func(b *testing.B) {
		state := framework.NewCycleState()
		if s := pl.PreScore(ctx, state, soft, feasible); !s.IsSuccess() {
			b.Fatal(s)
		}
		ptsBench(b, func(i int) {
			if _, s := pl.Score(ctx, state, soft, nodes[i%len(nodes)]); !s.IsSuccess() {
				b.Fatal(s)
			}
		})
	})
}
