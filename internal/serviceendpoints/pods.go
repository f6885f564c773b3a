package serviceendpoints

import (
	"fmt"
	"log/slog"
	"net/netip"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/rudder-dev/rudder/internal/controller"
)

// PodInEndpoints reports whether pod may appear in a Service's endpoints:
// it has an IP and has not finished (Succeeded or Failed pods never come
// back). A terminating pod (deletionTimestamp set) is kept only when
// includeTerminating: EndpointSlices keep it with the terminating
// condition, Endpoints only for Services that publish not-ready
// addresses.
func PodInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyTransition is when the pod's Ready condition last changed; zero
// without one.
func readyTransition(pod *corev1.Pod) time.Time {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// FindPort resolves a service port's targetPort on one pod. A number is
// taken as it is; a name is looked up among the ports of the pod's
// containers, then of its sidecars (init containers that keep running),
// with the service port's protocol. ok is false when the pod has no port
// of that name: the pod is then left out for that service port only.
func FindPort(pod *corev1.Pod, sp *corev1.ServicePort) (port int32, ok bool) {
	if sp.TargetPort.Type == intstr.Int {
		return sp.TargetPort.IntVal, true
	}
	name := sp.TargetPort.StrVal
	find := func(cs []corev1.Container, sidecarsOnly bool) (int32, bool) {
		for i := range cs {
			c := &cs[i]
			if sidecarsOnly && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, true
				}
			}
		}
		return 0, false
	}
	if p, ok := find(pod.Spec.Containers, false); ok {
		return p, true
	}
	return find(pod.Spec.InitContainers, true)
}

// SetsHostname reports whether the pod's spec.hostname is published with
// its address: the pod names the Service as its subdomain, in the
// Service's namespace (how pods of a headless Service get DNS names of
// their own).
func SetsHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace
}

// HasClusterIP reports whether the Service has a virtual IP; a Service
// without one is headless.
func HasClusterIP(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// PodIPs are the pod's addresses; status.podIP alone when the list is
// empty (a writer that filled only the singular field).
func PodIPs(pod *corev1.Pod) []string {
	if len(pod.Status.PodIPs) == 0 {
		if pod.Status.PodIP == "" {
			return nil
		}
		return []string{pod.Status.PodIP}
	}
	ips := make([]string, len(pod.Status.PodIPs))
	for i, ip := range pod.Status.PodIPs {
		ips[i] = ip.IP
	}
	return ips
}

// IsIPv6 reports whether s is an IPv6 address (false for anything that
// does not parse).
func IsIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6()
}

// PodFromObject returns the pod an informer event carries, unwrapping a
// tombstone; nil for anything else.
func PodFromObject(obj interface{}) *corev1.Pod {
	pod, _ := controller.ObjectOf[*corev1.Pod](obj)
	return pod
}

// ServicesForPodEvent returns the keys ("namespace/name") of the Services
// whose endpoints may have changed with a pod event: old is nil for an
// add, cur nil for a delete. An update matters only when it changed what
// endpoints show (deletion, readiness, IPs) or which Services select the
// pod (labels, hostname, subdomain); when only the labels changed, the
// Services that select both the old and the new pod are left alone.
func ServicesForPodEvent(services corelisters.ServiceLister, old, cur *corev1.Pod, log *slog.Logger) []string {
	switch {
	case old == nil && cur == nil:
		return nil
	case old == nil:
		return servicesSelecting(services, cur.Namespace, cur.Labels, log)
	case cur == nil:
		return servicesSelecting(services, old.Namespace, old.Labels, log)
	case old.ResourceVersion == cur.ResourceVersion:
		// A resync: the Service informer's own resync covers it.
		return nil
	}
	changed, membership := podEndpointsChanged(old, cur)
	if !changed && !membership {
		return nil
	}
	now := servicesSelecting(services, cur.Namespace, cur.Labels, log)
	if !membership {
		return now
	}
	before := servicesSelecting(services, old.Namespace, old.Labels, log)
	if changed {
		return union(now, before)
	}
	return symmetricDifference(now, before)
}

// podEndpointsChanged tells whether an update changed the pod's endpoint
// (changed) or may have changed which Services it belongs to
// (membership). Name, namespace and UID never change, and the node is set
// before the pod has an IP, so they need no look.
func podEndpointsChanged(old, cur *corev1.Pod) (changed, membership bool) {
	membership = !reflect.DeepEqual(old.Labels, cur.Labels) ||
		old.Spec.Hostname != cur.Spec.Hostname || old.Spec.Subdomain != cur.Spec.Subdomain
	changed = !old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		PodReady(old) != PodReady(cur) ||
		!slices.Equal(PodIPs(old), PodIPs(cur)) ||
		isTerminal(old) != isTerminal(cur)
	return changed, membership
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// servicesSelecting lists the Services of namespace whose selector
// matches podLabels. A Service without a selector selects nothing (its
// endpoints are written by someone else), never everything.
func servicesSelecting(services corelisters.ServiceLister, namespace string, podLabels map[string]string, log *slog.Logger) []string {
	list, err := services.Services(namespace).List(labels.Everything())
	if err != nil {
		log.Error("list services", "namespace", namespace, "err", err)
		return nil
	}
	var keys []string
	set := labels.Set(podLabels)
	for _, svc := range list {
		if svc.Spec.Selector == nil {
			continue
		}
		if labels.ValidatedSetSelector(svc.Spec.Selector).Matches(set) {
			keys = append(keys, svc.Namespace+"/"+svc.Name)
		}
	}
	return keys
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, k := range b {
		if !slices.Contains(a, k) {
			out = append(out, k)
		}
	}
	return out
}

func symmetricDifference(a, b []string) []string {
	var out []string
	for _, k := range a {
		if !slices.Contains(b, k) {
			out = append(out, k)
		}
	}
	for _, k := range b {
		if !slices.Contains(a, k) {
			out = append(out, k)
		}
	}
	return out
}

// ServiceKey is the work queue key of a Service.
func ServiceKey(namespace, name string) string { return fmt.Sprintf("%s/%s", namespace, name) }
