package plugins

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// BenchmarkInterPodAntiAffinity: 5,000 nodes in 10 zones, 10,000
// existing pods of 100 apps, each pod anti-affine by hostname to its own
// app; the incoming pod is one more pod of app-0.
//
//   - PreFilter: one cycle's PreFilter after the previous cycle placed a
//     pod (one NodeInfo changed), as in a steady stream of pods;
//   - FilterPerNode: one Filter call (ns/op is per node);
//   - Cycle: PreFilter plus Filter over all 5,000 nodes;
//   - ColdStart: PreFilter of a fresh plugin (index built from scratch);
//   - FullScanPreFilter: upstream's PreFilter (every existing pod against
//     the incoming pod, no index), single-threaded, for comparison.
func BenchmarkInterPodAntiAffinity(b *testing.B) {
	const nodes, podsPerNode, apps = 5000, 2, 100
	anti := func(p *corev1.Pod, app string) *corev1.Pod {
		return ipaTWithRequired(p, nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, map[string]string{"app": app})})
	}
	var nis []*framework.NodeInfo
	seq := 0
	for i := 0; i < nodes; i++ {
		ni := framework.NewNodeInfo()
		ni.SetNode(ipaTNode(fmt.Sprintf("node-%d", i), fmt.Sprintf("zone-%d", i%10)))
		for j := 0; j < podsPerNode; j++ {
			app := fmt.Sprintf("app-%d", seq%apps)
			seq++
			ni.AddPod(framework.NewPodInfo(anti(ipaTPod("default", fmt.Sprintf("p-%d", seq), ni.Name(), "app="+app), app)))
		}
		nis = append(nis, ni)
	}
	snap := framework.NewSnapshot(nis...)
	incoming := anti(ipaTPod("default", "incoming", "", "app=app-0"), "app-0")
	ctx := context.Background()

	b.Run("FullScanPreFilter", func(b *testing.B) {
		ref := &ipaTReference{hardWeight: 1}
		for i := 0; i < b.N; i++ {
			ref.counts(incoming, snap)
		}
	})

	b.Run("ColdStart", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			pl, _ := ipaTPlugin(b, snap, nil)
			b.StartTimer()
			if _, st := pl.PreFilter(ctx, framework.NewCycleState(), incoming, snap.NodeInfoList); !st.IsSuccess() {
				b.Fatal(st)
			}
		}
	})

	pl, _ := ipaTPlugin(b, snap, nil)
	extra := framework.NewPodInfo(anti(ipaTPod("default", "extra", "", "app=app-1"), "app-1"))
	b.Run("PreFilter", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			// The previous cycle's pod lands on (or leaves) one node; as
			// the scheduler cache does, the snapshot gets a new clone of
			// that NodeInfo at the same place in its lists.
			k := (i / 2) % nodes
			ni := snap.NodeInfoList[k].Clone()
			if i%2 == 0 {
				ni.AddPod(extra)
			} else if err := ni.RemovePod(extra.Pod); err != nil {
				b.Fatal(err)
			}
			snap.NodeInfoList[k], snap.HavePodsWithAffinityList[k], snap.HavePodsWithRequiredAntiAffinityList[k] = ni, ni, ni
			snap.NodeInfoMap[ni.Name()] = ni
			if _, st := pl.PreFilter(ctx, framework.NewCycleState(), incoming, snap.NodeInfoList); !st.IsSuccess() {
				b.Fatal(st)
			}
		}
	})

	cs := framework.NewCycleState()
	if _, st := pl.PreFilter(ctx, cs, incoming, snap.NodeInfoList); !st.IsSuccess() {
		b.Fatal(st)
	}
	nis = snap.NodeInfoList
	rejected := 0
	for _, ni := range nis {
		if !pl.Filter(ctx, cs, incoming, ni).IsSuccess() {
			rejected++
		}
	}
	if rejected != apps {
		b.Fatalf("%d nodes rejected, want %d (one per app-0 pod)", rejected, apps)
	}
	b.Run("FilterPerNode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			pl.Filter(ctx, cs, incoming, nis[i%nodes])
		}
	})

	b.Run("Cycle", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cs := framework.NewCycleState()
			if _, st := pl.PreFilter(ctx, cs, incoming, snap.NodeInfoList); !st.IsSuccess() {
				b.Fatal(st)
			}
			for _, ni := range nis {
				pl.Filter(ctx, cs, incoming, ni)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	})
}
