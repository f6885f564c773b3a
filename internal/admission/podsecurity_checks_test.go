package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// psCompliant is a pod that passes restricted:latest: each case changes
// one thing, so the message it gets is that one thing's.
func psCompliant() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "c",
				Image: "nginx",
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

func psContainerSC(p *corev1.Pod) *corev1.SecurityContext {
	return p.Spec.Containers[0].SecurityContext
}

func psLV(level psLevel, version string) psLevelVersion {
	v, ok := psParseVersion(version)
	if !ok {
		panic(version)
	}
	return psLevelVersion{level: level, version: v}
}

// TestPodSecurityChecks runs each check through the registry at a level
// and version, with a pod that passes and one that fails, and compares the
// full message a user would read.
func TestPodSecurityChecks(t *testing.T) {
	reg := newPSRegistry(psChecks())
	cases := []struct {
		name    string
		lv      psLevelVersion
		mutate  func(p *corev1.Pod)
		message string // "" = allowed
	}{
		{"compliant pod passes baseline", psLV(psBaseline, "latest"), func(*corev1.Pod) {}, ""},
		{"compliant pod passes restricted", psLV(psRestricted, "latest"), func(*corev1.Pod) {}, ""},
		{"privileged allows anything", psLV(psPrivileged, "latest"), func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			psContainerSC(p).Privileged = ptr.To(true)
		}, ""},

		// Baseline.
		{"host namespaces", psLV(psBaseline, "latest"), func(p *corev1.Pod) { p.Spec.HostPID, p.Spec.HostNetwork = true, true },
			"host namespaces (hostNetwork, hostPID)"},
		{"privileged container", psLV(psBaseline, "latest"), func(p *corev1.Pod) { psContainerSC(p).Privileged = ptr.To(true) },
			`privileged (container "c" must not set securityContext.privileged=true)`},
		{"privileged=false is fine", psLV(psBaseline, "latest"), func(p *corev1.Pod) { psContainerSC(p).Privileged = ptr.To(false) }, ""},
		{"capabilities beyond the default set", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			psContainerSC(p).Capabilities.Add = []corev1.Capability{"SYS_ADMIN", "NET_RAW", "CHOWN", "NET_RAW"}
		}, `non-default capabilities (container "c" must not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add)`},
		{"default capabilities are fine in baseline", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			psContainerSC(p).Capabilities.Add = []corev1.Capability{"CHOWN", "KILL"}
		}, ""},
		{"hostPath volume", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, `hostPath volumes (volume "host")`},
		{"host ports, sorted as text", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Ports: []corev1.ContainerPort{{ContainerPort: 9, HostPort: 9}}}}
		}, `hostPort (containers "i", "c" use hostPorts 8080, 9)`},
		{"container port without a host port is fine", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
		}, ""},
		{"AppArmor unconfined by field", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			psContainerSC(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}, `forbidden AppArmor profile (container "c" must not set AppArmor profile type to "Unconfined")`},
		{"AppArmor unconfined by annotation", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}
		}, `forbidden AppArmor profile (annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/c="unconfined"")`},
		{"AppArmor runtime default is fine", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "localhost/mine"}
		}, ""},
		{"SELinux type and user", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t", User: "root"}
		}, `seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set)`},
		{"SELinux role alone", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			psContainerSC(p).SELinuxOptions = &corev1.SELinuxOptions{Role: "r"}
		}, `seLinuxOptions (container "c" set forbidden securityContext.seLinuxOptions: role may not be set)`},
		{"SELinux container_engine_t from v1.31", psLV(psBaseline, "v1.31"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
		}, ""},
		{"SELinux container_engine_t before v1.31", psLV(psBaseline, "v1.30"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
		}, `seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "container_engine_t")`},
		{"unmasked /proc", psLV(psBaseline, "latest"), func(p *corev1.Pod) { psContainerSC(p).ProcMount = ptr.To(corev1.UnmaskedProcMount) },
			`procMount (container "c" must not set securityContext.procMount to "Unmasked")`},
		{"unmasked /proc in a user namespace, baseline latest", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			psContainerSC(p).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}, ""},
		{"unmasked /proc in a user namespace, baseline v1.34", psLV(psBaseline, "v1.34"), func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			psContainerSC(p).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}, `procMount (container "c" must not set securityContext.procMount to "Unmasked")`},
		{"seccomp unconfined", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
		}, `seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`},
		{"seccomp annotation before v1.19", psLV(psBaseline, "v1.18"), func(p *corev1.Pod) {
			p.Annotations = map[string]string{"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}
		}, `seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")`},
		{"sysctls outside the safe set", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax"}, {Name: "net.ipv4.tcp_rmem"}, {Name: "net.ipv4.ip_local_port_range"}}
		}, "forbidden sysctls (kernel.msgmax)"},
		{"tcp_rmem is safe only from v1.32", psLV(psBaseline, "v1.31"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax"}, {Name: "net.ipv4.tcp_rmem"}}
		}, "forbidden sysctls (kernel.msgmax, net.ipv4.tcp_rmem)"},
		{"Windows hostProcess", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
			psContainerSC(p).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}, `hostProcess (pod and container "c" must not set securityContext.windowsOptions.hostProcess=true)`},
		{"probe host", psLV(psBaseline, "latest"), func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "10.0.0.1"}}}
		}, `probe or lifecycle host (container "c" uses probe or lifecycle host "10.0.0.1")`},
		{"probe host is not checked before v1.34", psLV(psBaseline, "v1.33"), func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "10.0.0.1"}}}
		}, ""},

		// Restricted.
		{"bare pod, upstream's message", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext = nil
			p.Spec.Containers = []corev1.Container{{Name: "root", Image: "nginx"}}
		}, `allowPrivilegeEscalation != false (container "root" must set securityContext.allowPrivilegeEscalation=false), ` +
			`unrestricted capabilities (container "root" must set securityContext.capabilities.drop=["ALL"]), ` +
			`runAsNonRoot != true (pod or container "root" must set securityContext.runAsNonRoot=true), ` +
			`seccompProfile (pod or container "root" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
		{"baseline violations come first", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.HostIPC = true
			psContainerSC(p).RunAsUser = ptr.To(int64(0))
		}, `host namespaces (hostIPC), runAsUser=0 (container "c" must not set runAsUser=0)`},
		{"privilege escalation", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			psContainerSC(p).AllowPrivilegeEscalation = ptr.To(true)
		}, `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`},
		{"restricted capabilities replace the baseline check", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			psContainerSC(p).Capabilities.Add = []corev1.Capability{"SYS_ADMIN", "NET_BIND_SERVICE"}
		}, `unrestricted capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
		{"NET_BIND_SERVICE may be added back", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			psContainerSC(p).Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
		}, ""},
		{"before v1.22 only the baseline capabilities check runs", psLV(psRestricted, "v1.21"), func(p *corev1.Pod) {
			psContainerSC(p).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}
		}, `non-default capabilities (container "c" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
		{"restricted volume types replace hostPath volumes", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "a", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{}}},
				{Name: "ok", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
				{Name: "b", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}},
			}
		}, `restricted volume types (volumes "a", "b" use restricted volume types "hostPath", "nfs")`},
		{"inert volume types are fine", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "i", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "x"}}},
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
			}
		}, ""},
		{"runAsNonRoot=false on the pod", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
		}, `runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)`},
		{"runAsNonRoot on the container covers it", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = nil
			psContainerSC(p).RunAsNonRoot = ptr.To(true)
		}, ""},
		{"runAsUser=0 on the pod", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
		}, `runAsUser=0 (pod must not set runAsUser=0)`},
		{"runAsUser=0 is not checked before v1.23", psLV(psRestricted, "v1.22"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
		}, ""},
		{"root in a user namespace, latest", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
		}, ""},
		{"root in a user namespace, v1.34", psLV(psRestricted, "v1.34"), func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
		}, `runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), runAsUser=0 (pod must not set runAsUser=0)`},
		{"restricted keeps /proc masked in a user namespace", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			psContainerSC(p).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}, `procMount (container "c" must not set securityContext.procMount to "Unmasked")`},
		{"seccomp unset on pod and containers", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = nil
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
				SecurityContext: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}}}}
		}, `allowPrivilegeEscalation != false (container "debug" must set securityContext.allowPrivilegeEscalation=false), ` +
			`unrestricted capabilities (container "debug" must set securityContext.capabilities.drop=["ALL"]), ` +
			`seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
		{"seccomp unconfined is named once, by the restricted check", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			psContainerSC(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}, `seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")`},
		{"Windows pods skip Linux-only fields from v1.25", psLV(psRestricted, "latest"), func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			p.Spec.SecurityContext.SeccompProfile = nil
			p.Spec.Containers[0].SecurityContext = nil
		}, ""},
		{"Windows pods before v1.25", psLV(psRestricted, "v1.24"), func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			p.Spec.Containers[0].SecurityContext = nil
		}, `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ` +
			`unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])`},
		{"versions past the newest mean the newest", psLV(psRestricted, "v1.99"), func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := psCompliant()
			tc.mutate(pod)
			got := psDetail(reg.evaluate(tc.lv, &pod.ObjectMeta, &pod.Spec))
			if got != tc.message {
				t.Fatalf("%s:\n got %q\nwant %q", tc.lv, got, tc.message)
			}
		})
	}
}

// TestPodSecurityCheckPlurals covers the many-container forms of the
// messages, which users of multi-container pods read.
func TestPodSecurityCheckPlurals(t *testing.T) {
	reg := newPSRegistry(psChecks())
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)},
		InitContainers:  []corev1.Container{{Name: "init", SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}}},
		Containers: []corev1.Container{
			{Name: "a", SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(false), Privileged: ptr.To(true)}},
			{Name: "b", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_ADMIN"}}}},
		},
	}}
	got := psDetail(reg.evaluate(psLV(psRestricted, "latest"), nil, &pod.Spec))
	want := `privileged (containers "a", "b" must not set securityContext.privileged=true), ` +
		`allowPrivilegeEscalation != false (containers "init", "a", "b" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (containers "init", "a" must set securityContext.capabilities.drop=["ALL"]; container "b" must not include "NET_ADMIN" in securityContext.capabilities.add), ` +
		`runAsNonRoot != true (pod and containers "init", "a" must not set securityContext.runAsNonRoot=false), ` +
		`seccompProfile (pod or containers "init", "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	if got != want {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
	if got, want := psReasons(reg.evaluate(psLV(psBaseline, "latest"), nil, &pod.Spec)), "non-default capabilities, privileged"; got != want {
		t.Fatalf("short form: got %q, want %q", got, want)
	}
}

func TestPodSecurityLabels(t *testing.T) {
	priv := psLevelVersion{level: psPrivileged, version: psLatest}
	defaults := psPolicy{enforce: priv, audit: priv, warn: priv}
	cases := []struct {
		name   string
		labels map[string]string
		want   psPolicy
		errs   string
	}{
		{"none", nil, defaults, ""},
		{"warn follows a stricter enforce", map[string]string{PodSecurityEnforceLabel: "baseline", PodSecurityEnforceVersionLabel: "v1.22"},
			psPolicy{enforce: psLV(psBaseline, "v1.22"), audit: priv, warn: psLV(psBaseline, "v1.22")}, ""},
		{"warn follows enforce but keeps its own version", map[string]string{PodSecurityEnforceLabel: "restricted", PodSecurityWarnVersionLabel: "v1.23"},
			psPolicy{enforce: psLV(psRestricted, "latest"), audit: priv, warn: psLV(psRestricted, "v1.23")}, ""},
		{"an explicit warn level wins", map[string]string{PodSecurityEnforceLabel: "baseline", PodSecurityWarnLabel: "privileged"},
			psPolicy{enforce: psLV(psBaseline, "latest"), audit: priv, warn: priv}, ""},
		{"bad enforce fails closed, warn does not follow it", map[string]string{PodSecurityEnforceLabel: "strict"},
			psPolicy{enforce: psLV(psRestricted, "latest"), audit: priv, warn: priv},
			`metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`},
		{"bad warn fails open, bad version means latest", map[string]string{PodSecurityWarnLabel: "x", PodSecurityAuditVersionLabel: "v2.0"},
			defaults,
			`[metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "v2.0": must be "latest" or "v1.x", ` +
				`metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "x": must be one of privileged, baseline, restricted]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := psPolicyFor(tc.labels, defaults)
			if got != tc.want {
				t.Errorf("policy %+v, want %+v", got, tc.want)
			}
			gotErrs := ""
			if agg := errs.ToAggregate(); agg != nil {
				gotErrs = agg.Error()
			}
			if gotErrs != tc.errs {
				t.Errorf("errors %q, want %q", gotErrs, tc.errs)
			}
		})
	}
	for _, v := range []string{"v1.01", "v1", "1.2", "v1.-1", ""} {
		if _, ok := psParseVersion(v); ok {
			t.Errorf("version %q accepted", v)
		}
	}
}

// BenchmarkPodSecurityEvaluate measures one restricted evaluation of a
// compliant pod, the cost every pod create pays in a restricted namespace.
func BenchmarkPodSecurityEvaluate(b *testing.B) {
	reg := newPSRegistry(psChecks())
	pod := psCompliant()
	lv := psLV(psRestricted, "latest")
	b.ReportAllocs()
	for b.Loop() {
		if vs := reg.evaluate(lv, &pod.ObjectMeta, &pod.Spec); len(vs) != 0 {
			b.Fatal(vs)
		}
	}
}
