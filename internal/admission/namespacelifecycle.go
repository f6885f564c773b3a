package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NamespaceGetter finds a namespace. The API server backs it with its watch
// cache, falling back to a live read on a miss (the cache may lag a
// namespace created a moment ago). It returns nil, nil when the namespace
// does not exist.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// NamespaceLifecycle keeps objects out of namespaces that do not exist or
// are being deleted, and keeps the system namespaces from being deleted.
type NamespaceLifecycle struct {
	Namespaces NamespaceGetter
	// Immortal namespaces cannot be deleted: default, kube-system, kube-public.
	Immortal []string
}

func (NamespaceLifecycle) Name() string { return "NamespaceLifecycle" }

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// Validate implements Validator.
func (p NamespaceLifecycle) Validate(ctx context.Context, a *Attributes) error {
	if a.Resource.Group == "" && a.Resource.Resource == "namespaces" {
		if a.Operation == Delete {
			for _, n := range p.Immortal {
				if a.Name == n {
					return apierrors.NewForbidden(namespacesResource, a.Name, fmt.Errorf("this namespace may not be deleted"))
				}
			}
		}
		return nil
	}
	if a.Namespace == "" || a.Operation != Create {
		// Updates and deletes inside a terminating namespace must go on, or
		// its finalization could never finish.
		return nil
	}
	// Reviews are not stored; upstream lets them through everywhere.
	if a.Resource.Group == "authorization.k8s.io" || a.Resource.Group == "authentication.k8s.io" {
		return nil
	}
	ns, err := p.Namespaces.GetNamespace(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if ns == nil {
		return apierrors.NewNotFound(namespacesResource, a.Namespace)
	}
	if ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil {
		err := apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
		return err
	}
	return nil
}
