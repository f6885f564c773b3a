package nodelifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// noScheduleTainter keeps each node's NoSchedule condition taints in
// step with its conditions (TaintNodesByCondition). It is a plain work
// queue of node names: these taints only keep new pods away, so they
// need no rate limit and follow every change at once.
type noScheduleTainter struct {
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	clock  clock.Clock
}

func newNoScheduleTainter(cx *controller.Context, workers int) (*controller.Controller, error) {
	nodeInf := cx.Informers.Core().V1().Nodes()
	r := &noScheduleTainter{client: cx.Client, nodes: nodeInf.Lister(), clock: cx.ClockOrReal()}
	c := controller.New("nodelifecycle-noschedule", workers, r)
	c.HasSynced = []cache.InformerSynced{nodeInf.Informer().HasSynced}
	// Every node is looked at once when the informer lists it; after
	// that only changes that move these taints count (lease-only and
	// heartbeat-only updates are most of a node's traffic).
	_, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.Enqueue,
		UpdateFunc: func(o, n any) {
			on, ok1 := o.(*corev1.Node)
			nn, ok2 := n.(*corev1.Node)
			if !ok1 || !ok2 || noScheduleInputsChanged(on, nn) {
				c.Enqueue(n)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("node handler: %w", err)
	}
	return c, nil
}

// Reconcile brings one node's NoSchedule taints in line.
func (r *noScheduleTainter) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	node, err := r.nodes.Get(key)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	now := r.clock.Now()
	err = writeTaints(ctx, r.client, node, func(n *corev1.Node) ([]corev1.Taint, bool) {
		return noScheduleTaints(n, now)
	})
	if err != nil {
		return controller.Result{}, fmt.Errorf("NoSchedule taints: %w", err)
	}
	return controller.Result{}, nil
}

// noScheduleInputsChanged reports whether anything the NoSchedule taints
// depend on differs: condition statuses, spec.unschedulable, the taints.
func noScheduleInputsChanged(a, b *corev1.Node) bool {
	if a.Spec.Unschedulable != b.Spec.Unschedulable || len(a.Spec.Taints) != len(b.Spec.Taints) ||
		len(a.Status.Conditions) != len(b.Status.Conditions) {
		return true
	}
	for i := range a.Spec.Taints {
		if !a.Spec.Taints[i].MatchTaint(&b.Spec.Taints[i]) {
			return true
		}
	}
	for i := range a.Status.Conditions {
		ca, cb := a.Status.Conditions[i], b.Status.Conditions[i]
		if ca.Type != cb.Type || ca.Status != cb.Status {
			return true
		}
	}
	return false
}
