package kubeletapi

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ContainerUsage is one running container's figures on /metrics/resource.
type ContainerUsage struct {
	Namespace, Pod, Container string
	// CPUSeconds is the cumulative CPU time in core-seconds; it only grows
	// while the container runs.
	CPUSeconds float64
	// MemoryBytes is the working set.
	MemoryBytes float64
	// Started is when the container started (omitted when zero).
	Started time.Time
}

// ResourceUsage is a node's figures at one instant.
type ResourceUsage struct {
	At             time.Time
	NodeCPUSeconds float64
	NodeMemory     float64 // working set, bytes
	Containers     []ContainerUsage
}

// ContentTypeMetrics is the type /metrics/resource answers with.
const ContentTypeMetrics = "text/plain; version=0.0.4; charset=utf-8"

// ResourceMetricsText is the kubelet's /metrics/resource: the Prometheus
// text format, every sample stamped with u.At in milliseconds (counters
// stamped to the same millisecond give exact rates). Containers appear in
// namespace/pod/container order, and pod_* series are their sums.
func ResourceMetricsText(u ResourceUsage) []byte {
	cs := slices.Clone(u.Containers)
	slices.SortFunc(cs, func(a, b ContainerUsage) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Container, b.Container))
	})
	ts := strconv.FormatInt(u.At.UnixMilli(), 10)
	var b strings.Builder
	metric := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s [STABLE] %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	cLabels := func(c ContainerUsage) string {
		return fmt.Sprintf("{container=%q,namespace=%q,pod=%q}", c.Container, c.Namespace, c.Pod)
	}

	metric("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the container in core-seconds")
	for _, c := range cs {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total%s %s %s\n", cLabels(c), num(c.CPUSeconds), ts)
	}
	metric("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes")
	for _, c := range cs {
		fmt.Fprintf(&b, "container_memory_working_set_bytes%s %s %s\n", cLabels(c), num(c.MemoryBytes), ts)
	}
	metric("container_start_time_seconds", "gauge", "Start time of the container since unix epoch in seconds")
	for _, c := range cs {
		if !c.Started.IsZero() {
			fmt.Fprintf(&b, "container_start_time_seconds%s %s %s\n", cLabels(c), num(float64(c.Started.UnixNano())/1e9), ts)
		}
	}
	metric("node_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the node in core-seconds")
	fmt.Fprintf(&b, "node_cpu_usage_seconds_total %s %s\n", num(u.NodeCPUSeconds), ts)
	metric("node_memory_working_set_bytes", "gauge", "Current working set of the node in bytes")
	fmt.Fprintf(&b, "node_memory_working_set_bytes %s %s\n", num(u.NodeMemory), ts)

	type podSum struct {
		ns, pod  string
		cpu, mem float64
	}
	var sums []podSum
	for _, c := range cs {
		if len(sums) == 0 || sums[len(sums)-1].ns != c.Namespace || sums[len(sums)-1].pod != c.Pod {
			sums = append(sums, podSum{ns: c.Namespace, pod: c.Pod})
		}
		s := &sums[len(sums)-1]
		s.cpu += c.CPUSeconds
		s.mem += c.MemoryBytes
	}
	metric("pod_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the pod in core-seconds")
	for _, s := range sums {
		fmt.Fprintf(&b, "pod_cpu_usage_seconds_total{namespace=%q,pod=%q} %s %s\n", s.ns, s.pod, num(s.cpu), ts)
	}
	metric("pod_memory_working_set_bytes", "gauge", "Current working set of the pod in bytes")
	for _, s := range sums {
		fmt.Fprintf(&b, "pod_memory_working_set_bytes{namespace=%q,pod=%q} %s %s\n", s.ns, s.pod, num(s.mem), ts)
	}
	metric("resource_scrape_error", "gauge", "1 if there was an error while getting container metrics, 0 otherwise")
	b.WriteString("resource_scrape_error 0\n")
	return []byte(b.String())
}
