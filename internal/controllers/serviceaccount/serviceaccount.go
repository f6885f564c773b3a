// Package serviceaccount is the ServiceAccounts controller: it keeps a
// ServiceAccount named "default" in every active namespace, as
// kube-controller-manager's "serviceaccount" controller does. Pods that
// name no service account run as "default", and admission rejects a pod
// whose service account does not exist, so a namespace without it cannot
// run pods until the controller puts it back.
//
// The work is keyed by namespace name. A namespace being added or updated
// enqueues it, and so does the deletion of its "default" ServiceAccount.
// One sync reads both from the informers and creates the account when the
// namespace is Active and the account is missing. A namespace that is
// Terminating is left alone: its content is being removed by the namespace
// controller, and the API server refuses new objects in it anyway (that
// refusal, and AlreadyExists from a racing create, are not errors).
//
// Usage, through the controller manager:
//
//	runnables, err := serviceaccount.Descriptor.New(ctx, cx)
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/controller"
)

// DefaultName is the ServiceAccount every active namespace gets.
const DefaultName = "default"

// Descriptor registers the controller under upstream's name.
var Descriptor = controller.Descriptor{Name: "serviceaccount", New: newController}

type reconciler struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
}

func newController(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
	nsInf := cx.Informers.Core().V1().Namespaces()
	saInf := cx.Informers.Core().V1().ServiceAccounts()
	r := &reconciler{client: cx.Client, namespaces: nsInf.Lister(), accounts: saInf.Lister()}
	// Upstream runs one worker: a sync is one cache read and at most one
	// create.
	c := controller.New("serviceaccount", 1, r)

	if _, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.Enqueue,
		UpdateFunc: func(_, n interface{}) { c.Enqueue(n) },
	}); err != nil {
		return nil, err
	}
	if _, err := saInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if sa, ok := controller.ObjectOf[*corev1.ServiceAccount](obj); ok && sa.Name == DefaultName {
				c.EnqueueKey(sa.Namespace)
			}
		},
	}); err != nil {
		return nil, err
	}
	c.HasSynced = []cache.InformerSynced{nsInf.Informer().HasSynced, saInf.Informer().HasSynced}
	return []controller.Runnable{c}, nil
}

// Reconcile ensures the default ServiceAccount in the namespace named key.
func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	if active, err := controller.ActiveNamespace(r.namespaces, key); !active {
		return controller.Result{}, err
	}
	switch _, err := r.accounts.ServiceAccounts(key).Get(DefaultName); {
	case err == nil:
		return controller.Result{}, nil
	case !apierrors.IsNotFound(err):
		return controller.Result{}, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: key}}
	_, err := r.client.CoreV1().ServiceAccounts(key).Create(ctx, sa, metav1.CreateOptions{})
	// Lost races (the account exists, the namespace went away or
	// started terminating after our cache saw it) need nothing.
	if err = controller.IgnoreCreateRace(err); err == nil {
		return controller.Result{}, nil
	}
	return controller.Result{}, fmt.Errorf("create service account %s/%s: %w", key, DefaultName, err)
}
