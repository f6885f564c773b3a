package pvcprotection_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/pvcprotection"
)

// The clusters here run no StorageObjectInUseProtection (clustertest
// turns every controller, and so the plugin, off): a claim is protected
// from the start by creating it with the finalizer, as the plugin would.

func newClaim(ns, name string, finalizers ...string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// claimPod is a pod on node mounting claim (no node: unscheduled).
func claimPod(ns, name, node, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
}

func create(t *testing.T, cs kubernetes.Interface, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	if _, err := cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deleteClaim(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// claimState is "gone", "terminating" or "live" (with its finalizers).
func claimState(cs kubernetes.Interface, ns, name string) (string, []string) {
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "gone", nil
	case err != nil:
		return err.Error(), nil
	case pvc.DeletionTimestamp != nil:
		return "terminating", pvc.Finalizers
	}
	return "live", pvc.Finalizers
}

func waitClaim(t *testing.T, cs kubernetes.Interface, ns, name, want string) {
	t.Helper()
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		got, fin := claimState(cs, ns, name)
		return got == want, fmt.Sprintf("claim %s %s, want %s (finalizers %v)", name, got, want, fin)
	})
}

func stillTerminating(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	controllertest.Consistently(t, time.Second, func() (bool, string) {
		got, _ := claimState(cs, ns, name)
		return got == "terminating", "claim " + name + " " + got + " while a pod uses it"
	})
}

func deletePod(t *testing.T, cs kubernetes.Interface, ns, name string, grace *int64) {
	t.Helper()
	if err := cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
		t.Fatal(err)
	}
}

func waitPodRunning(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, "pod " + name + " " + string(p.Status.Phase)
	})
}

func TestClaimProtection(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 1})
	cs := c.Client
	ns := controllertest.CreateNamespace(t, cs, "claims")
	controllertest.Run(t, c.Config, pvcprotection.Descriptor)

	t.Run("finalizer added to a claim created without it", func(t *testing.T) {
		create(t, cs, newClaim(ns, "old"))
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			_, fin := claimState(cs, ns, "old")
			return slices.Contains(fin, pvcprotection.Finalizer), "finalizer not added"
		})
	})
	t.Run("unused claim goes at once", func(t *testing.T) {
		create(t, cs, newClaim(ns, "unused", pvcprotection.Finalizer))
		deleteClaim(t, cs, ns, "unused")
		waitClaim(t, cs, ns, "unused", "gone")
	})
	t.Run("claim used by a running pod waits for the pod", func(t *testing.T) {
		create(t, cs, newClaim(ns, "data", pvcprotection.Finalizer))
		controllertest.CreatePod(t, cs, claimPod(ns, "db", "sim-0", "data"))
		waitPodRunning(t, cs, ns, "db")
		deleteClaim(t, cs, ns, "data")
		stillTerminating(t, cs, ns, "data")
		// A graceful delete: the simulated kubelet confirms it.
		deletePod(t, cs, ns, "db", nil)
		waitClaim(t, cs, ns, "data", "gone")
	})
	t.Run("unscheduled pod does not hold its claim", func(t *testing.T) {
		create(t, cs, newClaim(ns, "pending", pvcprotection.Finalizer))
		controllertest.CreatePod(t, cs, claimPod(ns, "waiting", "", "pending"))
		deleteClaim(t, cs, ns, "pending")
		waitClaim(t, cs, ns, "pending", "gone")
	})
	t.Run("finished pod holds its claim until deleted", func(t *testing.T) {
		create(t, cs, newClaim(ns, "results", pvcprotection.Finalizer))
		// On a node nobody runs, so the phase set here stays.
		p := controllertest.CreatePod(t, cs, claimPod(ns, "job", "no-such-node", "results"))
		p.Status.Phase = corev1.PodSucceeded
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleteClaim(t, cs, ns, "results")
		stillTerminating(t, cs, ns, "results")
		deletePod(t, cs, ns, "job", ptr.To[int64](0))
		waitClaim(t, cs, ns, "results", "gone")
	})
	t.Run("ephemeral claim held by its pod only", func(t *testing.T) {
		p := controllertest.CreatePod(t, cs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scratchy"},
			Spec: corev1.PodSpec{
				NodeName:   "no-such-node",
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
				Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
					VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: newClaim("", "").Spec}}}}},
			},
		})
		// The claim the ephemeral volume controller would make, owned
		// by the pod.
		owned := newClaim(ns, "scratchy-tmp", pvcprotection.Finalizer)
		owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true)}}
		create(t, cs, owned)
		deleteClaim(t, cs, ns, "scratchy-tmp")
		stillTerminating(t, cs, ns, "scratchy-tmp")
		// A force delete: the pod is done with its volumes.
		deletePod(t, cs, ns, "scratchy", ptr.To[int64](0))
		waitClaim(t, cs, ns, "scratchy-tmp", "gone")
	})
}

// TestRestart shows the controller is level-based: what happened while
// it was not running is found and finished when it starts again.
func TestRestart(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 1})
	cs := c.Client
	ns := controllertest.CreateNamespace(t, cs, "restart")
	stop := controllertest.Run(t, c.Config, pvcprotection.Descriptor)

	create(t, cs, newClaim(ns, "data", pvcprotection.Finalizer))
	controllertest.CreatePod(t, cs, claimPod(ns, "db", "sim-0", "data"))
	waitPodRunning(t, cs, ns, "db")
	deleteClaim(t, cs, ns, "data")
	stillTerminating(t, cs, ns, "data")
	stop()

	// While it is down: the pod goes, another claim is deleted unused,
	// a third is created unprotected. Nothing removes the finalizers.
	deletePod(t, cs, ns, "db", nil)
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		_, err := cs.CoreV1().Pods(ns).Get(context.Background(), "db", metav1.GetOptions{})
		return apierrors.IsNotFound(err), "pod db not gone"
	})
	create(t, cs, newClaim(ns, "spare", pvcprotection.Finalizer))
	deleteClaim(t, cs, ns, "spare")
	create(t, cs, newClaim(ns, "late"))
	controllertest.Consistently(t, time.Second, func() (bool, string) {
		a, _ := claimState(cs, ns, "data")
		b, _ := claimState(cs, ns, "spare")
		return a == "terminating" && b == "terminating", "claims data " + a + ", spare " + b + " with no controller running"
	})

	controllertest.Run(t, c.Config, pvcprotection.Descriptor)
	waitClaim(t, cs, ns, "data", "gone")
	waitClaim(t, cs, ns, "spare", "gone")
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		_, fin := claimState(cs, ns, "late")
		return slices.Contains(fin, pvcprotection.Finalizer), "finalizer not added to claim late"
	})
}

// TestLiveCheck hides a pod from the controller's informers, as a cache
// that has not caught up would: the claim it uses must still be kept,
// because the controller lists pods from the API server before it lets
// a claim go.
func TestLiveCheck(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	cs := c.Client
	ns := controllertest.CreateNamespace(t, cs, "live")
	cx := controllertest.NewContext(t, c.Config)
	cx.Informers = informers.NewSharedInformerFactoryWithOptions(cx.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("metadata.name", "hidden").String()
		}))
	controllertest.RunContext(t, cx, pvcprotection.Descriptor)

	create(t, cs, newClaim(ns, "data", pvcprotection.Finalizer))
	controllertest.CreatePod(t, cs, claimPod(ns, "hidden", "no-such-node", "data"))
	deleteClaim(t, cs, ns, "data")
	stillTerminating(t, cs, ns, "data")
	// The pod's deletion is not seen either; the claim is looked at again
	// when it next changes.
	deletePod(t, cs, ns, "hidden", ptr.To[int64](0))
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Labels = map[string]string{"touched": "yes"}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Update(context.Background(), pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, cs, ns, "data", "gone")
}
