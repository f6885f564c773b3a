package deployment

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCreateMakesOneReplicaSet(t *testing.T) {
	d := testDeployment("web", 3, "25%", "25%")
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "first", corev1.LastAppliedConfigAnnotation: "{}"}
	s := newSim(t, d)
	s.settle(nil)

	if len(s.rss) != 1 {
		t.Fatalf("want 1 replica set, got %s", s.describe())
	}
	rs := s.rss[0]
	hash := podTemplateHash(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash {
		t.Errorf("name = %q, want web-%s", rs.Name, hash)
	}
	for what, m := range map[string]map[string]string{
		"labels": rs.Labels, "selector": rs.Spec.Selector.MatchLabels, "template labels": rs.Spec.Template.Labels,
	} {
		if m["pod-template-hash"] != hash || m["app"] != "web" {
			t.Errorf("%s = %v, want app=web and pod-template-hash=%s", what, m, hash)
		}
	}
	wantAnn := map[string]string{RevisionAnnotation: "1", DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4", "kubernetes.io/change-cause": "first"}
	for k, v := range wantAnn {
		if rs.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	if _, ok := rs.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("last-applied-configuration was copied onto the replica set")
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" {
		t.Errorf("controller ref = %+v", ref)
	}
	if s.d.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("deployment revision = %q", s.d.Annotations[RevisionAnnotation])
	}
	st := s.d.Status
	if st.Replicas != 3 || st.UpdatedReplicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.UnavailableReplicas != 0 || st.ObservedGeneration != 1 {
		t.Errorf("status = %+v", st)
	}
	if st.TerminatingReplicas == nil || *st.TerminatingReplicas != 0 {
		t.Errorf("terminatingReplicas = %v, want 0", st.TerminatingReplicas)
	}
	if c := s.condition(appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue || c.Reason != ReasonMinimumAvailable {
		t.Errorf("Available = %+v", c)
	}
	want := fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs.Name)
	if c := s.condition(appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetAvailable || c.Message != want {
		t.Errorf("Progressing = %+v, want %s", c, want)
	}
	if !slices.Contains(s.events, fmt.Sprintf("Scaled up replica set %s from 0 to 3", rs.Name)) {
		t.Errorf("events = %q", s.events)
	}
}

// TestRollingUpdateSteps steps rollouts through the simulated cluster and
// checks upstream's guarantees at every point: never more pods than
// replicas+maxSurge, never fewer available than replicas-maxUnavailable.
func TestRollingUpdateSteps(t *testing.T) {
	cases := []struct {
		name               string
		replicas           int32
		surge, unavailable string
		maxPods, minAvail  int32
		wantSteps          []string // "new/old" spec sizes, in order (optional)
	}{
		{name: "surge 1 unavailable 0", replicas: 3, surge: "1", unavailable: "0", maxPods: 4, minAvail: 3,
			wantSteps: []string{"0/3", "1/3", "1/2", "2/2", "2/1", "3/1", "3/0"}},
		{name: "surge 0 unavailable 1", replicas: 3, surge: "0", unavailable: "1", maxPods: 3, minAvail: 2,
			wantSteps: []string{"0/3", "0/2", "1/2", "1/1", "2/1", "2/0", "3/0"}},
		{name: "default 25 percent of 10", replicas: 10, surge: "25%", unavailable: "25%", maxPods: 13, minAvail: 8},
		{name: "percent rounding 3 replicas", replicas: 3, surge: "10%", unavailable: "10%", maxPods: 4, minAvail: 3},
		{name: "surge only percent", replicas: 4, surge: "50%", unavailable: "0%", maxPods: 6, minAvail: 4},
		{name: "unavailable only percent", replicas: 4, surge: "0%", unavailable: "50%", maxPods: 4, minAvail: 2},
		{name: "both zero resolves to one unavailable", replicas: 5, surge: "0%", unavailable: "10%", maxPods: 5, minAvail: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, testDeployment("web", tc.replicas, tc.surge, tc.unavailable))
			s.settle(nil)
			oldName := s.rss[0].Name
			s.setImage("img:v2")
			var steps []string
			check := func() {
				var pods, avail int32
				for _, rs := range s.rss {
					pods += rs.Status.Replicas
					avail += rs.Status.AvailableReplicas
				}
				if pods > tc.maxPods {
					t.Fatalf("%d pods, more than %d: %s", pods, tc.maxPods, s.describe())
				}
				if avail < tc.minAvail {
					t.Fatalf("%d available, fewer than %d: %s", avail, tc.minAvail, s.describe())
				}
				step := fmt.Sprintf("%d/%d", replicasOf(s.newRS()), replicasOf(s.find(oldName)))
				if len(steps) == 0 || steps[len(steps)-1] != step {
					steps = append(steps, step)
				}
			}
			check()
			s.settle(check)
			if tc.wantSteps != nil && !slices.Equal(steps, tc.wantSteps) {
				t.Errorf("steps = %v, want %v", steps, tc.wantSteps)
			}
			newRS := s.newRS()
			if len(s.rss) != 2 || replicasOf(newRS) != tc.replicas || replicasOf(s.find(oldName)) != 0 {
				t.Fatalf("end state: %s", s.describe())
			}
			if newRS.Annotations[RevisionAnnotation] != "2" || s.find(oldName).Annotations[RevisionAnnotation] != "1" || s.d.Annotations[RevisionAnnotation] != "2" {
				t.Errorf("revisions: new %q old %q deployment %q", newRS.Annotations[RevisionAnnotation],
					s.find(oldName).Annotations[RevisionAnnotation], s.d.Annotations[RevisionAnnotation])
			}
			if c := s.condition(appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetAvailable {
				t.Errorf("Progressing = %+v", c)
			}
			if st := s.d.Status; st.UpdatedReplicas != tc.replicas || st.Replicas != tc.replicas || st.AvailableReplicas != tc.replicas {
				t.Errorf("status = %+v", st)
			}
		})
	}
}

func TestRecreate(t *testing.T) {
	t.Run("old scaled to zero before new starts", func(t *testing.T) {
		s := newSim(t, recreateDeployment("db", 3))
		s.settle(nil)
		oldName := s.rss[0].Name
		s.setImage("img:v2")
		check := func() {
			if old := s.find(oldName); old.Status.Replicas > 0 && s.newRS() != nil && replicasOf(s.newRS()) > 0 {
				t.Fatalf("new pods while old ones run: %s", s.describe())
			}
		}
		s.settle(check)
		if replicasOf(s.newRS()) != 3 || replicasOf(s.find(oldName)) != 0 {
			t.Fatalf("end state: %s", s.describe())
		}
		if !slices.Contains(s.events, fmt.Sprintf("Scaled down replica set %s from 3 to 0", oldName)) {
			t.Errorf("events = %q", s.events)
		}
	})
	t.Run("waits for old pods still running", func(t *testing.T) {
		s := newSim(t, recreateDeployment("db", 2))
		s.settle(nil)
		old := s.rss[0]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-old-1", Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(old, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		s.pods = []*corev1.Pod{pod}
		s.setImage("img:v2")
		for range 3 {
			s.sync()
			s.tick()
		}
		if s.newRS() != nil {
			t.Fatalf("new replica set created while an old pod runs: %s", s.describe())
		}
		pod.Status.Phase = corev1.PodSucceeded
		s.settle(nil)
		if nrs := s.newRS(); nrs == nil || replicasOf(nrs) != 2 {
			t.Fatalf("after the old pod finished: %s", s.describe())
		}
	})
}

// TestProportionalScaling changes spec.replicas mid-rollout: the
// difference is spread over the active replica sets by size, within
// replicas+maxSurge, as upstream does.
func TestProportionalScaling(t *testing.T) {
	cases := []struct {
		name             string
		to               int32
		wantOld, wantNew int32
		wantDesired      string
		wantMax          string
	}{
		{name: "scale up 10 to 20", to: 20, wantOld: 15, wantNew: 10, wantDesired: "20", wantMax: "25"},
		{name: "scale down 10 to 5", to: 5, wantOld: 4, wantNew: 3, wantDesired: "5", wantMax: "7"},
		{name: "scale to zero", to: 0, wantOld: 0, wantNew: 0, wantDesired: "0", wantMax: "0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, testDeployment("web", 10, "25%", "20%"))
			s.settle(nil)
			oldName := s.rss[0].Name
			// The new template never becomes available: the rollout stalls
			// with both replica sets active.
			s.neverAvailable["img:v2"] = true
			s.setImage("img:v2")
			for range 5 {
				s.sync()
				s.tick()
			}
			if o, n := replicasOf(s.find(oldName)), replicasOf(s.newRS()); o != 8 || n != 5 {
				t.Fatalf("stalled rollout: old %d new %d, want 8 and 5: %s", o, n, s.describe())
			}
			s.scale(tc.to)
			s.sync()
			old, nrs := s.find(oldName), s.newRS()
			if replicasOf(old) != tc.wantOld || replicasOf(nrs) != tc.wantNew {
				t.Fatalf("after scaling to %d: old %d new %d, want %d and %d", tc.to, replicasOf(old), replicasOf(nrs), tc.wantOld, tc.wantNew)
			}
			for _, rs := range []*appsv1.ReplicaSet{old, nrs} {
				if tc.to > 0 && (rs.Annotations[DesiredReplicasAnnotation] != tc.wantDesired || rs.Annotations[MaxReplicasAnnotation] != tc.wantMax) {
					t.Errorf("%s annotations desired=%s max=%s, want %s %s", rs.Name, rs.Annotations[DesiredReplicasAnnotation],
						rs.Annotations[MaxReplicasAnnotation], tc.wantDesired, tc.wantMax)
				}
			}
			op := "up"
			if tc.to < 10 {
				op = "down"
			}
			want := fmt.Sprintf("Scaled %s replica set %s from 8 to %d", op, oldName, tc.wantOld)
			if !slices.Contains(s.events, want) {
				t.Errorf("events = %q, want %q", s.events, want)
			}
		})
	}
}

func TestPause(t *testing.T) {
	s := newSim(t, testDeployment("web", 3, "1", "0"))
	s.settle(nil)
	oldName := s.rss[0].Name
	s.d.Spec.Paused = true
	s.d.Generation++
	s.setImage("img:v2")
	s.settle(nil)
	if len(s.rss) != 1 {
		t.Fatalf("paused deployment rolled out: %s", s.describe())
	}
	c := s.condition(appsv1.DeploymentProgressing)
	if c == nil || c.Status != corev1.ConditionUnknown || c.Reason != ReasonPaused || c.Message != "Deployment is paused" {
		t.Fatalf("Progressing = %+v", c)
	}
	// Scaling still applies while paused.
	s.scale(5)
	s.settle(nil)
	if replicasOf(s.find(oldName)) != 5 || len(s.rss) != 1 {
		t.Fatalf("scale while paused: %s", s.describe())
	}
	// Resume: the rollout proceeds and completes.
	s.d.Spec.Paused = false
	s.d.Generation++
	s.sync()
	if c := s.condition(appsv1.DeploymentProgressing); c == nil || c.Reason == ReasonPaused {
		t.Fatalf("after resume Progressing = %+v", c)
	}
	s.settle(nil)
	if replicasOf(s.newRS()) != 5 || replicasOf(s.find(oldName)) != 0 {
		t.Fatalf("after resume: %s", s.describe())
	}
	if c := s.condition(appsv1.DeploymentProgressing); c.Reason != ReasonNewReplicaSetAvailable {
		t.Fatalf("after resume Progressing = %+v", c)
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	s := newSim(t, testDeployment("web", 2, "1", "0"))
	s.d.Spec.RevisionHistoryLimit = new(int32(1))
	s.settle(nil)
	for _, img := range []string{"img:v2", "img:v3", "img:v4"} {
		s.setImage(img)
		s.settle(nil)
	}
	var got []string
	for _, rs := range s.rss {
		got = append(got, rs.Spec.Template.Spec.Containers[0].Image+"@"+rs.Annotations[RevisionAnnotation])
	}
	slices.Sort(got)
	if want := []string{"img:v3@3", "img:v4@4"}; !slices.Equal(got, want) {
		t.Fatalf("replica sets = %v, want %v", got, want)
	}
}

// TestRollback: kubectl rollout undo puts an old template back; the old
// replica set becomes the new one with the next revision, remembering
// its former one.
func TestRollback(t *testing.T) {
	s := newSim(t, testDeployment("web", 2, "1", "0"))
	s.settle(nil)
	first := s.rss[0].Name
	s.setImage("img:v2")
	s.settle(nil)
	s.setImage("img:v1")
	s.settle(nil)
	if len(s.rss) != 2 {
		t.Fatalf("rollback created a replica set: %s", s.describe())
	}
	rs := s.find(first)
	if replicasOf(rs) != 2 || rs.Annotations[RevisionAnnotation] != "3" || rs.Annotations[RevisionHistoryAnnotation] != "1" {
		t.Fatalf("rolled-back replica set: replicas %d annotations %v", replicasOf(rs), rs.Annotations)
	}
	if s.d.Annotations[RevisionAnnotation] != "3" {
		t.Errorf("deployment revision = %q", s.d.Annotations[RevisionAnnotation])
	}
}

func TestProgressDeadline(t *testing.T) {
	s := newSim(t, testDeployment("web", 2, "1", "0"))
	s.d.Spec.ProgressDeadlineSeconds = new(int32(10))
	s.settle(nil)
	s.neverAvailable["img:v2"] = true
	s.setImage("img:v2")
	plan := s.sync()
	if plan.RequeueAfter <= 0 || plan.RequeueAfter > 11*time.Second {
		t.Fatalf("RequeueAfter = %v, want about the 10s deadline", plan.RequeueAfter)
	}
	var c *appsv1.DeploymentCondition
	for range 30 {
		s.tick()
		s.sync()
		if c = s.condition(appsv1.DeploymentProgressing); c.Reason == ReasonProgressDeadline {
			break
		}
	}
	want := fmt.Sprintf("ReplicaSet %q has timed out progressing.", s.newRS().Name)
	if c.Status != corev1.ConditionFalse || c.Reason != ReasonProgressDeadline || c.Message != want {
		t.Fatalf("Progressing = %+v", c)
	}
	if elapsed := s.now.Sub(t0); elapsed < 10*time.Second {
		t.Errorf("timed out after %v, before the deadline", elapsed)
	}
	if plan := s.sync(); plan.RequeueAfter != 0 {
		t.Errorf("RequeueAfter after the timeout = %v", plan.RequeueAfter)
	}
}

func TestSelectingAll(t *testing.T) {
	d := testDeployment("web", 1, "1", "0")
	d.Spec.Selector = &metav1.LabelSelector{}
	d.Generation = 4
	plan := Compute(Input{Deployment: d, Now: t0})
	if len(plan.Writes) != 0 || plan.Status == nil || plan.Status.ObservedGeneration != 4 {
		t.Fatalf("plan = %+v", plan)
	}
	if len(plan.Events) != 1 || plan.Events[0].Reason != "SelectingAll" || !strings.Contains(plan.Events[0].Message, "selecting all pods") {
		t.Fatalf("events = %+v", plan.Events)
	}
}

// TestConvergesWithoutDuplicates replays a sync against the same
// (unchanged) state, as a restart or a stale cache would: the plan must
// not create a second replica set or scale further.
func TestConvergesWithoutDuplicates(t *testing.T) {
	s := newSim(t, testDeployment("web", 3, "1", "0"))
	s.settle(nil)
	s.setImage("img:v2")
	before := Compute(Input{Deployment: s.d, ReplicaSets: s.rss, Now: s.now})
	again := Compute(Input{Deployment: s.d, ReplicaSets: s.rss, Now: s.now})
	if len(before.Writes) != 1 || !before.Writes[0].Create || len(again.Writes) != 1 || again.Writes[0].ReplicaSet.Name != before.Writes[0].ReplicaSet.Name {
		t.Fatalf("plans differ: %+v vs %+v", before.Writes, again.Writes)
	}
	s.sync()
	// After the create is applied, a replay plans no second create.
	for _, w := range Compute(Input{Deployment: s.d, ReplicaSets: s.rss, Now: s.now}).Writes {
		if w.Create {
			t.Fatalf("second create of %s", w.ReplicaSet.Name)
		}
	}
}

// TestMinReadySeconds: the deployment's minReadySeconds is the new
// replica set's (whose controller judges availability by it); changing
// it is not a new template.
func TestMinReadySeconds(t *testing.T) {
	s := newSim(t, testDeployment("web", 2, "1", "0"))
	s.settle(nil)
	s.d.Spec.MinReadySeconds = 7
	s.d.Generation++
	plan := s.sync()
	if len(plan.Writes) != 1 || plan.Writes[0].Create || plan.Writes[0].ReplicaSet.Spec.MinReadySeconds != 7 {
		t.Fatalf("writes = %+v", plan.Writes)
	}
	if len(s.rss) != 1 {
		t.Fatalf("minReadySeconds made a new replica set: %s", s.describe())
	}
}
