package scheduler

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// TestPluginExecutionMetrics: a sampled cycle times plugin calls under
// their plugin and extension point (per-node calls up to a budget); an
// unsampled one records nothing.
func TestPluginExecutionMetrics(t *testing.T) {
	nodes := make([]*framework.NodeInfo, 10)
	for i := range nodes {
		nodes[i] = framework.NewNodeInfo()
		nodes[i].SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	p := &Profile{handle: &handle{parallel: framework.NewParallelizer(1)}}
	p.score = append(p.score, weightedScore{ScorePlugin: &fixedScorer{name: "metered", score: func(int) int64 { return 1 }}, weight: 1})
	observations := func() uint64 {
		var m dto.Metric
		if err := pluginExecDuration.WithLabelValues("metered", "Score", "Success").(prometheus.Histogram).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}

	state := framework.NewCycleState()
	state.SkipScore = map[string]bool{}
	if _, st := p.runScore(context.Background(), state, pod, nodes); !st.IsSuccess() {
		t.Fatal(st)
	}
	if n := observations(); n != 0 {
		t.Fatalf("unsampled cycle recorded %d calls", n)
	}
	state = framework.NewCycleState()
	state.SkipScore = map[string]bool{}
	state.RecordPluginMetrics = true
	if _, st := p.runScore(context.Background(), state, pod, nodes); !st.IsSuccess() {
		t.Fatal(st)
	}
	if n := observations(); n != uint64(len(nodes)) {
		t.Fatalf("sampled cycle recorded %d calls, want %d (one per node)", n, len(nodes))
	}

	// Per-node calls past perNodeTimedCalls are not timed.
	many := make([]*framework.NodeInfo, 3*perNodeTimedCalls)
	for i := range many {
		many[i] = nodes[i%len(nodes)]
	}
	before := observations()
	state = framework.NewCycleState()
	state.SkipScore = map[string]bool{}
	state.RecordPluginMetrics = true
	if _, st := p.runScore(context.Background(), state, pod, many); !st.IsSuccess() {
		t.Fatal(st)
	}
	if n := observations() - before; n != perNodeTimedCalls {
		t.Fatalf("sampled cycle over %d nodes timed %d calls, want %d", len(many), n, perNodeTimedCalls)
	}
}
