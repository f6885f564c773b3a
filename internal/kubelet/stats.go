package kubelet

import (
	"context"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// /stats/summary and /metrics/resource: the runtime's container stats
// (CRI ListContainerStats) grouped by pod, and the node's figures from
// /proc. The summary's JSON is the kubelet's stats/v1alpha1 Summary (the
// fields metrics-server and kubectl read).

type summary struct {
	Node nodeStats  `json:"node"`
	Pods []podStats `json:"pods"`
}

type nodeStats struct {
	NodeName  string       `json:"nodeName"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *cpuStats    `json:"cpu,omitempty"`
	Memory    *memoryStats `json:"memory,omitempty"`
	Fs        *fsStatsJSON `json:"fs,omitempty"`
}

type podReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

type podStats struct {
	PodRef     podReference     `json:"podRef"`
	StartTime  metav1.Time      `json:"startTime"`
	Containers []containerStats `json:"containers"`
	CPU        *cpuStats        `json:"cpu,omitempty"`
	Memory     *memoryStats     `json:"memory,omitempty"`
}

type containerStats struct {
	Name      string       `json:"name"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *cpuStats    `json:"cpu,omitempty"`
	Memory    *memoryStats `json:"memory,omitempty"`
	Rootfs    *fsStatsJSON `json:"rootfs,omitempty"`
}

type cpuStats struct {
	Time                 metav1.Time `json:"time"`
	UsageNanoCores       *uint64     `json:"usageNanoCores,omitempty"`
	UsageCoreNanoSeconds *uint64     `json:"usageCoreNanoSeconds,omitempty"`
}

type memoryStats struct {
	Time            metav1.Time `json:"time"`
	AvailableBytes  *uint64     `json:"availableBytes,omitempty"`
	UsageBytes      *uint64     `json:"usageBytes,omitempty"`
	WorkingSetBytes *uint64     `json:"workingSetBytes,omitempty"`
}

type fsStatsJSON struct {
	Time           metav1.Time `json:"time"`
	AvailableBytes *uint64     `json:"availableBytes,omitempty"`
	CapacityBytes  *uint64     `json:"capacityBytes,omitempty"`
	UsedBytes      *uint64     `json:"usedBytes,omitempty"`
	InodesFree     *uint64     `json:"inodesFree,omitempty"`
	Inodes         *uint64     `json:"inodes,omitempty"`
}

// containerSample is one running container's stats.
type containerSample struct {
	namespace, pod, uid, name string
	started                   time.Time
	cpuNanos, workingSet      uint64
	usage                     uint64
	rootfsUsed                uint64
}

// containerSamples reads the runtime's stats of running containers.
func (k *Kubelet) containerSamples(ctx context.Context) ([]containerSample, error) {
	cctx, cancel := k.cri.ctx(ctx)
	defer cancel()
	stats, err := k.cri.rt.ListContainerStats(cctx, &cri.ListContainerStatsRequest{})
	if err != nil {
		return nil, err
	}
	list, err := k.cri.rt.ListContainers(cctx, &cri.ListContainersRequest{Filter: &cri.ContainerFilter{
		State: &cri.ContainerStateValue{State: cri.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		return nil, err
	}
	running := map[string]*cri.Container{}
	for _, c := range list.Containers {
		running[c.Id] = c
	}
	var out []containerSample
	for _, s := range stats.Stats {
		if s.Attributes == nil {
			continue
		}
		c, ok := running[s.Attributes.Id]
		if !ok {
			continue
		}
		cs := containerSample{namespace: c.Labels[labelPodNamespace], pod: c.Labels[labelPodName], uid: c.Labels[labelPodUID],
			name: c.Labels[labelContainerName], started: time.Unix(0, c.CreatedAt)}
		k.obs.mu.Lock()
		if oc, ok := k.obs.containers[c.Id]; ok && !oc.StartedAt.IsZero() {
			cs.started = oc.StartedAt
		}
		k.obs.mu.Unlock()
		if s.Cpu != nil && s.Cpu.UsageCoreNanoSeconds != nil {
			cs.cpuNanos = s.Cpu.UsageCoreNanoSeconds.Value
		}
		if s.Memory != nil {
			if s.Memory.WorkingSetBytes != nil {
				cs.workingSet = s.Memory.WorkingSetBytes.Value
			}
			if s.Memory.UsageBytes != nil {
				cs.usage = s.Memory.UsageBytes.Value
			}
		}
		if s.WritableLayer != nil && s.WritableLayer.UsedBytes != nil {
			cs.rootfsUsed = s.WritableLayer.UsedBytes.Value
		}
		out = append(out, cs)
	}
	return out, nil
}

func (k *Kubelet) serveResourceMetrics(w http.ResponseWriter, r *http.Request) {
	samples, err := k.containerSamples(r.Context())
	now := k.cfg.Clock.Now().Truncate(time.Millisecond)
	u := kubeletapi.ResourceUsage{At: now, NodeCPUSeconds: cpuSeconds()}
	mi := meminfo()
	u.NodeMemory = float64(mi["MemTotal"] - mi["MemAvailable"])
	for _, s := range samples {
		u.Containers = append(u.Containers, kubeletapi.ContainerUsage{Namespace: s.namespace, Pod: s.pod, Container: s.name,
			CPUSeconds: float64(s.cpuNanos) / 1e9, MemoryBytes: float64(s.workingSet), Started: s.started})
	}
	w.Header().Set("Content-Type", kubeletapi.ContentTypeMetrics)
	text := kubeletapi.ResourceMetricsText(u)
	if err != nil {
		// As upstream: the scrape error is reported in-band.
		text = []byte(string(text[:len(text)-len("resource_scrape_error 0\n")]) + "resource_scrape_error 1\n")
	}
	_, _ = w.Write(text)
}

func (k *Kubelet) serveSummary(w http.ResponseWriter, r *http.Request) {
	samples, err := k.containerSamples(r.Context())
	if err != nil {
		http.Error(w, "Internal Error: failed to list container stats: "+err.Error(), http.StatusInternalServerError)
		return
	}
	now := metav1.NewTime(k.cfg.Clock.Now())
	u64 := func(v uint64) *uint64 { return &v }
	mi := meminfo()
	total, avail := uint64(mi["MemTotal"]), uint64(mi["MemAvailable"])
	s := summary{Node: nodeStats{
		NodeName:  k.cfg.NodeName,
		StartTime: metav1.NewTime(k.started),
		CPU:       &cpuStats{Time: now, UsageCoreNanoSeconds: u64(uint64(cpuSeconds() * 1e9))},
		Memory:    &memoryStats{Time: now, AvailableBytes: u64(avail), UsageBytes: u64(total - avail), WorkingSetBytes: u64(total - avail)},
	}}
	if size, free, inodes, inodesFree, ok := fsStats(k.cfg.RootDir); ok {
		s.Node.Fs = &fsStatsJSON{Time: now, AvailableBytes: u64(free), CapacityBytes: u64(size), UsedBytes: u64(size - free), Inodes: u64(inodes), InodesFree: u64(inodesFree)}
	}
	byPod := map[string]int{}
	for _, c := range samples {
		i, ok := byPod[c.uid]
		if !ok {
			i = len(s.Pods)
			byPod[c.uid] = i
			ps := podStats{PodRef: podReference{Name: c.pod, Namespace: c.namespace, UID: c.uid}, StartTime: metav1.NewTime(c.started),
				CPU: &cpuStats{Time: now, UsageCoreNanoSeconds: u64(0)}, Memory: &memoryStats{Time: now, WorkingSetBytes: u64(0), UsageBytes: u64(0)}}
			if p := k.podByName(c.namespace, c.pod); p != nil && p.Status.StartTime != nil {
				ps.StartTime = *p.Status.StartTime
			}
			s.Pods = append(s.Pods, ps)
		}
		p := &s.Pods[i]
		p.Containers = append(p.Containers, containerStats{Name: c.name, StartTime: metav1.NewTime(c.started),
			CPU:    &cpuStats{Time: now, UsageCoreNanoSeconds: u64(c.cpuNanos)},
			Memory: &memoryStats{Time: now, WorkingSetBytes: u64(c.workingSet), UsageBytes: u64(c.usage)},
			Rootfs: &fsStatsJSON{Time: now, UsedBytes: u64(c.rootfsUsed)}})
		*p.CPU.UsageCoreNanoSeconds += c.cpuNanos
		*p.Memory.WorkingSetBytes += c.workingSet
		*p.Memory.UsageBytes += c.usage
	}
	writeJSON(w, &s)
}
