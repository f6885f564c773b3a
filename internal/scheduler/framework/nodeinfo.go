package framework

import (
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

var generation atomic.Int64

// NextGeneration returns a cluster-wide increasing number; every change to
// a NodeInfo takes a new one, so a snapshot copies only what changed.
func NextGeneration() int64 { return generation.Add(1) }

// NodeInfo aggregates a node and the pods on it (bound or assumed).
// It is owned by the scheduler cache; plugins see snapshot copies and must
// not modify them, except the copies preemption makes.
type NodeInfo struct {
	node *corev1.Node
	// name, unschedulable and taints copy the node's (SetNode): every
	// cycle reads them for hundreds of nodes, and the Node object's
	// fields lie on cache lines of their own.
	name          string
	unschedulable bool
	taints        []corev1.Taint
	// zone and hostname are the well-known topology labels, which
	// spreading and affinity look up for every node (see Label).
	zone, hostname       string
	hasZone, hasHostname bool

	// Requested, NonZeroRequested and Allocatable point at these, inside
	// the NodeInfo itself: the Filter and Score loops read them for every
	// node of every cycle, and one allocation keeps them on the same few
	// cache lines as the rest of the NodeInfo instead of three more.
	requested, nonZeroRequested, allocatable Resource

	Pods                         []*PodInfo
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	// UsedPorts are the host ports taken on the node (nil when none).
	UsedPorts HostPortInfo
	// Requested sums the pods' requests; NonZeroRequested with scoring
	// defaults. Allocatable is the node's.
	Requested        *Resource
	NonZeroRequested *Resource
	Allocatable      *Resource
	// ImageStates maps each image name the node reports to its size and
	// how many nodes have it (filled by the cache).
	ImageStates map[string]*ImageState
	// PVCRefCounts counts pods using each "namespace/claim" (nil when
	// none).
	PVCRefCounts map[string]int
	// Generation changes on every modification.
	Generation int64
}

// ImageState is one image on a node.
type ImageState struct {
	Size     int64
	NumNodes int
}

// NewNodeInfo returns an empty NodeInfo with the given pods.
func NewNodeInfo(pods ...*corev1.Pod) *NodeInfo {
	n := &NodeInfo{Generation: NextGeneration()}
	n.Requested, n.NonZeroRequested, n.Allocatable = &n.requested, &n.nonZeroRequested, &n.allocatable
	for _, p := range pods {
		n.AddPod(NewPodInfo(p))
	}
	return n
}

// Node returns the node, nil if only pods are known so far.
func (n *NodeInfo) Node() *corev1.Node { return n.node }

// Name is the node's name ("" without a node).
func (n *NodeInfo) Name() string { return n.name }

// Unschedulable is the node's spec.unschedulable (false without a node).
func (n *NodeInfo) Unschedulable() bool { return n.unschedulable }

// Label looks up one of the node's labels (none without a node). The
// zone and hostname labels are answered from the NodeInfo itself, without
// touching the Node object's label map.
func (n *NodeInfo) Label(key string) (string, bool) {
	switch key {
	case corev1.LabelTopologyZone:
		return n.zone, n.hasZone
	case corev1.LabelHostname:
		return n.hostname, n.hasHostname
	}
	if n.node == nil {
		return "", false
	}
	v, ok := n.node.Labels[key]
	return v, ok
}

// Taints are the node's spec.taints (nil without a node); read-only.
func (n *NodeInfo) Taints() []corev1.Taint { return n.taints }

// SetNode sets the node object and its allocatable.
func (n *NodeInfo) SetNode(node *corev1.Node) {
	n.node = node
	n.name, n.unschedulable, n.taints = node.Name, node.Spec.Unschedulable, node.Spec.Taints
	n.zone, n.hasZone = node.Labels[corev1.LabelTopologyZone]
	n.hostname, n.hasHostname = node.Labels[corev1.LabelHostname]
	n.allocatable = Resource{}
	n.allocatable.Add(node.Status.Allocatable)
	n.Allocatable = &n.allocatable
	n.Generation = NextGeneration()
}

// RemoveNode forgets the node object, keeping its pods.
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.name, n.unschedulable, n.taints = "", false, nil
	n.zone, n.hasZone, n.hostname, n.hasHostname = "", false, "", false
	n.Generation = NextGeneration()
}

// AddPod accounts a pod on the node.
func (n *NodeInfo) AddPod(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0 {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, 1)
}

// RemovePod removes a pod by UID. It returns an error if the pod is not
// on the node.
func (n *NodeInfo) RemovePod(pod *corev1.Pod) error {
	uid := pod.UID
	n.PodsWithAffinity = removeByUID(n.PodsWithAffinity, uid)
	n.PodsWithRequiredAntiAffinity = removeByUID(n.PodsWithRequiredAntiAffinity, uid)
	for i, p := range n.Pods {
		if p.Pod.UID == uid {
			last := len(n.Pods) - 1
			n.Pods[i] = n.Pods[last]
			n.Pods[last] = nil
			n.Pods = n.Pods[:last]
			n.update(p, -1)
			return nil
		}
	}
	return fmt.Errorf("pod %s/%s not found on node %q", pod.Namespace, pod.Name, n.Name())
}

func removeByUID(list []*PodInfo, uid types.UID) []*PodInfo {
	for i, p := range list {
		if p.Pod.UID == uid {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			return list[:last]
		}
	}
	return list
}

func (n *NodeInfo) update(pi *PodInfo, sign int) {
	if sign > 0 {
		n.Requested.AddResource(pi.Requests)
		n.NonZeroRequested.AddResource(pi.NonZeroRequests)
	} else {
		n.Requested.SubResource(pi.Requests)
		n.NonZeroRequested.SubResource(pi.NonZeroRequests)
	}
	pod := pi.Pod
	// Sidecars (restartable init containers) hold their ports for the
	// pod's life, like app containers.
	for _, c := range podPortContainers(pod) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			if sign > 0 {
				if n.UsedPorts == nil {
					n.UsedPorts = HostPortInfo{}
				}
				n.UsedPorts.Add(p.HostIP, string(p.Protocol), p.HostPort)
			} else {
				n.UsedPorts.Remove(p.HostIP, string(p.Protocol), p.HostPort)
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		key := pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		if n.PVCRefCounts == nil {
			n.PVCRefCounts = map[string]int{}
		}
		n.PVCRefCounts[key] += sign
		if n.PVCRefCounts[key] <= 0 {
			delete(n.PVCRefCounts, key)
		}
	}
	n.Generation = NextGeneration()
}

// Clone returns a copy whose pod lists and aggregates can be changed
// without touching n (the PodInfos themselves are shared, immutable).
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		node:          n.node,
		name:          n.name,
		unschedulable: n.unschedulable,
		taints:        n.taints,
		zone:          n.zone,
		hasZone:       n.hasZone,
		hostname:      n.hostname,
		hasHostname:   n.hasHostname,
		ImageStates:   n.ImageStates,
		Generation:    n.Generation,
		requested:     n.Requested.cloneValue(),
		allocatable:   n.Allocatable.cloneValue(),
	}
	c.nonZeroRequested = n.NonZeroRequested.cloneValue()
	c.Requested, c.NonZeroRequested, c.Allocatable = &c.requested, &c.nonZeroRequested, &c.allocatable
	// Empty sets stay nil: most nodes have no host ports or claims, and
	// the snapshot clones a node every time a pod lands on it.
	if len(n.UsedPorts) > 0 {
		c.UsedPorts = n.UsedPorts.Clone()
	}
	if len(n.PVCRefCounts) > 0 {
		c.PVCRefCounts = make(map[string]int, len(n.PVCRefCounts))
		for k, v := range n.PVCRefCounts {
			c.PVCRefCounts[k] = v
		}
	}
	c.Pods = append([]*PodInfo(nil), n.Pods...)
	if len(n.PodsWithAffinity) > 0 {
		c.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	}
	if len(n.PodsWithRequiredAntiAffinity) > 0 {
		c.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	}
	return c
}

// HostPortInfo holds used host ports: IP → "protocol/port" set. The
// wildcard IP 0.0.0.0 conflicts with every IP.
type HostPortInfo map[string]map[ProtocolPort]int

// ProtocolPort is a protocol and port.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

func normalizePort(ip, protocol string) (string, string) {
	if ip == "" {
		ip = "0.0.0.0"
	}
	if protocol == "" {
		protocol = string(corev1.ProtocolTCP)
	}
	return ip, protocol
}

// Add marks a port used.
func (h HostPortInfo) Add(ip, protocol string, port int32) {
	ip, protocol = normalizePort(ip, protocol)
	m := h[ip]
	if m == nil {
		m = map[ProtocolPort]int{}
		h[ip] = m
	}
	m[ProtocolPort{protocol, port}]++
}

// Remove releases one use of a port.
func (h HostPortInfo) Remove(ip, protocol string, port int32) {
	ip, protocol = normalizePort(ip, protocol)
	m := h[ip]
	pp := ProtocolPort{protocol, port}
	if m[pp] <= 1 {
		delete(m, pp)
		if len(m) == 0 {
			delete(h, ip)
		}
		return
	}
	m[pp]--
}

// Conflicts reports whether the port is already taken, with 0.0.0.0 on
// either side conflicting with any IP.
func (h HostPortInfo) Conflicts(ip, protocol string, port int32) bool {
	ip, protocol = normalizePort(ip, protocol)
	pp := ProtocolPort{protocol, port}
	if ip == "0.0.0.0" {
		for _, m := range h {
			if m[pp] > 0 {
				return true
			}
		}
		return false
	}
	return h[ip][pp] > 0 || h["0.0.0.0"][pp] > 0
}

// Len counts the used ports.
func (h HostPortInfo) Len() int {
	n := 0
	for _, m := range h {
		n += len(m)
	}
	return n
}

// Clone copies the set.
func (h HostPortInfo) Clone() HostPortInfo {
	c := make(HostPortInfo, len(h))
	for ip, m := range h {
		cm := make(map[ProtocolPort]int, len(m))
		for k, v := range m {
			cm[k] = v
		}
		c[ip] = cm
	}
	return c
}

func podPortContainers(pod *corev1.Pod) []corev1.Container {
	sidecars := 0
	for i := range pod.Spec.InitContainers {
		if rp := pod.Spec.InitContainers[i].RestartPolicy; rp != nil && *rp == corev1.ContainerRestartPolicyAlways {
			sidecars++
		}
	}
	if sidecars == 0 {
		return pod.Spec.Containers
	}
	out := make([]corev1.Container, 0, len(pod.Spec.Containers)+sidecars)
	out = append(out, pod.Spec.Containers...)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}
