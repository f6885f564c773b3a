package bench

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func trackedPod(name string, created time.Time, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created.Truncate(time.Second))},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// The tracker times startup from the pod's creation: its first sighting,
// unless creationTimestamp+1s proves the pod older; a Running pod that is
// deleted stops counting towards "all Running", and completion fires once.
func TestDensityTracker(t *testing.T) {
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name string
		// events of pod "a" (created at base+200ms) and "b", in order.
		events      []watch.Event
		times       []time.Time
		wantRunning int
		wantRan     int
		wantStartup float64 // p50 ms, 0 to skip
		wantDone    bool
	}{
		{
			name: "seen promptly: startup from the sighting",
			events: []watch.Event{
				{Type: watch.Added, Object: trackedPod("a", at(200), "", corev1.PodPending)},
				{Type: watch.Modified, Object: trackedPod("a", at(200), "n1", corev1.PodPending)},
				{Type: watch.Modified, Object: trackedPod("a", at(200), "n1", corev1.PodRunning)},
			},
			times:       []time.Time{at(210), at(300), at(1310)},
			wantRunning: 1, wantRan: 1, wantStartup: 1100, wantDone: true,
		},
		{
			name: "seen late: startup from creationTimestamp+1s",
			events: []watch.Event{
				{Type: watch.Added, Object: trackedPod("a", at(200), "n1", corev1.PodRunning)},
			},
			times:       []time.Time{at(2500)},
			wantRunning: 1, wantRan: 1, wantStartup: 1500, wantDone: true,
		},
		{
			name: "a Running pod deleted no longer counts, its replacement does",
			events: []watch.Event{
				{Type: watch.Added, Object: trackedPod("a", at(200), "n1", corev1.PodRunning)},
				{Type: watch.Deleted, Object: trackedPod("a", at(200), "n1", corev1.PodRunning)},
				{Type: watch.Added, Object: trackedPod("b", at(3000), "n1", corev1.PodRunning)},
			},
			times:       []time.Time{at(300), at(400), at(3100)},
			wantRunning: 1, wantRan: 2, wantDone: true,
		},
		{
			name: "never Running: not done",
			events: []watch.Event{
				{Type: watch.Added, Object: trackedPod("a", at(200), "n1", corev1.PodPending)},
			},
			times:       []time.Time{at(300)},
			wantRunning: 0, wantRan: 0, wantDone: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newDensityTracker(1)
			for i, ev := range tc.events {
				tr.observe(ev, tc.times[i])
			}
			s := tr.snapshot()
			if s.running != tc.wantRunning || s.ran != tc.wantRan {
				t.Errorf("running %d, ran %d; want %d, %d", s.running, s.ran, tc.wantRunning, tc.wantRan)
			}
			if tc.wantStartup > 0 && (s.startup.P50 < tc.wantStartup-1 || s.startup.P50 > tc.wantStartup+1) {
				t.Errorf("startup p50 %.1f ms, want %.0f", s.startup.P50, tc.wantStartup)
			}
			select {
			case <-tr.done:
				if !tc.wantDone {
					t.Error("done, with no pod Running")
				}
			default:
				if tc.wantDone {
					t.Error("not done with every pod Running")
				}
			}
		})
	}
}
