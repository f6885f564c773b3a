package admission

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The baseline checks: they stop known privilege escalations while letting
// ordinary workloads run unchanged. The messages are upstream's, word for
// word, because users and tools match on them.

// psChecks is the registry of every check, baseline and restricted.
func psChecks() []psCheck {
	return append(psBaselineChecks(), psRestrictedChecks()...)
}

func psBaselineChecks() []psCheck {
	return []psCheck{
		{id: "appArmorProfile", level: psBaseline, revisions: []psRevision{{minor: 0, fn: psAppArmor}}},
		{id: "capabilities_baseline", level: psBaseline, revisions: []psRevision{{minor: 0, fn: psCapabilitiesBaseline}}},
		{id: "hostNamespaces", level: psBaseline, revisions: []psRevision{{minor: 0, fn: psHostNamespaces}}},
		{id: "hostPathVolumes", level: psBaseline, revisions: []psRevision{{minor: 0, fn: psHostPathVolumes}}},
		{id: "hostPorts", level: psBaseline, revisions: []psRevision{{minor: 0, fn: psHostPorts}}},
		{id: "hostProbesAndHostLifecycle", level: psBaseline, revisions: []psRevision{{minor: 34, fn: psProbeHosts}}},
		{id: "privileged", level: psBaseline, revisions: []psRevision{{minor: 0, fn: psPrivilegedContainers}}},
		{id: "procMount", level: psBaseline, revisions: []psRevision{
			{minor: 0, fn: psProcMount},
			// v1.35: a pod in its own user namespace ("hostUsers: false")
			// may unmask /proc; restricted keeps the old rule.
			{minor: 35, fn: psUnlessUserNamespace(psProcMount)},
		}},
		{id: "seLinuxOptions", level: psBaseline, revisions: []psRevision{
			{minor: 0, fn: psSELinux(psSELinuxTypes)},
			{minor: 31, fn: psSELinux(append([]string{"container_engine_t"}, psSELinuxTypes...))},
		}},
		{id: "seccompProfile_baseline", level: psBaseline, revisions: []psRevision{
			// Before v1.19 seccomp was set by annotations; from v1.19 by field.
			{minor: 0, fn: psSeccompAnnotations},
			{minor: 19, fn: psSeccompBaseline},
		}},
		{id: "sysctls", level: psBaseline, revisions: []psRevision{
			{minor: 0, fn: psSysctls(psSafeSysctls)},
			{minor: 27, fn: psSysctls(psSafeSysctls1_27)},
			{minor: 29, fn: psSysctls(psSafeSysctls1_29)},
			{minor: 32, fn: psSysctls(psSafeSysctls1_32)},
		}},
		{id: "windowsHostProcess", level: psBaseline, revisions: []psRevision{{minor: 0, fn: psHostProcess}}},
	}
}

// Formatting helpers shared by every check.

// psEachContainer visits init, regular and ephemeral containers, in that
// order: sidecars and debug containers get no exemption.
func psEachContainer(spec *corev1.PodSpec, visit func(c *corev1.Container)) {
	for i := range spec.InitContainers {
		visit(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		visit((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

func psPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// psQuote renders ["a", "b"] as `"a", "b"`.
func psQuote(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return `"` + strings.Join(items, `", "`) + `"`
}

// psNamed renders `container "a"` or `containers "a", "b"`.
func psNamed(one, many string, names []string) string {
	return psPlural(len(names), one, many) + " " + psQuote(names)
}

func psSorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// psSetters names who set a forbidden value: "pod", the containers, or
// both ("pod and containers "a", "b"").
func psSetters(pod bool, containers []string) []string {
	var out []string
	if pod {
		out = append(out, "pod")
	}
	if len(containers) > 0 {
		out = append(out, psNamed("container", "containers", containers))
	}
	return out
}

func psUserNamespace(spec *corev1.PodSpec) bool {
	return spec.HostUsers != nil && !*spec.HostUsers
}

func psUnlessUserNamespace(fn psCheckFn) psCheckFn {
	return func(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
		if psUserNamespace(spec) {
			return nil
		}
		return fn(meta, spec)
	}
}

func psHostNamespaces(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var shared []string // kept in sorted order
	if spec.HostIPC {
		shared = append(shared, "hostIPC")
	}
	if spec.HostNetwork {
		shared = append(shared, "hostNetwork")
	}
	if spec.HostPID {
		shared = append(shared, "hostPID")
	}
	if len(shared) == 0 {
		return nil
	}
	return &psViolation{"host namespaces", strings.Join(shared, ", ")}
}

func psPrivilegedContainers(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var bad []string
	psEachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			bad = append(bad, c.Name)
		}
	})
	if len(bad) == 0 {
		return nil
	}
	return &psViolation{"privileged", psNamed("container", "containers", bad) + " must not set securityContext.privileged=true"}
}

// psDefaultCapabilities are the capabilities container runtimes grant by
// default; adding them back is harmless.
var psDefaultCapabilities = map[corev1.Capability]bool{
	"AUDIT_WRITE": true, "CHOWN": true, "DAC_OVERRIDE": true, "FOWNER": true, "FSETID": true,
	"KILL": true, "MKNOD": true, "NET_BIND_SERVICE": true, "SETFCAP": true, "SETGID": true,
	"SETPCAP": true, "SETUID": true, "SYS_CHROOT": true,
}

func psCapabilitiesBaseline(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var bad []string
	caps := map[string]bool{}
	psEachContainer(spec, func(c *corev1.Container) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			return
		}
		ok := true
		for _, cap := range c.SecurityContext.Capabilities.Add {
			if !psDefaultCapabilities[cap] {
				ok = false
				caps[string(cap)] = true
			}
		}
		if !ok {
			bad = append(bad, c.Name)
		}
	})
	if len(bad) == 0 {
		return nil
	}
	return &psViolation{"non-default capabilities", fmt.Sprintf("%s must not include %s in securityContext.capabilities.add",
		psNamed("container", "containers", bad), psQuote(psSorted(caps)))}
}

func psHostPathVolumes(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var bad []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			bad = append(bad, v.Name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &psViolation{"hostPath volumes", psNamed("volume", "volumes", bad)}
}

func psHostPorts(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var bad []string
	ports := map[string]bool{}
	psEachContainer(spec, func(c *corev1.Container) {
		ok := true
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				ok = false
				ports[strconv.Itoa(int(p.HostPort))] = true
			}
		}
		if !ok {
			bad = append(bad, c.Name)
		}
	})
	if len(bad) == 0 {
		return nil
	}
	// Ports sort as text, as upstream's: "8080" before "9".
	return &psViolation{"hostPort", fmt.Sprintf("%s %s %s %s", psNamed("container", "containers", bad),
		psPlural(len(bad), "uses", "use"), psPlural(len(ports), "hostPort", "hostPorts"), strings.Join(psSorted(ports), ", "))}
}

// psProbeHosts forbids probes and lifecycle hooks aimed at another host:
// the kubelet would connect there from the node's network.
func psProbeHosts(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	bad, hosts := map[string]bool{}, map[string]bool{}
	note := func(c *corev1.Container, http *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction) {
		if http != nil && http.Host != "" {
			bad[c.Name], hosts[http.Host] = true, true
		}
		if tcp != nil && tcp.Host != "" {
			bad[c.Name], hosts[tcp.Host] = true, true
		}
	}
	psEachContainer(spec, func(c *corev1.Container) {
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil {
				note(c, p.HTTPGet, p.TCPSocket)
			}
		}
		if c.Lifecycle != nil {
			for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
				if h != nil {
					note(c, h.HTTPGet, h.TCPSocket)
				}
			}
		}
	})
	if len(bad) == 0 {
		return nil
	}
	return &psViolation{"probe or lifecycle host", fmt.Sprintf("%s %s %s %s",
		psNamed("container", "containers", psSorted(bad)), psPlural(len(bad), "uses", "use"),
		psPlural(len(hosts), "probe or lifecycle host", "probe or lifecycle hosts"), psQuote(psSorted(hosts)))}
}

func psProcMount(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var bad []string
	types := map[string]bool{}
	psEachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			bad = append(bad, c.Name)
			types[string(*sc.ProcMount)] = true
		}
	})
	if len(bad) == 0 {
		return nil
	}
	return &psViolation{"procMount", fmt.Sprintf("%s must not set securityContext.procMount to %s",
		psNamed("container", "containers", bad), psQuote(psSorted(types)))}
}

// psAppArmor allows the runtime's default profile or one loaded on the
// node, by field or by the older annotation, and nothing unconfined.
func psAppArmor(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	allowed := func(t corev1.AppArmorProfileType) bool {
		return t == corev1.AppArmorProfileTypeRuntimeDefault || t == corev1.AppArmorProfileTypeLocalhost
	}
	values := map[string]bool{}
	podBad := false
	if sc := spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !allowed(sc.AppArmorProfile.Type) {
		podBad = true
		values[string(sc.AppArmorProfile.Type)] = true
	}
	var containers []string
	psEachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !allowed(sc.AppArmorProfile.Type) {
			containers = append(containers, c.Name)
			values[string(sc.AppArmorProfile.Type)] = true
		}
	})
	var annotations []string
	for k, v := range meta.Annotations {
		if !strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			continue
		}
		if v == "" || v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault || strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
			continue
		}
		annotations = append(annotations, fmt.Sprintf("%s=%q", k, v))
	}
	setters := psSetters(podBad, containers)
	list := psSorted(values)
	if len(annotations) > 0 {
		sort.Strings(annotations)
		list = append(list, annotations...)
		setters = append(setters, psPlural(len(annotations), "annotation", "annotations"))
	}
	if len(setters) == 0 {
		return nil
	}
	return &psViolation{psPlural(len(list), "forbidden AppArmor profile", "forbidden AppArmor profiles"),
		fmt.Sprintf("%s must not set AppArmor profile type to %s", strings.Join(setters, " and "), psQuote(list))}
}

// psSELinuxTypes are the container types of the common SELinux policies.
var psSELinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t"}

// psSELinux allows only the given types, and never a custom user or role.
func psSELinux(types []string) psCheckFn {
	ok := map[string]bool{}
	for _, t := range types {
		ok[t] = true
	}
	return func(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
		badTypes := map[string]bool{}
		var setUser, setRole bool
		valid := func(o *corev1.SELinuxOptions) bool {
			good := true
			if !ok[o.Type] {
				good = false
				badTypes[o.Type] = true
			}
			if o.User != "" {
				good, setUser = false, true
			}
			if o.Role != "" {
				good, setRole = false, true
			}
			return good
		}
		podBad := false
		if sc := spec.SecurityContext; sc != nil && sc.SELinuxOptions != nil {
			podBad = !valid(sc.SELinuxOptions)
		}
		var containers []string
		psEachContainer(spec, func(c *corev1.Container) {
			if sc := c.SecurityContext; sc != nil && sc.SELinuxOptions != nil && !valid(sc.SELinuxOptions) {
				containers = append(containers, c.Name)
			}
		})
		setters := psSetters(podBad, containers)
		if len(setters) == 0 {
			return nil
		}
		var what []string
		if len(badTypes) > 0 {
			what = append(what, psNamed("type", "types", psSorted(badTypes)))
		}
		if setUser {
			what = append(what, "user may not be set")
		}
		if setRole {
			what = append(what, "role may not be set")
		}
		return &psViolation{"seLinuxOptions", fmt.Sprintf("%s set forbidden securityContext.seLinuxOptions: %s",
			strings.Join(setters, " and "), strings.Join(what, "; "))}
	}
}

func psSeccompAllowed(t corev1.SeccompProfileType) bool {
	return t == corev1.SeccompProfileTypeRuntimeDefault || t == corev1.SeccompProfileTypeLocalhost
}

// psSeccompAnnotations is the pre-v1.19 rule, on the alpha annotations.
func psSeccompAnnotations(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	allowed := func(v string) bool {
		return v == corev1.SeccompProfileRuntimeDefault || v == corev1.DeprecatedSeccompProfileDockerDefault ||
			strings.HasPrefix(v, corev1.SeccompLocalhostProfileNamePrefix)
	}
	bad := map[string]bool{}
	check := func(key string) {
		if v, ok := meta.Annotations[key]; ok && !allowed(v) {
			bad[fmt.Sprintf("%s=%q", key, v)] = true
		}
	}
	check(corev1.SeccompPodAnnotationKey)
	psEachContainer(spec, func(c *corev1.Container) { check(corev1.SeccompContainerAnnotationKeyPrefix + c.Name) })
	if len(bad) == 0 {
		return nil
	}
	return &psViolation{"seccompProfile", fmt.Sprintf("forbidden %s %s",
		psPlural(len(bad), "annotation", "annotations"), strings.Join(psSorted(bad), ", "))}
}

// psSeccompExplicit finds the pod and containers that set a seccomp
// profile other than RuntimeDefault or Localhost. Leaving it unset is a
// matter for restricted, not for this.
func psSeccompExplicit(spec *corev1.PodSpec) *psViolation {
	values := map[string]bool{}
	podBad := false
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil && !psSeccompAllowed(sc.SeccompProfile.Type) {
		podBad = true
		values[string(sc.SeccompProfile.Type)] = true
	}
	var containers []string
	psEachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil && !psSeccompAllowed(sc.SeccompProfile.Type) {
			containers = append(containers, c.Name)
			values[string(sc.SeccompProfile.Type)] = true
		}
	})
	setters := psSetters(podBad, containers)
	if len(setters) == 0 {
		return nil
	}
	return &psViolation{"seccompProfile", fmt.Sprintf("%s must not set securityContext.seccompProfile.type to %s",
		strings.Join(setters, " and "), psQuote(psSorted(values)))}
}

func psSeccompBaseline(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	return psSeccompExplicit(spec)
}

// The safe sysctls: namespaced per pod and unable to affect the node or
// other pods. The list grows with Kubernetes versions.
var (
	psSafeSysctls = []string{
		"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start",
	}
	psSafeSysctls1_27 = append(append([]string(nil), psSafeSysctls...), "net.ipv4.ip_local_reserved_ports")
	psSafeSysctls1_29 = append(append([]string(nil), psSafeSysctls1_27...),
		"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes")
	psSafeSysctls1_32 = append(append([]string(nil), psSafeSysctls1_29...), "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
)

func psSysctls(safe []string) psCheckFn {
	ok := map[string]bool{}
	for _, s := range safe {
		ok[s] = true
	}
	return func(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
		if spec.SecurityContext == nil {
			return nil
		}
		var bad []string
		for _, s := range spec.SecurityContext.Sysctls {
			if !ok[s.Name] {
				bad = append(bad, s.Name)
			}
		}
		if len(bad) == 0 {
			return nil
		}
		return &psViolation{"forbidden sysctls", strings.Join(bad, ", ")}
	}
}

func psHostProcess(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	set := func(sc *corev1.WindowsSecurityContextOptions) bool {
		return sc != nil && sc.HostProcess != nil && *sc.HostProcess
	}
	var containers []string
	psEachContainer(spec, func(c *corev1.Container) {
		if c.SecurityContext != nil && set(c.SecurityContext.WindowsOptions) {
			containers = append(containers, c.Name)
		}
	})
	setters := psSetters(spec.SecurityContext != nil && set(spec.SecurityContext.WindowsOptions), containers)
	if len(setters) == 0 {
		return nil
	}
	return &psViolation{"hostProcess", strings.Join(setters, " and ") + " must not set securityContext.windowsOptions.hostProcess=true"}
}
