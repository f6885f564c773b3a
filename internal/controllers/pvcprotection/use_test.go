package pvcprotection

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestPlan(t *testing.T) {
	now := metav1.Now()
	claim := func(mut ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", Finalizers: []string{Finalizer}}}
		for _, m := range mut {
			m(c)
		}
		return c
	}
	deleting := func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = &now }
	unprotected := func(c *corev1.PersistentVolumeClaim) { c.Finalizers = []string{"example.com/other"} }
	ownedBy := func(p *corev1.Pod) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true)}}
		}
	}
	named := func(name string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) { c.Name = name }
	}

	pod := func(mut ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("pod-uid")},
			Spec: corev1.PodSpec{NodeName: "n1", Volumes: []corev1.Volume{
				{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			}},
		}
		for _, m := range mut {
			m(p)
		}
		return p
	}
	unscheduled := func(p *corev1.Pod) { p.Spec.NodeName = "" }
	otherNS := func(p *corev1.Pod) { p.Namespace = "other" }
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }
	gone := func(grace int64) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace }
	}
	ephemeral := func(p *corev1.Pod) {
		p.Spec.Volumes[1].VolumeSource = corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}
	}
	web := pod()

	for _, tc := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		pods  []*corev1.Pod
		want  action
	}{
		{"protected live claim: nothing", claim(), []*corev1.Pod{web}, actNone},
		{"claim without the finalizer gets it", claim(unprotected), nil, actAdd},
		{"deleting claim without the finalizer: not ours", claim(unprotected, deleting), nil, actNone},
		{"deleting claim, no pods", claim(deleting), nil, actRemove},
		{"deleting claim used by a scheduled pod", claim(deleting), []*corev1.Pod{web}, actNone},
		{"used by a Running pod", claim(deleting), []*corev1.Pod{pod(phase(corev1.PodRunning))}, actNone},
		// Upstream keeps the claim until a finished pod is deleted: its
		// kubelet may still be unmounting the volume.
		{"used by a Succeeded pod", claim(deleting), []*corev1.Pod{pod(phase(corev1.PodSucceeded))}, actNone},
		{"used by a Failed pod", claim(deleting), []*corev1.Pod{pod(phase(corev1.PodFailed))}, actNone},
		{"used by a terminating pod", claim(deleting), []*corev1.Pod{pod(gone(30))}, actNone},
		{"used by a force-deleted pod (named volume)", claim(deleting), []*corev1.Pod{pod(gone(0))}, actNone},
		{"unscheduled pod does not hold", claim(deleting), []*corev1.Pod{pod(unscheduled)}, actRemove},
		{"pod in another namespace does not hold", claim(deleting), []*corev1.Pod{pod(otherNS)}, actRemove},
		{"pod naming another claim does not hold", claim(deleting, named("logs")), []*corev1.Pod{web}, actRemove},
		{"ephemeral claim held by its pod", claim(deleting, named("web-v"), ownedBy(web)), []*corev1.Pod{pod(ephemeral)}, actNone},
		{"ephemeral claim of that name not owned by the pod", claim(deleting, named("web-v")), []*corev1.Pod{pod(ephemeral)}, actRemove},
		{"ephemeral claim owned by another pod of that name", claim(deleting, named("web-v"), ownedBy(pod(func(p *corev1.Pod) { p.UID = "old" }))), []*corev1.Pod{pod(ephemeral)}, actRemove},
		{"ephemeral claim of a shut-down pod", claim(deleting, named("web-v"), ownedBy(web)), []*corev1.Pod{pod(ephemeral, gone(0))}, actRemove},
		{"ephemeral claim of a terminating pod", claim(deleting, named("web-v"), ownedBy(web)), []*corev1.Pod{pod(ephemeral, gone(30))}, actNone},
		{"ephemeral volume does not hold a claim named like the volume", claim(deleting, named("v")), []*corev1.Pod{pod(ephemeral)}, actRemove},
		{"one user among others is enough", claim(deleting), []*corev1.Pod{pod(unscheduled), web, pod(otherNS)}, actNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan(tc.claim, tc.pods); got != tc.want {
				t.Errorf("plan = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClaimKeys(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		}},
	}
	got := claimKeys(p)
	want := []string{"ns/data", "ns/web-scratch"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("claimKeys = %v, want %v", got, want)
	}
}
