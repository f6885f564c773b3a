package deployment

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// sim is an in-memory cluster for Compute: it applies plans the way the
// API server would (uids, creation times, generations) and plays the
// ReplicaSet controller with a one-tick delay before new pods become
// available, so rollouts can be stepped through without a server.
type sim struct {
	t      *testing.T
	d      *appsv1.Deployment
	rss    []*appsv1.ReplicaSet
	pods   []*corev1.Pod
	now    time.Time
	seq    int
	events []string
	// neverAvailable marks templates (by image) whose pods never become
	// available.
	neverAvailable map[string]bool
}

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newSim(t *testing.T, d *appsv1.Deployment) *sim {
	return &sim{t: t, d: d, now: t0, neverAvailable: map[string]bool{}}
}

func testDeployment(name string, replicas int32, surge, unavailable string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge:       new(intstr.Parse(surge)),
					MaxUnavailable: new(intstr.Parse(unavailable)),
				},
			},
			RevisionHistoryLimit:    new(int32(10)),
			ProgressDeadlineSeconds: new(int32(600)),
		},
	}
	return d
}

func recreateDeployment(name string, replicas int32) *appsv1.Deployment {
	d := testDeployment(name, replicas, "0", "1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return d
}

// sync runs one Compute and applies its plan; it returns the plan.
func (s *sim) sync() Plan {
	s.t.Helper()
	plan := Compute(Input{Deployment: s.d, ReplicaSets: s.rss, Pods: s.pods, Now: s.now})
	for _, w := range plan.Writes {
		rs := w.ReplicaSet.DeepCopy()
		if w.Create {
			if s.find(rs.Name) != nil {
				s.t.Fatalf("create of existing replica set %s", rs.Name)
			}
			s.seq++
			rs.UID = types.UID(fmt.Sprintf("rs-uid-%d", s.seq))
			rs.CreationTimestamp = metav1.NewTime(s.now.Add(time.Duration(s.seq) * time.Millisecond))
			rs.Generation = 1
			s.rss = append(s.rss, rs)
		} else {
			i := s.index(rs.Name)
			if i < 0 {
				s.t.Fatalf("update of missing replica set %s", rs.Name)
			}
			if replicasOf(s.rss[i]) != replicasOf(rs) || s.rss[i].Spec.MinReadySeconds != rs.Spec.MinReadySeconds {
				rs.Generation++
			}
			s.rss[i] = rs
		}
		for _, e := range w.Events {
			s.events = append(s.events, e.Message)
		}
	}
	for _, del := range plan.Deletes {
		i := s.index(del.Name)
		if i < 0 {
			s.t.Fatalf("delete of missing replica set %s", del.Name)
		}
		s.rss = slices.Delete(s.rss, i, i+1)
	}
	if plan.Status != nil {
		s.d.Status = *plan.Status
	}
	if plan.Revision != "" {
		if s.d.Annotations == nil {
			s.d.Annotations = map[string]string{}
		}
		s.d.Annotations[RevisionAnnotation] = plan.Revision
	}
	for _, e := range plan.Events {
		s.events = append(s.events, e.Message)
	}
	return plan
}

// tick plays the ReplicaSet controller: pods follow spec at once, and a
// pod counts as available from the tick after it appeared. It reports
// whether any replica set's status changed.
func (s *sim) tick() bool {
	changed := false
	for _, rs := range s.rss {
		spec := replicasOf(rs)
		avail := min(spec, rs.Status.Replicas)
		if s.neverAvailable[rs.Spec.Template.Spec.Containers[0].Image] {
			avail = 0
		}
		st := appsv1.ReplicaSetStatus{
			Replicas: spec, ReadyReplicas: avail, AvailableReplicas: avail,
			FullyLabeledReplicas: spec, ObservedGeneration: rs.Generation,
			TerminatingReplicas: new(int32(0)),
		}
		if !apiequality.Semantic.DeepEqual(st, rs.Status) {
			changed = true
		}
		rs.Status = st
	}
	s.now = s.now.Add(time.Second)
	return changed
}

func (s *sim) index(name string) int {
	return slices.IndexFunc(s.rss, func(rs *appsv1.ReplicaSet) bool { return rs.Name == name })
}

func (s *sim) find(name string) *appsv1.ReplicaSet {
	if i := s.index(name); i >= 0 {
		return s.rss[i]
	}
	return nil
}

// newRS is the replica set of the current template (nil if none).
func (s *sim) newRS() *appsv1.ReplicaSet { return findNewReplicaSet(s.d, slices.Clone(s.rss)) }

// setTemplate changes the image, as `kubectl set image` does.
func (s *sim) setImage(image string) {
	s.d.Spec.Template.Spec.Containers[0].Image = image
	s.d.Generation++
}

func (s *sim) scale(n int32) {
	s.d.Spec.Replicas = new(n)
	s.d.Generation++
}

// settle syncs and ticks until nothing changes, up to a bound.
func (s *sim) settle(check func()) {
	s.t.Helper()
	for range 100 {
		plan := s.sync()
		if check != nil {
			check()
		}
		ticked := s.tick()
		if check != nil {
			check()
		}
		if len(plan.Writes) == 0 && len(plan.Deletes) == 0 && plan.Status == nil && plan.Revision == "" && !ticked {
			return
		}
	}
	s.t.Fatalf("did not settle in 100 steps; replica sets: %s", s.describe())
}

func (s *sim) describe() string {
	var b strings.Builder
	for _, rs := range s.rss {
		fmt.Fprintf(&b, "%s[%s] spec=%d status=%d avail=%d; ", rs.Name, rs.Spec.Template.Spec.Containers[0].Image,
			replicasOf(rs), rs.Status.Replicas, rs.Status.AvailableReplicas)
	}
	return b.String()
}

func (s *sim) condition(t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	return getCondition(&s.d.Status, t)
}
