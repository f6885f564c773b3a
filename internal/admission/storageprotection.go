package admission

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// StorageObjectInUseProtection puts a finalizer on every new
// PersistentVolumeClaim (kubernetes.io/pvc-protection) and
// PersistentVolume (kubernetes.io/pv-protection), as upstream's plugin of
// that name does. The pvc-protection and pv-protection controllers remove
// them once no pod uses the claim and no claim is bound to the volume, so
// deleting storage that is in use waits instead of pulling it from under
// a running pod.
//
// Without those controllers the finalizers would never go and every
// claim and volume would hang in deletion, so the plugin is only built
// when Deps.StorageProtectionControllers says something removes them.
type StorageObjectInUseProtection struct{}

func (StorageObjectInUseProtection) Name() string { return "StorageObjectInUseProtection" }

const (
	spPVCFinalizer = "kubernetes.io/pvc-protection"
	spPVFinalizer  = "kubernetes.io/pv-protection"
)

var spPVsResource = schema.GroupResource{Resource: "persistentvolumes"}

// Admit implements Mutator.
func (StorageObjectInUseProtection) Admit(_ context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" {
		return nil
	}
	switch a.Resource.GroupResource() {
	case pvcsResource:
		if pvc, ok := a.Object.(*corev1.PersistentVolumeClaim); ok && !slices.Contains(pvc.Finalizers, spPVCFinalizer) {
			pvc.Finalizers = append(pvc.Finalizers, spPVCFinalizer)
		}
	case spPVsResource:
		if pv, ok := a.Object.(*corev1.PersistentVolume); ok && !slices.Contains(pv.Finalizers, spPVFinalizer) {
			pv.Finalizers = append(pv.Finalizers, spPVFinalizer)
		}
	}
	return nil
}
