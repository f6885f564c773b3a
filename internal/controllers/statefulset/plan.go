package statefulset

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The pure core: given a set, its two revisions, its pods and claims and
// the time, what to do next. Nothing here talks to the API server.

// revision is one version of the set's pod template.
type revision struct {
	name     string
	template *corev1.PodTemplateSpec
}

// planInput is everything one sync decides from.
type planInput struct {
	set             *appsv1.StatefulSet
	current, update revision
	collisionCount  int32
	pods            []*corev1.Pod                            // the set's members
	claims          map[string]*corev1.PersistentVolumeClaim // the namespace's claims, by name
	now             time.Time
	statusOnly      bool // earlier writes not yet seen: count, do not act
}

type stepKind int

const (
	stepCreate       stepKind = iota // create the pod, its missing claims first
	stepDelete                       // delete the pod
	stepFixIdentity                  // relabel the pod with its identity
	stepCreateClaims                 // create the missing claims of a pending pod
	stepClaimOwners                  // rewrite claims' owner references
)

func (k stepKind) String() string {
	return [...]string{"create", "delete", "fix-identity", "create-claims", "claim-owners"}[k]
}

// step is one write.
type step struct {
	kind stepKind
	pod  *corev1.Pod
	// claims: for stepCreate and stepCreateClaims the claims to create
	// if missing; for stepClaimOwners the claims with their new owner
	// references.
	claims []*corev1.PersistentVolumeClaim
	why    string // for logs and tests
}

// plan is what a sync does: phases run in order, and a failed step ends
// the sync. Within a phase the steps run one after another for
// OrderedReady, or together (in slow-start batches) for Parallel.
type plan struct {
	phases  [][]step
	status  appsv1.StatefulSetStatus
	waiting string        // why the plan stopped early ("" if it did not)
	requeue time.Duration // when a pod will become available
}

func (p *plan) steps() []step {
	var out []step
	for _, ph := range p.phases {
		out = append(out, ph...)
	}
	return out
}

// slot is one ordinal of the range: the pod there, or the pod to create.
type slot struct {
	pod     *corev1.Pod
	created bool
}

// planSync decides one sync, as upstream's controller does:
//
//  1. the pods in the ordinal range [start, start+replicas), with the pods
//     to create for empty ordinals (at the current revision below the
//     partition, the update revision above it);
//  2. replicas first, lowest ordinal first: finished pods are deleted
//     (to be recreated), missing ones created (claims first), pending
//     ones get their missing claims, identity labels and claim owners
//     are fixed. OrderedReady stops at the first pod it creates or that
//     is not Running, Ready and available: ordinal i is created only
//     once 0..i-1 are;
//  3. pods past the range are condemned: their claims get the owners
//     whenScaled asks for, then they are deleted, highest ordinal first,
//     OrderedReady one at a time and only once the rest are healthy;
//  4. RollingUpdate: pods not at the update revision are deleted from the
//     highest ordinal down to the partition (to be recreated at the
//     update revision), one at a time waiting for each replacement to be
//     available, or up to maxUnavailable at once when that is set.
//     OnDelete leaves them to the user.
func planSync(in planInput) plan {
	set := in.set
	p := plan{status: countStatus(in)}
	p.requeue = availabilityRequeue(in)
	if in.statusOnly || set.DeletionTimestamp != nil {
		return p
	}
	minReady := set.Spec.MinReadySeconds
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	start, n := startOrdinal(set), replicasOf(set)

	slots := make([]slot, n)
	var condemned []*corev1.Pod
	for _, pod := range in.pods {
		o := ordinalOf(pod)
		switch {
		case o < 0:
		case inRange(set, o):
			slots[o-start] = slot{pod: pod, created: true}
		default:
			condemned = append(condemned, pod)
		}
	}
	for i := range slots {
		if slots[i].pod == nil {
			slots[i].pod = versionedPod(in, start+i)
		}
	}
	sort.Slice(condemned, func(i, j int) bool { return ordinalOf(condemned[i]) > ordinalOf(condemned[j]) })

	// The first unavailable pod, lowest ordinal of the range first, then
	// the condemned from the lowest: an ordered scale-down may delete it
	// even though it is unhealthy (it would never become healthy).
	var firstUnavailable *corev1.Pod
	for _, s := range slots {
		if isUnavailable(s.pod, minReady, in.now) {
			firstUnavailable = s.pod
			break
		}
	}
	if firstUnavailable == nil {
		for i := len(condemned) - 1; i >= 0; i-- {
			if isUnavailable(condemned[i], minReady, in.now) {
				firstUnavailable = condemned[i]
				break
			}
		}
	}

	deleting := map[*corev1.Pod]bool{}

	// Phase 1: the replicas.
	var phase []step
	for _, s := range slots {
		steps, wait := replicaSteps(in, s, monotonic)
		phase = append(phase, steps...)
		for _, st := range steps {
			if st.kind == stepDelete {
				deleting[st.pod] = true
			}
		}
		if wait != "" && monotonic {
			p.phases = append(p.phases, phase)
			p.waiting = wait
			return p
		}
	}
	p.phases = append(p.phases, phase)

	// Phase 2: claims of condemned pods get the owners whenScaled asks
	// for before the pods go, so the claims go with them.
	phase = nil
	for _, pod := range condemned {
		if st, ok := claimOwnerStep(in, pod); ok {
			phase = append(phase, st)
		}
	}
	p.phases = append(p.phases, phase)

	// Phase 3: delete the condemned, highest ordinal first.
	phase = nil
	for _, pod := range condemned {
		if isTerminating(pod) {
			if monotonic {
				p.phases = append(p.phases, phase)
				p.waiting = fmt.Sprintf("waiting for pod %s to terminate prior to scale down", pod.Name)
				return p
			}
			continue
		}
		if monotonic && pod != firstUnavailable && isUnavailable(pod, minReady, in.now) {
			p.phases = append(p.phases, phase)
			p.waiting = fmt.Sprintf("waiting for pod %s to be running, ready and available prior to scale down", pod.Name)
			return p
		}
		phase = append(phase, step{kind: stepDelete, pod: pod, why: "scale down"})
		if monotonic {
			p.phases = append(p.phases, phase)
			p.waiting = fmt.Sprintf("waiting for pod %s to terminate prior to scale down", pod.Name)
			return p
		}
	}
	p.phases = append(p.phases, phase)

	// Phase 4: the rolling update.
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return p
	}
	phase, p.waiting = rollingUpdateSteps(in, slots, deleting)
	p.phases = append(p.phases, phase)
	return p
}

// versionedPod is the pod to create for an empty ordinal: below the
// partition at the current revision (a pod lost there comes back as it
// was), otherwise at the update revision.
func versionedPod(in planInput, ordinal int) *corev1.Pod {
	set := in.set
	if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		keepCurrent := false
		if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			keepCurrent = ordinal < startOrdinal(set)+int(*ru.Partition)
		} else if ru == nil {
			keepCurrent = ordinal < startOrdinal(set)+int(set.Status.CurrentReplicas)
		}
		if keepCurrent {
			return newPod(set, in.current.template, in.current.name, ordinal)
		}
	}
	return newPod(set, in.update.template, in.update.name, ordinal)
}

// replicaSteps handles one ordinal of the range. wait says why an
// ordered set must not look further.
func replicaSteps(in planInput, s slot, monotonic bool) ([]step, string) {
	set, pod := in.set, s.pod
	minReady := set.Spec.MinReadySeconds
	if !s.created {
		claims, blocked := claimsToCreate(in, pod)
		if blocked != "" {
			return nil, blocked
		}
		st := step{kind: stepCreate, pod: pod, claims: claims, why: "missing"}
		if monotonic {
			return []step{st}, fmt.Sprintf("waiting for pod %s to be created, running and ready", pod.Name)
		}
		return []step{st}, ""
	}
	if isFinished(pod) {
		// Failed or Succeeded (evicted, or stopped with its node): a
		// member must run, so it is deleted and made again next sync.
		if isTerminating(pod) {
			return nil, fmt.Sprintf("waiting for pod %s to terminate", pod.Name)
		}
		return []step{{kind: stepDelete, pod: pod, why: "recreate " + string(pod.Status.Phase)}},
			fmt.Sprintf("waiting for pod %s to be recreated", pod.Name)
	}
	var steps []step
	if pod.Status.Phase == corev1.PodPending {
		// A claim deleted from under a pod that never started: make it
		// again so the pod can start.
		if claims, _ := claimsToCreate(in, pod); len(claims) > 0 {
			steps = append(steps, step{kind: stepCreateClaims, pod: pod, claims: claims, why: "pending pod lacks claims"})
		}
	}
	if monotonic {
		switch {
		case isTerminating(pod):
			return steps, fmt.Sprintf("waiting for pod %s to terminate", pod.Name)
		case !isRunningAndReady(pod):
			return steps, fmt.Sprintf("waiting for pod %s to be running and ready", pod.Name)
		case !isAvailable(pod, minReady, in.now):
			return steps, fmt.Sprintf("waiting for pod %s to be available", pod.Name)
		}
	}
	if !identityMatches(set, pod) {
		steps = append(steps, step{kind: stepFixIdentity, pod: pod, why: "identity labels"})
	}
	if isCreated(pod) && !isTerminating(pod) {
		if st, ok := claimOwnerStep(in, pod); ok {
			steps = append(steps, st)
		}
	}
	return steps, ""
}

// claimsToCreate lists pod's claims that do not exist. blocked says why
// the pod must not be created now: a claim being deleted, or still owned
// by an earlier pod of the same name (whenScaled=Delete) and about to be
// collected.
func claimsToCreate(in planInput, pod *corev1.Pod) (missing []*corev1.PersistentVolumeClaim, blocked string) {
	for _, want := range newClaims(in.set, pod) {
		have, ok := in.claims[want.Name]
		switch {
		case !ok:
			refs, _ := claimOwners(want, in.set, pod)
			want.OwnerReferences = refs
			missing = append(missing, want)
		case have.DeletionTimestamp != nil:
			return nil, fmt.Sprintf("waiting for claim %s to be deleted before creating pod %s", have.Name, pod.Name)
		case !isCreated(pod) && staleClaim(have, pod):
			return nil, fmt.Sprintf("waiting for stale claim %s of an earlier pod %s to be deleted", have.Name, pod.Name)
		}
	}
	return missing, ""
}

// claimOwnerStep rewrites the owners of pod's existing claims that do
// not carry what the retention policy asks for.
func claimOwnerStep(in planInput, pod *corev1.Pod) (step, bool) {
	var fix []*corev1.PersistentVolumeClaim
	for _, want := range newClaims(in.set, pod) {
		have, ok := in.claims[want.Name]
		if !ok || have.DeletionTimestamp != nil {
			continue
		}
		if refs, changed := claimOwners(have, in.set, pod); changed {
			c := have.DeepCopy()
			c.OwnerReferences = refs
			fix = append(fix, c)
		}
	}
	if len(fix) == 0 {
		return step{}, false
	}
	return step{kind: stepClaimOwners, pod: pod, claims: fix, why: "retention policy"}, true
}

// rollingUpdateSteps deletes outdated pods from the highest ordinal down
// to the partition.
func rollingUpdateSteps(in planInput, slots []slot, deleting map[*corev1.Pod]bool) ([]step, string) {
	set := in.set
	minReady := set.Spec.MinReadySeconds
	partition := 0
	var maxUnavailable *intstr.IntOrString
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		partition = int(ptr.Deref(ru.Partition, 0))
		maxUnavailable = ru.MaxUnavailable
	}
	outdated := func(s slot) bool {
		return s.created && revisionOf(s.pod) != in.update.name && !isTerminating(s.pod) && !deleting[s.pod]
	}
	if maxUnavailable == nil {
		// One at a time: the next pod goes only once the one above it is
		// back and available.
		for i := len(slots) - 1; i >= partition && i >= 0; i-- {
			s := slots[i]
			if outdated(s) {
				return []step{{kind: stepDelete, pod: s.pod, why: "update"}},
					fmt.Sprintf("waiting for pod %s to be updated", s.pod.Name)
			}
			if isUnavailable(s.pod, minReady, in.now) || deleting[s.pod] {
				return nil, fmt.Sprintf("waiting for pod %s to be updated and available", s.pod.Name)
			}
		}
		return nil, ""
	}
	budget, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, len(slots), false)
	if err != nil || budget < 1 {
		budget = 1
	}
	unavailable := 0
	for _, s := range slots {
		if isUnavailable(s.pod, minReady, in.now) || deleting[s.pod] {
			unavailable++
		}
	}
	var steps []step
	for i := len(slots) - 1; i >= partition && i >= 0 && unavailable < budget; i-- {
		if outdated(slots[i]) {
			steps = append(steps, step{kind: stepDelete, pod: slots[i].pod, why: "update"})
			unavailable++
		}
	}
	if len(steps) > 0 {
		return steps, fmt.Sprintf("waiting for %d pods to be updated", len(steps))
	}
	return nil, ""
}

// countStatus counts the set's pods. observedGeneration, revisions and
// collisionCount come from the input; a rolling update whose every pod
// is updated and ready is complete: the update revision becomes current.
func countStatus(in planInput) appsv1.StatefulSetStatus {
	set := in.set
	st := appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    in.current.name,
		UpdateRevision:     in.update.name,
		CollisionCount:     ptr.To(in.collisionCount),
	}
	for _, pod := range in.pods {
		if isCreated(pod) {
			st.Replicas++
		}
		if isRunningAndReady(pod) {
			st.ReadyReplicas++
			if isAvailable(pod, set.Spec.MinReadySeconds, in.now) {
				st.AvailableReplicas++
			}
		}
		if isCreated(pod) && !isTerminating(pod) {
			if revisionOf(pod) == in.current.name {
				st.CurrentReplicas++
			}
			if revisionOf(pod) == in.update.name {
				st.UpdatedReplicas++
			}
		}
	}
	want := int32(replicasOf(set))
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		st.UpdatedReplicas == want && st.ReadyReplicas == want && st.Replicas == want {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
	return st
}

// availabilityRequeue is when the next ready pod becomes available (no
// event marks that moment), or 0.
func availabilityRequeue(in planInput) time.Duration {
	var next time.Duration
	for _, pod := range in.pods {
		if d := availableIn(pod, in.set.Spec.MinReadySeconds, in.now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}
