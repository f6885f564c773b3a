package plugins

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// TestInterPodAffinityTableDiff checks ipaTable.diff against a model on
// random list edits (changed NodeInfos, inserted, removed and reordered
// nodes): it must report exactly the nodes whose NodeInfo differs from
// the one applied last, and exactly the nodes that left the list.
func TestInterPodAffinityTableDiff(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			infos := map[string]*framework.NodeInfo{}
			newInfo := func(name string) *framework.NodeInfo {
				ni := framework.NewNodeInfo()
				ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
				infos[name] = ni
				return ni
			}
			var names []string
			for i := range 30 {
				names = append(names, fmt.Sprintf("n%02d", i))
			}
			var list []*framework.NodeInfo
			for _, n := range names[:20] {
				list = append(list, newInfo(n))
			}
			var tab ipaTable
			type version struct {
				ni  *framework.NodeInfo
				gen int64
			}
			applied := map[string]version{} // the model
			for step := range 60 {
				changed, dropped := tab.diff(list)
				var gotChanged, wantChanged, gotDropped, wantDropped []string
				for _, c := range changed {
					gotChanged = append(gotChanged, c.e.name)
					c.e.ni, c.e.gen = c.ni, c.ni.Generation
				}
				for _, e := range dropped {
					gotDropped = append(gotDropped, e.name)
				}
				inList := map[string]bool{}
				for _, ni := range list {
					inList[ni.Name()] = true
					v := version{ni, ni.Generation}
					if applied[ni.Name()] != v {
						wantChanged = append(wantChanged, ni.Name())
					}
					applied[ni.Name()] = v
				}
				for n := range applied {
					if !inList[n] {
						wantDropped = append(wantDropped, n)
						delete(applied, n)
					}
				}
				for _, l := range [][]string{gotChanged, wantChanged, gotDropped, wantDropped} {
					sort.Strings(l)
				}
				if !slices.Equal(gotChanged, wantChanged) || !slices.Equal(gotDropped, wantDropped) {
					t.Fatalf("step %d: changed %v, want %v; dropped %v, want %v", step, gotChanged, wantChanged, gotDropped, wantDropped)
				}
				if len(tab.byName) != len(list) {
					t.Fatalf("step %d: table holds %d nodes, list %d", step, len(tab.byName), len(list))
				}
				// Edit the list for the next step.
				next := slices.Clone(list)
				for range r.Intn(4) {
					switch op := r.Intn(5); {
					case op == 0 && len(next) > 0: // a NodeInfo replaced by a changed clone
						i := r.Intn(len(next))
						c := next[i].Clone()
						c.Generation = framework.NextGeneration()
						next[i] = c
					case op == 1 && len(next) > 0: // removed
						i := r.Intn(len(next))
						next = slices.Delete(next, i, i+1)
					case op == 2: // inserted
						var free []string
						for _, n := range names {
							if !slices.ContainsFunc(next, func(ni *framework.NodeInfo) bool { return ni.Name() == n }) {
								free = append(free, n)
							}
						}
						if len(free) > 0 {
							i := r.Intn(len(next) + 1)
							next = slices.Insert(next, i, newInfo(free[r.Intn(len(free))]))
						}
					case op == 3 && len(next) > 1: // two swapped
						i, j := r.Intn(len(next)), r.Intn(len(next))
						next[i], next[j] = next[j], next[i]
					case op == 4 && len(next) > 0: // same NodeInfo, new generation
						next[r.Intn(len(next))].Generation = framework.NextGeneration()
					}
				}
				list = next
			}
		})
	}
}

// TestInterPodAffinityIndexFollowsSnapshotLog is the index-versus-full-scan
// check on a snapshot that logs its changes, as the scheduler cache's
// does: NodeInfos are replaced by changed clones at logged positions, and
// the list is rebuilt when nodes come and go. The index then reads only
// the logged positions of NodeInfoList.
func TestInterPodAffinityIndexFollowsSnapshotLog(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			zones := []string{"z1", "z2", "z3", ""}
			nodeSeq, podSeq := 0, 0
			newNode := func() *framework.NodeInfo {
				nodeSeq++
				ni := framework.NewNodeInfo()
				ni.SetNode(ipaTNode(fmt.Sprintf("n%d", nodeSeq), zones[r.Intn(len(zones))]))
				return ni
			}
			addPod := func(ni *framework.NodeInfo) {
				podSeq++
				ni.AddPod(framework.NewPodInfo(ipaTRandomPod(r, fmt.Sprintf("p%d", podSeq), ni.Name(), 3)))
			}
			var nis []*framework.NodeInfo
			for range 10 {
				ni := newNode()
				for j := r.Intn(4); j > 0; j-- {
					addPod(ni)
				}
				nis = append(nis, ni)
			}
			snap := framework.NewSnapshot(nis...)
			snap.ListRebuilt()
			pl, _ := ipaTPlugin(t, snap, &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ipaTPtr(int32(2))}, ipaTNamespaces...)
			ref := &ipaTReference{nsLabels: map[string]labels.Set{"ns1": {"team": "t1"}, "ns2": {"team": "t2"}}, hardWeight: 2}
			for step := range 60 {
				var patched []int32
				change := func(i int, fn func(c *framework.NodeInfo)) {
					c := snap.NodeInfoList[i].Clone()
					fn(c)
					c.Generation = framework.NextGeneration()
					snap.NodeInfoList[i], snap.NodeInfoMap[c.Name()] = c, c
					patched = append(patched, int32(i))
				}
				rebuilt := false
				switch k := r.Intn(10); {
				case k < 5:
					change(r.Intn(len(snap.NodeInfoList)), addPod)
				case k < 7:
					change(r.Intn(len(snap.NodeInfoList)), func(c *framework.NodeInfo) {
						if len(c.Pods) > 0 {
							if err := c.RemovePod(c.Pods[r.Intn(len(c.Pods))].Pod); err != nil {
								t.Fatal(err)
							}
						}
					})
				case k == 7:
					change(r.Intn(len(snap.NodeInfoList)), func(c *framework.NodeInfo) {
						n := c.Node().DeepCopy()
						if z := zones[r.Intn(len(zones))]; z == "" {
							delete(n.Labels, ipaTZone)
						} else {
							n.Labels[ipaTZone] = z
						}
						c.SetNode(n)
					})
				case k == 8:
					ni := newNode()
					snap.NodeInfoList = append(slices.Clone(snap.NodeInfoList), ni)
					snap.NodeInfoMap[ni.Name()] = ni
					rebuilt = true
				default:
					if len(snap.NodeInfoList) > 3 {
						i := r.Intn(len(snap.NodeInfoList))
						delete(snap.NodeInfoMap, snap.NodeInfoList[i].Name())
						snap.NodeInfoList = slices.Delete(slices.Clone(snap.NodeInfoList), i, i+1)
						rebuilt = true
					}
				}
				if rebuilt {
					snap.ListRebuilt()
				} else {
					snap.ListPatched(patched)
				}
				snap.HavePodsWithAffinityList, snap.HavePodsWithRequiredAntiAffinityList = nil, nil
				for _, ni := range snap.NodeInfoList {
					if len(ni.PodsWithAffinity) > 0 {
						snap.HavePodsWithAffinityList = append(snap.HavePodsWithAffinityList, ni)
					}
					if len(ni.PodsWithRequiredAntiAffinity) > 0 {
						snap.HavePodsWithRequiredAntiAffinityList = append(snap.HavePodsWithRequiredAntiAffinityList, ni)
					}
				}
				for range 4 {
					podSeq++
					pod := ipaTRandomPod(r, fmt.Sprintf("in%d", podSeq), "", 2)
					_, got := ipaTFilterAll(t, pl, snap, pod)
					if want := ref.filter(pod, snap); !slices.Equal(got, want) {
						t.Fatalf("step %d: filter for %s/%s\n got %v\nwant %v", step, pod.Namespace, pod.Name, got, want)
					}
					skip, raw, _ := ipaTScores(t, pl, snap, pod)
					wantRaw, contributed := ref.score(pod, snap)
					if skip == contributed || (!skip && fmt.Sprint(raw) != fmt.Sprint(wantRaw)) {
						t.Fatalf("step %d: score skip=%v raw=%v, want contributed=%v raw=%v", step, skip, raw, contributed, wantRaw)
					}
				}
			}
		})
	}
}
