package plugins

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
