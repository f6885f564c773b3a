package statefulset

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testSet(replicas int32, mutate ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "set-uid", Generation: 4},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         "nginx",
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "web:2"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
		},
	}
	for _, m := range mutate {
		m(set)
	}
	return set
}

func parallel(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }
func partition(n int32) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(n) }
}
func onDelete(s *appsv1.StatefulSet) {
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
}
func maxUnavailable(n int) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt(n))
	}
}
func whenScaledDelete(s *appsv1.StatefulSet) {
	s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
}

// testPod is web-<ordinal> at revision rev ("old" or "new") in state:
// ready, pending, unready, terminating, failed.
func testPod(set *appsv1.StatefulSet, ordinal int, rev, state string) *corev1.Pod {
	p := newPod(set, &set.Spec.Template, rev, ordinal)
	p.UID = types.UID(fmt.Sprintf("uid-%d-%s", ordinal, rev))
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}
	switch state {
	case "ready":
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready}}
	case "pending":
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case "unready":
		ready.Status = corev1.ConditionFalse
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready}}
	case "terminating":
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready}}
		p.DeletionTimestamp = &metav1.Time{Time: now}
	case "failed":
		p.Status = corev1.PodStatus{Phase: corev1.PodFailed}
	}
	return p
}

// pods builds the set's pods from "ordinal:rev:state" specs.
func pods(set *appsv1.StatefulSet, specs ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, s := range specs {
		var o int
		var rev, state string
		parts := strings.Split(s, ":")
		fmt.Sscan(parts[0], &o)
		rev, state = parts[1], parts[2]
		out = append(out, testPod(set, o, rev, state))
	}
	return out
}

func input(set *appsv1.StatefulSet, ps []*corev1.Pod) planInput {
	tmpl := set.Spec.Template.DeepCopy()
	old := set.Spec.Template.DeepCopy()
	old.Spec.Containers[0].Image = "web:1"
	// Every existing pod has its claim.
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, p := range ps {
		name := claimName(set, "data", ordinalOf(p))
		claims[name] = claim(name)
	}
	return planInput{
		set:     set,
		current: revision{name: "old", template: old},
		update:  revision{name: "new", template: tmpl},
		pods:    ps,
		claims:  claims,
		now:     now,
	}
}

// describe renders a plan's steps as "create web-0, delete web-2".
func describe(p plan) string {
	var parts []string
	for _, st := range p.steps() {
		parts = append(parts, st.kind.String()+" "+st.pod.Name)
	}
	return strings.Join(parts, ", ")
}

func TestPlanSync(t *testing.T) {
	cases := []struct {
		name string
		set  *appsv1.StatefulSet
		pods []string
		want string
	}{
		// OrderedReady creation: one at a time, each after its
		// predecessors are running and ready.
		{"ordered: empty set creates web-0 only", testSet(3), nil, "create web-0"},
		{"ordered: waits for web-0 to be ready", testSet(3), []string{"0:new:pending"}, ""},
		{"ordered: waits while web-0 is unready", testSet(3), []string{"0:new:unready"}, ""},
		{"ordered: web-0 ready, creates web-1", testSet(3), []string{"0:new:ready"}, "create web-1"},
		{"ordered: fills a hole before going on", testSet(3), []string{"0:new:ready", "2:new:ready"}, "create web-1"},
		{"ordered: complete set does nothing", testSet(3), []string{"0:new:ready", "1:new:ready", "2:new:ready"}, ""},
		{"ordered: ordinals.start", testSet(2, func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5} }),
			[]string{"5:new:ready"}, "create web-6"},
		{"ordered: failed pod is deleted to be recreated", testSet(3), []string{"0:new:failed"}, "delete web-0"},

		// Parallel creation: everything at once.
		{"parallel: empty set creates all", testSet(3, parallel), nil, "create web-0, create web-1, create web-2"},
		{"parallel: does not wait for unready pods", testSet(3, parallel), []string{"0:new:pending"}, "create web-1, create web-2"},

		// Scale down: highest ordinal first.
		{"ordered: scale to 1 deletes web-2 only", testSet(1), []string{"0:new:ready", "1:new:ready", "2:new:ready"}, "delete web-2"},
		{"ordered: waits for web-2 to terminate", testSet(1), []string{"0:new:ready", "1:new:ready", "2:new:terminating"}, ""},
		{"ordered: then deletes web-1", testSet(1), []string{"0:new:ready", "1:new:ready"}, "delete web-1"},
		{"ordered: no scale down while a replica is unready", testSet(1), []string{"0:new:unready", "1:new:ready"}, ""},
		{"ordered: an unhealthy condemned pod may go first", testSet(1), []string{"0:new:ready", "1:new:ready", "2:new:unready"}, "delete web-2"},
		{"ordered: a healthy pod goes though a lower one is unhealthy", testSet(1), []string{"0:new:ready", "1:new:unready", "2:new:ready"}, "delete web-2"},
		{"ordered: an unhealthy pod waits for a lower unhealthy one", testSet(1), []string{"0:new:ready", "1:new:ready", "2:new:unready", "3:new:unready"}, ""},
		{"parallel: scale to 1 deletes both", testSet(1, parallel), []string{"0:new:ready", "1:new:ready", "2:new:ready"}, "delete web-2, delete web-1"},
		{"scale to 0", testSet(0), []string{"0:new:ready"}, "delete web-0"},

		// Rolling update: highest ordinal first, one at a time.
		{"update: deletes web-2 first", testSet(3), []string{"0:old:ready", "1:old:ready", "2:old:ready"}, "delete web-2"},
		{"update: waits for the new web-2 to be ready", testSet(3), []string{"0:old:ready", "1:old:ready", "2:new:unready"}, ""},
		{"update: waits for web-2 to come back", testSet(3, parallel), []string{"0:old:ready", "1:old:ready"}, "create web-2"},
		{"update: then web-1", testSet(3), []string{"0:old:ready", "1:old:ready", "2:new:ready"}, "delete web-1"},
		{"update: then web-0", testSet(3), []string{"0:old:ready", "1:new:ready", "2:new:ready"}, "delete web-0"},
		{"update: partition 2 updates web-2", testSet(3, partition(2)), []string{"0:old:ready", "1:old:ready", "2:old:ready"}, "delete web-2"},
		{"update: partition 2 stops there", testSet(3, partition(2)), []string{"0:old:ready", "1:old:ready", "2:new:ready"}, ""},
		{"update: partition beyond replicas updates nothing", testSet(3, partition(5)), []string{"0:old:ready", "1:old:ready", "2:old:ready"}, ""},
		{"update: below the partition a lost pod comes back old", testSet(3, partition(2)), []string{"1:old:ready", "2:new:ready"}, "create web-0"},
		{"update: OnDelete leaves old pods", testSet(3, onDelete), []string{"0:old:ready", "1:old:ready", "2:old:ready"}, ""},
		{"update: maxUnavailable 2 deletes two", testSet(3, parallel, maxUnavailable(2)), []string{"0:old:ready", "1:old:ready", "2:old:ready"}, "delete web-2, delete web-1"},
		{"update: maxUnavailable counts unavailable pods", testSet(3, parallel, maxUnavailable(2)), []string{"0:old:ready", "1:old:ready", "2:new:unready"}, "delete web-1"},
		{"update: scale down comes before update", testSet(2), []string{"0:old:ready", "1:old:ready", "2:old:ready"}, "delete web-2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planSync(input(c.set, pods(c.set, c.pods...)))
			if got := describe(p); got != c.want {
				t.Fatalf("plan %q, want %q (waiting: %s)", got, c.want, p.waiting)
			}
		})
	}
}

func TestCreatedPodIdentity(t *testing.T) {
	set := testSet(3, func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, {Name: "cfg"}}
	})
	p := planSync(input(set, nil))
	steps := p.steps()
	if len(steps) != 1 || steps[0].kind != stepCreate {
		t.Fatalf("steps %s", describe(p))
	}
	pod := steps[0].pod
	if pod.Name != "web-0" || pod.Spec.Hostname != "web-0" || pod.Spec.Subdomain != "nginx" ||
		pod.Labels[appsv1.StatefulSetPodNameLabel] != "web-0" || pod.Labels[appsv1.PodIndexLabel] != "0" ||
		pod.Labels[appsv1.StatefulSetRevisionLabel] != "new" || pod.Labels["app"] != "web" {
		t.Fatalf("identity: %+v %+v", pod.ObjectMeta, pod.Spec)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != "set-uid" || ref.Kind != "StatefulSet" {
		t.Fatalf("owner %+v", pod.OwnerReferences)
	}
	// The claim template's volume replaces the template's own "data".
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-0" || pod.Spec.Volumes[1].Name != "cfg" {
		t.Fatalf("volumes %+v", pod.Spec.Volumes)
	}
	if len(steps[0].claims) != 1 || steps[0].claims[0].Name != "data-web-0" || steps[0].claims[0].Labels["app"] != "web" ||
		len(steps[0].claims[0].OwnerReferences) != 0 {
		t.Fatalf("claims %+v", steps[0].claims)
	}
}

func claim(name string, refs ...metav1.OwnerReference) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", OwnerReferences: refs}}
}

func TestRetention(t *testing.T) {
	t.Run("whenScaled=Delete: condemned claims go with their pods", func(t *testing.T) {
		set := testSet(1, whenScaledDelete)
		in := input(set, pods(set, "0:new:ready", "1:new:ready"))
		in.claims["data-web-0"] = claim("data-web-0")
		in.claims["data-web-1"] = claim("data-web-1")
		p := planSync(in)
		if got := describe(p); got != "claim-owners web-1, delete web-1" {
			t.Fatalf("plan %q", got)
		}
		c := p.steps()[0].claims[0]
		if ref := metav1.GetControllerOf(c); c.Name != "data-web-1" || ref == nil || ref.Kind != "Pod" || ref.Name != "web-1" || ref.UID != "uid-1-new" {
			t.Fatalf("claim %s owners %+v", c.Name, c.OwnerReferences)
		}
	})
	t.Run("whenDeleted=Delete: claims are the set's", func(t *testing.T) {
		set := testSet(1, func(s *appsv1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: deletePolicy, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			}
		})
		p := planSync(input(set, nil))
		st := p.steps()[0]
		if ref := metav1.GetControllerOf(st.claims[0]); ref == nil || ref.UID != "set-uid" {
			t.Fatalf("new claim owners %+v", st.claims[0].OwnerReferences)
		}
		// An existing claim without the reference gets it.
		in := input(set, pods(set, "0:new:ready"))
		in.claims["data-web-0"] = claim("data-web-0")
		if got := describe(planSync(in)); got != "claim-owners web-0" {
			t.Fatalf("plan %q", got)
		}
	})
	t.Run("retain: our references are removed", func(t *testing.T) {
		set := testSet(1)
		in := input(set, pods(set, "0:new:ready"))
		in.claims["data-web-0"] = claim("data-web-0", *metav1.NewControllerRef(set, setKind))
		if got := describe(planSync(in)); got != "claim-owners web-0" {
			t.Fatalf("plan %q", got)
		}
	})
	t.Run("a claim another controller owns is left alone", func(t *testing.T) {
		set := testSet(1, whenScaledDelete)
		in := input(set, pods(set, "0:new:ready", "1:new:ready"))
		in.claims["data-web-1"] = claim("data-web-1", metav1.OwnerReference{APIVersion: "v1", Kind: "Thing", Name: "x", UID: "other", Controller: ptr.To(true)})
		if got := describe(planSync(in)); got != "delete web-1" {
			t.Fatalf("plan %q", got)
		}
	})
	t.Run("a stale claim of an earlier pod holds the new pod back", func(t *testing.T) {
		set := testSet(3, whenScaledDelete)
		in := input(set, pods(set, "0:new:ready"))
		in.claims["data-web-1"] = claim("data-web-1", metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "gone", Controller: ptr.To(true)})
		p := planSync(in)
		if got := describe(p); got != "" || !strings.Contains(p.waiting, "stale claim data-web-1") {
			t.Fatalf("plan %q waiting %q", got, p.waiting)
		}
	})
	t.Run("a claim being deleted holds the new pod back", func(t *testing.T) {
		set := testSet(3)
		in := input(set, nil)
		in.claims["data-web-0"] = claim("data-web-0")
		in.claims["data-web-0"].DeletionTimestamp = &metav1.Time{Time: now}
		if got := describe(planSync(in)); got != "" {
			t.Fatalf("plan %q", got)
		}
	})
}

func TestStatus(t *testing.T) {
	cases := []struct {
		name string
		set  *appsv1.StatefulSet
		pods []string
		want appsv1.StatefulSetStatus
	}{
		{"rolling update in progress", testSet(3), []string{"0:old:ready", "1:old:ready", "2:new:unready"},
			appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 1, CurrentRevision: "old", UpdateRevision: "new"}},
		{"complete: the update revision becomes current", testSet(3), []string{"0:new:ready", "1:new:ready", "2:new:ready"},
			appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "new", UpdateRevision: "new"}},
		{"partitioned: never complete", testSet(3, partition(2)), []string{"0:old:ready", "1:old:ready", "2:new:ready"},
			appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, CurrentReplicas: 2, UpdatedReplicas: 1, CurrentRevision: "old", UpdateRevision: "new"}},
		{"terminating pods are replicas of no revision", testSet(3), []string{"0:new:ready", "1:new:terminating"},
			appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 1, CurrentRevision: "old", UpdateRevision: "new"}},
		{"minReadySeconds: ready is not yet available", testSet(2, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 120 }), []string{"0:old:ready"},
			appsv1.StatefulSetStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 0, CurrentReplicas: 1, CurrentRevision: "old", UpdateRevision: "new"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := input(c.set, pods(c.set, c.pods...))
			in.collisionCount = 2
			got := planSync(in).status
			c.want.ObservedGeneration = 4
			c.want.CollisionCount = ptr.To[int32](2)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("status\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestMinReadySeconds(t *testing.T) {
	set := testSet(2, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 120 })
	p := planSync(input(set, pods(set, "0:new:ready")))
	// Ready a minute ago, available after two: web-1 waits a minute.
	if describe(p) != "" || !strings.Contains(p.waiting, "available") {
		t.Fatalf("plan %q waiting %q", describe(p), p.waiting)
	}
	if p.requeue < 59*time.Second || p.requeue > 61*time.Second {
		t.Fatalf("requeue %v, want about 1m", p.requeue)
	}
	set.Spec.MinReadySeconds = 30
	if got := describe(planSync(input(set, pods(set, "0:new:ready")))); got != "create web-1" {
		t.Fatalf("plan %q", got)
	}
}

func TestPendingPodGetsMissingClaims(t *testing.T) {
	set := testSet(3)
	in := input(set, pods(set, "0:new:ready", "1:new:pending"))
	delete(in.claims, "data-web-1")
	p := planSync(in)
	if got := describe(p); got != "create-claims web-1" || p.steps()[0].claims[0].Name != "data-web-1" {
		t.Fatalf("plan %q", got)
	}
}

func TestStatusOnlyAndDeleting(t *testing.T) {
	set := testSet(3)
	in := input(set, nil)
	in.statusOnly = true
	if got := describe(planSync(in)); got != "" {
		t.Fatalf("status-only plan acted: %q", got)
	}
	set.DeletionTimestamp = &metav1.Time{Time: now}
	if got := describe(planSync(input(set, nil))); got != "" {
		t.Fatalf("a set being deleted acted: %q", got)
	}
}

func TestParentAndOrdinal(t *testing.T) {
	cases := []struct {
		name, parent string
		ordinal      int
	}{
		{"web-0", "web", 0},
		{"my-web-12", "my-web", 12},
		{"web", "", -1},
		{"web-x", "", -1},
		{"web-99999999999", "", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, o := parentAndOrdinal(c.name)
			if p != c.parent || o != c.ordinal {
				t.Fatalf("got %q %d", p, o)
			}
		})
	}
}
