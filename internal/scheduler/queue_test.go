package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
	"github.com/rudder-dev/rudder/internal/scheduler/plugins"
)

// qtGates is a PreEnqueue plugin like SchedulingGates.
type qtGates struct{}

func (qtGates) Name() string { return "SchedulingGates" }
func (qtGates) PreEnqueue(_ context.Context, pod *corev1.Pod) *framework.Status {
	if len(pod.Spec.SchedulingGates) == 0 {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, "waiting for scheduling gates")
}

var (
	qtNodeAdd   = framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add, Label: "NodeAdd"}
	qtNodeTaint = framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.UpdateNodeTaint, Label: "NodeTaintChange"}
	qtPVCAdd    = framework.ClusterEvent{Resource: framework.PersistentVolumeClaimResource, ActionType: framework.Add, Label: "PVCAdd"}
	qtGatesGone = framework.ClusterEvent{Resource: framework.PodResource, ActionType: framework.UpdatePodSchedulingGatesEliminated}
	qtWildcard  = framework.ClusterEvent{Resource: framework.WildCardResource, ActionType: framework.All, Label: "Force"}
)

// qtEvents registers: Fit on node adds (hint: only nodes labelled
// fit=yes), Taint on taint changes, Volume (a Pending plugin) on PVC
// adds, and the gates plugin on gate removal.
func qtEvents() map[string][]framework.ClusterEventWithHint {
	fitHint := func(_ *corev1.Pod, _, newObj interface{}) (framework.QueueingHint, error) {
		n, ok := newObj.(*corev1.Node)
		if !ok {
			return framework.Queue, errors.New("not a node")
		}
		if n.Labels["fit"] == "yes" {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	}
	return map[string][]framework.ClusterEventWithHint{
		"Fit":             {{Event: qtNodeAdd, QueueingHintFn: fitHint}},
		"Taint":           {{Event: qtNodeTaint}},
		"Volume":          {{Event: qtPVCAdd}},
		"SchedulingGates": {{Event: qtGatesGone}},
	}
}

func qtNewQueue() (*Queue, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := NewQueue(QueueConfig{Clock: clk, PreEnqueue: []framework.PreEnqueuePlugin{qtGates{}}, Events: qtEvents()})
	return q, clk
}

func qtPod(name string, prio int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: corev1.PodSpec{
			Priority:   &prio,
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		},
	}
}

func qtNode(labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels}}
}

// qtPop pops with a deadline so that a missing pod fails the test
// instead of hanging it.
func qtPop(t *testing.T, q *Queue) *framework.QueuedPodInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	qpi, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("Pop: %v (lengths %+v)", err, q.Lengths())
	}
	return qpi
}

// qtFail pops name and reports it rejected by plugins (none: an error).
func qtFail(t *testing.T, q *Queue, name string, unsched, pending []string) {
	t.Helper()
	qpi := qtPop(t, q)
	if qpi.Pod.Name != name {
		t.Fatalf("popped %s, want %s", qpi.Pod.Name, name)
	}
	cycle := q.SchedulingCycle()
	qpi.UnschedulablePlugins = sets.New(unsched...)
	qpi.PendingPlugins = sets.New(pending...)
	if err := q.AddUnschedulableIfNotPresent(context.Background(), qpi, cycle); err != nil {
		t.Fatal(err)
	}
}

func qtWantLengths(t *testing.T, q *Queue, want QueueLengths) {
	t.Helper()
	if got := q.Lengths(); got != want {
		t.Fatalf("lengths = %+v, want %+v", got, want)
	}
}

func TestQueuePopOrder(t *testing.T) {
	type add struct {
		name string
		prio int32
	}
	tests := []struct {
		name string
		adds []add
		want []string
	}{
		{"higher priority first", []add{{"low", 1}, {"high", 100}, {"mid", 10}}, []string{"high", "mid", "low"}},
		{"FIFO among equal priority", []add{{"a", 5}, {"b", 5}, {"c", 5}}, []string{"a", "b", "c"}},
		{"priority then FIFO", []add{{"a", 0}, {"b", 7}, {"c", 0}, {"d", 7}, {"e", -1}}, []string{"b", "d", "a", "c", "e"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, clk := qtNewQueue()
			for _, a := range tc.adds {
				q.Add(context.Background(), qtPod(a.name, a.prio))
				clk.Step(time.Millisecond)
			}
			var got []string
			for range tc.adds {
				got = append(got, qtPop(t, q).Pod.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("pop order %v, want %v", got, tc.want)
			}
		})
	}
}

// A pod failing with errors waits 1, 2, 4, 8, 10, 10 s in backoffQ.
func TestQueueBackoffDoubles(t *testing.T) {
	q, clk := qtNewQueue()
	ctx := context.Background()
	q.Add(ctx, qtPod("p", 0))
	for i, want := range []time.Duration{1, 2, 4, 8, 10, 10} {
		want *= time.Second
		t.Run(fmt.Sprintf("attempt %d waits %v", i+1, want), func(t *testing.T) {
			qtFail(t, q, "p", nil, nil)
			qtWantLengths(t, q, QueueLengths{Backoff: 1})
			clk.Step(want - time.Millisecond)
			q.flushBackoff(ctx)
			qtWantLengths(t, q, QueueLengths{Backoff: 1})
			clk.Step(time.Millisecond)
			q.flushBackoff(ctx)
			qtWantLengths(t, q, QueueLengths{Active: 1})
		})
	}
	if got := qtPop(t, q).Attempts; got != 7 {
		t.Fatalf("attempts = %d, want 7", got)
	}
}

func TestQueueBackoffDuration(t *testing.T) {
	q := NewQueue(QueueConfig{})
	for attempts, want := range map[int]time.Duration{0: 0, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 6: 10 * time.Second, 100: 10 * time.Second} {
		if got := q.backoffDuration(attempts); got != want {
			t.Errorf("backoffDuration(%d) = %v, want %v", attempts, got, want)
		}
	}
}

func TestQueueUnschedulableMoves(t *testing.T) {
	tests := []struct {
		name             string
		unsched, pending []string
		wait             time.Duration // clock step before the event
		event            framework.ClusterEvent
		newObj           interface{}
		want             QueueLengths
	}{
		{"registered event with hint Queue, still backing off", []string{"Fit"}, nil, 0, qtNodeAdd, qtNode(map[string]string{"fit": "yes"}), QueueLengths{Backoff: 1}},
		{"registered event with hint Queue, backoff over", []string{"Fit"}, nil, time.Second, qtNodeAdd, qtNode(map[string]string{"fit": "yes"}), QueueLengths{Active: 1}},
		{"registered event with hint Skip", []string{"Fit"}, nil, time.Second, qtNodeAdd, qtNode(nil), QueueLengths{Unschedulable: 1}},
		{"hint error counts as Queue", []string{"Fit"}, nil, time.Second, qtNodeAdd, "not a node", QueueLengths{Active: 1}},
		{"registered event without hint", []string{"Taint"}, nil, time.Second, qtNodeTaint, qtNode(nil), QueueLengths{Active: 1}},
		{"event registered by another plugin", []string{"Taint"}, nil, time.Second, qtNodeAdd, qtNode(map[string]string{"fit": "yes"}), QueueLengths{Unschedulable: 1}},
		{"event nobody registered", []string{"Fit", "Taint"}, nil, time.Second, framework.ClusterEvent{Resource: framework.StorageClassResource, ActionType: framework.Add}, nil, QueueLengths{Unschedulable: 1}},
		{"one of two rejectors says Queue", []string{"Fit", "Taint"}, nil, time.Second, qtNodeTaint, qtNode(nil), QueueLengths{Active: 1}},
		{"Pending plugin skips backoff", []string{"Fit"}, []string{"Volume"}, 0, qtPVCAdd, nil, QueueLengths{Active: 1}},
		{"wildcard moves any rejected pod", []string{"Fit"}, nil, 0, qtWildcard, nil, QueueLengths{Backoff: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, clk := qtNewQueue()
			ctx := context.Background()
			q.Add(ctx, qtPod("p", 0))
			qtFail(t, q, "p", tc.unsched, tc.pending)
			qtWantLengths(t, q, QueueLengths{Unschedulable: 1})
			clk.Step(tc.wait)
			q.MoveAllToActiveOrBackoffQueue(ctx, tc.event, nil, tc.newObj)
			qtWantLengths(t, q, tc.want)
		})
	}
}

// Events (or updates) that arrive while a pod is being scheduled must
// not be lost: the pod goes to backoffQ instead of the pool.
func TestQueueInFlight(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		before func(q *Queue) // before Pop
		during func(q *Queue) // between Pop and the failure
		want   QueueLengths
	}{
		{"no event: parked", nil, nil, QueueLengths{Unschedulable: 1}},
		{"interesting event during the attempt: backoff", nil, func(q *Queue) {
			q.MoveAllToActiveOrBackoffQueue(ctx, qtNodeAdd, nil, qtNode(nil))
		}, QueueLengths{Backoff: 1}},
		{"interesting event before the pop: parked", func(q *Queue) {
			q.MoveAllToActiveOrBackoffQueue(ctx, qtNodeAdd, nil, qtNode(nil))
		}, nil, QueueLengths{Unschedulable: 1}},
		{"event nobody registered during the attempt: parked", nil, func(q *Queue) {
			q.MoveAllToActiveOrBackoffQueue(ctx, framework.ClusterEvent{Resource: framework.CSIDriverResource, ActionType: framework.Add}, nil, nil)
		}, QueueLengths{Unschedulable: 1}},
		{"pod gained a toleration during the attempt: backoff", nil, func(q *Queue) {
			p := qtPod("p", 0)
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			q.Update(ctx, qtPod("p", 0), p)
		}, QueueLengths{Backoff: 1}},
		{"pod annotated during the attempt: parked", nil, func(q *Queue) {
			p := qtPod("p", 0)
			p.Annotations = map[string]string{"a": "b"}
			q.Update(ctx, qtPod("p", 0), p)
		}, QueueLengths{Unschedulable: 1}},
		{"pod activated during the attempt: backoff", nil, func(q *Queue) {
			q.Activate(ctx, map[string]*corev1.Pod{"default/p": qtPod("p", 0)})
		}, QueueLengths{Backoff: 1}},
		{"pod deleted during the attempt: dropped", nil, func(q *Queue) { q.Delete(qtPod("p", 0)) }, QueueLengths{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := qtNewQueue()
			q.Add(ctx, qtPod("p", 0))
			if tc.before != nil {
				tc.before(q)
			}
			qpi := qtPop(t, q)
			cycle := q.SchedulingCycle()
			if tc.during != nil {
				tc.during(q)
			}
			qpi.UnschedulablePlugins = sets.New("Fit")
			if err := q.AddUnschedulableIfNotPresent(ctx, qpi, cycle); err != nil {
				t.Fatal(err)
			}
			q.Done(qpi.Pod.UID)
			qtWantLengths(t, q, tc.want)
		})
	}
}

func TestQueueInFlightUpdateIsKept(t *testing.T) {
	q, _ := qtNewQueue()
	ctx := context.Background()
	q.Add(ctx, qtPod("p", 0))
	qpi := qtPop(t, q)
	cycle := q.SchedulingCycle()
	p := qtPod("p", 0)
	p.Labels = map[string]string{"v": "2"}
	q.Update(ctx, qtPod("p", 0), p)
	qpi.UnschedulablePlugins = sets.New("Fit")
	if err := q.AddUnschedulableIfNotPresent(ctx, qpi, cycle); err != nil {
		t.Fatal(err)
	}
	pods := q.PendingPods()
	if len(pods) != 1 || pods[0].Labels["v"] != "2" {
		t.Fatalf("requeued pod is not the updated one: %v", pods)
	}
	if err := q.AddUnschedulableIfNotPresent(ctx, qpi, cycle); err == nil {
		t.Fatal("second AddUnschedulableIfNotPresent of the same pod: no error")
	}
}

func TestQueueFlushUnschedulable(t *testing.T) {
	q, clk := qtNewQueue()
	ctx := context.Background()
	q.Add(ctx, qtPod("p", 0))
	gated := qtPod("gated", 0)
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}}
	q.Add(ctx, gated)
	qtFail(t, q, "p", []string{"Fit"}, nil)
	qtWantLengths(t, q, QueueLengths{Unschedulable: 1, Gated: 1})

	for _, step := range []struct {
		name string
		by   time.Duration
		want QueueLengths
	}{
		{"at 5 minutes still parked", 5 * time.Minute, QueueLengths{Unschedulable: 1, Gated: 1}},
		{"after 5 minutes back in activeQ; gated pod stays", time.Second, QueueLengths{Active: 1, Gated: 1}},
	} {
		t.Run(step.name, func(t *testing.T) {
			clk.Step(step.by)
			q.flushUnschedulable(ctx)
			qtWantLengths(t, q, step.want)
		})
	}
}

// Run drives both flushes from the clock's tickers.
func TestQueueRun(t *testing.T) {
	q, clk := qtNewQueue()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	q.Add(ctx, qtPod("p", 0))
	qtFail(t, q, "p", nil, nil) // error: 1 s backoff
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond) // Run has not made its tickers yet
	}
	clk.Step(time.Second)
	qpi := qtPop(t, q)
	if qpi.Pod.Name != "p" || qpi.Attempts != 2 {
		t.Fatalf("popped %s attempt %d", qpi.Pod.Name, qpi.Attempts)
	}
	qpi.UnschedulablePlugins = sets.New("Fit")
	if err := q.AddUnschedulableIfNotPresent(ctx, qpi, q.SchedulingCycle()); err != nil {
		t.Fatal(err)
	}
	qtWantLengths(t, q, QueueLengths{Unschedulable: 1})
	clk.Step(5*time.Minute + 30*time.Second)
	if got := qtPop(t, q); got.Pod.Name != "p" {
		t.Fatalf("popped %s", got.Pod.Name)
	}
}

func TestQueueSchedulingGates(t *testing.T) {
	ctx := context.Background()
	gatedPod := func(gates ...string) *corev1.Pod {
		p := qtPod("g", 0)
		for _, g := range gates {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
		}
		return p
	}
	q, clk := qtNewQueue()
	q.Add(ctx, gatedPod("a", "b"))
	steps := []struct {
		name string
		do   func()
		want QueueLengths
	}{
		{"a gated pod is held", func() {}, QueueLengths{Gated: 1}},
		{"events for other plugins do not release it", func() {
			q.MoveAllToActiveOrBackoffQueue(ctx, qtNodeAdd, nil, qtNode(map[string]string{"fit": "yes"}))
			q.MoveAllToActiveOrBackoffQueue(ctx, qtWildcard, nil, nil)
		}, QueueLengths{Gated: 1}},
		{"time does not release it", func() {
			clk.Step(time.Hour)
			q.flushUnschedulable(ctx)
			q.flushBackoff(ctx)
		}, QueueLengths{Gated: 1}},
		{"removing one of two gates keeps it held", func() { q.Update(ctx, gatedPod("a", "b"), gatedPod("b")) }, QueueLengths{Gated: 1}},
		{"removing the last gate lets it in at once", func() { q.Update(ctx, gatedPod("b"), gatedPod()) }, QueueLengths{Active: 1}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do()
			qtWantLengths(t, q, s.want)
		})
	}
	// The popped pod starts its attempt with no rejectors left over.
	if qpi := qtPop(t, q); len(qpi.Pod.Spec.SchedulingGates) != 0 || qpi.GatingPlugin != "" || qpi.UnschedulablePlugins.Len() != 0 {
		t.Fatalf("popped %+v gates, gating plugin %q, rejectors %v", qpi.Pod.Spec.SchedulingGates, qpi.GatingPlugin, qpi.UnschedulablePlugins)
	}
}

func TestQueueUpdate(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		park   bool // fail the pod first (rejected by Fit)
		change func(p *corev1.Pod)
		want   QueueLengths
	}{
		{"active pod updated in place", false, func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} }, QueueLengths{Active: 1}},
		{"parked pod: label change moves it", true, func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} }, QueueLengths{Active: 1}},
		{"parked pod: new toleration moves it", true, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}, QueueLengths{Active: 1}},
		{"parked pod: smaller request moves it", true, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
		}, QueueLengths{Active: 1}},
		{"parked pod: larger request keeps it parked", true, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}, QueueLengths{Unschedulable: 1}},
		{"parked pod: annotation keeps it parked", true, func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }, QueueLengths{Unschedulable: 1}},
		{"parked pod: status change keeps it parked", true, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}
		}, QueueLengths{Unschedulable: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, clk := qtNewQueue()
			q.Add(ctx, qtPod("p", 0))
			if tc.park {
				qtFail(t, q, "p", []string{"Fit"}, nil)
				clk.Step(time.Second) // backoff over
			}
			old := q.PendingPods()[0]
			p := old.DeepCopy()
			tc.change(p)
			q.Update(ctx, old, p)
			qtWantLengths(t, q, tc.want)
			if got := q.PendingPods()[0]; got != p {
				t.Fatalf("queue holds the old object")
			}
		})
	}
}

func TestQueueDelete(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(t *testing.T, q *Queue, p *corev1.Pod)
	}{
		{"from activeQ", func(t *testing.T, q *Queue, p *corev1.Pod) { q.Add(ctx, p) }},
		{"from backoffQ", func(t *testing.T, q *Queue, p *corev1.Pod) { q.Add(ctx, p); qtFail(t, q, "p", nil, nil) }},
		{"from the unschedulable pool", func(t *testing.T, q *Queue, p *corev1.Pod) { q.Add(ctx, p); qtFail(t, q, "p", []string{"Fit"}, nil) }},
		{"while gated", func(t *testing.T, q *Queue, p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}}
			q.Add(ctx, p)
		}},
		{"nominated by status", func(t *testing.T, q *Queue, p *corev1.Pod) {
			p.Status.NominatedNodeName = "n1"
			q.Add(ctx, p)
		}},
		{"nominated by the scheduler", func(t *testing.T, q *Queue, p *corev1.Pod) {
			q.Add(ctx, p)
			q.AddNominatedPod(framework.NewPodInfo(p), "n1")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := qtNewQueue()
			p := qtPod("p", 0)
			tc.setup(t, q, p)
			if len(q.PendingPods()) != 1 {
				t.Fatalf("setup: pending %d pods", len(q.PendingPods()))
			}
			q.Delete(p)
			qtWantLengths(t, q, QueueLengths{})
			if n := len(q.PendingPods()); n != 0 {
				t.Fatalf("%d pods still pending", n)
			}
			if got := q.NominatedPodsForNode("n1"); len(got) != 0 || q.HasNominatedPods() {
				t.Fatalf("still nominated: %d", len(got))
			}
		})
	}
}

func TestQueueNominator(t *testing.T) {
	ctx := context.Background()
	q, _ := qtNewQueue()
	names := func(pis []*framework.PodInfo) []string {
		var out []string
		for _, pi := range pis {
			out = append(out, pi.Pod.Name)
		}
		return out
	}
	low, high, mid, mid2 := qtPod("low", 1), qtPod("high", 100), qtPod("mid", 10), qtPod("mid2", 10)
	for _, p := range []*corev1.Pod{low, high, mid, mid2} {
		q.Add(ctx, p)
	}
	steps := []struct {
		name string
		do   func()
		node string
		want []string
	}{
		{"highest priority first, equal ones in nomination order", func() {
			for _, p := range []*corev1.Pod{low, mid, high, mid2} {
				q.AddNominatedPod(framework.NewPodInfo(p), "n1")
			}
		}, "n1", []string{"high", "mid", "mid2", "low"}},
		{"renominating moves the pod", func() { q.AddNominatedPod(framework.NewPodInfo(mid), "n2") }, "n1", []string{"high", "mid2", "low"}},
		{"an update without status nomination keeps the scheduler's", func() {
			p := mid.DeepCopy()
			p.Labels = map[string]string{"x": "y"}
			q.Update(ctx, mid, p)
		}, "n2", []string{"mid"}},
		{"status nomination on update wins", func() {
			p := mid.DeepCopy()
			p.Status.NominatedNodeName = "n3"
			q.Update(ctx, mid, p)
		}, "n2", nil},
		{"bound pod loses its nomination", func() {
			p := high.DeepCopy()
			p.Spec.NodeName = "n1"
			q.Update(ctx, high, p)
		}, "n1", []string{"mid2", "low"}},
		{"DeleteNominatedPodIfExists", func() { q.DeleteNominatedPodIfExists(low) }, "n1", []string{"mid2"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do()
			if got := names(q.NominatedPodsForNode(s.node)); !slices.Equal(got, s.want) {
				t.Fatalf("nominated on %s: %v, want %v", s.node, got, s.want)
			}
		})
	}
	t.Run("result is a copy", func(t *testing.T) {
		got := q.NominatedPodsForNode("n3")
		got[0] = nil
		if q.NominatedPodsForNode("n3")[0] == nil {
			t.Fatal("caller's change visible in the nominator")
		}
	})
}

func TestQueuePopBlocking(t *testing.T) {
	t.Run("Pop waits for Add", func(t *testing.T) {
		q, _ := qtNewQueue()
		got := make(chan string)
		go func() {
			qpi, err := q.Pop(context.Background())
			if err != nil {
				got <- err.Error()
				return
			}
			got <- qpi.Pod.Name
		}()
		select {
		case name := <-got:
			t.Fatalf("Pop returned %q from an empty queue", name)
		case <-time.After(50 * time.Millisecond):
		}
		q.Add(context.Background(), qtPod("p", 0))
		select {
		case name := <-got:
			if name != "p" {
				t.Fatalf("Pop returned %q", name)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Pop did not wake up on Add")
		}
	})
	for _, tc := range []struct {
		name string
		end  func(q *Queue, cancel context.CancelFunc)
		want error
	}{
		{"Close ends a blocked Pop", func(q *Queue, _ context.CancelFunc) { q.Close() }, ErrQueueClosed},
		{"ctx ends a blocked Pop", func(_ *Queue, cancel context.CancelFunc) { cancel() }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := qtNewQueue()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error)
			go func() { _, err := q.Pop(ctx); errc <- err }()
			time.Sleep(10 * time.Millisecond) // let Pop block (it must work either way)
			tc.end(q, cancel)
			select {
			case err := <-errc:
				if !errors.Is(err, tc.want) {
					t.Fatalf("Pop error %v, want %v", err, tc.want)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Pop still blocked")
			}
		})
	}
	t.Run("Pop after Close fails even with pods queued", func(t *testing.T) {
		q, _ := qtNewQueue()
		q.Add(context.Background(), qtPod("p", 0))
		q.Close()
		if _, err := q.Pop(context.Background()); !errors.Is(err, ErrQueueClosed) {
			t.Fatalf("Pop error %v", err)
		}
	})
}

// Informer goroutines add, update and move while the scheduling loop
// pops and fails pods; every pod must come out exactly once per Add.
func TestQueueConcurrent(t *testing.T) {
	const producers, perProducer = 4, 250
	q := NewQueue(QueueConfig{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Events: qtEvents()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)

	var wg sync.WaitGroup
	for w := range producers {
		wg.Go(func() {
			for i := range perProducer {
				p := qtPod(fmt.Sprintf("p-%d-%d", w, i), int32(i%7))
				q.Add(ctx, p)
				if i%3 == 0 {
					p2 := p.DeepCopy()
					p2.Labels = map[string]string{"i": "1"}
					q.Update(ctx, p, p2)
				}
				if i%50 == 0 {
					q.MoveAllToActiveOrBackoffQueue(ctx, qtNodeTaint, nil, nil)
					_ = q.Lengths()
				}
			}
		})
	}
	seen := map[string]bool{}
	for len(seen) < producers*perProducer {
		qpi := qtPop(t, q)
		name := qpi.Pod.Name
		if len(name)%2 == 0 && qpi.Attempts == 1 {
			// Fail some once, rejected by Taint: the MoveAll calls or the
			// in-flight rule bring them back, or the test times out.
			qpi.UnschedulablePlugins = sets.New("Taint")
			if err := q.AddUnschedulableIfNotPresent(ctx, qpi, q.SchedulingCycle()); err != nil {
				t.Fatal(err)
			}
			q.MoveAllToActiveOrBackoffQueue(ctx, qtNodeTaint, nil, nil)
			continue
		}
		if seen[name] {
			t.Fatalf("%s popped twice", name)
		}
		// "Bound": the pod stays in flight until the end, as it would
		// until the informer shows it bound; an update meanwhile is
		// recorded, not queued again.
		seen[name] = true
	}
	wg.Wait()
	if l := q.Lengths(); l != (QueueLengths{}) {
		t.Fatalf("left over: %+v", l)
	}
	for name := range seen {
		q.Done(types.UID(name))
	}
}

// BenchmarkQueueAddPop adds n pods of 100 priorities and pops them all;
// ns/pod shows how one add+pop grows with the queue's size (log n).
func BenchmarkQueueAddPop(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			pods := make([]*corev1.Pod, n)
			for i := range pods {
				pods[i] = qtPod(fmt.Sprintf("p-%d", i), int32(i%100))
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				q := NewQueue(QueueConfig{})
				for _, p := range pods {
					q.Add(ctx, p)
				}
				for range n {
					if _, err := q.Pop(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pod")
		})
	}
}

// TestQueueCachedOrderMatchesPrioritySort checks the queue's default
// order, which compares keys cached in the entries, against the
// PrioritySort plugin's Less on the pods themselves: the same random
// adds, priority updates of queued pods and pops give the same order.
func TestQueueCachedOrderMatchesPrioritySort(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			cached := NewQueue(QueueConfig{Clock: clk})
			plugin := NewQueue(QueueConfig{Clock: clk, Less: (&plugins.PrioritySort{}).Less})
			ctx := context.Background()
			queued := map[string]*corev1.Pod{}
			var got, want []string
			for i := range 300 {
				switch op := r.IntN(10); {
				case op < 5:
					p := qtPod(fmt.Sprintf("p%d", i), int32(r.IntN(4)))
					queued[p.Name] = p
					cached.Add(ctx, p)
					plugin.Add(ctx, p)
				case op < 7 && len(queued) > 0:
					// A queued pod's priority changes (not through the API,
					// where it is immutable, but the queue must not care).
					names := slices.Sorted(maps.Keys(queued))
					old := queued[names[r.IntN(len(names))]]
					p := old.DeepCopy()
					prio := int32(r.IntN(4))
					p.Spec.Priority = &prio
					queued[p.Name] = p
					cached.Update(ctx, old, p)
					plugin.Update(ctx, old, p)
				case len(queued) > 0:
					a, b := qtPop(t, cached), qtPop(t, plugin)
					got, want = append(got, a.Pod.Name), append(want, b.Pod.Name)
					delete(queued, a.Pod.Name)
					cached.Done(a.Pod.UID)
					plugin.Done(b.Pod.UID)
				}
				clk.Step(time.Millisecond)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("cached order %v\nplugin order %v", got, want)
			}
		})
	}
}
