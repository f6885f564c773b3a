package plugins

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func vzTPV(name string, lbls ...string) *corev1.PersistentVolume {
	pv := vbTPV(name, "std", "1Gi")
	pv.Labels = map[string]string{}
	for _, kv := range lbls {
		k, v, _ := strings.Cut(kv, "=")
		pv.Labels[k] = v
	}
	return pv
}

func TestVolumeZoneFilter(t *testing.T) {
	const (
		zone     = corev1.LabelTopologyZone
		region   = corev1.LabelTopologyRegion
		betaZone = corev1.LabelFailureDomainBetaZone
		conflict = "UnschedulableAndUnresolvable: " + vzReasonConflict
	)
	nodes := []*corev1.Node{
		vbTNode("a1", zone+"=a", region+"=r1"),
		vbTNode("b1", zone+"=b", region+"=r1"),
		vbTNode("c2", zone+"=c", region+"=r2"),
		vbTNode("plain"),
	}
	bound := vbTBound(vbTClaim("data", "std", "1Gi"), "pv1")
	tests := []struct {
		name string
		objs []runtime.Object
		want []string
	}{
		{"PV in zone a", []runtime.Object{bound, vzTPV("pv1", zone+"=a")},
			[]string{"a1: ok", "b1: " + conflict, "c2: " + conflict, "plain: ok"}},
		{"PV in zones a and b", []runtime.Object{bound, vzTPV("pv1", zone+"=a__b")},
			[]string{"a1: ok", "b1: ok", "c2: " + conflict, "plain: ok"}},
		{"beta zone label on the PV matches the GA label on nodes", []runtime.Object{bound, vzTPV("pv1", betaZone+"=b")},
			[]string{"a1: " + conflict, "b1: ok", "c2: " + conflict, "plain: ok"}},
		{"PV in region r1", []runtime.Object{bound, vzTPV("pv1", region+"=r1")},
			[]string{"a1: ok", "b1: ok", "c2: " + conflict, "plain: ok"}},
		{"PV without topology labels skips", []runtime.Object{bound, vzTPV("pv1")}, []string{"skip"}},
		{"unparsable label is ignored", []runtime.Object{bound, vzTPV("pv1", zone+"=a__")}, []string{"skip"}},
		{"unbound WaitForFirstConsumer claim skips",
			[]runtime.Object{vbTClass("local", vbTWFFC, vbNoProvisioner), vbTClaim("data", "local", "1Gi")}, []string{"skip"}},
		{"unbound immediate claim",
			[]runtime.Object{vbTClass("std", vbTImmediate, "x"), vbTClaim("data", "std", "1Gi")},
			[]string{"prefilter: UnschedulableAndUnresolvable: PersistentVolume had no name"}},
		{"unbound claim without a class", []runtime.Object{vbTClaim("data", "", "1Gi")},
			[]string{"prefilter: UnschedulableAndUnresolvable: PersistentVolumeClaim had no pv name and storageClass name"}},
		{"bound PV missing", []runtime.Object{bound},
			[]string{`prefilter: UnschedulableAndUnresolvable: persistentvolume "pv1" not found`}},
		{"missing claim", nil,
			[]string{`prefilter: UnschedulableAndUnresolvable: persistentvolumeclaim "data" not found`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ipaTSnapshot(nodes, nil)
			h := newTestHandle(snap, tc.objs...)
			p, _ := NewVolumeZone(context.Background(), nil, h)
			h.start(t)
			pl := p.(*VolumeZone)
			got := vbTRun(t, pl, pl, snap, framework.NewCycleState(), vbTPod("p", "data"))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A node with a zone but no region label cannot host a PV pinned to a
// region: the label must be there.
func TestVolumeZoneMissingNodeLabel(t *testing.T) {
	snap := ipaTSnapshot([]*corev1.Node{vbTNode("z", corev1.LabelTopologyZone+"=a")}, nil)
	h := newTestHandle(snap, vbTBound(vbTClaim("data", "std", "1Gi"), "pv1"), vzTPV("pv1", corev1.LabelTopologyRegion+"=r1"))
	p, _ := NewVolumeZone(context.Background(), nil, h)
	h.start(t)
	pl := p.(*VolumeZone)
	got := vbTRun(t, pl, pl, snap, framework.NewCycleState(), vbTPod("p", "data"))
	if want := "z: UnschedulableAndUnresolvable: " + vzReasonConflict; got[0] != want {
		t.Errorf("got %v, want %s", got, want)
	}
}
