package controller

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Controllers that keep an object in every namespace (the default
// ServiceAccount, the kube-root-ca.crt ConfigMap) share two rules, kept
// here so they cannot drift apart.

// ActiveNamespace reports whether the cached namespace name may receive
// new objects: it exists, is Active, and is not being deleted. A
// namespace missing from the cache is not an error (its delete event
// ends the story); only another lister failure is.
func ActiveNamespace(namespaces corelisters.NamespaceLister, name string) (bool, error) {
	ns, err := namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return ns.Status.Phase == corev1.NamespaceActive && ns.DeletionTimestamp == nil, nil
}

// IgnoreCreateRace returns nil for the errors a create into a namespace
// meets when the cache lags the API server, none of which a retry could
// fix: AlreadyExists (the object's own event will follow), NotFound (the
// namespace is gone) and the namespace having started to terminate.
// Other errors come back unchanged.
func IgnoreCreateRace(err error) error {
	if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) ||
		apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return err
}
