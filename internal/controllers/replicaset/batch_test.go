package replicaset

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStatusBatcher(t *testing.T) {
	const period = 200 * time.Millisecond
	type call struct {
		key string
		d   time.Duration
	}
	tests := []struct {
		name string
		run  func(b *statusBatcher, advance func(time.Duration))
		want []call
	}{
		{"first event of a key syncs at once", func(b *statusBatcher, _ func(time.Duration)) {
			b.enqueue("a")
		}, []call{{"a", 0}}},
		{"events while queued join the queued sync", func(b *statusBatcher, _ func(time.Duration)) {
			b.enqueue("a")
			b.enqueue("a")
			b.enqueue("a")
		}, []call{{"a", 0}}},
		{"events during a sync wait a period after it ends", func(b *statusBatcher, advance func(time.Duration)) {
			b.begin("a")
			b.enqueue("a")
			b.enqueue("a")
			advance(time.Second) // a slow sync
			b.end("a")
		}, []call{{"a", period}}},
		{"an event soon after a sync waits out the rest of the period", func(b *statusBatcher, advance func(time.Duration)) {
			b.begin("a")
			b.end("a")
			advance(50 * time.Millisecond)
			b.enqueue("a")
		}, []call{{"a", 150 * time.Millisecond}}},
		{"an event long after a sync syncs at once", func(b *statusBatcher, advance func(time.Duration)) {
			b.begin("a")
			b.end("a")
			advance(time.Second)
			b.enqueue("a")
		}, []call{{"a", 0}}},
		{"a sync with no events during it asks for nothing", func(b *statusBatcher, _ func(time.Duration)) {
			b.begin("a")
			b.end("a")
		}, nil},
		{"keys are independent", func(b *statusBatcher, _ func(time.Duration)) {
			b.begin("a")
			b.enqueue("a")
			b.enqueue("b")
		}, []call{{"b", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			var got []call
			b := newStatusBatcher(period, func() time.Time { return now }, func(k string, d time.Duration) { got = append(got, call{k, d}) })
			tt.run(b, func(d time.Duration) { now = now.Add(d) })
			if len(got) != len(tt.want) {
				t.Fatalf("queued %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("queued %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestSlowStartMemory(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name string
		run  func(m *slowStartMemory) int
		want int
	}{
		{"a new key starts at 1", func(m *slowStartMemory) int { return m.initial("a", now) }, 1},
		{"after a success, the remembered batch", func(m *slowStartMemory) int {
			m.succeeded("a", 500, now)
			return m.initial("a", now.Add(time.Second))
		}, 500},
		{"a failure starts again at 1", func(m *slowStartMemory) int {
			m.succeeded("a", 500, now)
			m.forget("a")
			return m.initial("a", now)
		}, 1},
		{"an old success is forgotten", func(m *slowStartMemory) int {
			m.succeeded("a", 500, now)
			return m.initial("a", now.Add(2*slowStartWarmFor))
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.run(newSlowStartMemory()); got != tt.want {
				t.Fatalf("initial batch %d, want %d", got, tt.want)
			}
		})
	}
}

// The memo must answer as the selector does, and forget its answers
// when the spec changes.
func TestLabelMemo(t *testing.T) {
	rs, pods := benchRS(3)
	sel, _ := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	pods[1].Labels = map[string]string{"other": "x"}
	memos := newLabelMemos()
	m := memos.get("ns/rs", rs, sel)
	for i, want := range []bool{true, false, true} {
		if got := m.selected(pods[i]); got != want {
			t.Errorf("pod %d selected %v, want %v", i, got, want)
		}
	}
	// A new template label (the spec's next generation) is missing from
	// every pod.
	rs2 := rs.DeepCopy()
	rs2.Generation++
	rs2.Spec.Template.Labels["tier"] = "web"
	m = memos.get("ns/rs", rs2, sel)
	if m.fullyLabeled(pods[0]) {
		t.Error("answer of the older generation reused")
	}
	// A pod updated (a new object) is looked at afresh.
	relabelled := pods[1].DeepCopy()
	relabelled.Labels = pods[0].Labels
	if !m.selected(relabelled) {
		t.Error("relabelled pod not selected")
	}
	m.sweep([]*corev1.Pod{relabelled})
}

func TestWrittenStatus(t *testing.T) {
	cached := mkRS(3)
	cached.ResourceVersion = "10"
	written := cached.DeepCopy()
	written.ResourceVersion = "11"
	written.Status.Replicas = 3
	tests := []struct {
		name   string
		cached func() *appsv1.ReplicaSet
		want   string // resource version sync starts from
	}{
		{"cache still shows the version written over", func() *appsv1.ReplicaSet { return cached }, "11"},
		{"cache caught up", func() *appsv1.ReplicaSet { return written }, "11"},
		{"someone else wrote since", func() *appsv1.ReplicaSet {
			o := cached.DeepCopy()
			o.ResourceVersion = "12"
			return o
		}, "12"},
		{"recreated with the same name", func() *appsv1.ReplicaSet {
			o := cached.DeepCopy()
			o.UID = "other"
			return o
		}, "10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWrittenStatus()
			w.remember("ns/web", "10", written, written)
			c := tt.cached()
			got, orig := w.newest("ns/web", c, c)
			if got.ResourceVersion != tt.want || orig.(*appsv1.ReplicaSet) != got {
				t.Fatalf("sync starts from version %s, want %s", got.ResourceVersion, tt.want)
			}
		})
	}
}
