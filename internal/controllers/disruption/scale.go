package disruption

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/restmapper"
)

// scales finds how many pods a pod's controller wants. The built-in
// controllers are read from the shared informers; any other kind is asked
// through its /scale subresource, as upstream's generic path does, so a
// custom resource that implements scale (an operator's workload, say)
// works too.
type scales struct {
	replicaSets  appslisters.ReplicaSetLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	rcs          corelisters.ReplicationControllerLister
	dynamic      dynamic.Interface
	discovery    discovery.DiscoveryInterface
	mapper       *restmapper.DeferredDiscoveryRESTMapper
}

// finder binds ctx for the API calls of the generic path.
func (s *scales) finder(ctx context.Context) scaleFinder {
	return func(ref *metav1.OwnerReference, namespace string) (*controllerScale, error) {
		for _, f := range []func(*metav1.OwnerReference, string) (*controllerScale, error){
			s.replicaSet, s.deployment, s.replicationController, s.statefulSet,
		} {
			cs, err := f(ref, namespace)
			if cs != nil || err != nil {
				return cs, err
			}
		}
		return s.generic(ctx, ref, namespace)
	}
}

// isKind reports whether ref names kind in one of groups.
func isKind(ref *metav1.OwnerReference, kind string, groups ...string) (bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false, err
	}
	if ref.Kind != kind {
		return false, nil
	}
	for _, g := range groups {
		if gv.Group == g {
			return true, nil
		}
	}
	return false, nil
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1 // the API default
	}
	return *p
}

// replicaSet is a ReplicaSet's own scale, unless a Deployment controls it
// (then the Deployment's scale is the one that counts).
func (s *scales) replicaSet(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	if ok, err := isKind(ref, "ReplicaSet", "apps", "extensions"); !ok || err != nil {
		return nil, err
	}
	rs, err := s.replicaSets.ReplicaSets(ns).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil, nil // not (or no longer) there: another finder may know
	}
	if owner := metav1.GetControllerOfNoCopy(rs); owner != nil && owner.Kind == "Deployment" {
		return nil, nil
	}
	return &controllerScale{rs.UID, replicas(rs.Spec.Replicas)}, nil
}

// deployment is the scale of the Deployment controlling the pod's
// ReplicaSet.
func (s *scales) deployment(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	if ok, err := isKind(ref, "ReplicaSet", "apps", "extensions"); !ok || err != nil {
		return nil, err
	}
	rs, err := s.replicaSets.ReplicaSets(ns).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil, nil
	}
	owner := metav1.GetControllerOfNoCopy(rs)
	if owner == nil {
		return nil, nil
	}
	if ok, err := isKind(owner, "Deployment", "apps", "extensions"); !ok || err != nil {
		return nil, err
	}
	d, err := s.deployments.Deployments(ns).Get(owner.Name)
	if err != nil || d.UID != owner.UID {
		return nil, nil
	}
	return &controllerScale{d.UID, replicas(d.Spec.Replicas)}, nil
}

func (s *scales) replicationController(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	if ok, err := isKind(ref, "ReplicationController", ""); !ok || err != nil {
		return nil, err
	}
	rc, err := s.rcs.ReplicationControllers(ns).Get(ref.Name)
	if err != nil || rc.UID != ref.UID {
		return nil, nil
	}
	return &controllerScale{rc.UID, replicas(rc.Spec.Replicas)}, nil
}

func (s *scales) statefulSet(ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	if ok, err := isKind(ref, "StatefulSet", "apps"); !ok || err != nil {
		return nil, err
	}
	ss, err := s.statefulSets.StatefulSets(ns).Get(ref.Name)
	if err != nil || ss.UID != ref.UID {
		return nil, nil
	}
	return &controllerScale{ss.UID, replicas(ss.Spec.Replicas)}, nil
}

// generic reads the /scale subresource of whatever kind ref names. A
// kind the API does not know, or one without /scale, is an error (the
// budget cannot be computed); a missing object is "no controller".
func (s *scales) generic(ctx context.Context, ref *metav1.OwnerReference, ns string) (*controllerScale, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, err
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	mapping, err := s.mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		// The kind may have been added (a CRD) since discovery was read.
		s.mapper.Reset()
		mapping, err = s.mapper.RESTMapping(gk, gv.Version)
	}
	if err != nil {
		return nil, err
	}
	gvr := mapping.Resource
	obj, err := s.dynamic.Resource(gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{}, "scale")
	if apierrors.IsNotFound(err) {
		// Either the object is gone or its kind has no /scale: discovery
		// tells which.
		ok, derr := s.implementsScale(gvr)
		if derr != nil {
			return nil, derr
		}
		if !ok {
			return nil, fmt.Errorf("%s does not implement the scale subresource", gvr.GroupResource())
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if obj.GetUID() != ref.UID {
		return nil, nil
	}
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil {
		return nil, fmt.Errorf("scale of %s %s/%s: %w", gvr.GroupResource(), ns, ref.Name, err)
	}
	if !found {
		n = 0 // omitted when zero
	}
	return &controllerScale{types.UID(obj.GetUID()), int32(n)}, nil
}

func (s *scales) implementsScale(gvr schema.GroupVersionResource) (bool, error) {
	list, err := s.discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, err
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource+"/scale" && r.Kind == "Scale" {
			return true, nil
		}
	}
	return false, nil
}
