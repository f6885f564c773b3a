package plugins

import (
	"context"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func TestPrioritySortLess(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	queued := func(priority *int32, at time.Time) *framework.QueuedPodInfo {
		p := fitPod(nil)
		p.Spec.Priority = priority
		return &framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(p), Timestamp: at}
	}
	prio := func(v int32) *int32 { return &v }

	tests := []struct {
		name string
		a, b *framework.QueuedPodInfo
		want bool
	}{
		{name: "higher priority first", a: queued(prio(100), t0.Add(time.Second)), b: queued(prio(10), t0), want: true},
		{name: "lower priority later", a: queued(prio(10), t0), b: queued(prio(100), t0.Add(time.Second)), want: false},
		{name: "equal priority, earlier first", a: queued(prio(5), t0), b: queued(prio(5), t0.Add(time.Second)), want: true},
		{name: "equal priority, later second", a: queued(prio(5), t0.Add(time.Second)), b: queued(prio(5), t0), want: false},
		{name: "same time is not less", a: queued(prio(5), t0), b: queued(prio(5), t0), want: false},
		{name: "unset priority is 0, above negative", a: queued(nil, t0.Add(time.Second)), b: queued(prio(-1), t0), want: true},
		{name: "unset priority is 0, equal to 0", a: queued(nil, t0.Add(time.Second)), b: queued(prio(0), t0), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, _ := NewPrioritySort(context.Background(), nil, nil)
			if got := pl.(*PrioritySort).Less(tc.a, tc.b); got != tc.want {
				t.Errorf("Less = %v, want %v", got, tc.want)
			}
		})
	}
}
