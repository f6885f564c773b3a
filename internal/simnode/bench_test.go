package simnode_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/rudder-dev/rudder/internal/simnode"
)

// BenchmarkFleet is the scale check: N nodes at the default (upstream)
// cadence against an in-process server, one iteration each:
//
//	go test -run '^$' -bench BenchmarkFleet -benchtime 1x ./internal/simnode
//
// It reports the time to Ready, the process's RSS and Go heap growth per
// node (server included: etcd and the watch caches hold every Node and
// Lease too), the fleet's own heap per node (what Stop gives back: a lower
// bound, as freed objects in partly used spans still count as in use),
// goroutines per node, and lease renewals per second over the second full
// period with the busiest 100 ms against the mean (1.0 would be perfectly
// even; for a uniform spread of 1,000 renewals over 100 buckets about 2).
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				benchFleet(b, n)
			}
		})
	}
}

func benchFleet(b *testing.B, count int) {
	cs := startServer(b)
	settle()
	rss0, heap0, gr0 := rssKiB(b), heapKiB(), runtime.NumGoroutine()

	f, err := simnode.New(simnode.Config{Client: cs, Count: count, Zones: 3})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	if err := f.Start(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case <-f.Ready():
	case <-time.After(5 * time.Minute):
		b.Fatal("fleet not ready within 5 min")
	}
	ready := time.Since(start)

	// One full renewal period, watched: how many renewals, how even. The
	// period after the first: renewals that fell due while the nodes were
	// registering run late once, together, as registration ends.
	period := 10 * time.Second
	time.Sleep(period)
	w, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	buckets := make([]int, period/(100*time.Millisecond))
	begin, total := time.Now(), 0
	end := time.After(period)
watching:
	for {
		select {
		case ev := <-w.ResultChan():
			// Bucket by renewTime, the node's clock when it renewed: the
			// watch may deliver in batches.
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || ev.Type != watch.Modified || l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(begin) {
				continue
			}
			if i := int(l.Spec.RenewTime.Sub(begin) / (100 * time.Millisecond)); i < len(buckets) {
				buckets[i]++
				total++
			}
		case <-end:
			break watching
		}
	}
	w.Stop()
	peak := 0
	for _, c := range buckets {
		peak = max(peak, c)
	}

	settle()
	rss1, heap1, gr1 := rssKiB(b), heapKiB(), runtime.NumGoroutine()
	cancel()
	f.Stop()
	settle()
	heap2 := heapKiB()

	per := float64(count)
	b.ReportMetric(ready.Seconds(), "s-to-ready")
	b.ReportMetric(float64(rss1-rss0)/per, "RSS-KiB/node")
	b.ReportMetric(float64(heap1-heap0)/per, "heap-KiB/node")
	b.ReportMetric(float64(heap1-heap2)/per, "fleet-heap-KiB/node")
	b.ReportMetric(float64(gr1-gr0)/per, "goroutines/node")
	b.ReportMetric(float64(total)/period.Seconds(), "renewals/s")
	if total > 0 {
		b.ReportMetric(float64(peak)/(float64(total)/float64(len(buckets))), "peak/mean")
	}
	b.Logf("%d nodes: ready in %v, RSS %d→%d KiB, heap %d→%d KiB (%d after Stop), goroutines %d→%d, %d renewals in %v",
		count, ready.Round(time.Millisecond), rss0, rss1, heap0, heap1, heap2, gr0, gr1, total, period)
}

func settle() {
	runtime.GC()
	runtime.GC()
}

func heapKiB() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse) / 1024
}

// rssKiB reads the process's resident set from /proc.
func rssKiB(b *testing.B) int64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc: ", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	b.Skip("no VmRSS")
	return 0
}
