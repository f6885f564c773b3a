// Package clusterroleaggregation keeps aggregated ClusterRoles up to date,
// as kube-controller-manager's "clusterrole-aggregation" controller does.
// A ClusterRole with an aggregationRule owns no rules of its own: its
// rules are the union of the rules of every ClusterRole its selectors
// match. That is how a CRD's operator extends the built-in admin, edit and
// view roles: it ships a role labelled
// rbac.authorization.k8s.io/aggregate-to-view: "true" (or -edit, -admin),
// and everyone bound to view may read the new kind.
//
// The rules are computed by aggregate, a pure function of the role and
// all ClusterRoles: for each selector in order, the matching roles sorted
// by name (the role itself excluded), their rules appended in order, a
// rule equal to one already taken skipped. Any ClusterRole event enqueues
// every aggregated role (a label or rule change anywhere may change any
// of them); each is then written only when its rules differ. Aggregated
// roles that select aggregated roles (admin ← edit ← view) settle in as
// many passes as the chain is long, each write's own event driving the
// next.
//
// Usage, through the controller manager:
//
//	runnables, err := clusterroleaggregation.Descriptor.New(ctx, cx)
package clusterroleaggregation

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/controller"
)

// Descriptor is the controller, under upstream's name.
var Descriptor = controller.Descriptor{
	Name: "clusterrole-aggregation",
	New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		return newController(cx)
	},
}

type reconciler struct {
	client kubernetes.Interface
	roles  rbaclisters.ClusterRoleLister
}

func newController(cx *controller.Context) ([]controller.Runnable, error) {
	inf := cx.Informers.Rbac().V1().ClusterRoles()
	r := &reconciler{client: cx.Client, roles: inf.Lister()}
	c := controller.New("clusterrole_aggregation", 2, r)
	enqueueAggregated := func(interface{}) {
		roles, err := r.roles.List(labels.Everything())
		if err != nil {
			return
		}
		for _, role := range roles {
			if role.AggregationRule != nil {
				c.EnqueueKey(role.Name)
			}
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueAggregated,
		UpdateFunc: func(_, n interface{}) { enqueueAggregated(n) },
		DeleteFunc: enqueueAggregated,
	}); err != nil {
		return nil, err
	}
	c.HasSynced = []cache.InformerSynced{inf.Informer().HasSynced}
	return []controller.Runnable{c}, nil
}

// Reconcile brings the aggregated ClusterRole named key's rules up to date.
func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	role, err := r.roles.Get(key)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil || role.AggregationRule == nil {
		return controller.Result{}, err
	}
	all, err := r.roles.List(labels.Everything())
	if err != nil {
		return controller.Result{}, err
	}
	rules, err := auth.AggregatedRules(role, all)
	if err != nil {
		// A selector that does not parse cannot be fixed by retrying.
		return controller.Result{}, nil
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return controller.Result{}, nil
	}
	next := role.DeepCopy()
	next.Rules = rules
	if _, err := r.client.RbacV1().ClusterRoles().Update(ctx, next, metav1.UpdateOptions{FieldManager: "clusterrole-aggregation-controller"}); err != nil {
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, fmt.Errorf("update clusterrole %s: %w", key, err)
	}
	return controller.Result{}, nil
}
