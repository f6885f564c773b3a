package simnode

import (
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// Annotations that set a pod's simulated usage, reported by the kubelet
// API's /metrics/resource (and so by kubectl top).
const (
	// AnnotationCPUUsage is the pod's CPU use, a quantity ("250m"),
	// shared evenly by its running containers.
	AnnotationCPUUsage = "simnode.rudder.dev/cpu-usage"
	// AnnotationMemoryUsage is the pod's memory working set ("300Mi"),
	// shared evenly by its running containers.
	AnnotationMemoryUsage = "simnode.rudder.dev/memory-usage"
)

// Without annotations a container uses a fixed fraction of its requests,
// between usageMinFraction and usageMinFraction+usageSpread, picked by a
// hash of the pod's UID and the container's name: pods differ, and each
// reports the same every time. A container without a request uses the
// floor.
const (
	usageMinFraction = 0.25
	usageSpread      = 0.5
	usageFloorCPU    = 0.001             // cores
	usageFloorMemory = 4 * 1024 * 1024   // bytes
	nodeOverheadCPU  = 0.1               // cores: the system and the kubelet
	nodeOverheadMem  = 512 * 1024 * 1024 // bytes
)

// containerUse is one running container's usage.
type containerUse struct {
	namespace, pod, container string
	cpuCores                  float64
	memoryBytes               float64
	started                   time.Time
	cpuSeconds                float64 // the cumulative counter, set by nodeCPU.advance
}

// usage is a node's usage: its running containers and their sum plus the
// system overhead.
type usage struct {
	containers  []containerUse
	cpuCores    float64
	memoryBytes float64
}

// nodeUsage is the usage of a node running pods.
func nodeUsage(pods []*corev1.Pod) usage {
	u := usage{cpuCores: nodeOverheadCPU, memoryBytes: nodeOverheadMem}
	for _, p := range pods {
		for _, c := range podUsage(p) {
			u.containers = append(u.containers, c)
			u.cpuCores += c.cpuCores
			u.memoryBytes += c.memoryBytes
		}
	}
	sort.Slice(u.containers, func(i, j int) bool {
		a, b := u.containers[i], u.containers[j]
		if a.namespace != b.namespace {
			return a.namespace < b.namespace
		}
		if a.pod != b.pod {
			return a.pod < b.pod
		}
		return a.container < b.container
	})
	return u
}

// podUsage is the usage of each running container of pod: the
// annotations' share when set, else a fraction of its requests.
func podUsage(pod *corev1.Pod) []containerUse {
	var running []corev1.ContainerStatus
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			running = append(running, cs)
		}
	}
	if len(running) == 0 {
		return nil
	}
	cpuAnn, cpuSet := annotationQuantity(pod, AnnotationCPUUsage)
	memAnn, memSet := annotationQuantity(pod, AnnotationMemoryUsage)
	share := float64(len(running))
	out := make([]containerUse, 0, len(running))
	for _, cs := range running {
		var req corev1.ResourceList
		if spec := kubeletContainerSpec(pod, cs.Name); spec != nil {
			req = spec.Resources.Requests
		}
		frac := usageFraction(string(pod.UID), cs.Name)
		u := containerUse{namespace: pod.Namespace, pod: pod.Name, container: cs.Name, started: cs.State.Running.StartedAt.Time}
		if cpuSet {
			u.cpuCores = cpuAnn.AsApproximateFloat64() / share
		} else {
			u.cpuCores = max(frac*requestOf(req, corev1.ResourceCPU), usageFloorCPU)
		}
		if memSet {
			u.memoryBytes = memAnn.AsApproximateFloat64() / share
		} else {
			u.memoryBytes = max(frac*requestOf(req, corev1.ResourceMemory), usageFloorMemory)
		}
		out = append(out, u)
	}
	return out
}

func annotationQuantity(pod *corev1.Pod, key string) (resource.Quantity, bool) {
	v, ok := pod.Annotations[key]
	if !ok {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() < 0 {
		return resource.Quantity{}, false
	}
	return q, true
}

func requestOf(req corev1.ResourceList, name corev1.ResourceName) float64 {
	q, ok := req[name]
	if !ok {
		return 0
	}
	return q.AsApproximateFloat64()
}

// usageFraction is the share of its requests a container uses, fixed by
// the pod's UID and the container's name.
func usageFraction(uid, container string) float64 {
	h := fnv.New64a()
	h.Write([]byte(uid))
	h.Write([]byte{0})
	h.Write([]byte(container))
	return usageMinFraction + usageSpread*float64(h.Sum64()%1000)/1000
}

// resourceMetricsText is the kubelet's /metrics/resource at now. CPU
// counters are cumulative core-seconds, as the caller accumulated them
// (nodeCPU.advance).
func resourceMetricsText(u usage, nodeCPUSeconds float64, now time.Time) []byte {
	ru := kubeletapi.ResourceUsage{At: now, NodeCPUSeconds: nodeCPUSeconds, NodeMemory: u.memoryBytes,
		Containers: make([]kubeletapi.ContainerUsage, 0, len(u.containers))}
	for _, c := range u.containers {
		ru.Containers = append(ru.Containers, kubeletapi.ContainerUsage{Namespace: c.namespace, Pod: c.pod, Container: c.container,
			CPUSeconds: c.cpuSeconds, MemoryBytes: c.memoryBytes, Started: c.started})
	}
	return kubeletapi.ResourceMetricsText(ru)
}

// containerLog synthesizes the log of a container: of its current run,
// or with previous of the run before it, which only a restarted container
// has. The errors are the kubelet's words, which kubectl prints: a
// container not in the spec, one that has not started (the image pull
// failing, or not yet created), no previous run.
func containerLog(pod *corev1.Pod, container, node string, previous bool) ([]kubeletapi.LogLine, error) {
	spec := kubeletContainerSpec(pod, container)
	if spec == nil {
		return nil, fmt.Errorf("container %q not found in pod %s/%s", container, pod.Namespace, pod.Name)
	}
	var status *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				status = &list[i]
			}
		}
	}
	if status == nil {
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, pod.Name)
	}
	var started time.Time
	switch last := status.LastTerminationState.Terminated; {
	case previous:
		if last == nil || last.ContainerID == "" {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return []kubeletapi.LogLine{
			{At: last.StartedAt.Time, Text: fmt.Sprintf("simnode: starting container %s (image %s) of pod %s/%s on node %s", container, spec.Image, pod.Namespace, pod.Name, node)},
			{At: last.StartedAt.Time, Text: "simnode: this is a simulated node; no process runs and this log is synthesized"},
			{At: last.FinishedAt.Time, Text: fmt.Sprintf("simnode: container %s exited with code %d", container, last.ExitCode)},
		}, nil
	case status.State.Running != nil:
		started = status.State.Running.StartedAt.Time
	case status.State.Terminated != nil:
		started = status.State.Terminated.StartedAt.Time
	case status.State.Waiting != nil:
		switch reason := status.State.Waiting.Reason; reason {
		case reasonErrImagePull:
			return nil, fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case reasonImagePullBackOff:
			return nil, fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		case reasonCrashLoopBackOff:
			if last != nil {
				started = last.StartedAt.Time // the kubelet shows the last run's log
				break
			}
			fallthrough
		default:
			return nil, fmt.Errorf("container %q in pod %q is waiting to start: %s", container, pod.Name, reason)
		}
	}
	if started.IsZero() {
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, pod.Name)
	}
	return []kubeletapi.LogLine{
		{At: started, Text: fmt.Sprintf("simnode: starting container %s (image %s) of pod %s/%s on node %s", container, spec.Image, pod.Namespace, pod.Name, node)},
		{At: started, Text: "simnode: this is a simulated node; no process runs and this log is synthesized"},
		{At: started.Add(time.Millisecond), Text: fmt.Sprintf("simnode: container %s is running", container)},
	}, nil
}

// kubeletContainerSpec finds a container or init container by name, or nil.
func kubeletContainerSpec(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
