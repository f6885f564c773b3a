package statefulset

import (
	"regexp"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// Pure helpers about a set's members: names and ordinals, the pods and
// claims a set makes, and the owner references its retention policy
// asks for. Nothing here talks to the API server.

var (
	setKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	podKind = corev1.SchemeGroupVersion.WithKind("Pod")
)

// memberName splits "<set>-<ordinal>"; a name that does not end in a
// number has ordinal -1 and belongs to no set.
var memberName = regexp.MustCompile(`^(.*)-([0-9]+)$`)

// parentAndOrdinal returns the set a pod's name says it belongs to and
// its ordinal, or ("", -1).
func parentAndOrdinal(name string) (string, int) {
	m := memberName.FindStringSubmatch(name)
	if m == nil {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return "", -1
	}
	return m[1], int(i)
}

func ordinalOf(p *corev1.Pod) int {
	_, o := parentAndOrdinal(p.Name)
	return o
}

// isMember: the pod's name makes it one of set's (a pod the selector
// matches but named otherwise is never adopted).
func isMember(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	parent, o := parentAndOrdinal(p.Name)
	return o >= 0 && parent == set.Name
}

func replicasOf(set *appsv1.StatefulSet) int { return int(ptr.Deref(set.Spec.Replicas, 1)) }

// startOrdinal is spec.ordinals.start: the first ordinal of the range
// [start, start+replicas) the set keeps pods for.
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func inRange(set *appsv1.StatefulSet, ordinal int) bool {
	start := startOrdinal(set)
	return ordinal >= start && ordinal < start+replicasOf(set)
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

// claimName is "<template>-<set>-<ordinal>": stable across the pod's
// lives, so a replacement pod mounts its predecessor's volume.
func claimName(set *appsv1.StatefulSet, template string, ordinal int) string {
	return template + "-" + set.Name + "-" + strconv.Itoa(ordinal)
}

func revisionOf(p *corev1.Pod) string { return p.Labels[appsv1.StatefulSetRevisionLabel] }

// newPod is the pod of set (whose template is the revision's) for
// ordinal, labelled with that revision: the template's labels,
// annotations, finalizers and spec, plus the identity that makes it a
// stateful member (name, hostname and subdomain, pod-name and pod-index
// labels) and a volume per claim template.
func newPod(set *appsv1.StatefulSet, template *corev1.PodTemplateSpec, revision string, ordinal int) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            podName(set, ordinal),
			Namespace:       set.Namespace,
			Labels:          copyMap(template.Labels),
			Annotations:     copyMap(template.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, setKind)},
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if len(template.Finalizers) > 0 {
		pod.Finalizers = append([]string(nil), template.Finalizers...)
	}
	setIdentity(set, pod)
	// Hostname and subdomain are immutable: set at creation only.
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
	setStorage(set, pod)
	pod.Labels[appsv1.StatefulSetRevisionLabel] = revision
	return pod
}

// setIdentity puts the identity labels on pod.
func setIdentity(set *appsv1.StatefulSet, pod *corev1.Pod) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinalOf(pod))
}

// identityMatches: pod carries the identity labels of its ordinal.
func identityMatches(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	return isMember(set, pod) && pod.Namespace == set.Namespace &&
		pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name &&
		pod.Labels[appsv1.PodIndexLabel] == strconv.Itoa(ordinalOf(pod))
}

// setStorage gives pod one volume per claim template, named for the
// template and mounting the ordinal's claim; template volumes of the
// same name are replaced.
func setStorage(set *appsv1.StatefulSet, pod *corev1.Pod) {
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return
	}
	ordinal := ordinalOf(pod)
	byTemplate := map[string]bool{}
	var vols []corev1.Volume
	for _, t := range set.Spec.VolumeClaimTemplates {
		byTemplate[t.Name] = true
		vols = append(vols, corev1.Volume{
			Name: t.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: claimName(set, t.Name, ordinal),
			}},
		})
	}
	for _, v := range pod.Spec.Volumes {
		if !byTemplate[v.Name] {
			vols = append(vols, v)
		}
	}
	pod.Spec.Volumes = vols
}

// newClaims are the claims pod needs, one per template: named for the
// ordinal, labelled with the template's labels plus the selector's
// matchLabels.
func newClaims(set *appsv1.StatefulSet, pod *corev1.Pod) []*corev1.PersistentVolumeClaim {
	ordinal := ordinalOf(pod)
	out := make([]*corev1.PersistentVolumeClaim, 0, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		c := set.Spec.VolumeClaimTemplates[i].DeepCopy()
		c.Name = claimName(set, c.Name, ordinal)
		c.Namespace = set.Namespace
		c.ResourceVersion, c.UID = "", ""
		c.Status = corev1.PersistentVolumeClaimStatus{}
		if set.Spec.Selector != nil && len(set.Spec.Selector.MatchLabels) > 0 {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			for k, v := range set.Spec.Selector.MatchLabels {
				c.Labels[k] = v
			}
		}
		out = append(out, c)
	}
	return out
}

func retentionOf(set *appsv1.StatefulSet) (whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType) {
	whenDeleted, whenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		if p.WhenDeleted != "" {
			whenDeleted = p.WhenDeleted
		}
		if p.WhenScaled != "" {
			whenScaled = p.WhenScaled
		}
	}
	return whenDeleted, whenScaled
}

const deletePolicy = appsv1.DeletePersistentVolumeClaimRetentionPolicyType

// refersTo: ref names obj (by kind and name, whatever the UID).
func refersTo(ref *metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	return ref.APIVersion == gvk.GroupVersion().String() && ref.Kind == gvk.Kind && ref.Name == obj.GetName()
}

// claimOwners returns the owner references claim should carry under
// set's retention policy, and whether they differ from what it carries.
// As upstream, the garbage collector does the deleting:
//
//	whenDeleted=Delete: the set controls the claim, so deleting the set
//	  deletes it;
//	whenScaled=Delete: the claim of a pod outside the ordinal range (being
//	  scaled away) is controlled by that pod instead, so it goes with the
//	  pod.
//
// A claim with a reference to an earlier set or pod of the same name (a
// different UID), or one controlled by something else, is left alone
// apart from dropping references to us: someone else manages it.
func claimOwners(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) ([]metav1.OwnerReference, bool) {
	whenDeleted, whenScaled := retentionOf(set)
	refs := claim.OwnerReferences
	for i := range refs {
		stale := (refersTo(&refs[i], set, setKind) && refs[i].UID != set.UID) ||
			(refersTo(&refs[i], pod, podKind) && refs[i].UID != pod.UID)
		if stale {
			return refs, false
		}
	}
	var kept []metav1.OwnerReference
	foreign := false
	for _, r := range refs {
		if refersTo(&r, set, setKind) || refersTo(&r, pod, podKind) {
			continue
		}
		if ptr.Deref(r.Controller, false) {
			foreign = true
		}
		kept = append(kept, r)
	}
	retainAll := whenDeleted != deletePolicy && whenScaled != deletePolicy
	if !foreign || retainAll {
		scaledAway := !inRange(set, ordinalOf(pod))
		switch {
		case whenScaled == deletePolicy && scaledAway:
			if pod.UID != "" {
				kept = append(kept, *metav1.NewControllerRef(pod, podKind))
			}
		case whenDeleted == deletePolicy:
			kept = append(kept, *metav1.NewControllerRef(set, setKind))
		}
	}
	return kept, !sameRefs(refs, kept)
}

// sameRefs compares owner references as sets.
func sameRefs(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(r metav1.OwnerReference) string {
		return string(r.UID) + "/" + r.Kind + "/" + r.Name + "/" + strconv.FormatBool(ptr.Deref(r.Controller, false))
	}
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		as[i], bs[i] = key(a[i]), key(b[i])
	}
	sort.Strings(as)
	sort.Strings(bs)
	for i := range as {
		if as[i] != bs[i] {
			return false
		}
	}
	return true
}

// staleClaim: a claim of pod still controlled by an earlier pod of the
// same name, which is going away with it (whenScaled=Delete). The pod
// must not be created on it: the garbage collector deletes it soon.
func staleClaim(claim *corev1.PersistentVolumeClaim, pod *corev1.Pod) bool {
	for i := range claim.OwnerReferences {
		r := &claim.OwnerReferences[i]
		if refersTo(r, pod, podKind) && r.UID != pod.UID {
			return true
		}
	}
	return false
}

// Pod states, as the set reads them.

func isCreated(p *corev1.Pod) bool     { return p.UID != "" || p.Status.Phase != "" }
func isTerminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }
func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isRunningAndReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return p.Status.Phase == corev1.PodRunning && c != nil && c.Status == corev1.ConditionTrue
}

// availableIn is how long until a running and ready pod has been ready
// for minReadySeconds: 0 if it is available, negative if it is not
// running and ready at all.
func availableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	if !isRunningAndReady(p) {
		return -1
	}
	if minReadySeconds <= 0 {
		return 0
	}
	since := readyCondition(p).LastTransitionTime.Time
	left := since.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if since.IsZero() || left < 0 {
		return 0
	}
	// Whole-second timestamps: the pod is available strictly after.
	return left + time.Millisecond
}

func isAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return availableIn(p, minReadySeconds, now) == 0
}

// isUnavailable counts against maxUnavailable and holds up an ordered
// rollout: not created, not available, or going away.
func isUnavailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return !isCreated(p) || isTerminating(p) || !isAvailable(p, minReadySeconds, now)
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
