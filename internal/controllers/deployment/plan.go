package deployment

import (
	"fmt"
	"math"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Input is what one sync of a deployment looks at. Compute does not
// modify it.
type Input struct {
	Deployment *appsv1.Deployment
	// ReplicaSets are the replica sets the deployment controls (after
	// adoption and release), in any order.
	ReplicaSets []*appsv1.ReplicaSet
	// Pods are the pods matching the deployment's selector. Only the
	// Recreate strategy reads them: it starts the new replica set once no
	// pod of an old one is left running.
	Pods []*corev1.Pod
	Now  time.Time
}

// Plan is what Compute decided. Apply Writes in order and stop at the
// first error, then Deletes, then the deployment's Status and Revision;
// a failed step is retried by the next sync, which plans again from what
// then exists.
type Plan struct {
	Writes []Write
	// Deletes are old, empty replica sets beyond revisionHistoryLimit.
	Deletes []*appsv1.ReplicaSet
	// Status is the deployment's new status; nil when unchanged.
	Status *appsv1.DeploymentStatus
	// Revision is the deployment's new revision annotation; "" when
	// unchanged.
	Revision string
	// Events are recorded on the deployment once the plan is applied.
	Events []Event
	// RequeueAfter, when positive, is when the progress deadline would
	// pass: sync again then.
	RequeueAfter time.Duration
}

// Write creates or updates one replica set.
type Write struct {
	// ReplicaSet is the whole object to send (resourceVersion as read).
	ReplicaSet *appsv1.ReplicaSet
	Create     bool
	// Events are recorded on the deployment once the write succeeded.
	Events []Event
}

// Event is a core/v1 event on the deployment.
type Event struct {
	Type, Reason, Message string
}

// Compute decides one sync of a deployment: which replica sets to create,
// scale, annotate and delete, and the deployment's new status. It is the
// whole of the controller's logic, with no I/O.
func Compute(in Input) Plan {
	p := &planner{
		orig:  in.Deployment,
		d:     in.Deployment.DeepCopy(),
		now:   metav1.NewTime(in.Now),
		pods:  in.Pods,
		dirty: map[*appsv1.ReplicaSet]int{},
	}
	for _, rs := range in.ReplicaSets {
		p.rss = append(p.rss, rs.DeepCopy())
	}
	if p.d.Spec.Replicas == nil {
		p.d.Spec.Replicas = new(int32(1))
	}
	p.status = &p.d.Status
	p.sync()
	return p.finish()
}

// planner works on copies of the deployment and its replica sets,
// changing them as upstream's sync would change the objects it writes,
// and records each changed replica set once (in the order first
// changed), so later decisions in the same sync see earlier ones.
type planner struct {
	orig   *appsv1.Deployment
	d      *appsv1.Deployment
	now    metav1.Time
	rss    []*appsv1.ReplicaSet
	pods   []*corev1.Pod
	status *appsv1.DeploymentStatus // the status to write, d.Status until computed
	plan   Plan
	dirty  map[*appsv1.ReplicaSet]int // replica set → index in plan.Writes
}

func (p *planner) sync() {
	d := p.d
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels)+len(d.Spec.Selector.MatchExpressions) == 0 {
		p.plan.Events = append(p.plan.Events, Event{corev1.EventTypeWarning, "SelectingAll",
			"This deployment is selecting all pods. A non-empty selector is required."})
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
		}
		return
	}
	if d.DeletionTimestamp != nil {
		newRS, oldRSs := p.replicaSets(false)
		p.syncStatus(withNew(oldRSs, newRS), newRS)
		return
	}
	p.checkPaused()
	if d.Spec.Paused || p.isScalingEvent() {
		p.syncScale()
		return
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		p.rolloutRecreate()
	case appsv1.RollingUpdateDeploymentStrategyType:
		p.rolloutRolling()
	default:
		// Validation admits no other strategy; report status only.
		newRS, oldRSs := p.replicaSets(false)
		p.syncStatus(withNew(oldRSs, newRS), newRS)
	}
}

func (p *planner) finish() Plan {
	if !apiequality.Semantic.DeepEqual(p.orig.Status, *p.status) {
		st := p.status.DeepCopy()
		p.plan.Status = st
	}
	if rev := p.d.Annotations[RevisionAnnotation]; rev != p.orig.Annotations[RevisionAnnotation] {
		p.plan.Revision = rev
	}
	return p.plan
}

// write records that rs changed (once), with events for when it is saved.
func (p *planner) write(rs *appsv1.ReplicaSet, create bool, events ...Event) {
	if i, ok := p.dirty[rs]; ok {
		p.plan.Writes[i].Events = append(p.plan.Writes[i].Events, events...)
		return
	}
	p.dirty[rs] = len(p.plan.Writes)
	p.plan.Writes = append(p.plan.Writes, Write{ReplicaSet: rs, Create: create, Events: events})
}

// checkPaused records pausing and resuming in the Progressing condition,
// so time spent paused never counts against the progress deadline. A
// deadline already exceeded is left as is.
func (p *planner) checkPaused() {
	d := p.d
	if !hasProgressDeadline(d) {
		return
	}
	c := getCondition(&d.Status, appsv1.DeploymentProgressing)
	if c != nil && c.Reason == ReasonProgressDeadline {
		return
	}
	pausedCond := c != nil && c.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !pausedCond:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", p.now))
	case !d.Spec.Paused && pausedCond:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", p.now))
	}
}

// replicaSets splits the replica sets into the new one (nil if none and
// !create) and all old ones, syncing revisions: the new replica set gets
// max(old)+1 and the deployment copies it.
func (p *planner) replicaSets(create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	_, oldRSs := findOldReplicaSets(p.d, p.rss)
	return p.newReplicaSet(oldRSs, create), oldRSs
}

func (p *planner) newReplicaSet(oldRSs []*appsv1.ReplicaSet, create bool) *appsv1.ReplicaSet {
	d := p.d
	newRevision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)
	if rs := findNewReplicaSet(d, p.rss); rs != nil {
		changed := setNewReplicaSetAnnotations(d, rs, newRevision, true)
		if changed || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			p.write(rs, false)
		}
		setDeploymentRevision(d, rs.Annotations[RevisionAnnotation])
		if hasProgressDeadline(d) && getCondition(&d.Status, appsv1.DeploymentProgressing) == nil {
			// Progress was not tracked before (e.g. an adopted replica
			// set): start counting from now.
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
				fmt.Sprintf("Found new replica set %q", rs.Name), p.now))
		}
		return rs
	}
	if !create {
		return nil
	}
	rs := newReplicaSetFor(d)
	*rs.Spec.Replicas = newRSReplicas(d, withNew(oldRSs, rs), rs)
	setNewReplicaSetAnnotations(d, rs, newRevision, false)
	var events []Event
	if n := *rs.Spec.Replicas; n > 0 {
		events = append(events, Event{corev1.EventTypeNormal, "ScalingReplicaSet", fmt.Sprintf("Scaled up replica set %s from 0 to %d", rs.Name, n)})
	}
	p.write(rs, true, events...)
	p.rss = append(p.rss, rs)
	setDeploymentRevision(d, newRevision)
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", rs.Name), p.now))
	}
	return rs
}

// newRSReplicas is the size the new replica set may grow to now: for a
// rolling update, up to the surge limit on the total; for Recreate, all
// of it (old ones are gone by then).
func newRSReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return *d.Spec.Replicas
	}
	surge, _ := rollingParams(d)
	maxTotal := *d.Spec.Replicas + scaledValue(surge, *d.Spec.Replicas, true)
	current := specReplicas(all)
	if current >= maxTotal {
		return replicasOf(newRS)
	}
	up := min(maxTotal-current, *d.Spec.Replicas-replicasOf(newRS))
	return replicasOf(newRS) + up
}

// isScalingEvent: some active replica set was sized for a different
// spec.replicas than the deployment has now.
func (p *planner) isScalingEvent() bool {
	newRS, oldRSs := p.replicaSets(false)
	for _, rs := range activeReplicaSets(withNew(oldRSs, newRS)) {
		if desired, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && desired != *p.d.Spec.Replicas {
			return true
		}
	}
	return false
}

// scaleTo sets rs's size (and its replica annotations) and records the
// write; it reports whether the size changed.
func (p *planner) scaleTo(rs *appsv1.ReplicaSet, size int32) bool {
	d := p.d
	from := replicasOf(rs)
	sizeChanged := from != size
	maxTotal := *d.Spec.Replicas + maxSurge(d)
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, *d.Spec.Replicas, maxTotal) {
		return false
	}
	rs.Spec.Replicas = new(size)
	setReplicasAnnotations(rs, *d.Spec.Replicas, maxTotal)
	var events []Event
	if sizeChanged {
		op := "down"
		if from < size {
			op = "up"
		}
		events = append(events, Event{corev1.EventTypeNormal, "ScalingReplicaSet", fmt.Sprintf("Scaled %s replica set %s from %d to %d", op, rs.Name, from, size)})
	}
	p.write(rs, false, events...)
	return sizeChanged
}

// scaleIfChanged scales rs only if its size differs.
func (p *planner) scaleIfChanged(rs *appsv1.ReplicaSet, size int32) bool {
	if replicasOf(rs) == size {
		return false
	}
	return p.scaleTo(rs, size)
}

// syncScale is the sync of a paused deployment or of a scaling event:
// resize without advancing the rollout.
func (p *planner) syncScale() {
	newRS, oldRSs := p.replicaSets(false)
	p.scale(newRS, oldRSs)
	if p.d.Spec.Paused {
		p.cleanup(oldRSs)
	}
	p.syncStatus(withNew(oldRSs, newRS), newRS)
}

// scale brings the replica sets to the deployment's size. With one
// active replica set it takes the whole size; once the new one is
// saturated the old ones go to 0; otherwise (mid-rollout) the difference
// is spread over the active replica sets in proportion to their size.
func (p *planner) scale(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) {
	d := p.d
	replicas := *d.Spec.Replicas
	if rs := findActiveOrLatest(newRS, oldRSs); rs != nil {
		p.scaleIfChanged(rs, replicas)
		return
	}
	if isSaturated(d, newRS) {
		for _, old := range activeReplicaSets(oldRSs) {
			p.scaleIfChanged(old, 0)
		}
		return
	}
	if !isRollingUpdate(d) {
		return
	}
	active := activeReplicaSets(withNew(oldRSs, newRS))
	var allowed int32
	if replicas > 0 {
		allowed = replicas + maxSurge(d)
	}
	toAdd := allowed - specReplicas(active)
	switch {
	case toAdd > 0:
		sortBySizeNewer(active)
	case toAdd < 0:
		sortBySizeOlder(active)
	}
	sizes := make([]int32, len(active))
	var added int32
	for i, rs := range active {
		sizes[i] = replicasOf(rs)
		if toAdd != 0 {
			n := proportion(d, rs, toAdd, added)
			sizes[i] += n
			added += n
		}
	}
	for i, rs := range active {
		if i == 0 && toAdd != 0 {
			// Rounding leftovers go to the largest replica set.
			sizes[0] = max(sizes[0]+toAdd-added, 0)
		}
		p.scaleTo(rs, sizes[i])
	}
}

// proportion is rs's share of toAdd (of which added is already handed
// out), by its size relative to the deployment size it was scaled for,
// never overshooting what is left.
func proportion(d *appsv1.Deployment, rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	if replicasOf(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	f := fraction(d, rs)
	left := toAdd - added
	if toAdd > 0 {
		return min(f, left)
	}
	return max(f, left)
}

func fraction(d *appsv1.Deployment, rs *appsv1.ReplicaSet) int32 {
	if *d.Spec.Replicas == 0 {
		return -replicasOf(rs)
	}
	total := *d.Spec.Replicas + maxSurge(d)
	annotated, ok := intAnnotation(rs, MaxReplicasAnnotation)
	if !ok || annotated == 0 {
		// Without the annotation the last observed size is the best guess;
		// the min/max in proportion keep the result within bounds.
		annotated = d.Status.Replicas
	}
	if annotated == 0 {
		return 0
	}
	size := float64(replicasOf(rs)) * float64(total) / float64(annotated)
	return int32(math.Round(size)) - replicasOf(rs)
}

// rolloutRolling advances a rolling update by one step: scale the new
// replica set up if the surge allows, else scale old ones down if
// availability allows, else (finished) clean up history.
func (p *planner) rolloutRolling() {
	newRS, oldRSs := p.replicaSets(true)
	all := withNew(oldRSs, newRS)
	if p.reconcileNew(all, newRS) {
		p.syncRolloutStatus(all, newRS)
		return
	}
	if p.reconcileOld(all, activeReplicaSets(oldRSs), newRS) {
		p.syncRolloutStatus(all, newRS)
		return
	}
	if deploymentComplete(p.d, &p.d.Status) {
		p.cleanup(oldRSs)
	}
	p.syncRolloutStatus(all, newRS)
}

func (p *planner) reconcileNew(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) bool {
	replicas := *p.d.Spec.Replicas
	switch cur := replicasOf(newRS); {
	case cur == replicas:
		return false
	case cur > replicas:
		return p.scaleIfChanged(newRS, replicas)
	}
	return p.scaleIfChanged(newRS, newRSReplicas(p.d, all, newRS))
}

// reconcileOld scales old replica sets down as far as keeping
// replicas-maxUnavailable available allows, counting the new replica
// set's not-yet-available pods as already missing.
func (p *planner) reconcileOld(all, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) bool {
	if specReplicas(oldRSs) == 0 {
		return false
	}
	minAvailable := *p.d.Spec.Replicas - maxUnavailable(p.d)
	newUnavailable := replicasOf(newRS) - newRS.Status.AvailableReplicas
	maxScaledDown := specReplicas(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false
	}
	// Unavailable old replicas go first: they serve nothing, and keeping
	// them would block the rollout until the deadline.
	cleaned := p.cleanupUnhealthy(oldRSs, maxScaledDown)
	scaled := p.scaleDownOld(all, oldRSs)
	return cleaned+scaled > 0
}

func (p *planner) cleanupUnhealthy(oldRSs []*appsv1.ReplicaSet, maxCleanup int32) int32 {
	sortByCreation(oldRSs)
	var total int32
	for _, rs := range oldRSs {
		if total >= maxCleanup {
			break
		}
		cur := replicasOf(rs)
		if cur == 0 || cur == rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxCleanup-total, cur-rs.Status.AvailableReplicas)
		if n <= 0 {
			// More available than asked for (a stale status): nothing to clean.
			continue
		}
		p.scaleIfChanged(rs, cur-n)
		total += n
	}
	return total
}

func (p *planner) scaleDownOld(all, oldRSs []*appsv1.ReplicaSet) int32 {
	minAvailable := *p.d.Spec.Replicas - maxUnavailable(p.d)
	available := availableReplicas(all)
	if available <= minAvailable {
		return 0
	}
	sortByCreation(oldRSs)
	want := available - minAvailable
	var total int32
	for _, rs := range oldRSs {
		if total >= want {
			break
		}
		cur := replicasOf(rs)
		if cur == 0 {
			continue
		}
		n := min(cur, want-total)
		p.scaleIfChanged(rs, cur-n)
		total += n
	}
	return total
}

// rolloutRecreate: old replica sets to 0; once none of their pods runs,
// create the new replica set at full size.
func (p *planner) rolloutRecreate() {
	newRS, oldRSs := p.replicaSets(false)
	all := withNew(oldRSs, newRS)
	scaledDown := false
	for _, rs := range activeReplicaSets(oldRSs) {
		if p.scaleIfChanged(rs, 0) {
			scaledDown = true
		}
	}
	if scaledDown || p.oldPodsRunning(newRS, oldRSs) {
		p.syncRolloutStatus(all, newRS)
		return
	}
	if newRS == nil {
		newRS, oldRSs = p.replicaSets(true)
		all = withNew(oldRSs, newRS)
	}
	p.scaleIfChanged(newRS, *p.d.Spec.Replicas)
	if deploymentComplete(p.d, &p.d.Status) {
		p.cleanup(oldRSs)
	}
	p.syncRolloutStatus(all, newRS)
}

// oldPodsRunning: an old replica set still reports pods, or a pod of one
// is not yet in a terminal phase (Unknown counts as running).
func (p *planner) oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) bool {
	if statusReplicas(oldRSs) > 0 {
		return true
	}
	owned := map[types.UID]bool{}
	for _, rs := range p.rss {
		if rs.UID != "" && (newRS == nil || rs.UID != newRS.UID) {
			owned[rs.UID] = true
		}
	}
	for _, pod := range p.pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || !owned[ref.UID] {
			continue
		}
		if pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
			return true
		}
	}
	return false
}

// cleanup deletes the oldest old replica sets beyond
// revisionHistoryLimit, only those fully scaled down and settled.
func (p *planner) cleanup(oldRSs []*appsv1.ReplicaSet) {
	d := p.d
	if !hasRevisionHistoryLimit(d) {
		return
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return
	}
	sortByRevision(alive)
	for _, rs := range alive[:diff] {
		if _, changed := p.dirty[rs]; changed {
			continue
		}
		if rs.Status.Replicas != 0 || replicasOf(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		p.plan.Deletes = append(p.plan.Deletes, rs)
	}
}

// syncStatus sets the counts and Available; Progressing is left alone
// (paused deployments, scaling events, deletion).
func (p *planner) syncStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) {
	st := calculateStatus(p.d, all, newRS, p.now)
	p.status = &st
}

// syncRolloutStatus also judges progress: complete, progressing (any
// step forward refreshes the condition's lastUpdateTime), or past the
// deadline.
func (p *planner) syncRolloutStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) {
	d := p.d
	st := calculateStatus(d, all, newRS, p.now)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !complete {
		switch {
		case deploymentComplete(d, &st):
			msg := fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable, msg, p.now))
		case deploymentProgressing(d, &st):
			msg := fmt.Sprintf("Deployment %q is progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, msg, p.now)
			// Unlike setCondition, progress refreshes lastUpdateTime even
			// when the reason stays the same: that restarts the deadline.
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, c)
		case deploymentTimedOut(d, &st, p.now.Time):
			msg := fmt.Sprintf("Deployment %q has timed out progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadline, msg, p.now))
		}
	}
	if failures := replicaFailures(all, newRS); len(failures) > 0 {
		setCondition(&st, failures[0])
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	p.status = &st
	p.plan.RequeueAfter = requeueForDeadline(d, &st, p.now.Time)
}
