package deployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPodTemplateHash(t *testing.T) {
	tmpl := testDeployment("web", 1, "1", "0").Spec.Template
	// A fixed value: the same template must get the same name in every
	// process and release. (The new replica set is found by template, not
	// name, but a changed hash would make a restarted controller try a
	// second name for a template whose replica set it has not yet seen.)
	const golden = "67bfd6f68f"
	if got := podTemplateHash(&tmpl, nil); got != golden {
		t.Errorf("hash = %q, want %q", got, golden)
	}
	if podTemplateHash(&tmpl, nil) != podTemplateHash(tmpl.DeepCopy(), nil) {
		t.Error("hash not deterministic")
	}
	if podTemplateHash(&tmpl, new(int32(1))) == podTemplateHash(&tmpl, nil) {
		t.Error("collisionCount does not change the hash")
	}
	other := tmpl.DeepCopy()
	other.Spec.Containers[0].Image = "img:v2"
	if podTemplateHash(other, nil) == podTemplateHash(&tmpl, nil) {
		t.Error("different templates, same hash")
	}
}

func TestResolveFenceposts(t *testing.T) {
	cases := []struct {
		name               string
		surge, unavailable string
		desired            int32
		wantS, wantU       int32
	}{
		{"both zero percent", "0%", "0%", 0, 0, 1},
		{"39 percent of 10", "39%", "39%", 10, 4, 3},
		{"surge rounds up", "1%", "0", 10, 1, 0},
		{"unavailable rounds down to zero then one", "0", "1%", 10, 0, 1},
		{"absolute", "2", "3", 10, 2, 3},
		{"hundred percent", "100%", "100%", 5, 5, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, u := resolveFenceposts(new(intstr.Parse(tc.surge)), new(intstr.Parse(tc.unavailable)), tc.desired)
			if s != tc.wantS || u != tc.wantU {
				t.Errorf("got surge %d unavailable %d, want %d %d", s, u, tc.wantS, tc.wantU)
			}
		})
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	a := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x", "pod-template-hash": "abc"}}}
	b := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}}
	c := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "y"}}}
	if !equalIgnoreHash(&a, &b) {
		t.Error("templates differing only in the hash label compare unequal")
	}
	if equalIgnoreHash(&a, &c) {
		t.Error("different labels compare equal")
	}
	if _, ok := a.Labels["pod-template-hash"]; !ok {
		t.Error("equalIgnoreHash modified its argument")
	}
}

func TestRevisionHistoryAnnotation(t *testing.T) {
	d := testDeployment("web", 1, "1", "0")
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{RevisionAnnotation: "2", RevisionHistoryAnnotation: "1"}}}
	if !setNewReplicaSetAnnotations(d, rs, "5", true) {
		t.Fatal("no change reported")
	}
	if rs.Annotations[RevisionAnnotation] != "5" || rs.Annotations[RevisionHistoryAnnotation] != "1,2" {
		t.Fatalf("annotations = %v", rs.Annotations)
	}
	// A lower revision never lowers the replica set's.
	if setNewReplicaSetAnnotations(d, rs, "3", true) {
		t.Fatalf("lower revision changed annotations: %v", rs.Annotations)
	}
}
