package endpoints

import (
	"cmp"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/serviceendpoints"
)

// The pure half of a sync: from a Service and its pods to the subsets of
// its Endpoints object.

// MaxAddresses is how many addresses (ready and not) one Endpoints object
// holds; beyond it the object is truncated and annotated
// endpoints.kubernetes.io/over-capacity=truncated. EndpointSlices have
// no such limit.
const MaxAddresses = 1000

// desiredSubsets returns the Service's subsets in canonical form
// (repackSubsets). A pod is in when it has an IP of the Service's first
// family and has not finished; a terminating pod only when the Service
// publishes not-ready addresses. It is listed once per service port it
// has (a named targetPort is resolved on each pod), under addresses when
// ready (or when the Service publishes not-ready addresses), else under
// notReadyAddresses. A headless Service without ports lists its pods
// with no ports.
func desiredSubsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	var flat []corev1.EndpointSubset
	publish := svc.Spec.PublishNotReadyAddresses
	for _, pod := range pods {
		if !serviceendpoints.PodInEndpoints(pod, publish) {
			continue
		}
		addr, ok := podAddress(svc, pod)
		if !ok {
			continue
		}
		one := func(ports []corev1.EndpointPort) corev1.EndpointSubset {
			if publish || serviceendpoints.PodReady(pod) {
				return corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{addr}, Ports: ports}
			}
			return corev1.EndpointSubset{NotReadyAddresses: []corev1.EndpointAddress{addr}, Ports: ports}
		}
		if len(svc.Spec.Ports) == 0 {
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				flat = append(flat, one(nil))
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			num, ok := serviceendpoints.FindPort(pod, sp)
			if !ok {
				continue
			}
			flat = append(flat, one([]corev1.EndpointPort{{
				Name: sp.Name, Port: num, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol,
			}}))
		}
	}
	return repackSubsets(flat)
}

// podAddress is the pod's address for the Service: its IP of the
// Service's primary family. A Service from a server that does not fill
// ipFamilies is read by its cluster IP, or for a headless one by the
// pod's own IP.
func podAddress(svc *corev1.Service, pod *corev1.Pod) (corev1.EndpointAddress, bool) {
	var v6 bool
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		v6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	case serviceendpoints.HasClusterIP(svc):
		v6 = serviceendpoints.IsIPv6(svc.Spec.ClusterIP)
	default:
		v6 = serviceendpoints.IsIPv6(pod.Status.PodIP)
	}
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	for _, ip := range ips {
		if serviceendpoints.IsIPv6(ip.IP) != v6 {
			continue
		}
		a := corev1.EndpointAddress{
			IP:        ip.IP,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.NodeName != "" {
			a.NodeName = new(pod.Spec.NodeName)
		}
		if serviceendpoints.SetsHostname(pod, svc) {
			a.Hostname = pod.Spec.Hostname
		}
		return a, true
	}
	return corev1.EndpointAddress{}, false
}

// addrKey tells addresses apart: by IP and, since two pods may share an
// IP (host network), by the pod's UID.
type addrKey struct {
	ip  string
	uid types.UID
}

func keyOf(a *corev1.EndpointAddress) addrKey {
	k := addrKey{ip: a.IP}
	if a.TargetRef != nil {
		k.uid = a.TargetRef.UID
	}
	return k
}

// noPorts stands for "no ports" where a port is a map key.
var noPorts = corev1.EndpointPort{Port: -1}

// repackSubsets rewrites subsets in the one canonical layout, so equal
// endpoints always compare equal: every set of addresses offering the
// same ports is one subset; an address listed both ready and not ready
// for a port is not ready; addresses sort by IP then pod UID, ports by
// name, number and protocol, and subsets by their first port.
func repackSubsets(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	addrs := map[addrKey]corev1.EndpointAddress{}
	byPort := map[corev1.EndpointPort]map[addrKey]bool{} // port -> address -> ready
	note := func(a *corev1.EndpointAddress, port corev1.EndpointPort, ready bool) {
		k := keyOf(a)
		if _, ok := addrs[k]; !ok {
			addrs[k] = *a
		}
		m := byPort[port]
		if m == nil {
			m = map[addrKey]bool{}
			byPort[port] = m
		}
		if was, ok := m[k]; !ok || was {
			m[k] = ready
		}
	}
	for i := range subsets {
		ss := &subsets[i]
		ports := ss.Ports
		if len(ports) == 0 {
			ports = []corev1.EndpointPort{noPorts}
		}
		for _, p := range ports {
			for j := range ss.Addresses {
				note(&ss.Addresses[j], p, true)
			}
			for j := range ss.NotReadyAddresses {
				note(&ss.NotReadyAddresses[j], p, false)
			}
		}
	}

	// Ports whose address sets are equal (with readiness) share a subset.
	type group struct {
		members map[addrKey]bool
		ports   []corev1.EndpointPort
	}
	groups := map[string]*group{}
	for port, members := range byPort {
		sig := signature(members)
		g := groups[sig]
		if g == nil {
			g = &group{members: members}
			groups[sig] = g
		}
		if port != noPorts {
			g.ports = append(g.ports, port)
		}
	}
	out := make([]corev1.EndpointSubset, 0, len(groups))
	for _, g := range groups {
		var ss corev1.EndpointSubset
		for k, ready := range g.members {
			if ready {
				ss.Addresses = append(ss.Addresses, addrs[k])
			} else {
				ss.NotReadyAddresses = append(ss.NotReadyAddresses, addrs[k])
			}
		}
		slices.SortFunc(ss.Addresses, compareAddress)
		slices.SortFunc(ss.NotReadyAddresses, compareAddress)
		slices.SortFunc(g.ports, comparePort)
		ss.Ports = g.ports
		out = append(out, ss)
	}
	slices.SortFunc(out, func(a, b corev1.EndpointSubset) int {
		switch {
		case len(a.Ports) == 0 || len(b.Ports) == 0:
			return cmp.Compare(len(a.Ports), len(b.Ports))
		}
		return comparePort(a.Ports[0], b.Ports[0])
	})
	return out
}

// signature names a set of addresses with their readiness.
func signature(members map[addrKey]bool) string {
	parts := make([]string, 0, len(members))
	for k, ready := range members {
		r := "n"
		if ready {
			r = "r"
		}
		parts = append(parts, k.ip+"/"+string(k.uid)+"/"+r)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func compareAddress(a, b corev1.EndpointAddress) int {
	return cmp.Or(cmp.Compare(a.IP, b.IP), cmp.Compare(keyOf(&a).uid, keyOf(&b).uid))
}

func comparePort(a, b corev1.EndpointPort) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
}

// countAddresses counts the addresses of subsets, ready and not.
func countAddresses(subsets []corev1.EndpointSubset) (ready, notReady int) {
	for _, ss := range subsets {
		ready += len(ss.Addresses)
		notReady += len(ss.NotReadyAddresses)
	}
	return ready, notReady
}

// truncate cuts subsets down to MaxAddresses and reports whether it had
// to. Ready addresses are kept before not-ready ones; the room left is
// shared among subsets in proportion to their size (rounded up, so the
// last subsets may get a little less). A subset left with no address is
// dropped (the API refuses one).
func truncate(subsets []corev1.EndpointSubset) ([]corev1.EndpointSubset, bool) {
	ready, notReady := countAddresses(subsets)
	if ready+notReady <= MaxAddresses {
		return subsets, false
	}
	cutReady := ready > MaxAddresses
	room, total := MaxAddresses-ready, notReady
	if cutReady {
		room, total = MaxAddresses, ready
	}
	left := room
	for i := range subsets {
		ss := &subsets[i]
		n := len(ss.NotReadyAddresses)
		if cutReady {
			n = len(ss.Addresses)
		}
		share := min(int(math.Ceil(float64(n)/float64(total)*float64(room))), left)
		if cutReady {
			ss.Addresses = ss.Addresses[:min(share, len(ss.Addresses))]
			ss.NotReadyAddresses = nil
			left -= len(ss.Addresses)
		} else {
			ss.NotReadyAddresses = ss.NotReadyAddresses[:min(share, len(ss.NotReadyAddresses))]
			left -= len(ss.NotReadyAddresses)
		}
	}
	return slices.DeleteFunc(subsets, func(ss corev1.EndpointSubset) bool {
		return len(ss.Addresses)+len(ss.NotReadyAddresses) == 0
	}), true
}

// sameSubsets compares subsets ignoring the pods' resourceVersions in
// target references (a pod's annotations changing must not rewrite its
// Endpoints).
func sameSubsets(a, b []corev1.EndpointSubset) bool {
	return subsetEquality.DeepEqual(a, b)
}

// subsetEquality is apimachinery's semantic equality (nil and empty
// slices equal) with target references compared without resourceVersion.
var subsetEquality = conversion.EqualitiesOrDie(func(a, b corev1.ObjectReference) bool {
	a.ResourceVersion, b.ResourceVersion = "", ""
	return a == b
})
