package statefulset_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// newSet is an OrderedReady set "web" with a claim template "data".
func newSet(replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": "web"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: "nginx",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "web", Image: "registry.example/web:1"}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

func waitSet(t *testing.T, client kubernetes.Interface, ns string, timeout time.Duration, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	t.Helper()
	var set *appsv1.StatefulSet
	controllertest.Eventually(t, timeout, func() (bool, string) {
		var err error
		set, err = client.AppsV1().StatefulSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(set), fmt.Sprintf("generation %d status %+v", set.Generation, set.Status)
	})
	return set
}

// rolledOut: the status reports n ready pods at one revision for the
// current generation.
func rolledOut(n int32) func(*appsv1.StatefulSet) bool {
	return func(s *appsv1.StatefulSet) bool {
		st := s.Status
		return st.ObservedGeneration == s.Generation && st.Replicas == n && st.ReadyReplicas == n && st.UpdatedReplicas == n &&
			st.CurrentRevision == st.UpdateRevision && st.CurrentRevision != ""
	}
}

func patchSet(t *testing.T, client kubernetes.Interface, ns, patch string) {
	t.Helper()
	if _, err := client.AppsV1().StatefulSets(ns).Patch(context.Background(), "web", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podsByName lists ns's pods that are not terminating.
func podsByName(t *testing.T, client kubernetes.Interface, ns string) map[string]corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

func claimNames(t *testing.T, client kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := client.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}
