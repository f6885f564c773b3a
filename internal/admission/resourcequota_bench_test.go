package admission_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// BenchmarkResourceQuotaPodCreate is a pod create through the API server
// in a namespace without a quota and in one with a single quota on pods,
// cpu and memory (the quota controller not running, so only admission
// writes the quota). The difference is what quota admission costs a
// create: the judgement and the status write to etcd. "parallel" sends
// creates from GOMAXPROCS*8 clients at once, where the per-namespace
// batching shares one status write among many creates.
func BenchmarkResourceQuotaPodCreate(b *testing.B) {
	c := clustertest.Start(b, clustertest.Options{})
	ctx := context.Background()
	pod := func(name string) *corev1.Pod {
		p := rqPodSpec(name, rqResources("cpu", "10m", "memory", "1Mi"))
		return p
	}
	var seq atomic.Int64
	for _, quota := range []bool{false, true} {
		ns := "plain"
		if quota {
			ns = "quota"
		}
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if quota {
			hard := rqResources("pods", "1000000", "requests.cpu", "100000", "requests.memory", "1Pi")
			q, err := c.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"},
				Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			// What the controller would write, so that admission judges.
			q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: rqResources("pods", "0", "requests.cpu", "0", "requests.memory", "0")}
			if _, err := c.Client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("%s/sequential", ns), func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("p%d", seq.Add(1))), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%s/parallel", ns), func(b *testing.B) {
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("p%d", seq.Add(1))), metav1.CreateOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
