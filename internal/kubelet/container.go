package kubelet

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A container as the kubelet asks the runtime for it: image, command,
// environment, mounts, log path, resources and security context, and the
// labels and annotations that let a restarted kubelet recognise it.

// containerInput is what a container's config is made of.
type containerInput struct {
	pod          *corev1.Pod
	container    *corev1.Container
	restartCount int32
	env          []envVar
	mounts       []*cri.Mount
	// memoryCapacity sizes Burstable containers' OOM score.
	memoryCapacity int64
	// minOOMScoreAdj is the lowest score the host lets us set (without
	// CAP_SYS_RESOURCE, no lower than our own).
	minOOMScoreAdj int64
}

// containerConfig is the CRI config of one container instance.
func containerConfig(in containerInput) *cri.ContainerConfig {
	pod, c := in.pod, in.container
	envs := make([]*cri.KeyValue, 0, len(in.env))
	lookup := map[string]string{}
	for _, e := range in.env {
		envs = append(envs, &cri.KeyValue{Key: e.name, Value: []byte(e.value)})
		lookup[e.name] = e.value
	}
	get := func(n string) (string, bool) { v, ok := lookup[n]; return v, ok }
	expandAll := func(l []string) []string {
		var out []string
		for _, s := range l {
			out = append(out, expand(s, get))
		}
		return out
	}
	policy := c.TerminationMessagePolicy
	if policy == "" {
		policy = corev1.TerminationMessageReadFile
	}
	grace := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	return &cri.ContainerConfig{
		Metadata:   &cri.ContainerMetadata{Name: c.Name, Attempt: uint32(in.restartCount)},
		Image:      &cri.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image},
		Command:    expandAll(c.Command),
		Args:       expandAll(c.Args),
		WorkingDir: c.WorkingDir,
		Envs:       envs,
		Mounts:     in.mounts,
		Labels: map[string]string{
			labelPodName: pod.Name, labelPodNamespace: pod.Namespace, labelPodUID: string(pod.UID), labelContainerName: c.Name,
		},
		Annotations: map[string]string{
			annotationRestartCount:       strconv.Itoa(int(in.restartCount)),
			annotationHash:               containerHash(c),
			annotationTerminationPath:    c.TerminationMessagePath,
			annotationTerminationPolicy:  string(policy),
			annotationTerminationGrace:   strconv.FormatInt(grace, 10),
			annotationContainerImageSpec: c.Image,
		},
		LogPath:   containerLogPath(c.Name, in.restartCount),
		Stdin:     c.Stdin,
		StdinOnce: c.StdinOnce,
		Tty:       c.TTY,
		Linux: &cri.LinuxContainerConfig{
			Resources:       containerResources(pod, c, in.memoryCapacity, in.minOOMScoreAdj),
			SecurityContext: containerSecurity(pod, c),
		},
	}
}

// containerLogPath is the log file, relative to the pod's log directory.
func containerLogPath(name string, restartCount int32) string {
	return name + "/" + strconv.Itoa(int(restartCount)) + ".log"
}

// CPU shares and quota, as upstream converts them.
const (
	minShares     = 2
	maxShares     = 262144
	quotaPeriod   = 100000 // µs
	minQuotaPerms = 1000   // µs
)

func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minShares
	}
	return min(max(milli*1024/1000, minShares), maxShares)
}

// containerResources: shares from the CPU request (the limit when only
// that is set), a quota from the CPU limit, the memory limit and an OOM
// score by QoS class.
func containerResources(pod *corev1.Pod, c *corev1.Container, memoryCapacity, minOOM int64) *cri.LinuxContainerResources {
	r := &cri.LinuxContainerResources{}
	req, lim := c.Resources.Requests, c.Resources.Limits
	cpuReq, cpuLim := req.Cpu().MilliValue(), lim.Cpu().MilliValue()
	if cpuReq == 0 && cpuLim > 0 {
		cpuReq = cpuLim
	}
	r.CpuShares = milliCPUToShares(cpuReq)
	if cpuLim > 0 {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = max(cpuLim*quotaPeriod/1000, minQuotaPerms)
	}
	r.MemoryLimitInBytes = lim.Memory().Value()
	r.OomScoreAdj = max(oomScoreAdj(pod, c, memoryCapacity), minOOM)
	return r
}

// oomScoreAdj is upstream's policy: Guaranteed -997, BestEffort 1000,
// Burstable 1000 - 1000*request/capacity within [3, 999].
func oomScoreAdj(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int64 {
	switch podQOS(pod) {
	case corev1.PodQOSGuaranteed:
		return -997
	case corev1.PodQOSBestEffort:
		return 1000
	}
	if memoryCapacity <= 0 {
		return 999
	}
	adj := 1000 - (1000*c.Resources.Requests.Memory().Value())/memoryCapacity
	return min(max(adj, 3), 999)
}

// Paths masked and read-only in every unprivileged container (upstream's
// defaults, sent so every runtime applies the same).
var (
	defaultMaskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
		"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// containerSecurity merges the pod's and the container's security
// contexts, the container's winning.
func containerSecurity(pod *corev1.Pod, c *corev1.Container) *cri.LinuxContainerSecurityContext {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	s := &cri.LinuxContainerSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	if u := firstSet(csc.RunAsUser, psc.RunAsUser); u != nil {
		s.RunAsUser = &cri.Int64Value{Value: *u}
	}
	if g := firstSet(csc.RunAsGroup, psc.RunAsGroup); g != nil {
		s.RunAsGroup = &cri.Int64Value{Value: *g}
	}
	s.SupplementalGroups = append(s.SupplementalGroups, psc.SupplementalGroups...)
	if psc.FSGroup != nil {
		s.SupplementalGroups = append(s.SupplementalGroups, *psc.FSGroup)
	}
	s.Privileged = csc.Privileged != nil && *csc.Privileged
	s.ReadonlyRootfs = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
	s.NoNewPrivs = csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation
	if caps := csc.Capabilities; caps != nil {
		s.Capabilities = &cri.Capability{}
		for _, a := range caps.Add {
			s.Capabilities.AddCapabilities = append(s.Capabilities.AddCapabilities, capName(a))
		}
		for _, d := range caps.Drop {
			s.Capabilities.DropCapabilities = append(s.Capabilities.DropCapabilities, capName(d))
		}
	}
	var podSeccomp *corev1.SeccompProfile
	if pod.Spec.SecurityContext != nil {
		podSeccomp = pod.Spec.SecurityContext.SeccompProfile
	}
	s.Seccomp = seccompProfile(podSeccomp, csc.SeccompProfile)
	unmasked := csc.ProcMount != nil && *csc.ProcMount == corev1.UnmaskedProcMount
	if !s.Privileged && !unmasked {
		s.MaskedPaths, s.ReadonlyPaths = defaultMaskedPaths, defaultReadonlyPaths
	}
	return s
}

// capName is a capability as upstream's kubelet sends it: as the pod
// wrote it (runtimes add the CAP_ prefix).
func capName(c corev1.Capability) string { return strings.TrimSpace(string(c)) }

func firstSet(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}
