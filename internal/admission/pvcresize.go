package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// PersistentVolumeClaimResize guards volume expansion, as upstream's
// plugin of that name does: an update that grows
// spec.resources.requests.storage is allowed only for a bound claim whose
// class (the same before and after, and not "") has
// allowVolumeExpansion: true. Shrinking and other changes are left to
// validation, which refuses them on its own terms.
type PersistentVolumeClaimResize struct {
	Objects ObjectSource
}

func (PersistentVolumeClaimResize) Name() string { return "PersistentVolumeClaimResize" }

// Validate implements Validator.
func (p PersistentVolumeClaimResize) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Update || a.Subresource != "" || a.Resource.GroupResource() != pvcsResource {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	old, ok := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		return forbiddenFor(a, errors.New("Only bound persistent volume claims can be expanded"))
	}
	allowed, err := p.classAllowsExpansion(ctx, pvcClassOf(pvc), pvcClassOf(old))
	if err != nil {
		return err
	}
	if !allowed {
		return forbiddenFor(a, errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

func (p PersistentVolumeClaimResize) classAllowsExpansion(ctx context.Context, class, oldClass string) (bool, error) {
	if class == "" || class != oldClass {
		return false, nil
	}
	obj, err := p.Objects.GetObject(ctx, scStorageClassesGVR, "", class)
	if err != nil {
		return false, fmt.Errorf("failed to get StorageClass %s: %w", class, err)
	}
	sc, ok := obj.(*storagev1.StorageClass)
	return ok && sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion, nil
}

// pvcClassOf is the class a claim asks for: the beta annotation, which
// predates the field, wins over spec.storageClassName.
func pvcClassOf(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[scBetaClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}
