package resourcequota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func holdQuota(rv, pods string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q", UID: "u", ResourceVersion: rv},
		Status: corev1.ResourceQuotaStatus{Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pods)}}}
}

// TestQuotaMemory: a raise by admission holds the usage for
// admissionHold; our own writes neither start a hold nor are forgotten
// while the informer is behind them.
func TestQuotaMemory(t *testing.T) {
	now := time.Unix(1000, 0)
	t.Run("a raise by someone else starts the hold", func(t *testing.T) {
		var m quotaMemory
		m.observe("ns/q", holdQuota("1", "1"), holdQuota("2", "10"), now)
		if got := m.holdUntil("ns/q"); !got.Equal(now.Add(admissionHold)) {
			t.Fatalf("hold until %v, want %v", got, now.Add(admissionHold))
		}
		st := corev1.ResourceQuotaStatus{Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}}
		if !holdUsage(&st, holdQuota("2", "10")) {
			t.Fatal("a recount below the charged usage was not held")
		}
		if v := st.Used[corev1.ResourcePods]; v.Value() != 10 {
			t.Fatalf("held used pods = %s, want 10", v.String())
		}
	})
	t.Run("a lowering does not start it", func(t *testing.T) {
		var m quotaMemory
		m.observe("ns/q", holdQuota("1", "10"), holdQuota("2", "9"), now)
		if !m.holdUntil("ns/q").IsZero() {
			t.Fatal("hold after a lowering")
		}
	})
	t.Run("our own write does not start it, and is read back", func(t *testing.T) {
		var m quotaMemory
		m.remember("ns/q", holdQuota("5", "3"))
		m.observe("ns/q", holdQuota("4", "1"), holdQuota("5", "3"), now)
		if !m.holdUntil("ns/q").IsZero() {
			t.Fatal("hold after our own write")
		}
		if got := m.latest("ns/q", holdQuota("4", "1")); got.ResourceVersion != "5" {
			t.Fatalf("latest = rv %s, want our write (5)", got.ResourceVersion)
		}
		if got := m.latest("ns/q", holdQuota("6", "7")); got.ResourceVersion != "6" {
			t.Fatalf("latest = rv %s, want the newer informer copy (6)", got.ResourceVersion)
		}
	})
}
