package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSchedulerScenarios runs basic and preemption at toy sizes in both
// modes: the real scheduler over the fake clientset, and over a real
// embedded API server. Every measured pod must be bound, no node
// overcommitted, preemption must have deleted a victim per preemptor, and
// the JSON line must carry the documented fields.
func TestSchedulerScenarios(t *testing.T) {
	for _, tc := range []struct{ scenario, mode string }{
		{SchedBasic, ModeAlgorithm},
		{SchedPreemption, ModeAlgorithm},
		{SchedBasic, ModeE2E},
		{SchedPreemption, ModeE2E},
	} {
		t.Run(tc.scenario+"/"+tc.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := RunScheduler(ctx, SchedulerConfig{
				Scenarios: []string{tc.scenario}, Modes: []string{tc.mode}, Nodes: []int{100}, Pods: 200,
				RunTimeout: 90 * time.Second, Clients: 8,
			})
			if err != nil {
				t.Fatal(err)
			}
			if f := res.Failures(); len(f) > 0 {
				t.Fatalf("failures: %v", f)
			}
			if len(res.Runs) != 1 {
				t.Fatalf("runs = %d, want 1", len(res.Runs))
			}
			run := res.Runs[0]
			if run.Bound != 200 || run.Pods != 200 || run.Nodes != 100 {
				t.Errorf("bound %d of %d pods on %d nodes, want 200 of 200 on 100", run.Bound, run.Pods, run.Nodes)
			}
			if run.Violations != 0 || !run.OK {
				t.Errorf("violations %d, ok %v: %v", run.Violations, run.OK, run.Failures)
			}
			if run.PodsPerSecond <= 0 || run.SchedulingMS.Count == 0 || run.SchedulingMS.P99 < run.SchedulingMS.P50 {
				t.Errorf("implausible figures: %.1f pods/s, scheduling %+v", run.PodsPerSecond, run.SchedulingMS)
			}
			if tc.scenario == SchedPreemption {
				// Every node was full: each high-priority pod needed a victim.
				if run.Victims < run.Pods || run.UnschedulableAttempts < run.Pods {
					t.Errorf("%d victims and %d unschedulable attempts for %d preemptors", run.Victims, run.UnschedulableAttempts, run.Pods)
				}
				if run.InitPods != 400 {
					t.Errorf("init pods = %d, want 4 per node", run.InitPods)
				}
			}

			got := printedJSON(t, res)
			for _, k := range []string{"scenario", "mode", "nodes", "pods", "pods_per_second", "scheduling_ms", "server_cpu_seconds", "server_peak_rss_mib", "ok"} {
				if _, ok := got[k]; !ok {
					t.Errorf("JSON lacks %q", k)
				}
			}
			if got["scenario"] != tc.scenario || got["mode"] != tc.mode || got["ok"] != true {
				t.Errorf("JSON scenario/mode/ok = %v/%v/%v", got["scenario"], got["mode"], got["ok"])
			}
			sched, _ := got["scheduling_ms"].(map[string]any)
			for _, k := range []string{"p50", "p90", "p99"} {
				if _, ok := sched[k].(float64); !ok {
					t.Errorf("scheduling_ms.%s = %v", k, sched[k])
				}
			}
			embedded := tc.mode == ModeE2E
			if rss, ok := got["server_peak_rss_mib"].(float64); embedded != ok || (ok && rss <= 0) {
				t.Errorf("server_peak_rss_mib = %v in %s mode", got["server_peak_rss_mib"], tc.mode)
			}
			if e2e, ok := got["e2e_ms"].(map[string]any); embedded != ok || (ok && e2e["count"] != float64(200)) {
				t.Errorf("e2e_ms = %v in %s mode", got["e2e_ms"], tc.mode)
			}
		})
	}
}

func TestSchedVerify(t *testing.T) {
	p := schedParams{nodes: 3, nodeCPU: "1", nodeMemory: "1Gi", podCPU: "500m", podMemory: "128Mi", groups: 2, apps: 1}
	nodes := []corev1.Node{*schedNode(p, 0), *schedNode(p, 1), *schedNode(p, 2)}
	pod := func(name string) *corev1.Pod { return schedPod(p, "ns", name, 0) }
	anti := func(g int) *corev1.Pod {
		pp := pod("anti")
		schedAntiAffine(pp, g)
		return pp
	}
	spread := func() *corev1.Pod {
		pp := pod("spread")
		pp.Labels["app"] = "a"
		pp.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: schedLabelZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}
		return pp
	}
	n0, n1, n2 := nodes[0].Name, nodes[1].Name, nodes[2].Name
	for _, tc := range []struct {
		name   string
		placed []schedPlaced
		want   int
		msg    string
	}{
		{"fits", []schedPlaced{{pod("a"), n0}, {pod("b"), n0}, {pod("c"), n1}, {pod("unbound"), ""}}, 0, ""},
		{"cpu overcommitted", []schedPlaced{{pod("a"), n0}, {pod("b"), n0}, {pod("c"), n0}}, 1, "overcommitted"},
		{"gone node not judged", []schedPlaced{{pod("a"), "churned"}, {pod("b"), "churned"}, {pod("c"), "churned"}}, 0, ""},
		{"anti-affinity group twice", []schedPlaced{{anti(0), n0}, {anti(0), n0}}, 1, "anti-affinity group g00"},
		{"different groups share", []schedPlaced{{anti(0), n0}, {anti(1), n0}}, 0, ""},
		{"spread even", []schedPlaced{{spread(), n0}, {spread(), n1}, {spread(), n2}, {spread(), n0}}, 0, ""},
		{"spread skewed", []schedPlaced{{spread(), n0}, {spread(), n0}}, 1, "skew 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, msgs := schedVerify(nodes, tc.placed)
			if n != tc.want {
				t.Fatalf("violations = %d (%v), want %d", n, msgs, tc.want)
			}
			if tc.msg != "" && (len(msgs) == 0 || !strings.Contains(msgs[0], tc.msg)) {
				t.Errorf("message %v, want one containing %q", msgs, tc.msg)
			}
		})
	}
}

func TestSchedResolve(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      SchedulerConfig
		scenario string
		nodes    int
		wantErr  string
		check    func(schedParams) bool
	}{
		{"basic defaults", SchedulerConfig{}, SchedBasic, 0, "",
			func(p schedParams) bool { return p.nodes == 5000 && p.initPods == 1000 && p.pods == 10000 }},
		{"preemption scales with nodes", SchedulerConfig{}, SchedPreemption, 200, "",
			func(p schedParams) bool {
				return p.initPods == 800 && p.pods == 200 && p.nodeCPU == "4" && p.podCPU == "1"
			}},
		{"unschedulable parks pods", SchedulerConfig{}, SchedUnschedulable, 0, "", func(p schedParams) bool { return p.parked == 1000 }},
		{"no init pods", SchedulerConfig{InitPods: -1}, SchedBasic, 10, "", func(p schedParams) bool { return p.initPods == 0 }},
		{"antiaffinity must fit", SchedulerConfig{Groups: 2, Pods: 100}, SchedAntiAffinity, 10, "do not fit", nil},
		{"spread needs zones", SchedulerConfig{Apps: 1}, SchedSpread, 2, "one per zone", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := schedResolve(tc.cfg, tc.scenario, ModeAlgorithm, tc.nodes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(p) {
				t.Fatalf("params %+v, err %v", p, err)
			}
		})
	}
}
