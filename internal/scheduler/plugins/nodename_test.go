package plugins

import (
	"context"
	"testing"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func TestNodeName(t *testing.T) {
	tests := []struct {
		name     string
		podNode  string
		node     string
		fits     bool
		narrowed bool
	}{
		{name: "no node name fits anywhere", node: "a", fits: true},
		{name: "the named node", podNode: "a", node: "a", fits: true, narrowed: true},
		{name: "another node", podNode: "a", node: "b", narrowed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, _ := NewNodeName(context.Background(), nil, nil)
			p := pl.(*NodeName)
			pod := fitPod(nil)
			pod.Spec.NodeName = tc.podNode
			res, s := p.PreFilter(context.Background(), framework.NewCycleState(), pod, nil)
			// Without a node name Filter has nothing to check: Skip.
			if s.IsSkip() != (tc.podNode == "") || (!s.IsSkip() && !s.IsSuccess()) {
				t.Fatalf("PreFilter status = %v, want skip=%v", s, tc.podNode == "")
			}
			if got := res != nil; got != tc.narrowed {
				t.Fatalf("PreFilterResult = %v, want narrowed=%v", res, tc.narrowed)
			}
			if res != nil && (res.NodeNames.Len() != 1 || !res.NodeNames.Has(tc.podNode)) {
				t.Errorf("NodeNames = %v, want only %q", res.NodeNames, tc.podNode)
			}
			got := p.Filter(context.Background(), framework.NewCycleState(), pod, fitNodeInfo(fitNode(tc.node, nil)))
			if tc.fits != got.IsSuccess() {
				t.Fatalf("Filter = %v, want fits=%v", got, tc.fits)
			}
			if !tc.fits && (got.Code() != framework.UnschedulableAndUnresolvable || got.Message() != NodeNameReason) {
				t.Errorf("Filter = %v, want UnschedulableAndUnresolvable %q", got, NodeNameReason)
			}
			hint, _ := p.hintNodeAdded(pod, nil, fitNode(tc.node, nil))
			if want := map[bool]framework.QueueingHint{true: framework.Queue, false: framework.QueueSkip}[tc.fits]; hint != want {
				t.Errorf("hint for node %q added = %v, want %v", tc.node, hint, want)
			}
		})
	}
}
