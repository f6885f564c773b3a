package endpointslice

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func trackedSlice(uid string, gen int64, rv string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "web-" + uid, UID: types.UID(uid), Generation: gen, ResourceVersion: rv,
		Labels: map[string]string{discoveryv1.LabelServiceName: "web"},
	}}
}

func TestSliceTrackerStale(t *testing.T) {
	svc := testService()
	cases := []struct {
		name   string
		record func(*sliceTracker)
		cached []*discoveryv1.EndpointSlice
		svc    *corev1.Service
		stale  bool
	}{
		{"nothing written: fresh", nil, []*discoveryv1.EndpointSlice{trackedSlice("a", 1, "5")}, svc, false},
		{"created slice not in cache yet", func(tr *sliceTracker) { tr.wrote(trackedSlice("a", 1, "5")) }, nil, svc, true},
		{"created slice in cache", func(tr *sliceTracker) { tr.wrote(trackedSlice("a", 1, "5")) }, []*discoveryv1.EndpointSlice{trackedSlice("a", 1, "5")}, svc, false},
		{"cache shows an older generation", func(tr *sliceTracker) { tr.wrote(trackedSlice("a", 3, "9")) }, []*discoveryv1.EndpointSlice{trackedSlice("a", 2, "8")}, svc, true},
		{"cache shows a newer generation (someone else wrote)", func(tr *sliceTracker) { tr.wrote(trackedSlice("a", 3, "9")) }, []*discoveryv1.EndpointSlice{trackedSlice("a", 4, "12")}, svc, false},
		{"no generations: resourceVersion decides (older)", func(tr *sliceTracker) { tr.wrote(trackedSlice("a", 0, "9")) }, []*discoveryv1.EndpointSlice{trackedSlice("a", 0, "8")}, svc, true},
		{"no generations: resourceVersion decides (same)", func(tr *sliceTracker) { tr.wrote(trackedSlice("a", 0, "9")) }, []*discoveryv1.EndpointSlice{trackedSlice("a", 0, "9")}, svc, false},
		{"deleted slice still cached", func(tr *sliceTracker) { tr.deleting(trackedSlice("a", 1, "5")) }, []*discoveryv1.EndpointSlice{trackedSlice("a", 1, "5")}, svc, true},
		{"deleted slice gone from cache", func(tr *sliceTracker) { tr.deleting(trackedSlice("a", 1, "5")) }, nil, svc, false},
		{"Service recreated: old record dropped", func(tr *sliceTracker) {
			tr.stale(svc, nil) // remembers the old UID
			tr.wrote(trackedSlice("a", 1, "5"))
		}, nil, func() *corev1.Service { s := testService(); s.UID = "other"; return s }(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newSliceTracker()
			if tc.record != nil {
				tc.record(tr)
			}
			if got := tr.stale(tc.svc, tc.cached); got != tc.stale {
				t.Errorf("stale = %v, want %v", got, tc.stale)
			}
		})
	}
}

func TestSliceTrackerEvents(t *testing.T) {
	tr := newSliceTracker()
	mine := trackedSlice("a", 2, "10")
	if !tr.shouldSync(mine) {
		t.Error("an untracked slice should cause a sync")
	}
	tr.wrote(mine)
	if tr.shouldSync(mine) {
		t.Error("the event of our own write should not cause a sync")
	}
	if !tr.shouldSync(trackedSlice("a", 3, "11")) {
		t.Error("a later write by someone else should cause a sync")
	}
	if tr.deleted(mine) {
		t.Error("deletion of a slice we wrote and did not delete reported as expected")
	}
	tr.deleting(mine)
	if !tr.has(mine) || !tr.deleted(mine) {
		t.Error("deletion we made not reported as expected")
	}
	if tr.has(mine) {
		t.Error("slice still tracked after its deletion was seen")
	}
	tr.wrote(mine)
	tr.forget("ns", "web")
	if tr.has(mine) {
		t.Error("slice tracked after forget")
	}
}
