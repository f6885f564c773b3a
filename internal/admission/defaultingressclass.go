package admission

import (
	"context"
	"fmt"
	"sort"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultIngressClass gives a new Ingress that names no class the
// cluster's default IngressClass, as upstream's plugin of that name does:
// the class annotated ingressclass.kubernetes.io/is-default-class=true,
// the newest (then the first by name) should several be. An Ingress names
// a class with spec.ingressClassName or the older
// kubernetes.io/ingress.class annotation; either one leaves it alone.
// Like DefaultStorageClass it reads the classes fresh, so a class and an
// Ingress applied together agree.
type DefaultIngressClass struct {
	Objects ObjectSource
}

func (DefaultIngressClass) Name() string { return "DefaultIngressClass" }

const icLegacyClassAnnotation = "kubernetes.io/ingress.class"

var (
	icIngressesResource = schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}
	icIngressClassesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}
)

// Admit implements Mutator.
func (p DefaultIngressClass) Admit(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || a.Resource.GroupResource() != icIngressesResource {
		return nil
	}
	ing, ok := a.Object.(*networkingv1.Ingress)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("Expected Ingress resource, got: %v", a.Kind))
	}
	if ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.Annotations[icLegacyClassAnnotation]; ok {
		return nil
	}
	objs, err := p.Objects.ListObjects(ctx, icIngressClassesGVR, "", true)
	if err != nil {
		return forbiddenFor(a, fmt.Errorf("failed to list IngressClasses: %w", err))
	}
	var defaults []*networkingv1.IngressClass
	for _, o := range objs {
		if c, ok := o.(*networkingv1.IngressClass); ok && c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
			defaults = append(defaults, c)
		}
	}
	if len(defaults) == 0 {
		return nil
	}
	sort.Slice(defaults, func(i, j int) bool {
		ti, tj := defaults[i].CreationTimestamp.UnixNano(), defaults[j].CreationTimestamp.UnixNano()
		if ti == tj {
			return defaults[i].Name < defaults[j].Name
		}
		return ti > tj
	})
	name := defaults[0].Name
	ing.Spec.IngressClassName = &name
	return nil
}
