package network

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// BenchmarkSetupTeardown measures one sandbox's Setup and Teardown on
// the built-in network (veth pair, bridge port, address, routes, IPAM
// files), in a test node namespace. The pod namespace is made once and
// reused: its cost is the runtime's, not the network's.
func BenchmarkSetupTeardown(b *testing.B) {
	requireRoot(b)
	c := clustertest.Start(b, clustertest.Options{})
	createNode(b, c.Client, "bench", "10.42.9.0/24", "192.168.95.1")
	n := startNetwork(b, c.Client, "bench", "192.168.95.1", newNetNS(b), b.TempDir())
	pod := newNetNS(b)
	ctx := context.Background()
	var setup, teardown time.Duration
	i := 0
	for b.Loop() {
		id := fmt.Sprint("bench-", i)
		i++
		t0 := time.Now()
		if _, err := n.Setup(ctx, id, pod, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := n.Teardown(ctx, id, pod); err != nil {
			b.Fatal(err)
		}
		setup, teardown = setup+t1.Sub(t0), teardown+time.Since(t1)
	}
	b.ReportMetric(float64(setup.Microseconds())/float64(i), "setup-µs/op")
	b.ReportMetric(float64(teardown.Microseconds())/float64(i), "teardown-µs/op")
}
