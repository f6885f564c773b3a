package kubelet

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The QoS cgroup tree, as upstream's kubelet keeps it (cgroupsPerQOS):
//
//	<CgroupRoot>/kubepods                 cpu.shares of the allocatable CPU
//	             ├── pod<uid>             Guaranteed pods
//	             ├── burstable            cpu.shares: the burstable pods' requests
//	             │   └── pod<uid>
//	             └── besteffort           cpu.shares 2
//	                 └── pod<uid>
//
// The QoS classes' shares are written whenever a pod cgroup is made and
// after a pod is cleaned up. A pod's cgroup gets, before its sandbox is
// made (upstream's
// ResourceConfigForPod): cpu.shares from its CPU requests (init
// containers, sidecars and overhead counted as component-helpers counts
// them; 2 at least); a CFS quota (period 100 ms) from its CPU limits
// when every container has one (always for Guaranteed); a memory limit
// from its memory limits when every container has one. A BestEffort pod
// gets cpu.shares 2 and nothing else. The runtime then creates each
// container's cgroup below it, with the container's own limits.
//
// The values go to every hierarchy that has the controller: the v1 cpu
// and memory hierarchies (the legacy and hybrid layouts), or v2's
// unified one (cpu.weight converted from shares as runc converts them,
// cpu.max, memory.max), whose ancestors get the controllers enabled in
// cgroup.subtree_control.

// CFS figures beyond container.go's (minShares, maxShares, quotaPeriod,
// milliCPUToShares).
const (
	quotaPeriodUs = quotaPeriod
	minQuotaUs    = minQuotaPerms
)

// cgroupConfig is the limits of one cgroup; a negative quota or memory
// is no limit.
type cgroupConfig struct {
	CPUShares uint64
	CPUQuota  int64 // µs per CPUPeriod; -1: none
	CPUPeriod uint64
	Memory    int64 // bytes; -1: none
}

// shares is milliCPUToShares for a cgroup file.
func shares(milli int64) uint64 { return uint64(milliCPUToShares(max(milli, 0))) }

// milliCPUToQuota is upstream's MilliCPUToQuota: 0 (no limit) for 0.
func milliCPUToQuota(milli, period int64) int64 {
	if milli <= 0 {
		return 0
	}
	return max(milli*period/1000, minQuotaUs)
}

// podCgroupConfig is the pod cgroup's limits (pure).
func podCgroupConfig(pod *corev1.Pod) cgroupConfig {
	cfg := cgroupConfig{CPUShares: minShares, CPUQuota: -1, Memory: -1}
	qos := pod.Status.QOSClass
	if qos == "" {
		qos = qosClass(pod)
	}
	if qos == corev1.PodQOSBestEffort {
		return cfg
	}
	pod = withDefaultRequests(pod)
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpuLimits, memLimits := true, true
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{
		ContainerFn: func(res corev1.ResourceList, _ resourcehelper.ContainerType) {
			if res.Cpu().IsZero() {
				cpuLimits = false
			}
			if res.Memory().IsZero() {
				memLimits = false
			}
		},
	})
	cfg.CPUShares = shares(reqs.Cpu().MilliValue())
	if cpuLimits || qos == corev1.PodQOSGuaranteed {
		if q := milliCPUToQuota(limits.Cpu().MilliValue(), quotaPeriodUs); q > 0 {
			cfg.CPUQuota, cfg.CPUPeriod = q, quotaPeriodUs
		}
	}
	if (memLimits || qos == corev1.PodQOSGuaranteed) && !limits.Memory().IsZero() {
		cfg.Memory = limits.Memory().Value()
	}
	return cfg
}

// withDefaultRequests is pod with each container's missing cpu and
// memory requests set to its limits, as the API server defaults them (a
// pod the API did not default still gets its due shares).
func withDefaultRequests(pod *corev1.Pod) *corev1.Pod {
	need := false
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, lim := c.Resources.Limits[r]; lim {
					if _, req := c.Resources.Requests[r]; !req {
						need = true
					}
				}
			}
		}
	}
	if !need {
		return pod
	}
	pod = pod.DeepCopy()
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			res := &list[i].Resources
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if l, lim := res.Limits[r]; lim {
					if _, req := res.Requests[r]; !req {
						if res.Requests == nil {
							res.Requests = corev1.ResourceList{}
						}
						res.Requests[r] = l.DeepCopy()
					}
				}
			}
		}
	}
	return pod
}

// burstableShares is the burstable QoS cgroup's cpu.shares: the CPU
// requests of the node's burstable pods (pure).
func burstableShares(pods []*corev1.Pod) uint64 {
	milli := int64(0)
	for _, p := range pods {
		if podIsTerminal(p) || podQOS(p) != corev1.PodQOSBurstable {
			continue
		}
		r := resourcehelper.PodRequests(withDefaultRequests(p), resourcehelper.PodResourcesOptions{})
		milli += r.Cpu().MilliValue()
	}
	return shares(milli)
}

// sharesToWeight is runc's conversion of cpu.shares to v2's cpu.weight.
func sharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	return 1 + ((shares-2)*9999)/262142
}

// cgroupFiles is what to write, by controller, for cfg: v1 or v2 file
// names and values, in the order to write them (pure).
func cgroupFiles(cfg cgroupConfig, v2 bool) map[string][][2]string {
	out := map[string][][2]string{}
	if v2 {
		out["cpu"] = append(out["cpu"], [2]string{"cpu.weight", strconv.FormatUint(sharesToWeight(cfg.CPUShares), 10)})
		if cfg.CPUQuota > 0 {
			out["cpu"] = append(out["cpu"], [2]string{"cpu.max", fmt.Sprintf("%d %d", cfg.CPUQuota, cfg.CPUPeriod)})
		}
		if cfg.Memory > 0 {
			out["memory"] = append(out["memory"], [2]string{"memory.max", strconv.FormatInt(cfg.Memory, 10)})
		}
		return out
	}
	out["cpu"] = append(out["cpu"], [2]string{"cpu.shares", strconv.FormatUint(cfg.CPUShares, 10)})
	if cfg.CPUQuota > 0 {
		// The period first: a quota is checked against it.
		out["cpu"] = append(out["cpu"], [2]string{"cpu.cfs_period_us", strconv.FormatUint(cfg.CPUPeriod, 10)},
			[2]string{"cpu.cfs_quota_us", strconv.FormatInt(cfg.CPUQuota, 10)})
	}
	if cfg.Memory > 0 {
		out["memory"] = append(out["memory"], [2]string{"memory.limit_in_bytes", strconv.FormatInt(cfg.Memory, 10)})
	}
	return out
}

// qosDir is the QoS cgroup of class under root: kubepods, or
// kubepods/burstable|besteffort.
func qosDir(root string, class corev1.PodQOSClass) string {
	switch class {
	case corev1.PodQOSBurstable:
		return path.Join(root, "kubepods", "burstable")
	case corev1.PodQOSBestEffort:
		return path.Join(root, "kubepods", "besteffort")
	}
	return path.Join(root, "kubepods")
}

// ensurePodCgroups makes pod's cgroup (pod nil: none) and the QoS tree
// above it in every hierarchy with a cpu or memory controller, and
// writes their limits; others is every pod of the node (for the
// burstable class's shares).
func (k *Kubelet) ensurePodCgroups(pod *corev1.Pod, others []*corev1.Pod) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return fmt.Errorf("pod cgroups: %w", err)
	}
	root := k.cfg.CgroupRoot
	alloc := k.allocatable()
	writes := []struct {
		dir string
		cfg cgroupConfig
	}{
		{qosDir(root, corev1.PodQOSGuaranteed), cgroupConfig{CPUShares: shares(alloc.Cpu().MilliValue()), CPUQuota: -1, Memory: -1}},
		{qosDir(root, corev1.PodQOSBurstable), cgroupConfig{CPUShares: burstableShares(others), CPUQuota: -1, Memory: -1}},
		{qosDir(root, corev1.PodQOSBestEffort), cgroupConfig{CPUShares: minShares, CPUQuota: -1, Memory: -1}},
	}
	if pod != nil {
		writes = append(writes, struct {
			dir string
			cfg cgroupConfig
		}{podCgroupParent(root, pod), podCgroupConfig(pod)})
	}
	var errs []error
	for _, m := range mounts {
		for ctrl, v2 := range m.controllers() {
			for _, w := range writes {
				dir := m.dir(w.dir)
				if dir == "" {
					continue
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					errs = append(errs, err)
					continue
				}
				if v2 {
					enableControllers(m.point, dir)
				}
				for _, f := range cgroupFiles(w.cfg, v2)[ctrl] {
					if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
						errs = append(errs, fmt.Errorf("pod cgroups: %s: %w", filepath.Join(dir, f[0]), err))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// controllers lists the cpu and memory controllers the mount holds,
// each with whether it is the v2 hierarchy.
func (m cgroupMount) controllers() map[string]bool {
	out := map[string]bool{}
	if m.v2 {
		b, _ := os.ReadFile(filepath.Join(m.point, "cgroup.controllers"))
		for _, c := range strings.Fields(string(b)) {
			if c == "cpu" || c == "memory" {
				out[c] = true
			}
		}
		return out
	}
	for _, o := range strings.Split(m.opts, ",") {
		if o == "cpu" || o == "memory" {
			out[o] = false
		}
	}
	return out
}

// enableControllers enables cpu and memory for the children of every
// cgroup from the mount point down to dir's parent (v2: a controller
// must be enabled in the parent for a child to have its files).
func enableControllers(point, dir string) {
	rel, err := filepath.Rel(point, filepath.Dir(dir))
	if err != nil || strings.HasPrefix(rel, "..") {
		return
	}
	cur := point
	parts := []string{""}
	if rel != "." {
		parts = append(parts, strings.Split(rel, "/")...)
	}
	for _, p := range parts {
		cur = filepath.Join(cur, p)
		for _, c := range []string{"+cpu", "+memory"} {
			_ = os.WriteFile(filepath.Join(cur, "cgroup.subtree_control"), []byte(c), 0o644)
		}
	}
}
