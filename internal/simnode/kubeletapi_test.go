package simnode

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func usagePod(name string, ann map[string]string, containers ...corev1.Container) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + "name", Annotations: ann},
		Spec:       corev1.PodSpec{Containers: containers},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, c := range containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(1000, 0))}}})
	}
	return p
}

func requesting(name, cpu, mem string) corev1.Container {
	c := corev1.Container{Name: name, Image: "img"}
	if cpu != "" {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	return c
}

func TestPodUsage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		wantCPU  []float64 // cores per container; NaN: a fraction of the request
		wantMem  []float64
		checkReq bool
	}{
		{
			name:    "annotations are shared evenly by the containers",
			pod:     usagePod("a", map[string]string{AnnotationCPUUsage: "500m", AnnotationMemoryUsage: "1Gi"}, requesting("x", "1", "1Gi"), requesting("y", "", "")),
			wantCPU: []float64{0.25, 0.25},
			wantMem: []float64{512 << 20, 512 << 20},
		},
		{
			name:    "no requests and no annotations: the floor",
			pod:     usagePod("b", nil, requesting("x", "", "")),
			wantCPU: []float64{usageFloorCPU},
			wantMem: []float64{usageFloorMemory},
		},
		{
			name:     "requests: a fixed fraction of them",
			pod:      usagePod("c", nil, requesting("x", "2", "4Gi")),
			checkReq: true,
		},
		{
			name:    "an unparsable annotation falls back to requests",
			pod:     usagePod("d", map[string]string{AnnotationCPUUsage: "lots"}, requesting("x", "", "")),
			wantCPU: []float64{usageFloorCPU},
			wantMem: []float64{usageFloorMemory},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podUsage(tc.pod)
			if tc.checkReq {
				if len(got) != 1 {
					t.Fatalf("got %d containers, want 1", len(got))
				}
				frac := got[0].cpuCores / 2
				if frac < usageMinFraction || frac >= usageMinFraction+usageSpread {
					t.Errorf("cpu %v is not 25-75%% of the 2-core request", got[0].cpuCores)
				}
				if m := got[0].memoryBytes / (4 << 30); math.Abs(m-frac) > 1e-9 {
					t.Errorf("memory fraction %v differs from cpu fraction %v", m, frac)
				}
				if again := podUsage(tc.pod); again[0].cpuCores != got[0].cpuCores {
					t.Errorf("usage is not deterministic: %v then %v", got[0].cpuCores, again[0].cpuCores)
				}
				return
			}
			if len(got) != len(tc.wantCPU) {
				t.Fatalf("got %d containers, want %d", len(got), len(tc.wantCPU))
			}
			for i := range got {
				if math.Abs(got[i].cpuCores-tc.wantCPU[i]) > 1e-9 || math.Abs(got[i].memoryBytes-tc.wantMem[i]) > 1 {
					t.Errorf("container %s: cpu %v mem %v, want %v %v", got[i].container, got[i].cpuCores, got[i].memoryBytes, tc.wantCPU[i], tc.wantMem[i])
				}
			}
		})
	}
	t.Run("containers not running use nothing", func(t *testing.T) {
		p := usagePod("e", map[string]string{AnnotationCPUUsage: "1"}, requesting("x", "", ""))
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}
		if got := podUsage(p); len(got) != 0 {
			t.Errorf("got %v, want nothing", got)
		}
	})
}

func TestResourceMetricsText(t *testing.T) {
	start := time.Unix(1000, 0)
	pods := []*corev1.Pod{
		usagePod("web", map[string]string{AnnotationCPUUsage: "1", AnnotationMemoryUsage: "100Mi"}, requesting("app", "", "")),
		usagePod("db", map[string]string{AnnotationCPUUsage: "500m", AnnotationMemoryUsage: "200Mi"}, requesting("a", "", ""), requesting("b", "", "")),
	}
	u := nodeUsage(pods)
	var st nodeCPU
	// 10 s after the node started, at the pods' rates since they started.
	nodeSeconds := st.advance(&u, start, start.Add(10*time.Second))
	text := string(resourceMetricsText(u, nodeSeconds, start.Add(10*time.Second)))
	for _, want := range []string{
		"# TYPE container_cpu_usage_seconds_total counter",
		`container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 10 1010000`,
		`container_cpu_usage_seconds_total{container="a",namespace="ns",pod="db"} 2.5 1010000`,
		`container_memory_working_set_bytes{container="b",namespace="ns",pod="db"} 1.048576e+08 1010000`,
		`container_start_time_seconds{container="app",namespace="ns",pod="web"} 1000 1010000`,
		// 1 + 0.5 cores of pods + 0.1 overhead, for 10 s.
		"node_cpu_usage_seconds_total 16 1010000",
		// 100Mi + 200Mi + 512Mi.
		"node_memory_working_set_bytes 8.51443712e+08 1010000",
		`pod_cpu_usage_seconds_total{namespace="ns",pod="db"} 5 1010000`,
		`pod_memory_working_set_bytes{namespace="ns",pod="web"} 1.048576e+08 1010000`,
		"resource_scrape_error 0",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	if i, j := strings.Index(text, `pod="db"`), strings.Index(text, `pod="web"`); i > j {
		t.Errorf("containers are not in namespace/pod order:\n%s", text)
	}
}

// Counters only grow, at the rate in force since the previous scrape.
func TestNodeCPUAdvance(t *testing.T) {
	start := time.Unix(1000, 0)
	pod := usagePod("web", map[string]string{AnnotationCPUUsage: "1"}, requesting("app", "", ""))
	var st nodeCPU
	steps := []struct {
		name          string
		at            time.Duration
		cpu           string
		wantContainer float64
		wantNode      float64
	}{
		{"first scrape: since the container started", 10 * time.Second, "1", 10, 11},
		{"same rate", 20 * time.Second, "1", 20, 22},
		{"a new rate counts from the last scrape", 30 * time.Second, "3", 50, 53},
		{"a lower rate still grows", 40 * time.Second, "100m", 51, 55},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			pod.Annotations[AnnotationCPUUsage] = s.cpu
			u := nodeUsage([]*corev1.Pod{pod})
			node := st.advance(&u, start, start.Add(s.at))
			if got := u.containers[0].cpuSeconds; math.Abs(got-s.wantContainer) > 1e-9 {
				t.Errorf("container counter %v, want %v", got, s.wantContainer)
			}
			if math.Abs(node-s.wantNode) > 1e-9 {
				t.Errorf("node counter %v, want %v", node, s.wantNode)
			}
		})
	}
}

func TestContainerLog(t *testing.T) {
	pod := usagePod("web", nil, requesting("app", "", ""))
	restarted := pod.DeepCopy()
	cs := &restarted.Status.ContainerStatuses[0]
	cs.RestartCount = 1
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 2, ContainerID: "simnode://0",
		StartedAt: cs.State.Running.StartedAt, FinishedAt: cs.State.Running.StartedAt}
	pulling := pod.DeepCopy()
	pulling.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
	for _, tc := range []struct {
		name, container, wantErr, wantLine string
		pod                                *corev1.Pod
		previous                           bool
	}{
		{"a running container", "app", "", "simnode: starting container app (image img) of pod ns/web on node sim-0", pod, false},
		{"no such container", "nope", `container "nope" not found in pod ns/web`, "", pod, false},
		{"no previous run", "app", `previous terminated container "app" in pod "web" not found`, "", pod, true},
		{"the previous run of a restarted container", "app", "", "simnode: container app exited with code 2", restarted, true},
		{"an image that does not pull", "app", `container "app" in pod "web" is waiting to start: trying and failing to pull image`, "", pulling, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, err := containerLog(tc.pod, tc.container, "sim-0", tc.previous)
			if err == nil && tc.previous {
				lines = lines[len(lines)-1:]
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(lines) == 0 || lines[0].Text != tc.wantLine {
				t.Fatalf("got %v, %v; want first line %q", lines, err, tc.wantLine)
			}
		})
	}
}

func TestKubeletDefaults(t *testing.T) {
	api := &KubeletAPI{ClientCAs: nil}
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
		wantIPs string
	}{
		{name: "no kubelet API: the benchmarking range", cfg: Config{Count: 2}, wantIPs: "198.18.0.0/15"},
		{name: "a non-loopback range is refused", cfg: Config{Count: 2, KubeletAPI: api, NodeIPRange: "10.0.0.0/16"}, wantErr: "loopback"},
		{name: "no certificate", cfg: Config{Count: 2, KubeletAPI: api}, wantErr: "serving certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Client = fake.NewClientset()
			got, err := tc.cfg.withDefaults()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.NodeIPRange != tc.wantIPs {
				t.Fatalf("got %q, %v; want %q", got.NodeIPRange, err, tc.wantIPs)
			}
			if got.kubeletPort != 0 {
				t.Errorf("kubelet port %d without the kubelet API, want 0", got.kubeletPort)
			}
		})
	}
}
