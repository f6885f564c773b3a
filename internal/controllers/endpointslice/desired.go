package endpointslice

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/rudder-dev/rudder/internal/serviceendpoints"
)

// The pure half of a sync, part one: from a Service, its pods and their
// nodes to the endpoints its EndpointSlices should hold, per address type
// and, within one, per set of ports (a named targetPort can resolve to
// different numbers on different pods, and a slice has one port list).

// endpointGroup is the endpoints of one address type that share one port
// list.
type endpointGroup struct {
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint // in pod order (namespace/name)
}

// desiredState maps address type -> port key -> group. Every address type
// the Service serves has an entry, even when empty.
type desiredState map[discoveryv1.AddressType]map[string]*endpointGroup

// nodeGetter returns a node by name; nil when it does not exist.
type nodeGetter func(name string) *corev1.Node

// addressTypes are the address types of a Service's slices: one per IP
// family it has. A Service written by a server that does not fill
// ipFamilies is read by its cluster IP; a headless one then gets both
// families, so no traffic is lost while the server catches up.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		var t discoveryv1.AddressType
		switch f {
		case corev1.IPv4Protocol:
			t = discoveryv1.AddressTypeIPv4
		case corev1.IPv6Protocol:
			t = discoveryv1.AddressTypeIPv6
		default:
			continue
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) > 0 {
		return out
	}
	if serviceendpoints.HasClusterIP(svc) {
		if serviceendpoints.IsIPv6(svc.Spec.ClusterIP) {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

// desiredEndpoints computes the desired state. Pods whose node is missing
// from the cache are left out, unless the Service publishes not-ready
// addresses, and named in missing so the caller can try again: a pod
// bound to a node that was deleted is removed by the pod GC, and until
// then it should not hold the whole Service back.
func desiredEndpoints(svc *corev1.Service, pods []*corev1.Pod, node nodeGetter) (want desiredState, missing []string) {
	types := addressTypes(svc)
	want = make(desiredState, len(types))
	for _, t := range types {
		want[t] = map[string]*endpointGroup{}
	}
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	for _, pod := range pods {
		if !serviceendpoints.PodInEndpoints(pod, true) {
			continue
		}
		ports := endpointPorts(svc, pod)
		key := portKey(ports)
		n := node(pod.Spec.NodeName)
		skip := n == nil && !svc.Spec.PublishNotReadyAddresses
		if skip {
			missing = append(missing, pod.Name)
		}
		for _, t := range types {
			// The group exists even when this pod adds nothing to it, as
			// upstream's does: its existing slices are then emptied (and
			// deleted) rather than left as they were.
			g := want[t][key]
			if g == nil {
				g = &endpointGroup{ports: ports}
				want[t][key] = g
			}
			if skip {
				continue
			}
			if ep := podEndpoint(svc, pod, n, t); len(ep.Addresses) > 0 {
				g.endpoints = append(g.endpoints, ep)
			}
		}
	}
	return want, missing
}

// endpointPorts resolves the Service's ports on one pod, skipping those
// the pod does not have. A headless Service may have no ports at all.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	ports := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		num, ok := serviceendpoints.FindPort(pod, sp)
		if !ok {
			continue
		}
		ports = append(ports, discoveryv1.EndpointPort{
			Name:        new(sp.Name),
			Port:        new(num),
			Protocol:    new(sp.Protocol),
			AppProtocol: sp.AppProtocol,
		})
	}
	return ports
}

// podEndpoint is the endpoint of one pod for one address type. A
// terminating pod is never "ready" (unless the Service publishes
// not-ready addresses, where everything is), but stays "serving" while
// its readiness holds, so proxies can drain to it when nothing else is
// left.
func podEndpoint(svc *corev1.Service, pod *corev1.Pod, node *corev1.Node, t discoveryv1.AddressType) discoveryv1.Endpoint {
	serving := serviceendpoints.PodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  addressesOf(pod, t),
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = new(pod.Spec.NodeName)
	}
	if node != nil {
		if z := node.Labels[corev1.LabelTopologyZone]; z != "" {
			ep.Zone = new(z)
		}
	}
	if serviceendpoints.SetsHostname(pod, svc) {
		ep.Hostname = new(pod.Spec.Hostname)
	}
	return ep
}

// addressesOf returns the pod's IPs of one family, in canonical form.
func addressesOf(pod *corev1.Pod, t discoveryv1.AddressType) []string {
	var out []string
	for _, s := range serviceendpoints.PodIPs(pod) {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		a = a.Unmap()
		if (a.Is6() && t == discoveryv1.AddressTypeIPv6) || (a.Is4() && t == discoveryv1.AddressTypeIPv4) {
			out = append(out, a.String())
		}
	}
	return out
}

// portKey identifies a port list regardless of its order.
func portKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s/%s/%d/%s", deref(p.Name), deref(p.Protocol), deref(p.Port), deref(p.AppProtocol))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// endpointKey identifies an endpoint across syncs: the pod it stands for,
// its addresses and hostname. Two endpoints with one key are the same
// endpoint, whose other fields (conditions, node, zone) may be updated
// in place.
func endpointKey(ep *discoveryv1.Endpoint) string {
	var b strings.Builder
	if r := ep.TargetRef; r != nil {
		b.WriteString(r.Namespace + "/" + r.Name)
	}
	b.WriteString("|" + deref(ep.Hostname) + "|")
	addrs := slices.Clone(ep.Addresses)
	slices.Sort(addrs)
	b.WriteString(strings.Join(addrs, ","))
	return b.String()
}

// sameEndpoint reports whether two endpoints with one key are equal in
// what this controller writes; a target reference's resourceVersion is
// ignored (a pod's annotations changing must not rewrite its slice).
func sameEndpoint(a, b *discoveryv1.Endpoint) bool {
	if deref(a.NodeName) != deref(b.NodeName) || deref(a.Zone) != deref(b.Zone) ||
		!sameBool(a.Conditions.Ready, b.Conditions.Ready) ||
		!sameBool(a.Conditions.Serving, b.Conditions.Serving) ||
		!sameBool(a.Conditions.Terminating, b.Conditions.Terminating) ||
		(a.Hints == nil) != (b.Hints == nil) || (a.DeprecatedTopology == nil) != (b.DeprecatedTopology == nil) {
		return false
	}
	ra, rb := a.TargetRef, b.TargetRef
	if (ra == nil) != (rb == nil) {
		return false
	}
	if ra != nil {
		x, y := *ra, *rb
		x.ResourceVersion, y.ResourceVersion = "", ""
		if x != y {
			return false
		}
	}
	return true
}

func sameBool(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
