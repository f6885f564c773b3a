// Package servicelb is rudder's built-in load balancer for Services of
// type LoadBalancer, as k3s's ServiceLB: with no cloud to ask, a
// Service's status.loadBalancer.ingress is set to the InternalIPs of the
// cluster's Ready nodes, and every node's service proxy answers on those
// addresses (internal/proxy puts ingress IPs in its service map). A
// Service with spec.loadBalancerClass belongs to another implementation
// and is left alone; nodes labelled
// node.kubernetes.io/exclude-from-external-load-balancers are skipped.
package servicelb

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Descriptor registers the controller.
var Descriptor = controller.Descriptor{Name: "service-lb", New: newController}

const excludeLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

type reconciler struct {
	client   kubernetes.Interface
	services corelisters.ServiceLister
	nodes    corelisters.NodeLister
}

func newController(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
	svcInf := cx.Informers.Core().V1().Services()
	nodeInf := cx.Informers.Core().V1().Nodes()
	r := &reconciler{client: cx.Client, services: svcInf.Lister(), nodes: nodeInf.Lister()}
	c := controller.New("service_lb", 2, r)
	enqueue := func(obj any) {
		if s, ok := obj.(*corev1.Service); ok && (s.Spec.Type == corev1.ServiceTypeLoadBalancer || len(s.Status.LoadBalancer.Ingress) > 0) {
			c.Enqueue(s)
		}
	}
	if _, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) },
	}); err != nil {
		return nil, err
	}
	// Any node change may change every load balancer's addresses.
	all := func(any) {
		svcs, _ := r.services.List(labels.Everything())
		for _, s := range svcs {
			enqueue(s)
		}
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: all, UpdateFunc: func(o, n any) {
			if nodeAddrs(o) != nodeAddrs(n) {
				all(n)
			}
		}, DeleteFunc: all,
	}); err != nil {
		return nil, err
	}
	c.HasSynced = []cache.InformerSynced{svcInf.Informer().HasSynced, nodeInf.Informer().HasSynced}
	return []controller.Runnable{c}, nil
}

// nodeAddrs is what of a node matters here, as a comparable string.
func nodeAddrs(obj any) string {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return ""
	}
	return fmt.Sprint(usable(n), n.Status.Addresses)
}

func usable(n *corev1.Node) bool {
	if _, excluded := n.Labels[excludeLabel]; excluded || n.DeletionTimestamp != nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Ingress is the load-balancer status svc should have, given the nodes:
// the Ready nodes' InternalIPs of the service's IP families, sorted; nil
// for a Service that is not ours (not a LoadBalancer, or of a class).
func Ingress(svc *corev1.Service, nodes []*corev1.Node) []corev1.LoadBalancerIngress {
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.LoadBalancerClass != nil {
		return nil
	}
	want4, want6 := len(svc.Spec.IPFamilies) == 0, false
	for _, f := range svc.Spec.IPFamilies {
		want4 = want4 || f == corev1.IPv4Protocol
		want6 = want6 || f == corev1.IPv6Protocol
	}
	var ips []netip.Addr
	for _, n := range nodes {
		if !usable(n) {
			continue
		}
		for _, a := range n.Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			if a.Type != corev1.NodeInternalIP || err != nil || (ip.Is4() && !want4) || (ip.Is6() && !want6) || slices.Contains(ips, ip) {
				continue
			}
			ips = append(ips, ip)
		}
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	var out []corev1.LoadBalancerIngress
	for _, ip := range ips {
		out = append(out, corev1.LoadBalancerIngress{IP: ip.String(), IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)})
	}
	return out
}

func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	svc, err := r.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if svc.Spec.LoadBalancerClass != nil {
		return controller.Result{}, nil
	}
	nodes, err := r.nodes.List(labels.Everything())
	if err != nil {
		return controller.Result{}, err
	}
	want := Ingress(svc, nodes)
	if equalIngress(svc.Status.LoadBalancer.Ingress, want) {
		return controller.Result{}, nil
	}
	s := svc.DeepCopy()
	s.Status.LoadBalancer.Ingress = want
	if _, err := r.client.CoreV1().Services(ns).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, fmt.Errorf("service %s load-balancer status: %w", key, err)
	}
	return controller.Result{}, nil
}

func equalIngress(a, b []corev1.LoadBalancerIngress) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].IP != b[i].IP || a[i].Hostname != b[i].Hostname || !ptr.Equal(a[i].IPMode, b[i].IPMode) {
			return false
		}
	}
	return true
}
