package replicaset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/replicaset"
)

// startManager runs the controllers of this package (the RC one only if
// the server serves RCs) as the manager does, as an API client with cfg's
// credentials. stop cancels it and waits until it has returned (also done
// at the end of the test).
func startManager(t *testing.T, cfg *rest.Config, descriptors ...controller.Descriptor) (stop func()) {
	t.Helper()
	if len(descriptors) == 0 {
		descriptors = []controller.Descriptor{replicaset.Descriptor}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if served(t, cs, "v1", "replicationcontrollers") {
			descriptors = append(descriptors, replicaset.RCDescriptor)
		}
	}
	return controllertest.RunManager(t, cfg, descriptors...)
}

func newRS(name string, n int32) *appsv1.ReplicaSet {
	sel := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "web"}},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "c", Image: "registry.example/web:1"}},
					TerminationGracePeriodSeconds: ptr.To(int64(1)),
				},
			},
		},
	}
}

// ownedPods lists the active pods in ns controlled by uid.
func ownedPods(t *testing.T, client kubernetes.Interface, ns string, uid types.UID) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid && podActive(&p) {
			out = append(out, p)
		}
	}
	return out
}

// waitRS waits until the ReplicaSet's status satisfies cond.
func waitRS(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, cond func(*appsv1.ReplicaSet) bool) *appsv1.ReplicaSet {
	t.Helper()
	var rs *appsv1.ReplicaSet
	controllertest.Eventually(t, timeout, func() (bool, string) {
		var err error
		rs, err = client.AppsV1().ReplicaSets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(rs), fmt.Sprintf("spec.replicas %d generation %d status %+v terminating %d", *rs.Spec.Replicas, rs.Generation, rs.Status, ptr.Deref(rs.Status.TerminatingReplicas, -1))
	})
	return rs
}

// settled: the status reports n replicas, all ready, for the current
// generation.
func settled(n int32) func(*appsv1.ReplicaSet) bool {
	return func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ObservedGeneration == rs.Generation && rs.Status.Replicas == n && rs.Status.ReadyReplicas == n
	}
}

func scaleRS(t *testing.T, client kubernetes.Interface, ns, name string, n int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if _, err := client.AppsV1().ReplicaSets(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// served reports whether the API server serves resource in groupVersion.
func served(t *testing.T, client kubernetes.Interface, groupVersion, resource string) bool {
	t.Helper()
	list, err := client.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// podActive: the pod counts as a replica (not terminating, not finished).
func podActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}
