package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// TestCacheSnapshotChangeLog checks the contract plugins rely on to skip
// unchanged nodes: whenever the snapshot answers ChangedSince(v), every
// NodeInfoList position it does not name holds the NodeInfo it held at v;
// and the usual change (pods assumed on nodes) is answered.
func TestCacheSnapshotChangeLog(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 3))
			c := NewCache()
			numNodes := 0
			addNode := func() {
				c.AddNode(cacheTestNode(fmt.Sprintf("n%d", numNodes), fmt.Sprintf("z%d", numNodes%3)))
				numNodes++
			}
			for range 10 {
				addNode()
			}
			s := framework.NewEmptySnapshot()
			type seen struct {
				v    framework.ListVersion
				list []*framework.NodeInfo
			}
			var history []seen
			answered, pod := 0, 0
			for step := range 200 {
				switch op := r.IntN(10); {
				case op == 0:
					addNode()
				case op < 8:
					pod++
					p := cacheTestPod(fmt.Sprintf("p%d", pod), "", 10)
					if err := c.AssumePod(cacheAssumeCopy(p, fmt.Sprintf("n%d", r.IntN(numNodes)))); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.UpdateSnapshot(s); err != nil {
					t.Fatal(err)
				}
				history = append(history, seen{s.ListVersion(), slices.Clone(s.NodeInfoList)})
				for _, h := range history[max(0, len(history)-12):] {
					pos, ok := s.ChangedSince(h.v, nil)
					if !ok {
						continue
					}
					answered++
					if len(h.list) != len(s.NodeInfoList) {
						t.Fatalf("step %d: answered for a list of %d nodes, now %d", step, len(h.list), len(s.NodeInfoList))
					}
					for i, ni := range s.NodeInfoList {
						if ni != h.list[i] && !slices.Contains(pos, int32(i)) {
							t.Fatalf("step %d: position %d (%s) changed but not logged (logged %v)", step, i, ni.Name(), pos)
						}
					}
				}
			}
			if answered < 100 {
				t.Fatalf("only %d questions answered; the log is not used", answered)
			}
		})
	}
}
