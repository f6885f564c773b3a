package plugins

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// nvlTCSIPV is a CSI PV of driver with a volume handle.
func nvlTCSIPV(name, driver, handle string) *corev1.PersistentVolume {
	pv := vbTPV(name, "csi", "1Gi")
	pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}
	return pv
}

func nvlTCSINode(node string, limits map[string]int32) *storagev1.CSINode {
	cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}}
	for d, n := range limits {
		cn.Spec.Drivers = append(cn.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: node, Allocatable: &storagev1.VolumeNodeResources{Count: &n}})
	}
	return cn
}

func TestNodeVolumeLimitsFilter(t *testing.T) {
	const exceeded = "Unschedulable: " + nvlReasonMaxVolumeCount
	nodes := []*corev1.Node{vbTNode("n1"), vbTNode("n2")}
	// n1 and n2 each run two pods with one ebs volume each; c and d are
	// on n1, e and f on n2.
	existing := []*corev1.Pod{
		vrTPodWith("pc", "n1", vrTClaimVol("c")), vrTPodWith("pd", "n1", vrTClaimVol("d")),
		vrTPodWith("pe", "n2", vrTClaimVol("e")), vrTPodWith("pf", "n2", vrTClaimVol("f")),
	}
	base := []runtime.Object{
		vbTBound(vbTClaim("c", "csi", "1Gi"), "pv-c"), nvlTCSIPV("pv-c", "ebs", "h-c"),
		vbTBound(vbTClaim("d", "csi", "1Gi"), "pv-d"), nvlTCSIPV("pv-d", "ebs", "h-d"),
		vbTBound(vbTClaim("e", "csi", "1Gi"), "pv-e"), nvlTCSIPV("pv-e", "ebs", "h-e"),
		vbTBound(vbTClaim("f", "csi", "1Gi"), "pv-f"), nvlTCSIPV("pv-f", "ebs", "h-f"),
		vbTBound(vbTClaim("new", "csi", "1Gi"), "pv-new"), nvlTCSIPV("pv-new", "ebs", "h-new"),
		vbTBound(vbTClaim("other", "csi", "1Gi"), "pv-other"), nvlTCSIPV("pv-other", "gcepd", "h-o"),
		vbTClass("ebs-class", vbTWFFC, "ebs"), vbTClaim("unbound", "ebs-class", "1Gi"),
	}
	tests := []struct {
		name string
		objs []runtime.Object
		pod  *corev1.Pod
		want []string
	}{
		{"a third volume exceeds a limit of 2", []runtime.Object{nvlTCSINode("n1", map[string]int32{"ebs": 2}), nvlTCSINode("n2", map[string]int32{"ebs": 3})},
			vbTPod("p", "new"), []string{"n1: " + exceeded, "n2: ok"}},
		{"a volume already attached is not counted again", []runtime.Object{nvlTCSINode("n1", map[string]int32{"ebs": 2})},
			vbTPod("p", "c"), []string{"n1: ok", "n2: ok"}},
		{"an unbound claim counts as a new volume of its provisioner", []runtime.Object{nvlTCSINode("n1", map[string]int32{"ebs": 2}), nvlTCSINode("n2", map[string]int32{"ebs": 2})},
			vbTPod("p", "unbound"), []string{"n1: " + exceeded, "n2: " + exceeded}},
		{"limits are per driver", []runtime.Object{nvlTCSINode("n1", map[string]int32{"ebs": 2, "gcepd": 1})},
			vbTPod("p", "other"), []string{"n1: ok", "n2: ok"}},
		{"no CSINode, no limit", nil, vbTPod("p", "new"), []string{"n1: ok", "n2: ok"}},
		{"pod without claims skips", nil, vbTPod("p"), []string{"skip"}},
		{"missing claim", nil, vbTPod("p", "nope"),
			[]string{`prefilter: UnschedulableAndUnresolvable: looking up PVC default/nope: persistentvolumeclaim "nope" not found`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ipaTSnapshot(nodes, existing)
			h := newTestHandle(snap, append(append([]runtime.Object{}, base...), tc.objs...)...)
			p, _ := NewNodeVolumeLimits(context.Background(), nil, h)
			h.start(t)
			pl := p.(*NodeVolumeLimits)
			got := vbTRun(t, pl, pl, snap, framework.NewCycleState(), tc.pod)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
