package kubelet

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestContainerResources(t *testing.T) {
	gi := int64(8 << 30)
	for _, tc := range []struct {
		name                  string
		qos                   corev1.PodQOSClass
		req, lim              corev1.ResourceList
		minOOM                int64
		shares, quota, memory int64
		oom                   int64
	}{
		{"best effort", corev1.PodQOSBestEffort, nil, nil, -1000, 2, 0, 0, 1000},
		{"requests only", corev1.PodQOSBurstable, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("4Gi")}, nil, -1000,
			256, 0, 0, 500},
		{"limits only: shares from the limit", corev1.PodQOSBurstable, nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}, -1000,
			2048, 200000, 1 << 30, 999},
		{"guaranteed, the host's floor", corev1.PodQOSGuaranteed, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}, 0,
			2, 1000, 0, 0},
		{"guaranteed", corev1.PodQOSGuaranteed, nil, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300")}, -1000,
			262144, 30000000, 0, -997},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: tc.req, Limits: tc.lim}}
			p := &corev1.Pod{Status: corev1.PodStatus{QOSClass: tc.qos}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
			r := containerResources(p, &c, gi, tc.minOOM)
			if r.CpuShares != tc.shares || r.CpuQuota != tc.quota || r.MemoryLimitInBytes != tc.memory || r.OomScoreAdj != tc.oom {
				t.Errorf("shares %d quota %d memory %d oom %d; want %d %d %d %d", r.CpuShares, r.CpuQuota, r.MemoryLimitInBytes, r.OomScoreAdj,
					tc.shares, tc.quota, tc.memory, tc.oom)
			}
			if tc.quota > 0 && r.CpuPeriod != 100000 {
				t.Errorf("period %d", r.CpuPeriod)
			}
		})
	}
}

func TestContainerConfig(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)), RunAsGroup: ptr.To(int64(2000)), FSGroup: ptr.To(int64(3000)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox", Command: []string{"sh", "-c"}, Args: []string{"echo $(GREETING) $$(GREETING)"},
				WorkingDir: "/w", TTY: true, Stdin: true, TerminationMessagePath: "/dev/termination-log",
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To(int64(0)), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	cfg := containerConfig(containerInput{pod: pod, container: &pod.Spec.Containers[0], restartCount: 3, env: []envVar{{"GREETING", "hi"}}})
	if cfg.Metadata.Name != "app" || cfg.Metadata.Attempt != 3 || cfg.LogPath != "app/3.log" || cfg.Image.Image != "busybox" {
		t.Errorf("metadata %v, log %q, image %v", cfg.Metadata, cfg.LogPath, cfg.Image)
	}
	if !slices.Equal(cfg.Args, []string{"echo hi $(GREETING)"}) || cfg.WorkingDir != "/w" || !cfg.Tty || !cfg.Stdin {
		t.Errorf("args %q wd %q tty %v stdin %v", cfg.Args, cfg.WorkingDir, cfg.Tty, cfg.Stdin)
	}
	if cfg.Labels[labelPodUID] != "u1" || cfg.Labels[labelContainerName] != "app" || cfg.Annotations[annotationRestartCount] != "3" ||
		cfg.Annotations[annotationHash] != containerHash(&pod.Spec.Containers[0]) {
		t.Errorf("labels %v annotations %v", cfg.Labels, cfg.Annotations)
	}
	sc := cfg.Linux.SecurityContext
	if sc.RunAsUser.GetValue() != 0 || sc.RunAsGroup.GetValue() != 2000 || !slices.Equal(sc.SupplementalGroups, []int64{3000}) ||
		!sc.ReadonlyRootfs || !sc.NoNewPrivs || sc.Privileged {
		t.Errorf("security context %v", sc)
	}
	if !slices.Equal(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) || !slices.Equal(sc.Capabilities.DropCapabilities, []string{"ALL"}) {
		t.Errorf("capabilities %v", sc.Capabilities)
	}
	if sc.Seccomp.ProfileType.String() != "RuntimeDefault" || len(sc.MaskedPaths) == 0 || len(sc.ReadonlyPaths) == 0 {
		t.Errorf("seccomp %v masked %v", sc.Seccomp, sc.MaskedPaths)
	}
	pod.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
	if sc := containerConfig(containerInput{pod: pod, container: &pod.Spec.Containers[0]}).Linux.SecurityContext; !sc.Privileged || len(sc.MaskedPaths) != 0 {
		t.Errorf("privileged: %v masked %v", sc.Privileged, sc.MaskedPaths)
	}
}
