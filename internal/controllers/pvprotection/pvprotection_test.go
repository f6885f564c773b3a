package pvprotection_test

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
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/pvcprotection"
	"github.com/rudder-dev/rudder/internal/controllers/pvprotection"
)

func newPV(name string, finalizers ...string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}},
		},
	}
}

func createPV(t *testing.T, cs kubernetes.Interface, pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	t.Helper()
	out, err := cs.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bind makes pv Bound to claim ns/data, as the volume binder would.
func bind(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	setPhase(t, cs, name, corev1.VolumeBound, &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "data"})
}

// setPhase sets pv's claimRef (left alone when nil) and phase.
func setPhase(t *testing.T, cs kubernetes.Interface, name string, phase corev1.PersistentVolumePhase, claim *corev1.ObjectReference) {
	t.Helper()
	ctx := context.Background()
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim != nil {
		pv.Spec.ClaimRef = claim
		if pv, err = cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pv.Status.Phase = phase
	if _, err := cs.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deletePV(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if err := cs.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pvState is "gone", "terminating" or "live" (with its finalizers).
func pvState(cs kubernetes.Interface, name string) (string, []string) {
	pv, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "gone", nil
	case err != nil:
		return err.Error(), nil
	case pv.DeletionTimestamp != nil:
		return "terminating", pv.Finalizers
	}
	return "live", pv.Finalizers
}

func waitPV(t *testing.T, cs kubernetes.Interface, name, want string) {
	t.Helper()
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		got, fin := pvState(cs, name)
		return got == want, fmt.Sprintf("volume %s %s, want %s (finalizers %v)", name, got, want, fin)
	})
}

func stillTerminating(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	controllertest.Consistently(t, time.Second, func() (bool, string) {
		got, _ := pvState(cs, name)
		return got == "terminating", "volume " + name + " " + got + " while bound"
	})
}

func TestVolumeProtection(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	cs := c.Client
	controllertest.Run(t, c.Config, pvprotection.Descriptor)

	t.Run("finalizer added to a volume created without it", func(t *testing.T) {
		createPV(t, cs, newPV("old"))
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			_, fin := pvState(cs, "old")
			return slices.Contains(fin, pvprotection.Finalizer), fmt.Sprintf("finalizers %v", fin)
		})
	})
	t.Run("unbound volume goes at once", func(t *testing.T) {
		createPV(t, cs, newPV("spare", pvprotection.Finalizer))
		deletePV(t, cs, "spare")
		waitPV(t, cs, "spare", "gone")
	})
	t.Run("bound volume waits until released", func(t *testing.T) {
		createPV(t, cs, newPV("data", pvprotection.Finalizer))
		bind(t, cs, "data")
		deletePV(t, cs, "data")
		stillTerminating(t, cs, "data")
		setPhase(t, cs, "data", corev1.VolumeReleased, nil)
		waitPV(t, cs, "data", "gone")
	})
	t.Run("other finalizers stay", func(t *testing.T) {
		createPV(t, cs, newPV("shared", "example.com/keep", pvprotection.Finalizer))
		deletePV(t, cs, "shared")
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			got, fin := pvState(cs, "shared")
			return got == "terminating" && slices.Equal(fin, []string{"example.com/keep"}), fmt.Sprintf("volume %s, finalizers %v", got, fin)
		})
		pv, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv.Finalizers = nil
		if _, err := cs.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPV(t, cs, "shared", "gone")
	})
}

// TestVolumeRestart: a volume released while the controller was down
// goes once it runs again.
func TestVolumeRestart(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	cs := c.Client
	stop := controllertest.Run(t, c.Config, pvprotection.Descriptor)
	createPV(t, cs, newPV("data", pvprotection.Finalizer))
	bind(t, cs, "data")
	deletePV(t, cs, "data")
	stillTerminating(t, cs, "data")
	stop()

	setPhase(t, cs, "data", corev1.VolumeReleased, nil)
	createPV(t, cs, newPV("spare", pvprotection.Finalizer))
	deletePV(t, cs, "spare")
	controllertest.Consistently(t, time.Second, func() (bool, string) {
		a, _ := pvState(cs, "data")
		b, _ := pvState(cs, "spare")
		return a == "terminating" && b == "terminating", "volumes data " + a + ", spare " + b + " with no controller running"
	})

	controllertest.Run(t, c.Config, pvprotection.Descriptor)
	waitPV(t, cs, "data", "gone")
	waitPV(t, cs, "spare", "gone")
}

// TestServerTurnsThePluginOn runs the controllers in the server, as
// `rudder server` does: StorageObjectInUseProtection is then on, so new
// claims and volumes carry the finalizers from their creation, and
// unused ones still go when deleted. With either controller off the
// plugin is off too, or claims or volumes could never go.
func TestServerTurnsThePluginOn(t *testing.T) {
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	for _, tc := range []struct {
		name        string
		controllers []string
		protected   bool
	}{
		{"both controllers", []string{pvcprotection.Name, pvprotection.Name}, true},
		{"only pvc-protection", []string{pvcprotection.Name}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, clustertest.Options{Controllers: tc.controllers})
			cs := c.Client
			pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pv := createPV(t, cs, newPV("vol"))
			if got := slices.Contains(pvc.Finalizers, pvcprotection.Finalizer); got != tc.protected {
				t.Errorf("created claim's finalizers %v, want the protection finalizer: %v", pvc.Finalizers, tc.protected)
			}
			if got := slices.Contains(pv.Finalizers, pvprotection.Finalizer); got != tc.protected {
				t.Errorf("created volume's finalizers %v, want the protection finalizer: %v", pv.Finalizers, tc.protected)
			}
			if !tc.protected {
				return
			}
			if err := cs.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			deletePV(t, cs, "vol")
			controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
				_, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprintf("claim not gone: %v", err)
			})
			waitPV(t, cs, "vol", "gone")
		})
	}
}
