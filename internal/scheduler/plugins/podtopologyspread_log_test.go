package plugins

import (
	"fmt"
	"maps"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// TestPodTopologySpreadFollowsSnapshotLog: with a snapshot that logs its
// changes (as the scheduler cache's does), the counter recounts only the
// logged positions. Its Filter decisions and Scores must stay those of a
// plugin counting from scratch, step after step, as NodeInfos are
// replaced by changed clones (pods added and removed) and the list is
// rebuilt now and then.
func TestPodTopologySpreadFollowsSnapshotLog(t *testing.T) {
	hard := ptsWith(ptsPod("p", "", "foo", ""), ptsSpread(1, ptsZone, corev1.DoNotSchedule, "foo"))
	soft := ptsWith(ptsPod("q", "", "foo", ""),
		ptsSpread(1, ptsZone, corev1.ScheduleAnyway, "foo"), ptsSpread(2, corev1.LabelHostname, corev1.ScheduleAnyway, "foo"))
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			var nodes []*corev1.Node
			var pods []*corev1.Pod
			for i := range 12 {
				n := fmt.Sprintf("n%d", i)
				nodes = append(nodes, ptsNode(n, fmt.Sprintf("z%d", i%3)))
				pods = append(pods, ptsPods(n, r.Intn(3), "foo", "")...)
			}
			snap := ptsSnapshot(nodes, pods)
			snap.ListRebuilt()
			warm := ptsNew(t, snap, nil)
			next := 0
			for step := range 40 {
				switch op := r.Intn(6); {
				case op == 0:
					snap.ListRebuilt()
				default:
					var changed []int32
					for range 1 + r.Intn(2) {
						p := r.Intn(len(snap.NodeInfoList))
						c := snap.NodeInfoList[p].Clone()
						if len(c.Pods) > 0 && r.Intn(2) == 0 {
							if err := c.RemovePod(c.Pods[r.Intn(len(c.Pods))].Pod); err != nil {
								t.Fatal(err)
							}
						} else {
							next++
							c.AddPod(framework.NewPodInfo(ptsPod(fmt.Sprintf("new-%d", next), c.Name(), "foo", "")))
						}
						snap.NodeInfoList[p], snap.NodeInfoMap[c.Name()] = c, c
						changed = append(changed, int32(p))
					}
					snap.ListPatched(changed)
				}
				cold := ptsNew(t, snap, nil)
				got, _ := ptsFilterAll(t, warm, snap, hard)
				want, _ := ptsFilterAll(t, cold, snap, hard)
				if !maps.Equal(got, want) {
					t.Fatalf("step %d: Filter with the log %v, from scratch %v", step, got, want)
				}
				var names []string
				for _, ni := range snap.NodeInfoList {
					names = append(names, ni.Name())
				}
				if g, w := ptsScoreAll(t, warm, snap, names, soft), ptsScoreAll(t, cold, snap, names, soft); !maps.Equal(g, w) {
					t.Fatalf("step %d: Score with the log %v, from scratch %v", step, g, w)
				}
			}
		})
	}
}
