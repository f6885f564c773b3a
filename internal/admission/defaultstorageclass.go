package admission

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultStorageClass gives a new PersistentVolumeClaim that names no
// class the cluster's default StorageClass, as upstream's plugin of that
// name does. The default is the class annotated
// storageclass.kubernetes.io/is-default-class=true (or the beta
// annotation); should several be, the newest wins, then the first by
// name, so that adding a new default takes over without a gap.
//
// Classes are read from a fresh list, not the possibly lagging cache
// upstream's informer would give: a class and a claim applied together
// (kubectl apply -f dir/) then always agree. Claims that need the lookup
// are rare enough for the read to cost nothing that matters.
//
// A claim "names a class" when spec.storageClassName is set, even to ""
// (which asks for no class: a pre-provisioned volume), or when it carries
// the beta volume.beta.kubernetes.io/storage-class annotation.
type DefaultStorageClass struct {
	Objects ObjectSource
}

func (DefaultStorageClass) Name() string { return "DefaultStorageClass" }

const (
	scDefaultAnnotation     = "storageclass.kubernetes.io/is-default-class"
	scBetaDefaultAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
	// scBetaClassAnnotation is the claim annotation that predates
	// spec.storageClassName and still wins over it.
	scBetaClassAnnotation = corev1.BetaStorageClassAnnotation
)

var scStorageClassesGVR = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}

// Admit implements Mutator.
func (p DefaultStorageClass) Admit(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || a.Resource.GroupResource() != pvcsResource {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	if _, ok := pvc.Annotations[scBetaClassAnnotation]; ok || pvc.Spec.StorageClassName != nil {
		return nil
	}
	def, err := scDefaultClass(ctx, p.Objects)
	if err != nil {
		return forbiddenFor(a, err)
	}
	if def != nil {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

// scDefaultClass returns the default StorageClass, nil if there is none.
func scDefaultClass(ctx context.Context, objects ObjectSource) (*storagev1.StorageClass, error) {
	objs, err := objects.ListObjects(ctx, scStorageClassesGVR, "", true)
	if err != nil {
		return nil, fmt.Errorf("failed to list StorageClasses: %w", err)
	}
	var defaults []*storagev1.StorageClass
	for _, o := range objs {
		if sc, ok := o.(*storagev1.StorageClass); ok && (sc.Annotations[scDefaultAnnotation] == "true" || sc.Annotations[scBetaDefaultAnnotation] == "true") {
			defaults = append(defaults, sc)
		}
	}
	if len(defaults) == 0 {
		return nil, nil
	}
	sort.Slice(defaults, func(i, j int) bool {
		ti, tj := defaults[i].CreationTimestamp.UnixNano(), defaults[j].CreationTimestamp.UnixNano()
		if ti == tj {
			return defaults[i].Name < defaults[j].Name
		}
		return ti > tj
	})
	return defaults[0], nil
}
