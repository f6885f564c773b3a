package podgc

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func pod(name string, age int, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name),
		CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second))}}
	p.Status.Phase = corev1.PodRunning
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func on(node string) podOpt           { return func(p *corev1.Pod) { p.Spec.NodeName = node } }
func evictedPod(p *corev1.Pod)        { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" }
func deleting(p *corev1.Pod) {
	ts := metav1.NewTime(t0)
	p.DeletionTimestamp = &ts
}

func node(name string, ready bool, taints ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	for _, k := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoExecute})
	}
	return n
}

func TestPlan(t *testing.T) {
	nodes := map[string]*corev1.Node{
		"up":     node("up", true),
		"down":   node("down", false),
		"dead":   node("dead", false, corev1.TaintNodeOutOfService),
		"tainty": node("tainty", true, corev1.TaintNodeOutOfService),
	}
	tests := []struct {
		name      string
		pods      []*corev1.Pod
		gone      []string
		threshold int
		want      []string // "name:reason"
	}{
		{
			name:      "under threshold",
			pods:      []*corev1.Pod{pod("a", 1, phase(corev1.PodSucceeded)), pod("b", 2, phase(corev1.PodFailed))},
			threshold: 2,
		},
		{
			name: "oldest terminated beyond threshold, running ignored",
			pods: []*corev1.Pod{
				pod("new", 30, phase(corev1.PodSucceeded)), pod("old", 10, phase(corev1.PodSucceeded)),
				pod("mid", 20, phase(corev1.PodFailed)), pod("run", 0), pod("pend", 0, phase(corev1.PodPending)),
			},
			threshold: 1,
			want:      []string{"old:" + string(ReasonTerminated), "mid:" + string(ReasonTerminated)},
		},
		{
			name: "evicted first, names break ties",
			pods: []*corev1.Pod{
				pod("b", 1, phase(corev1.PodSucceeded)), pod("a", 1, phase(corev1.PodSucceeded)),
				pod("ev", 99, evictedPod), pod("c", 5, phase(corev1.PodSucceeded)),
			},
			threshold: 1,
			want:      []string{"ev:" + string(ReasonTerminated), "a:" + string(ReasonTerminated), "b:" + string(ReasonTerminated)},
		},
		{
			name:      "threshold negative keeps all",
			pods:      []*corev1.Pod{pod("a", 1, phase(corev1.PodSucceeded)), pod("b", 2, phase(corev1.PodSucceeded))},
			threshold: -1,
		},
		{
			name: "terminating on out-of-service NotReady node only",
			pods: []*corev1.Pod{
				pod("dead-del", 1, on("dead"), deleting), pod("dead-live", 1, on("dead")),
				pod("down-del", 1, on("down"), deleting), pod("tainty-del", 1, on("tainty"), deleting),
				pod("unknown-node-del", 1, on("nowhere"), deleting),
			},
			threshold: 100,
			want:      []string{"dead-del:" + string(ReasonTerminatingOutOfService)},
		},
		{
			name:      "orphaned on gone nodes only",
			pods:      []*corev1.Pod{pod("o", 1, on("vanished")), pod("q", 1, on("quarantined")), pod("u", 1, on("up"))},
			gone:      []string{"vanished"},
			threshold: 100,
			want:      []string{"o:" + string(ReasonOrphaned)},
		},
		{
			name:      "unscheduled terminating",
			pods:      []*corev1.Pod{pod("u", 1, deleting), pod("pending", 1, phase(corev1.PodPending))},
			threshold: 100,
			want:      []string{"u:" + string(ReasonTerminatingUnscheduled)},
		},
		{
			name:      "a pod is listed once, first reason wins",
			pods:      []*corev1.Pod{pod("x", 1, phase(corev1.PodFailed), on("vanished"), deleting), pod("y", 2, phase(corev1.PodFailed))},
			gone:      []string{"vanished"},
			threshold: 1,
			want:      []string{"x:" + string(ReasonTerminated)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gone := map[string]bool{}
			for _, g := range tt.gone {
				gone[g] = true
			}
			var got []string
			for _, d := range plan(tt.pods, nodes, gone, tt.threshold) {
				got = append(got, fmt.Sprintf("%s:%s", d.pod.Name, d.reason))
				if (d.reason == ReasonOrphaned) != (d.condition != nil) {
					t.Errorf("%s: condition %v", d.pod.Name, d.condition)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("plan = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQuarantine(t *testing.T) {
	var q quarantine
	nodes := map[string]*corev1.Node{"up": node("up", true)}
	pods := []*corev1.Pod{pod("a", 0, on("up")), pod("b", 0, on("ghost")), pod("c", 0)}
	steps := []struct {
		name string
		at   time.Duration
		pods []*corev1.Pod
		want []string
	}{
		{"first seen", 0, pods, nil},
		{"still quarantined", 39 * time.Second, pods, nil},
		{"quarantine over", 40 * time.Second, pods, []string{"ghost"}},
		{"stays due", 60 * time.Second, pods, []string{"ghost"}},
		{"forgotten when no pod names it", 61 * time.Second, pods[:1], nil},
		{"quarantined afresh", 62 * time.Second, pods, nil},
		{"due again", 102 * time.Second, pods, []string{"ghost"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if got := q.due(s.pods, nodes, t0.Add(s.at), 40*time.Second); !slices.Equal(got, s.want) {
				t.Errorf("due = %v, want %v", got, s.want)
			}
		})
	}
	t.Run("forgotten when the node appears", func(t *testing.T) {
		nodes["ghost"] = node("ghost", true)
		if got := q.due(pods, nodes, t0.Add(200*time.Second), 40*time.Second); got != nil {
			t.Errorf("due = %v", got)
		}
		if len(q.since) != 0 {
			t.Errorf("still tracking %v", q.since)
		}
	})
}

func TestFailedStatus(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Hour))
	earlier := metav1.NewTime(t0)
	cond := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: orphanedConditionReason}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		cond     *corev1.PodCondition
		ok       bool
		condTime metav1.Time
	}{
		{"terminal needs nothing", pod("a", 0, phase(corev1.PodSucceeded)), cond, false, metav1.Time{}},
		{"running, no condition", pod("a", 0), nil, true, metav1.Time{}},
		{"running, new condition", pod("a", 0), cond, true, now},
		{"running, condition kept", pod("a", 0, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: earlier}}
		}), cond, true, earlier},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, ok := failedStatus(tt.pod, tt.cond, now)
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			if st.Phase != corev1.PodFailed {
				t.Errorf("phase %q", st.Phase)
			}
			if tt.cond == nil {
				if len(st.Conditions) != 0 {
					t.Errorf("conditions %v", st.Conditions)
				}
				return
			}
			if len(st.Conditions) != 1 || !st.Conditions[0].LastTransitionTime.Equal(&tt.condTime) {
				t.Errorf("conditions %v, want transition at %v", st.Conditions, tt.condTime)
			}
		})
	}
}
