package replicaset

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// podOpt shapes a test pod.
type podOpt func(*corev1.Pod)

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
		Labels:            map[string]string{"app": "web"},
		CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
	}}
	p.Status.Phase = corev1.PodPending
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}
func readySince(t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t)})
	}
}
func created(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "c", RestartCount: n})
	}
}
func cost(c string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.PodDeletionCost: c} }
}
func ownedBy(uid types.UID) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: uid, Controller: ptr.To(true)}}
	}
}
func withLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}
func deleting() podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }
}

func mkRS(n int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "rs-uid", Generation: 2},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "fe"}}},
		},
	}
}

func TestScale(t *testing.T) {
	tests := []struct {
		name                string
		active, want, burst int
		create, del         int
	}{
		{"steady", 3, 3, 500, 0, 0},
		{"too few", 2, 5, 500, 3, 0},
		{"too many", 7, 5, 500, 0, 2},
		{"creations capped by burst", 0, 2000, 500, 500, 0},
		{"deletions capped by burst", 900, 0, 500, 0, 500},
		{"to zero", 4, 0, 500, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, d := scale(tt.active, tt.want, tt.burst)
			if c != tt.create || d != tt.del {
				t.Errorf("scale(%d, %d, %d) = create %d delete %d, want %d %d", tt.active, tt.want, tt.burst, c, d, tt.create, tt.del)
			}
		})
	}
}

func TestPlanClaims(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	deletingRS := mkRS(1)
	deletingRS.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	tests := []struct {
		name                  string
		rs                    *appsv1.ReplicaSet
		pod                   *corev1.Pod
		owned, adopt, release bool
	}{
		{"owned and matching", mkRS(1), mkPod("a", ownedBy("rs-uid")), true, false, false},
		{"orphan matching is adopted", mkRS(1), mkPod("a"), false, true, false},
		{"orphan not matching is left", mkRS(1), mkPod("a", withLabels("app", "db")), false, false, false},
		{"another controller's pod is never touched", mkRS(1), mkPod("a", ownedBy("other")), false, false, false},
		{"owned but relabelled is released", mkRS(1), mkPod("a", ownedBy("rs-uid"), withLabels("app", "debug")), false, false, true},
		{"a ReplicaSet being deleted adopts nothing", deletingRS, mkPod("a"), false, false, false},
		{"a ReplicaSet being deleted releases nothing", deletingRS, mkPod("a", ownedBy("rs-uid"), withLabels("x", "y")), false, false, false},
		{"a ReplicaSet being deleted keeps its pods", deletingRS, mkPod("a", ownedBy("rs-uid")), true, false, false},
		{"a terminating orphan is not adopted", mkRS(1), mkPod("a", deleting()), false, false, false},
		{"an orphan in another namespace is not adopted", mkRS(1), mkPod("a", func(p *corev1.Pod) { p.Namespace = "other" }), false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planClaims(tt.rs, sel, []*corev1.Pod{tt.pod})
			got := [3]bool{len(p.owned) == 1, len(p.adopt) == 1, len(p.release) == 1}
			if want := [3]bool{tt.owned, tt.adopt, tt.release}; got != want {
				t.Errorf("owned/adopt/release = %v, want %v", got, want)
			}
		})
	}
}

func TestDeletionOrder(t *testing.T) {
	now := t0
	tests := []struct {
		name  string
		first *corev1.Pod // must be deleted before second
		then  *corev1.Pod
		// related pods (besides first and then) for the per-node rank
		related []*corev1.Pod
	}{
		{"unassigned before assigned",
			mkPod("a"), mkPod("b", onNode("n1")), nil},
		{"pending before running",
			mkPod("a", onNode("n1"), phase(corev1.PodPending)), mkPod("b", onNode("n1"), readySince(now.Add(-time.Hour))), nil},
		{"pending before unknown",
			mkPod("a", onNode("n1"), phase(corev1.PodPending)), mkPod("b", onNode("n1"), phase(corev1.PodUnknown)), nil},
		{"unknown before running",
			mkPod("a", onNode("n1"), phase(corev1.PodUnknown)), mkPod("b", onNode("n1"), phase(corev1.PodRunning)), nil},
		{"not ready before ready",
			mkPod("a", onNode("n1"), phase(corev1.PodRunning)), mkPod("b", onNode("n1"), readySince(now.Add(-time.Minute))), nil},
		{"lower deletion cost first",
			mkPod("a", onNode("n1"), readySince(now.Add(-time.Hour)), cost("-5")), mkPod("b", onNode("n2"), readySince(now.Add(-time.Hour))), nil},
		{"deletion cost beats a crowded node",
			mkPod("a", onNode("n1"), readySince(now.Add(-time.Hour)), cost("1")), mkPod("b", onNode("n2"), readySince(now.Add(-time.Hour)), cost("10")),
			[]*corev1.Pod{mkPod("x", onNode("n2")), mkPod("y", onNode("n2"))}},
		{"more related pods on the node first",
			mkPod("a", onNode("n2"), readySince(now.Add(-time.Hour))), mkPod("b", onNode("n1"), readySince(now.Add(-time.Hour))),
			[]*corev1.Pod{mkPod("x", onNode("n2")), mkPod("y", onNode("n2"))}},
		{"ready more recently first (different log2 buckets)",
			mkPod("a", onNode("n1"), readySince(now.Add(-time.Minute))), mkPod("b", onNode("n2"), readySince(now.Add(-10*time.Hour))), nil},
		{"more restarts first",
			mkPod("a", onNode("n1"), phase(corev1.PodRunning), restarts(4)), mkPod("b", onNode("n2"), phase(corev1.PodRunning), restarts(1)), nil},
		{"newer first",
			mkPod("a", onNode("n1"), created(now.Add(-time.Minute))), mkPod("b", onNode("n2"), created(now.Add(-24*time.Hour))), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, order := range [][]*corev1.Pod{{tt.first, tt.then}, {tt.then, tt.first}} {
				related := append(append([]*corev1.Pod(nil), order...), tt.related...)
				got := podsToDelete(order, related, 1, now)
				if len(got) != 1 || got[0] != tt.first {
					t.Errorf("deleted %s, want %s", got[0].Name, tt.first.Name)
				}
			}
		})
	}
}

func TestPodsToDeleteKeepsInput(t *testing.T) {
	pods := []*corev1.Pod{mkPod("a", onNode("n")), mkPod("b")}
	got := podsToDelete(pods, nil, 1, t0)
	if got[0].Name != "b" || pods[0].Name != "a" {
		t.Fatalf("got %s; input reordered to %s", got[0].Name, pods[0].Name)
	}
	if all := podsToDelete(pods, nil, 5, t0); len(all) != 2 {
		t.Fatalf("n > len: got %d pods", len(all))
	}
}

func TestCalculateStatus(t *testing.T) {
	now := t0
	failing := mkRS(3)
	failing.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
	tests := []struct {
		name        string
		rs          *appsv1.ReplicaSet
		minReady    int32
		active      []*corev1.Pod
		terminating int
		manageErr   error
		withTerm    bool

		replicas, fully, ready, available int32
		requeue                           time.Duration
		failure                           string // reason of ReplicaFailure; "" none
	}{
		{name: "counts", rs: mkRS(3), withTerm: true, terminating: 2,
			active:   []*corev1.Pod{mkPod("a", readySince(now.Add(-time.Minute)), withLabels("app", "web", "tier", "fe")), mkPod("b"), mkPod("c", readySince(now.Add(-time.Minute)))},
			replicas: 3, fully: 1, ready: 2, available: 2},
		{name: "minReadySeconds holds back availability and requeues", rs: mkRS(2), minReady: 10,
			active:   []*corev1.Pod{mkPod("a", readySince(now.Add(-4*time.Second))), mkPod("b", readySince(now.Add(-time.Minute)))},
			replicas: 2, ready: 2, available: 1, requeue: 6 * time.Second},
		{name: "create failure sets ReplicaFailure", rs: mkRS(3), manageErr: errors.New("exceeded quota"),
			active: []*corev1.Pod{mkPod("a")}, replicas: 1, failure: "FailedCreate"},
		{name: "delete failure", rs: mkRS(0), manageErr: errors.New("boom"),
			active: []*corev1.Pod{mkPod("a")}, replicas: 1, failure: "FailedDelete"},
		{name: "a clean sync clears ReplicaFailure", rs: failing, active: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rs.Spec.MinReadySeconds = tt.minReady
			var term []*corev1.Pod
			for i := 0; i < tt.terminating; i++ {
				term = append(term, mkPod(fmt.Sprint("t", i), deleting()))
			}
			st, requeue := calculateStatus(tt.rs, tt.active, term, tt.manageErr, now, tt.withTerm)
			if st.Replicas != tt.replicas || st.FullyLabeledReplicas != tt.fully || st.ReadyReplicas != tt.ready || st.AvailableReplicas != tt.available {
				t.Errorf("replicas/fully/ready/available = %d/%d/%d/%d, want %d/%d/%d/%d",
					st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas, tt.replicas, tt.fully, tt.ready, tt.available)
			}
			if requeue != tt.requeue {
				t.Errorf("requeue = %v, want %v", requeue, tt.requeue)
			}
			if tt.withTerm != (st.TerminatingReplicas != nil) || (tt.withTerm && *st.TerminatingReplicas != int32(tt.terminating)) {
				t.Errorf("terminatingReplicas = %v, want %d (set %v)", st.TerminatingReplicas, tt.terminating, tt.withTerm)
			}
			reason := ""
			for _, c := range st.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure {
					reason = c.Reason
					if c.Message != tt.manageErr.Error() {
						t.Errorf("message %q, want %q", c.Message, tt.manageErr)
					}
				}
			}
			if reason != tt.failure {
				t.Errorf("ReplicaFailure reason %q, want %q", reason, tt.failure)
			}
		})
	}
}

func TestStatusCurrent(t *testing.T) {
	rs := mkRS(1)
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, ObservedGeneration: 2, TerminatingReplicas: ptr.To(int32(0))}
	if !statusCurrent(rs, *rs.Status.DeepCopy()) {
		t.Error("identical status reported as changed")
	}
	st := *rs.Status.DeepCopy()
	st.ReadyReplicas = 1
	if statusCurrent(rs, st) {
		t.Error("readyReplicas change not seen")
	}
	rs.Generation = 3 // a spec change must be acknowledged
	if statusCurrent(rs, *rs.Status.DeepCopy()) {
		t.Error("generation change not seen")
	}
}

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		name      string
		count     int
		failAt    int // the call number that fails (1-based); 0 never
		wantOK    int
		wantCalls int
	}{
		{"all succeed", 10, 0, 10, 10},
		{"first call fails: one request only", 500, 1, 0, 1},
		{"failure in the third batch stops after it", 100, 5, 6, 7}, // batches 1,2,4
		{"nothing to do", 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			ok, err := slowStartBatch(tt.count, 1, func() error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls == tt.failAt {
					return errors.New("quota")
				}
				return nil
			})
			if ok != tt.wantOK || calls != tt.wantCalls || (err != nil) != (tt.failAt > 0) {
				t.Errorf("successes %d calls %d err %v; want %d %d", ok, calls, err, tt.wantOK, tt.wantCalls)
			}
		})
	}
}

func TestPodFromTemplate(t *testing.T) {
	rs := mkRS(1)
	rs.Spec.Template.Annotations = map[string]string{"a": "b"}
	rs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}}
	pod := podFromTemplate(rs, metav1.OwnerReference{UID: rs.UID, Controller: ptr.To(true)})
	if pod.GenerateName != "web-" || pod.Namespace != "ns" || pod.Name != "" {
		t.Errorf("name: generateName %q namespace %q name %q", pod.GenerateName, pod.Namespace, pod.Name)
	}
	if pod.Labels["tier"] != "fe" || pod.Annotations["a"] != "b" || len(pod.Finalizers) != 0 {
		t.Errorf("meta: %+v", pod.ObjectMeta)
	}
	pod.Labels["x"] = "y"
	pod.Spec.Containers[0].Image = "changed"
	if rs.Spec.Template.Labels["x"] != "" || rs.Spec.Template.Spec.Containers[0].Image != "nginx" {
		t.Error("the pod shares state with the template")
	}
}
