package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func resources(req, lim string) corev1.ResourceRequirements {
	parse := func(s string) corev1.ResourceList {
		if s == "" {
			return nil
		}
		l := corev1.ResourceList{}
		for _, kv := range strings.Split(s, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return l
	}
	return corev1.ResourceRequirements{Requests: parse(req), Limits: parse(lim)}
}

func TestPodCgroupConfig(t *testing.T) {
	pod := func(rs ...corev1.ResourceRequirements) *corev1.Pod {
		names := make([]string, len(rs))
		for i := range rs {
			names[i] = string(rune('a' + i))
		}
		p := testPod(corev1.RestartPolicyAlways, names...)
		for i := range rs {
			p.Spec.Containers[i].Resources = rs[i]
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want cgroupConfig
		v1   []string
		v2   []string
	}{
		{"BestEffort: shares 2, nothing else", pod(resources("", "")),
			cgroupConfig{CPUShares: 2, CPUQuota: -1, Memory: -1},
			[]string{"cpu.shares=2"}, []string{"cpu.weight=1"}},
		{"Guaranteed: shares, quota and memory from the sums", pod(resources("", "cpu=250m,memory=32Mi"), resources("", "cpu=250m,memory=32Mi")),
			cgroupConfig{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, Memory: 64 << 20},
			[]string{"cpu.shares=512", "cpu.cfs_period_us=100000", "cpu.cfs_quota_us=50000", "memory.limit_in_bytes=67108864"},
			[]string{"cpu.weight=20", "cpu.max=50000 100000", "memory.max=67108864"}},
		{"Burstable, every container limited: all three", pod(resources("cpu=100m", "cpu=1,memory=16Mi"), resources("cpu=100m", "cpu=1,memory=16Mi")),
			cgroupConfig{CPUShares: 204, CPUQuota: 200000, CPUPeriod: 100000, Memory: 32 << 20}, nil, nil},
		{"Burstable, one container without limits: shares only", pod(resources("cpu=100m", "cpu=1,memory=16Mi"), resources("cpu=100m", "")),
			cgroupConfig{CPUShares: 204, CPUQuota: -1, Memory: -1}, nil, nil},
		{"a tiny limit: the 1 ms quota minimum", pod(resources("", "cpu=1m,memory=8Mi")),
			cgroupConfig{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000, Memory: 8 << 20}, nil, nil},
		{"an init container larger than the sum counts instead", func() *corev1.Pod {
			p := pod(resources("cpu=100m", ""))
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: resources("cpu=2", "")}}
			return p
		}(), cgroupConfig{CPUShares: 2048, CPUQuota: -1, Memory: -1}, nil, nil},
		{"overhead is added", func() *corev1.Pod {
			p := pod(resources("", "cpu=500m,memory=32Mi"))
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("8Mi")}
			return p
		}(), cgroupConfig{CPUShares: 614, CPUQuota: 60000, CPUPeriod: 100000, Memory: 40 << 20}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podCgroupConfig(tc.pod)
			if got != tc.want {
				t.Fatalf("config %+v, want %+v", got, tc.want)
			}
			render := func(v2 bool) []string {
				var out []string
				for _, ctrl := range []string{"cpu", "memory"} {
					for _, f := range cgroupFiles(got, v2)[ctrl] {
						out = append(out, f[0]+"="+f[1])
					}
				}
				return out
			}
			if tc.v1 != nil && !slices.Equal(render(false), tc.v1) {
				t.Errorf("v1 files %q, want %q", render(false), tc.v1)
			}
			if tc.v2 != nil && !slices.Equal(render(true), tc.v2) {
				t.Errorf("v2 files %q, want %q", render(true), tc.v2)
			}
		})
	}
	burst := pod(resources("cpu=300m", ""))
	done := pod(resources("cpu=2", ""))
	done.Status.Phase = corev1.PodSucceeded
	if got := burstableShares([]*corev1.Pod{burst, burst, done, pod(resources("", "cpu=1,memory=1Gi")), pod()}); got != 614 {
		t.Errorf("burstable shares %d, want 614 (600m of running burstable pods)", got)
	}
}

// cgroupValue reads file of the pod cgroup dir (absolute cgroup path) in
// the hierarchy of controller ctrl, v1 or v2.
func cgroupValue(t *testing.T, dir, ctrl, file string) string {
	t.Helper()
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if _, ok := m.controllers()[ctrl]; ok {
			if d := m.dir(dir); d != "" {
				b, err := os.ReadFile(filepath.Join(d, file))
				if err != nil {
					t.Fatal(err)
				}
				return strings.TrimSpace(string(b))
			}
		}
	}
	t.Fatalf("no %s hierarchy", ctrl)
	return ""
}

// On real containers: each QoS class's pod cgroup carries its limits
// (v1 or v2, whichever the host has), and a container past its memory
// limit is OOMKilled with exit code 137.
func TestQOSCgroupsRealNode(t *testing.T) {
	e := newRealE2E(t)
	v2 := false
	if mounts, _ := cgroupMounts(); len(mounts) > 0 {
		for _, m := range mounts {
			if v, ok := m.controllers()["cpu"]; ok {
				v2 = v
			}
		}
	}
	run := sh(`trap 'exit 0' TERM; while :; do sleep 0.2; done`)
	mk := func(name string, r corev1.ResourceRequirements) *corev1.Pod {
		return e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{Name: "c", Image: realImage, Command: run, Resources: r}}}})
	}
	g := mk("guaranteed", resources("", "cpu=250m,memory=32Mi"))
	b := mk("burstable", resources("cpu=100m", ""))
	be := mk("besteffort", resources("", ""))
	for _, n := range []string{"guaranteed", "burstable", "besteffort"} {
		e.waitPod(n, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	}
	root := e.cgroupRoot + "/kubepods"
	for _, tc := range []struct {
		dir            string
		ctrl, file     string
		v1Want, v2Want string
	}{
		{root + "/pod" + string(g.UID), "cpu", "cpu.shares", "256", ""},
		{root + "/pod" + string(g.UID), "cpu", "cpu.weight", "", "10"},
		{root + "/pod" + string(g.UID), "cpu", "cpu.cfs_quota_us", "25000", ""},
		{root + "/pod" + string(g.UID), "cpu", "cpu.max", "", "25000 100000"},
		{root + "/pod" + string(g.UID), "memory", "memory.limit_in_bytes", "33554432", ""},
		{root + "/pod" + string(g.UID), "memory", "memory.max", "", "33554432"},
		{root + "/burstable/pod" + string(b.UID), "cpu", "cpu.shares", "102", ""},
		{root + "/burstable/pod" + string(b.UID), "cpu", "cpu.cfs_quota_us", "-1", ""},
		{root + "/burstable", "cpu", "cpu.shares", "102", ""},
		{root + "/besteffort/pod" + string(be.UID), "cpu", "cpu.shares", "2", ""},
		{root + "/besteffort", "cpu", "cpu.shares", "2", ""},
	} {
		want := tc.v1Want
		if v2 {
			want = tc.v2Want
		}
		if want == "" {
			continue
		}
		if got := cgroupValue(t, tc.dir, tc.ctrl, tc.file); got != want {
			t.Errorf("%s/%s = %s, want %s", tc.dir, tc.file, got, want)
		}
	}

	t.Run("the burstable class's shares follow its pods", func(t *testing.T) {
		if v2 {
			t.Skip("checked on v1 files")
		}
		if err := e.c.Client.CoreV1().Pods("default").Delete(context.Background(), "burstable", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually("burstable's shares back to 2", func() (bool, error) {
			return cgroupValue(t, root+"/burstable", "cpu", "cpu.shares") == "2", nil
		})
	})

	t.Run("past its memory limit: OOMKilled, 137", func(t *testing.T) {
		e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hog"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: realImage, Command: []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"},
				Resources: resources("", "cpu=500m,memory=16Mi")}}}})
		p := e.waitPod("hog", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if term := cstatus(p, "c").State.Terminated; term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
			t.Errorf("terminated %+v", cstatus(p, "c").State)
		}
	})
}
