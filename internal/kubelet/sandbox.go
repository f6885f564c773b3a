package kubelet

import (
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The pod sandbox as the kubelet asks the runtime for it: identity,
// hostname, DNS, ports, the pod's cgroup and its namespaces.

// podLogDir is where a pod's container logs go:
// <PodLogsDir>/<ns>_<name>_<uid>.
func podLogDir(root string, pod *corev1.Pod) string {
	return filepath.Join(root, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// sandboxConfig is the PodSandboxConfig of pod's sandbox attempt.
func (k *Kubelet) sandboxConfig(pod *corev1.Pod, attempt uint32) *cri.PodSandboxConfig {
	labels := maps.Clone(pod.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[labelPodName], labels[labelPodNamespace], labels[labelPodUID] = pod.Name, pod.Namespace, string(pod.UID)
	hostname := podHostname(pod)
	if pod.Spec.HostNetwork {
		hostname = k.hostname
	}
	cfg := &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     hostname,
		LogDirectory: podLogDir(k.cfg.PodLogsDir, pod),
		DnsConfig:    k.dnsConfig(pod),
		PortMappings: portMappings(pod),
		Labels:       labels,
		Annotations:  maps.Clone(pod.Annotations),
		Linux:        k.sandboxLinux(pod),
	}
	return cfg
}

// podHostname is the pod's hostname: spec.hostname or its name, cut to
// 63 characters as a DNS label.
func podHostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

func portMappings(pod *corev1.Pod) []*cri.PortMapping {
	var out []*cri.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			proto := cri.Protocol_TCP
			switch p.Protocol {
			case corev1.ProtocolUDP:
				proto = cri.Protocol_UDP
			case corev1.ProtocolSCTP:
				proto = cri.Protocol_SCTP
			}
			out = append(out, &cri.PortMapping{Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
		}
	}
	return out
}

// podCgroupParent is the pod's cgroup: <root>/kubepods/pod<uid> for
// Guaranteed pods, <root>/kubepods/<qos>/pod<uid> for the others.
func podCgroupParent(root string, pod *corev1.Pod) string {
	parts := []string{root, "kubepods"}
	switch q := podQOS(pod); q {
	case corev1.PodQOSBurstable:
		parts = append(parts, "burstable")
	case corev1.PodQOSBestEffort:
		parts = append(parts, "besteffort")
	}
	return path.Join(append(parts, "pod"+string(pod.UID))...)
}

func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return qosClass(pod)
}

func (k *Kubelet) sandboxLinux(pod *corev1.Pod) *cri.LinuxPodSandboxConfig {
	sc := &cri.LinuxSandboxSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &cri.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &cri.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = slices.Clone(psc.SupplementalGroups)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		sc.Seccomp = seccompProfile(psc.SeccompProfile, nil)
	}
	for _, c := range pod.Spec.Containers {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			sc.Privileged = true
		}
	}
	l := &cri.LinuxPodSandboxConfig{CgroupParent: podCgroupParent(k.cfg.CgroupRoot, pod), SecurityContext: sc}
	if psc := pod.Spec.SecurityContext; psc != nil && len(psc.Sysctls) > 0 {
		l.Sysctls = map[string]string{}
		for _, s := range psc.Sysctls {
			l.Sysctls[s.Name] = s.Value
		}
	}
	return l
}

// namespaceOptions: the pod's own network, PID (per container unless
// shareProcessNamespace) and IPC namespaces, or the host's.
func namespaceOptions(pod *corev1.Pod) *cri.NamespaceOption {
	ns := &cri.NamespaceOption{Network: cri.NamespaceMode_POD, Pid: cri.NamespaceMode_CONTAINER, Ipc: cri.NamespaceMode_POD}
	if pod.Spec.HostNetwork {
		ns.Network = cri.NamespaceMode_NODE
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = cri.NamespaceMode_POD
	}
	if pod.Spec.HostPID {
		ns.Pid = cri.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = cri.NamespaceMode_NODE
	}
	return ns
}

// seccompProfile: the container's profile, else the pod's; none set is
// Unconfined, as upstream without SeccompDefault.
func seccompProfile(pod, container *corev1.SeccompProfile) *cri.SecurityProfile {
	p := container
	if p == nil {
		p = pod
	}
	if p == nil {
		return &cri.SecurityProfile{ProfileType: cri.SecurityProfile_Unconfined}
	}
	switch p.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return &cri.SecurityProfile{ProfileType: cri.SecurityProfile_RuntimeDefault}
	case corev1.SeccompProfileTypeLocalhost:
		lp := ""
		if p.LocalhostProfile != nil {
			lp = *p.LocalhostProfile
		}
		return &cri.SecurityProfile{ProfileType: cri.SecurityProfile_Localhost, LocalhostRef: lp}
	}
	return &cri.SecurityProfile{ProfileType: cri.SecurityProfile_Unconfined}
}
