package framework

import (
	corev1 "k8s.io/api/core/v1"
)

// Default requests assumed for scoring when a container sets none, so
// that pods without requests do not all pile onto one node.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// Resource is an amount of compute resources in the units the scheduler
// compares: milli-cores, bytes, pod count and integer scalars.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is the node's pod capacity (allocatable "pods");
	// on a requested Resource it is unused (NodeInfo counts its pods).
	AllowedPodNumber int64
	// Scalar holds extended resources, hugepages and attachable volumes.
	Scalar map[corev1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl corev1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds a ResourceList.
func (r *Resource) Add(rl corev1.ResourceList) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case corev1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddResource adds another Resource.
func (r *Resource) AddResource(o *Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.Scalar {
		r.AddScalar(k, v)
	}
}

// SubResource subtracts another Resource.
func (r *Resource) SubResource(o *Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.Scalar {
		r.AddScalar(k, -v)
	}
}

// AddScalar adds v of a scalar resource.
func (r *Resource) AddScalar(name corev1.ResourceName, v int64) {
	if r.Scalar == nil {
		r.Scalar = make(map[corev1.ResourceName]int64, 2)
	}
	r.Scalar[name] += v
}

// SetMax raises each amount in r to at least o's.
func (r *Resource) SetMax(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	r.AllowedPodNumber = max(r.AllowedPodNumber, o.AllowedPodNumber)
	for k, v := range o.Scalar {
		if v > r.Scalar[k] {
			if r.Scalar == nil {
				r.Scalar = make(map[corev1.ResourceName]int64, 2)
			}
			r.Scalar[k] = v
		}
	}
}

// Get returns the amount of a named resource (cpu in milli-cores).
func (r *Resource) Get(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return r.MilliCPU
	case corev1.ResourceMemory:
		return r.Memory
	case corev1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case corev1.ResourcePods:
		return r.AllowedPodNumber
	}
	return r.Scalar[name]
}

// Clone returns a deep copy.
func (r *Resource) Clone() *Resource {
	n := r.cloneValue()
	return &n
}

// cloneValue is Clone without the allocation of the Resource itself.
func (r *Resource) cloneValue() Resource {
	n := *r
	if r.Scalar != nil {
		n.Scalar = make(map[corev1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			n.Scalar[k] = v
		}
	}
	return n
}

// IsScalarResourceName reports whether a resource is compared as an
// integer scalar: extended resources (domain-prefixed names outside
// kubernetes.io), hugepages-* and attachable-volumes-*.
func IsScalarResourceName(name corev1.ResourceName) bool {
	s := string(name)
	switch {
	case len(s) > len(corev1.ResourceHugePagesPrefix) && s[:len(corev1.ResourceHugePagesPrefix)] == corev1.ResourceHugePagesPrefix:
		return true
	case len(s) > len(corev1.ResourceAttachableVolumesPrefix) && s[:len(corev1.ResourceAttachableVolumesPrefix)] == corev1.ResourceAttachableVolumesPrefix:
		return true
	}
	return IsExtendedResourceName(name)
}

// IsExtendedResourceName reports whether name is an extended resource: a
// fully-qualified name outside the kubernetes.io domain (which is
// reserved), not prefixed "requests.".
func IsExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	slash := -1
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			slash = i
			break
		}
	}
	if slash <= 0 {
		return false
	}
	domain := s[:slash]
	if domain == "kubernetes.io" || len(domain) > len(".kubernetes.io") && domain[len(domain)-len(".kubernetes.io"):] == ".kubernetes.io" {
		return false
	}
	return len(s) < 9 || s[:9] != "requests."
}

// PodRequests computes what a pod asks of a node, as the kubelet admits
// it: the larger of (app containers + sidecars) and the peak during the
// init sequence (each regular init container plus the sidecars started
// before it), plus the pod overhead. Pod-level resources, when set,
// replace the container sum for the resources they name. nonZero applies
// the scoring defaults to containers that set no cpu or memory request.
//
// This is component-helpers' resource.PodRequests computed in the
// scheduler's units without building ResourceLists: the scheduler sizes
// every pod on each queue add and assume, and the library's version costs
// ten times as much (maps per container). TestPodRequestsIsTheLibrarys
// pins the two together.
func PodRequests(pod *corev1.Pod, nonZero bool) *Resource {
	reqs := &Resource{}
	for i := range pod.Spec.Containers {
		addContainer(reqs, &pod.Spec.Containers[i], nonZero)
	}
	sidecars := &Resource{}
	initPeak := &Resource{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		one := &Resource{}
		addContainer(one, c, nonZero)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			reqs.AddResource(one)
			sidecars.AddResource(one)
			initPeak.SetMax(sidecars)
			continue
		}
		one.AddResource(sidecars)
		initPeak.SetMax(one)
	}
	reqs.SetMax(initPeak)
	if pr := pod.Spec.Resources; pr != nil && len(pr.Requests) > 0 {
		if q, ok := pr.Requests[corev1.ResourceCPU]; ok {
			reqs.MilliCPU = q.MilliValue()
		}
		if q, ok := pr.Requests[corev1.ResourceMemory]; ok {
			reqs.Memory = q.Value()
		}
	}
	if pod.Spec.Overhead != nil {
		reqs.Add(pod.Spec.Overhead)
	}
	return reqs
}

func addContainer(r *Resource, c *corev1.Container, nonZero bool) {
	r.Add(c.Resources.Requests)
	if !nonZero {
		return
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		r.MilliCPU += DefaultMilliCPURequest
	}
	if _, ok := c.Resources.Requests[corev1.ResourceMemory]; !ok {
		r.Memory += DefaultMemoryRequest
	}
}
