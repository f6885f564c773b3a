package pvprotection

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlan(t *testing.T) {
	now := metav1.Now()
	ref := &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "data"}
	pv := func(deleting, protected bool, phase corev1.PersistentVolumePhase, claim *corev1.ObjectReference) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", Finalizers: []string{"example.com/other"}}}
		if deleting {
			v.DeletionTimestamp = &now
		}
		if protected {
			v.Finalizers = append(v.Finalizers, Finalizer)
		}
		v.Status.Phase, v.Spec.ClaimRef = phase, claim
		return v
	}
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		want action
	}{
		{"protected live volume: nothing", pv(false, true, corev1.VolumeBound, ref), actNone},
		{"live volume without the finalizer gets it", pv(false, false, corev1.VolumeAvailable, nil), actAdd},
		{"bound live volume without the finalizer gets it", pv(false, false, corev1.VolumeBound, ref), actAdd},
		{"deleting bound volume kept", pv(true, true, corev1.VolumeBound, ref), actNone},
		{"deleting released volume goes", pv(true, true, corev1.VolumeReleased, ref), actRemove},
		{"deleting available volume goes", pv(true, true, corev1.VolumeAvailable, nil), actRemove},
		{"deleting pending volume goes", pv(true, true, corev1.VolumePending, nil), actRemove},
		{"deleting failed volume goes", pv(true, true, corev1.VolumeFailed, ref), actRemove},
		{"deleting volume marked Bound with no claim goes", pv(true, true, corev1.VolumeBound, nil), actRemove},
		{"deleting volume without the finalizer: not ours", pv(true, false, corev1.VolumeReleased, ref), actNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan(tc.pv); got != tc.want {
				t.Errorf("plan = %v, want %v", got, tc.want)
			}
		})
	}
}
