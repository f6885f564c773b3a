package kubeletapi

import (
	"strings"
	"testing"
	"time"
)

func TestResourceMetricsText(t *testing.T) {
	at := time.Unix(1010, 0)
	text := string(ResourceMetricsText(ResourceUsage{
		At: at, NodeCPUSeconds: 16, NodeMemory: 851443712,
		Containers: []ContainerUsage{
			{Namespace: "ns", Pod: "web", Container: "app", CPUSeconds: 10, MemoryBytes: 1 << 20, Started: time.Unix(1000, 0)},
			{Namespace: "ns", Pod: "db", Container: "b", CPUSeconds: 2.5, MemoryBytes: 100},
			{Namespace: "ns", Pod: "db", Container: "a", CPUSeconds: 2.5, MemoryBytes: 100},
		},
	}))
	for _, want := range []string{
		"# TYPE container_cpu_usage_seconds_total counter",
		`container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 10 1010000`,
		`container_memory_working_set_bytes{container="b",namespace="ns",pod="db"} 100 1010000`,
		`container_start_time_seconds{container="app",namespace="ns",pod="web"} 1000 1010000`,
		"node_cpu_usage_seconds_total 16 1010000",
		"node_memory_working_set_bytes 8.51443712e+08 1010000",
		`pod_cpu_usage_seconds_total{namespace="ns",pod="db"} 5 1010000`,
		`pod_memory_working_set_bytes{namespace="ns",pod="db"} 200 1010000`,
		"resource_scrape_error 0",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, `container_start_time_seconds{container="a"`) {
		t.Error("a container without a start time has a start-time sample")
	}
	if i, j := strings.Index(text, `container="a"`), strings.Index(text, `container="b"`); i > j {
		t.Errorf("containers not sorted:\n%s", text)
	}
}
