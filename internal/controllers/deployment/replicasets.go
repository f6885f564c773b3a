package deployment

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Annotations the controller writes, as upstream names them.
const (
	// RevisionAnnotation orders a deployment's replica sets in its rollout
	// history; the deployment carries its new replica set's revision.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation keeps the revisions a replica set held
	// before a rollback made it the newest again.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is spec.replicas of the deployment when the
	// replica set was last scaled: a mismatch marks a scaling event.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is spec.replicas+maxSurge at that time, the
	// base of proportional scaling.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"

	// revisionHistoryMaxChars bounds the revision-history annotation.
	revisionHistoryMaxChars = 2000
	// deprecatedRollbackTo is the extensions/v1beta1 rollback annotation;
	// it is never copied onto replica sets.
	deprecatedRollbackTo = "deprecated.deployment.rollback.to"
)

var deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// podTemplateHash names a template: the same template (and collision
// count) always gives the same value, across restarts and processes, so
// a replica set's name can be recomputed instead of remembered. Upstream
// hashes a printed dump of the struct; we hash its JSON, which is
// deterministic (encoding/json sorts map keys). A bump of collisionCount
// changes the hash when the name is taken by a replica set that is not
// ours.
func podTemplateHash(t *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	b, err := json.Marshal(t)
	if err != nil {
		// API types always encode; fall back to something stable anyway.
		b = []byte(t.String())
	}
	h.Write(b)
	if collisionCount != nil {
		var buf [8]byte
		binary.LittleEndian.PutUint32(buf[:], uint32(*collisionCount))
		h.Write(buf[:])
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// equalIgnoreHash reports whether two templates are the same apart from
// the pod-template-hash label: how the new replica set is recognised.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	ac, bc := a.DeepCopy(), b.DeepCopy()
	delete(ac.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(bc.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	// Semantic equality treats a nil map and an empty one alike.
	return apiequality.Semantic.DeepEqual(ac, bc)
}

// newReplicaSetFor builds the replica set for the deployment's current
// template, with zero replicas.
func newReplicaSetFor(d *appsv1.Deployment) *appsv1.ReplicaSet {
	hash := podTemplateHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	sel := d.Spec.Selector.DeepCopy()
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	sel.MatchLabels = withLabel(sel.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          maps.Clone(tmpl.Labels),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentKind)},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32(0)),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        sel,
			Template:        *tmpl,
		},
	}
}

func withLabel(in map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(in)+1)
	maps.Copy(out, in)
	out[k] = v
	return out
}

// findNewReplicaSet returns the oldest replica set whose template is the
// deployment's. (More than one can exist after odd histories; upstream
// deterministically picks the oldest.)
func findNewReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sortByCreation(rss)
	for _, rs := range rss {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets returns the old replica sets with replicas, and all of them.
func findOldReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (active, all []*appsv1.ReplicaSet) {
	newRS := findNewReplicaSet(d, rss)
	for _, rs := range rss {
		if rs == newRS {
			continue
		}
		all = append(all, rs)
		if replicasOf(rs) != 0 {
			active = append(active, rs)
		}
	}
	return active, all
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

// activeReplicaSets keeps the non-nil replica sets with spec.replicas > 0.
func activeReplicaSets(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if replicasOf(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// withNew returns old followed by newRS (if any) in a fresh slice.
func withNew(old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, 0, len(old)+1)
	out = append(out, old...)
	if newRS != nil {
		out = append(out, newRS)
	}
	return out
}

// Sums over replica sets: spec (what was asked) and status (what runs).
func specReplicas(rss []*appsv1.ReplicaSet) (n int32) {
	for _, rs := range rss {
		n += replicasOf(rs)
	}
	return n
}

func statusReplicas(rss []*appsv1.ReplicaSet) (n int32) {
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.Replicas
		}
	}
	return n
}

func readyReplicas(rss []*appsv1.ReplicaSet) (n int32) {
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.ReadyReplicas
		}
	}
	return n
}

func availableReplicas(rss []*appsv1.ReplicaSet) (n int32) {
	for _, rs := range rss {
		if rs != nil {
			n += rs.Status.AvailableReplicas
		}
	}
	return n
}

// terminatingReplicas sums status.terminatingReplicas. A replica set its
// controller has not reported on yet (observedGeneration 0) counts as
// none; one that reported without the field makes the sum unknown (nil),
// as upstream does.
func terminatingReplicas(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		if rs.Status.TerminatingReplicas == nil {
			if rs.Status.ObservedGeneration == 0 {
				continue
			}
			return nil
		}
		n += *rs.Status.TerminatingReplicas
	}
	return &n
}

// revision reads a replica set's revision annotation (0 when absent).
func revision(rs *appsv1.ReplicaSet) (int64, error) {
	v, ok := rs.Annotations[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest parseable revision.
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		if v, err := revision(rs); err == nil && v > m {
			m = v
		}
	}
	return m
}

// skipCopyAnnotation lists the deployment annotations that are the
// controller's own bookkeeping (or kubectl apply's) and so are not copied
// onto replica sets. Everything else, kubernetes.io/change-cause
// included, is.
func skipCopyAnnotation(k string) bool {
	switch k {
	case corev1.LastAppliedConfigAnnotation, RevisionAnnotation, RevisionHistoryAnnotation,
		DesiredReplicasAnnotation, MaxReplicasAnnotation, deprecatedRollbackTo:
		return true
	}
	return false
}

func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if cur, ok := rs.Annotations[k]; skipCopyAnnotation(k) || (ok && cur == v) {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// setNewReplicaSetAnnotations copies the deployment's annotations onto
// its new replica set and raises the replica set's revision to
// newRevision if it is lower (keeping the former value in the revision
// history: that is a rollback). A replica set about to be created also
// gets its replica annotations. It reports whether anything changed.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	changed := copyDeploymentAnnotations(d, rs)
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldRev, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldRev = 0
	}
	newRev, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldRev < newRev {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			appendRevisionHistory(rs, oldRevision)
		}
	}
	if !exists && setReplicasAnnotations(rs, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory adds old to the comma-separated history,
// dropping the oldest entries to stay within revisionHistoryMaxChars.
func appendRevisionHistory(rs *appsv1.ReplicaSet, old string) {
	hist := rs.Annotations[RevisionHistoryAnnotation]
	if hist == "" {
		rs.Annotations[RevisionHistoryAnnotation] = old
		return
	}
	revs := strings.Split(hist, ",")
	total := len(hist) + len(old) + 1
	start := 0
	for total > revisionHistoryMaxChars && start < len(revs) {
		total -= len(revs[start]) + 1
		start++
	}
	if total <= revisionHistoryMaxChars {
		rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(revs[start:], old), ",")
	}
}

func setDeploymentRevision(d *appsv1.Deployment, rev string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] == rev {
		return false
	}
	d.Annotations[RevisionAnnotation] = rev
	return true
}

func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, max int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{
		DesiredReplicasAnnotation: strconv.Itoa(int(desired)),
		MaxReplicasAnnotation:     strconv.Itoa(int(max)),
	} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

func replicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, max int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(desired)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(max))
}

func intAnnotation(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// isSaturated: the new replica set runs exactly the deployment's size,
// all of it available, and was sized for it.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	return ok && replicasOf(rs) == *d.Spec.Replicas && desired == *d.Spec.Replicas &&
		rs.Status.AvailableReplicas == *d.Spec.Replicas
}

// findActiveOrLatest returns the only active replica set, or the newest
// one when none is active; nil when several are active (then scaling is
// proportional).
func findActiveOrLatest(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(oldRSs) == 0 {
		return nil
	}
	sortByCreation(oldRSs)
	active := activeReplicaSets(withNew(oldRSs, newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return oldRSs[len(oldRSs)-1]
	case 1:
		return active[0]
	}
	return nil
}

// Orderings. Each is total (names break ties), so decisions do not depend
// on the order the informer listed things in.

func byCreation(a, b *appsv1.ReplicaSet) int {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return strings.Compare(a.Name, b.Name)
	}
	if a.CreationTimestamp.Before(&b.CreationTimestamp) {
		return -1
	}
	return 1
}

func sortByCreation(rss []*appsv1.ReplicaSet) { slices.SortFunc(rss, byCreation) }

// sortBySizeNewer: largest first; among equals, newest first (where
// proportional scale-up starts).
func sortBySizeNewer(rss []*appsv1.ReplicaSet) {
	slices.SortFunc(rss, func(a, b *appsv1.ReplicaSet) int {
		if replicasOf(a) == replicasOf(b) {
			return byCreation(b, a)
		}
		return int(replicasOf(b)) - int(replicasOf(a))
	})
}

// sortBySizeOlder: largest first; among equals, oldest first (where
// proportional scale-down starts).
func sortBySizeOlder(rss []*appsv1.ReplicaSet) {
	slices.SortFunc(rss, func(a, b *appsv1.ReplicaSet) int {
		if replicasOf(a) == replicasOf(b) {
			return byCreation(a, b)
		}
		return int(replicasOf(b)) - int(replicasOf(a))
	})
}

// sortByRevision: oldest revision first (what history cleanup deletes first).
func sortByRevision(rss []*appsv1.ReplicaSet) {
	slices.SortFunc(rss, func(a, b *appsv1.ReplicaSet) int {
		ra, _ := revision(a)
		rb, _ := revision(b)
		if ra == rb {
			return byCreation(a, b)
		}
		if ra < rb {
			return -1
		}
		return 1
	})
}
