package plugins

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func vrTPodWith(name, node string, vols ...corev1.VolumeSource) *corev1.Pod {
	p := vbTPod(name)
	p.Spec.NodeName = node
	for i, v := range vols {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v" + string(rune('a'+i)), VolumeSource: v})
	}
	return p
}

func vrTGCE(pd string, ro bool) corev1.VolumeSource {
	return corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: pd, ReadOnly: ro}}
}

func vrTRBD(pool, image string, ro bool, monitors ...string) corev1.VolumeSource {
	return corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: monitors, RBDPool: pool, RBDImage: image, ReadOnly: ro}}
}

func vrTClaimVol(name string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

func TestVolumeRestrictionsFilter(t *testing.T) {
	const (
		disk = "Unschedulable: " + vrReasonDiskConflict
		rwop = "Unschedulable: " + vrReasonRWOPConflict
	)
	nodes := []*corev1.Node{vbTNode("n1"), vbTNode("n2")}
	tests := []struct {
		name     string
		existing []*corev1.Pod
		objs     []runtime.Object
		pod      *corev1.Pod
		want     []string
	}{
		{"no disks and no claims skips", nil, nil, vbTPod("p"), []string{"skip"}},
		{"same GCE PD on a node conflicts",
			[]*corev1.Pod{vrTPodWith("e", "n1", vrTGCE("pd1", false))}, nil,
			vrTPodWith("p", "", vrTGCE("pd1", false)), []string{"n1: " + disk, "n2: ok"}},
		{"same GCE PD read-only everywhere is fine",
			[]*corev1.Pod{vrTPodWith("e", "n1", vrTGCE("pd1", true))}, nil,
			vrTPodWith("p", "", vrTGCE("pd1", true)), []string{"n1: ok", "n2: ok"}},
		{"same AWS EBS volume conflicts even read-only",
			[]*corev1.Pod{vrTPodWith("e", "n2", corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1", ReadOnly: true}})}, nil,
			vrTPodWith("p", "", corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1", ReadOnly: true}}),
			[]string{"n1: ok", "n2: " + disk}},
		{"RBD image with an overlapping monitor conflicts",
			[]*corev1.Pod{vrTPodWith("e", "n1", vrTRBD("pool", "img", false, "m1", "m2"))}, nil,
			vrTPodWith("p", "", vrTRBD("pool", "img", false, "m2", "m3")), []string{"n1: " + disk, "n2: ok"}},
		{"RBD image in another pool is fine",
			[]*corev1.Pod{vrTPodWith("e", "n1", vrTRBD("pool", "img", false, "m1"))}, nil,
			vrTPodWith("p", "", vrTRBD("other", "img", false, "m1")), []string{"n1: ok", "n2: ok"}},
		{"same iSCSI IQN read-write conflicts",
			[]*corev1.Pod{vrTPodWith("e", "n1", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{IQN: "iqn.1", ReadOnly: true}})}, nil,
			vrTPodWith("p", "", corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{IQN: "iqn.1"}}), []string{"n1: " + disk, "n2: ok"}},
		{"ReadWriteOncePod claim in use rejects every node",
			[]*corev1.Pod{vrTPodWith("e", "n1", vrTClaimVol("data"))},
			[]runtime.Object{vbTClaim("data", "fast", "1Gi", corev1.ReadWriteOncePod)},
			vrTPodWith("p", "", vrTClaimVol("data")), []string{"n1: " + rwop, "n2: " + rwop}},
		{"ReadWriteOncePod claim not in use skips",
			nil, []runtime.Object{vbTClaim("data", "fast", "1Gi", corev1.ReadWriteOncePod)},
			vrTPodWith("p", "", vrTClaimVol("data")), []string{"skip"}},
		{"ReadWriteOnce claim in use skips",
			[]*corev1.Pod{vrTPodWith("e", "n1", vrTClaimVol("data"))},
			[]runtime.Object{vbTClaim("data", "fast", "1Gi", corev1.ReadWriteOnce)},
			vrTPodWith("p", "", vrTClaimVol("data")), []string{"skip"}},
		{"missing claim", nil, nil, vrTPodWith("p", "", vrTClaimVol("data")),
			[]string{`prefilter: UnschedulableAndUnresolvable: persistentvolumeclaim "data" not found`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ipaTSnapshot(nodes, tc.existing)
			h := newTestHandle(snap, tc.objs...)
			p, _ := NewVolumeRestrictions(context.Background(), nil, h)
			h.start(t)
			pl := p.(*VolumeRestrictions)
			got := vbTRun(t, pl, pl, snap, framework.NewCycleState(), tc.pod)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Preempting the pod that holds a ReadWriteOncePod claim frees it.
func TestVolumeRestrictionsRemovePod(t *testing.T) {
	holder := vrTPodWith("e", "n1", vrTClaimVol("data"))
	snap := ipaTSnapshot([]*corev1.Node{vbTNode("n1")}, []*corev1.Pod{holder})
	h := newTestHandle(snap, vbTClaim("data", "fast", "1Gi", corev1.ReadWriteOncePod))
	p, _ := NewVolumeRestrictions(context.Background(), nil, h)
	h.start(t)
	pl := p.(*VolumeRestrictions)
	ctx := context.Background()
	pod := vrTPodWith("p", "", vrTClaimVol("data"))
	cs := framework.NewCycleState()
	if _, st := pl.PreFilter(ctx, cs, pod, snap.NodeInfoList); !st.IsSuccess() {
		t.Fatal(st)
	}
	ni := snap.NodeInfoList[0]
	c := cs.Clone()
	pl.RemovePod(ctx, c, pod, framework.NewPodInfo(holder), ni)
	if st := pl.Filter(ctx, c, pod, ni); !st.IsSuccess() {
		t.Errorf("after removing the holder: %v", st)
	}
	if st := pl.Filter(ctx, cs, pod, ni); st.Code() != framework.Unschedulable {
		t.Errorf("original state: %v, want Unschedulable", st)
	}
	pl.AddPod(ctx, c, pod, framework.NewPodInfo(holder), ni)
	if st := pl.Filter(ctx, c, pod, ni); st.Code() != framework.Unschedulable {
		t.Errorf("after adding it back: %v, want Unschedulable", st)
	}
}
