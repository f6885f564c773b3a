package nodelifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEvictionDeadline(t *testing.T) {
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	custom := corev1.Taint{Key: "example.com/maintenance", Value: "yes", Effect: corev1.TaintEffectNoExecute}
	// Each taint started at a known time.
	starts := map[string]time.Time{unreachable.Key: at(10), notReady.Key: at(20), custom.Key: at(30)}
	start := func(t *corev1.Taint) time.Time { return starts[t.Key] }

	tol := func(key string, secs *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	tests := []struct {
		name   string
		taints []corev1.Taint
		tols   []corev1.Toleration
		evict  bool
		at     time.Time
	}{
		{"no taints", nil, nil, false, time.Time{}},
		{"untolerated: at once", []corev1.Taint{unreachable}, nil, true, time.Time{}},
		{"tolerated forever", []corev1.Taint{unreachable}, []corev1.Toleration{tol(unreachable.Key, nil)}, false, time.Time{}},
		{"tolerated 300 s from the taint's start", []corev1.Taint{unreachable}, []corev1.Toleration{tol(unreachable.Key, ptr.To[int64](300))}, true, at(310)},
		{"zero seconds: at its start", []corev1.Taint{unreachable}, []corev1.Toleration{tol(unreachable.Key, ptr.To[int64](0))}, true, at(10)},
		{"negative seconds: at its start", []corev1.Taint{unreachable}, []corev1.Toleration{tol(unreachable.Key, ptr.To[int64](-5))}, true, at(10)},
		{
			"earliest deadline wins",
			[]corev1.Taint{unreachable, notReady},
			[]corev1.Toleration{tol(unreachable.Key, ptr.To[int64](100)), tol(notReady.Key, ptr.To[int64](60))},
			true, at(80),
		},
		{
			"one taint untolerated beats any toleration",
			[]corev1.Taint{unreachable, custom},
			[]corev1.Toleration{tol(unreachable.Key, nil)},
			true, time.Time{},
		},
		{
			"first matching toleration decides",
			[]corev1.Taint{unreachable},
			[]corev1.Toleration{{Operator: corev1.TolerationOpExists}, tol(unreachable.Key, ptr.To[int64](1))},
			false, time.Time{},
		},
		{
			"value must match with Equal",
			[]corev1.Taint{custom},
			[]corev1.Toleration{{Key: custom.Key, Value: "no", Effect: corev1.TaintEffectNoExecute}},
			true, time.Time{},
		},
		{
			"Equal with the value, no effect: tolerated forever",
			[]corev1.Taint{custom},
			[]corev1.Toleration{{Key: custom.Key, Operator: corev1.TolerationOpEqual, Value: "yes"}},
			false, time.Time{},
		},
		{
			"NoSchedule toleration does not cover NoExecute",
			[]corev1.Taint{unreachable},
			[]corev1.Toleration{{Key: unreachable.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			true, time.Time{},
		},
		{
			"daemonset-style tolerations keep the pod",
			[]corev1.Taint{unreachable, notReady},
			[]corev1.Toleration{tol(notReady.Key, nil), tol(unreachable.Key, nil)},
			false, time.Time{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, evict := evictionDeadline(tt.taints, tt.tols, start)
			if evict != tt.evict || !got.Equal(tt.at) {
				t.Errorf("= %v %v, want %v %v", got, evict, tt.at, tt.evict)
			}
		})
	}
}

func TestTaintStart(t *testing.T) {
	added := metav1.NewTime(at(100))
	tests := []struct {
		name  string
		added *metav1.Time
		seen  time.Time
		want  time.Time
	}{
		{"timeAdded, never seen (a restart)", &added, time.Time{}, at(100)},
		{"seen within timeAdded's second refines it", &added, at(100.7), at(100.7)},
		{"seen a second later: timeAdded", &added, at(101), at(100)},
		{"seen before timeAdded: timeAdded", &added, at(99), at(100)},
		{"no timeAdded: when seen", nil, at(50), at(50)},
		{"no timeAdded, never seen: now", nil, time.Time{}, at(1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoExecute, TimeAdded: tt.added}
			if got := taintStart(&ta, tt.seen, at(1000)); !got.Equal(tt.want) {
				t.Errorf("start = %v, want %v", got.Sub(t0), tt.want.Sub(t0))
			}
		})
	}
}

func TestPodNotReadyCondition(t *testing.T) {
	pod := func(conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: conds}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		ok   bool
	}{
		{"ready", pod(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}), true},
		{"unknown", pod(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionUnknown}), true},
		{"already not ready", pod(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}), false},
		{"no Ready condition (pending)", pod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := podNotReadyCondition(tt.pod, at(3))
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			if ok && (c.Type != corev1.PodReady || c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(at(3))) {
				t.Errorf("%+v", c)
			}
		})
	}
}
