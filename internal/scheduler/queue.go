package scheduler

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// Defaults for QueueConfig, as upstream kube-scheduler.
const (
	DefaultInitialBackoff           = 1 * time.Second
	DefaultMaxBackoff               = 10 * time.Second
	DefaultMaxUnschedulableDuration = 5 * time.Minute

	// How often Run moves pods whose backoff ended, and how often it
	// looks for pods parked longer than MaxUnschedulableDuration.
	queueBackoffFlushInterval       = 1 * time.Second
	queueUnschedulableFlushInterval = 30 * time.Second
)

// ErrQueueClosed is returned by Pop after Close.
var ErrQueueClosed = errors.New("scheduling queue is closed")

// QueueConfig configures a Queue. Zero fields take the defaults.
type QueueConfig struct {
	// Less orders the active queue (the profile's QueueSort plugin).
	// Default: higher priority first, then earlier Timestamp.
	Less func(a, b *framework.QueuedPodInfo) bool
	// PreEnqueue plugins run, in order, before a pod enters the active
	// queue; the first non-success parks the pod as gated.
	PreEnqueue []framework.PreEnqueuePlugin
	// Events maps a plugin name to the cluster events after which a pod
	// that plugin rejected may fit (its EventsToRegister).
	Events map[string][]framework.ClusterEventWithHint
	Clock  clock.WithTicker

	InitialBackoff, MaxBackoff, MaxUnschedulableDuration time.Duration
}

// Queue is the scheduling queue: every pending pod of the scheduler is in
// exactly one of three places, or in flight (popped and being scheduled).
//
//	activeQ        heap ordered by Less; Pop takes its head.
//	backoffQ       heap ordered by backoff expiry; pods that failed wait
//	               InitialBackoff·2^(attempts-1) (capped at MaxBackoff) from
//	               their last failure, then Run moves them to activeQ.
//	unschedulable  a pool of pods that plugins rejected (and pods a
//	               PreEnqueue plugin gates). They stay until a cluster
//	               event one of their rejecting plugins registered (and
//	               whose hint says Queue) arrives, or for at most
//	               MaxUnschedulableDuration.
//
// Why the pool: retrying a pod that does not fit is wasted work until
// something it depends on changes, and plugins know what that is.
//
// A pod rejected while an interesting event happened during its attempt
// (MoveAllToActiveOrBackoffQueue after its Pop) is not parked: the event
// may already have made it fit, and no later event would wake it. This is
// tracked with scheduling cycle numbers: Pop increments the cycle, each
// move request records the cycle it happened in.
//
// All methods are safe for concurrent use. PreEnqueue plugins and
// queueing hints are called with the queue locked: they must be quick
// and must not call back into the queue.
type Queue struct {
	cfg       QueueConfig
	allEvents []framework.ClusterEvent // every registered event, for a quick "anyone interested?"

	mu     sync.Mutex
	cond   *sync.Cond // signalled when activeQ gains pods or the queue closes
	closed bool
	stop   chan struct{} // closed by Close, ends Run

	cycle            int64 // incremented by every Pop
	moveRequestCycle int64 // cycle of the last interesting move request

	pods     map[types.UID]*queueEntry // every queued pod (not in-flight ones)
	active   queueHeap
	backoff  queueHeap
	unsched  map[types.UID]*queueEntry // includes gated pods
	gated    int                       // gated pods among unsched
	inFlight map[types.UID]queueInFlight

	nominator queueNominator
	backlog   atomic.Bool // see Backlog
}

// queueWhere says which of the three places an entry is in.
type queueWhere uint8

const (
	queueNowhere queueWhere = iota
	queueInActive
	queueInBackoff
	queueInUnschedulable
)

var queueWhereNames = [...]string{"none", "active", "backoff", "unschedulable"}

func (w queueWhere) String() string { return queueWhereNames[w] }

// queueEntry wraps a queued pod with its heap bookkeeping.
type queueEntry struct {
	qpi    *framework.QueuedPodInfo
	where  queueWhere
	index  int       // position in its heap
	expiry time.Time // end of backoff, while in backoffQ
	// prio and ts are the pod's priority and qpi.Timestamp, copied when
	// the entry enters a heap or is fixed in it, so that the default
	// order compares two entries without following four pointers each
	// (a Pop makes ~2 log n comparisons over a heap of thousands).
	prio int32
	ts   time.Time
}

// refreshKey copies the entry's sort key from its pod.
func (e *queueEntry) refreshKey() {
	e.prio = queuePodPriority(e.qpi.Pod)
	e.ts = e.qpi.Timestamp
}

// queueInFlight is what happened to a popped pod while it was being
// scheduled; AddUnschedulableIfNotPresent acts on it.
type queueInFlight struct {
	latest  *corev1.Pod // the newest version seen by Update, if any
	deleted bool
	// updated: the pod itself changed in a way that may make it fit.
	updated bool
}

// queueStrategy is how a pod leaves the unschedulable pool.
type queueStrategy int

const (
	queueSkip         queueStrategy = iota // stay
	queueAfterBackoff                      // backoffQ if still backing off, else activeQ
	queueImmediately                       // activeQ (a Pending plugin said the wait is over)
)

// NewQueue returns an empty queue. Call Run to start its flush loops.
func NewQueue(cfg QueueConfig) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = DefaultInitialBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = cfg.InitialBackoff
	}
	if cfg.MaxUnschedulableDuration <= 0 {
		cfg.MaxUnschedulableDuration = DefaultMaxUnschedulableDuration
	}
	q := &Queue{
		cfg:       cfg,
		stop:      make(chan struct{}),
		pods:      make(map[types.UID]*queueEntry),
		unsched:   make(map[types.UID]*queueEntry),
		inFlight:  make(map[types.UID]queueInFlight),
		nominator: newQueueNominator(),
	}
	q.cond = sync.NewCond(&q.mu)
	if cfg.Less == nil {
		q.active.less = queueEntryDefaultLess
	} else {
		q.active.less = func(a, b *queueEntry) bool { return cfg.Less(a.qpi, b.qpi) }
	}
	q.active.where = queueInActive
	q.backoff.less = func(a, b *queueEntry) bool { return a.expiry.Before(b.expiry) }
	q.backoff.where = queueInBackoff
	for _, evs := range cfg.Events {
		for _, e := range evs {
			q.allEvents = append(q.allEvents, e.Event)
		}
	}
	return q
}

// queueEntryDefaultLess is upstream's PrioritySort (priority, then
// FIFO) on the entries' cached keys: the order of a queue whose config
// names no Less.
func queueEntryDefaultLess(a, b *queueEntry) bool {
	return a.prio > b.prio || (a.prio == b.prio && a.ts.Before(b.ts))
}

func queuePodPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// Run moves pods whose backoff ended to activeQ every second, and pods
// parked longer than MaxUnschedulableDuration out of the pool every 30
// seconds. It returns when ctx ends or the queue is closed.
func (q *Queue) Run(ctx context.Context) {
	bt := q.cfg.Clock.NewTicker(queueBackoffFlushInterval)
	defer bt.Stop()
	ut := q.cfg.Clock.NewTicker(queueUnschedulableFlushInterval)
	defer ut.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.stop:
			return
		case <-bt.C():
			q.flushBackoff(ctx)
		case <-ut.C():
			q.flushUnschedulable(ctx)
		}
	}
}

// Close wakes every Pop with ErrQueueClosed and ends Run.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.stop)
	}
	q.cond.Broadcast()
}

// Add queues a new pending pod. Pods already bound (spec.nodeName set)
// are ignored; a pod already queued is updated instead.
func (q *Queue) Add(ctx context.Context, pod *corev1.Pod) {
	if pod.Spec.NodeName != "" {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if fl, ok := q.inFlight[pod.UID]; ok {
		fl.latest = pod
		q.inFlight[pod.UID] = fl
		return
	}
	if e := q.pods[pod.UID]; e != nil {
		q.updateLocked(ctx, e, e.qpi.Pod, pod)
		return
	}
	q.addNewLocked(ctx, pod)
}

func (q *Queue) addNewLocked(ctx context.Context, pod *corev1.Pod) {
	e := &queueEntry{qpi: &framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), Timestamp: q.cfg.Clock.Now()}}
	if q.moveToActive(ctx, e) {
		// Upstream records status.nominatedNodeName only for pods that
		// pass PreEnqueue: a gated pod reserves nothing.
		q.nominator.add(e.qpi.PodInfo, "")
	}
}

// Update replaces a pending pod's object wherever it is. A parked pod
// whose update may make it fit (labels, tolerations, smaller requests,
// scheduling gates removed) is moved to backoffQ or activeQ; a gated pod
// has its PreEnqueue plugins re-run. A pod that became bound leaves the
// queue, as on Delete.
func (q *Queue) Update(ctx context.Context, oldPod, newPod *corev1.Pod) {
	if newPod.Spec.NodeName != "" {
		q.Delete(newPod)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if fl, ok := q.inFlight[newPod.UID]; ok {
		// Being scheduled: remember the newest object for the requeue, and
		// whether the change may have made the pod fit.
		prev := fl.latest
		if prev == nil {
			prev = oldPod
		}
		if prev == nil || queuePodUpdateActions(prev, newPod) != 0 {
			fl.updated = true
		}
		fl.latest = newPod
		q.inFlight[newPod.UID] = fl
		q.nominator.update(oldPod, framework.NewPodInfo(newPod))
		return
	}
	e := q.pods[newPod.UID]
	if e == nil {
		q.addNewLocked(ctx, newPod)
		return
	}
	if oldPod == nil {
		oldPod = e.qpi.Pod
	}
	q.updateLocked(ctx, e, oldPod, newPod)
}

func (q *Queue) updateLocked(ctx context.Context, e *queueEntry, oldPod, newPod *corev1.Pod) {
	prev := e.qpi.Pod
	pi := framework.NewPodInfo(newPod)
	e.qpi.PodInfo = pi
	q.nominator.update(oldPod, pi)
	switch e.where {
	case queueInActive:
		// The sort key may have changed (e.g. a mutated priority).
		e.refreshKey()
		heap.Fix(&q.active, e.index)
	case queueInUnschedulable:
		if e.qpi.GatingPlugin == "" && queuePodUpdateActions(prev, newPod) == 0 {
			return
		}
		// Gated pods re-run PreEnqueue on any update: that is how removing
		// the last scheduling gate lets a pod in at once.
		q.removeEntry(e)
		q.requeue(ctx, e, queueAfterBackoff)
	}
}

// Delete removes a pod from every queue and from the nominations. A pod
// deleted while in flight is not requeued by AddUnschedulableIfNotPresent.
func (q *Queue) Delete(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nominator.delete(pod)
	if fl, ok := q.inFlight[pod.UID]; ok {
		fl.deleted = true
		q.inFlight[pod.UID] = fl
	}
	if e := q.pods[pod.UID]; e != nil {
		q.removeEntry(e)
	}
}

// Pop blocks until activeQ has a pod and returns its head, which is then
// in flight until AddUnschedulableIfNotPresent or Done. It returns
// ctx.Err() when ctx ends and ErrQueueClosed after Close.
func (q *Queue) Pop(ctx context.Context) (*framework.QueuedPodInfo, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var stopWake func() bool
	defer func() {
		if stopWake != nil {
			stopWake()
		}
	}()
	for {
		if q.closed {
			return nil, ErrQueueClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if q.active.Len() > 0 {
			break
		}
		if stopWake == nil {
			// Wake the Wait below when ctx ends. The callback takes the
			// lock, so its broadcast comes after Wait has released it
			// and cannot be lost.
			stopWake = context.AfterFunc(ctx, func() {
				q.mu.Lock()
				q.cond.Broadcast()
				q.mu.Unlock()
			})
		}
		q.cond.Wait()
	}
	e := heap.Pop(&q.active).(*queueEntry)
	e.where = queueNowhere
	delete(q.pods, e.qpi.Pod.UID)

	qpi := e.qpi
	qpi.Attempts++
	if qpi.InitialAttemptTimestamp == nil {
		now := q.cfg.Clock.Now()
		qpi.InitialAttemptTimestamp = &now
	}
	// The next failure names its own rejectors. Drop the sets rather than
	// clear them: the caller may share them (e.g. with a diagnosis).
	qpi.UnschedulablePlugins = nil
	qpi.PendingPlugins = nil
	qpi.GatingPlugin = ""
	q.cycle++
	q.inFlight[qpi.Pod.UID] = queueInFlight{}
	q.backlog.Store(q.active.Len() > 0)
	return qpi, nil
}

// Backlog says whether activeQ still held pods after the last Pop: the
// scheduling loop is busy with a burst rather than keeping up with
// arrivals.
func (q *Queue) Backlog() bool { return q.backlog.Load() }

// SchedulingCycle is the number of pods popped so far; read it right
// after Pop to get the popped pod's cycle.
func (q *Queue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.cycle
}

// AddUnschedulableIfNotPresent requeues a pod after a failed attempt and
// ends the attempt (as Done). cycle is SchedulingCycle() right after the
// pod's Pop. The pod goes to:
//   - nowhere, if it was deleted or bound while in flight;
//   - backoffQ, if it failed with an error (no UnschedulablePlugins or
//     PendingPlugins), if an interesting event arrived since its Pop, or
//     if the pod itself was updated meanwhile;
//   - the unschedulable pool otherwise.
//
// Updates seen while in flight are applied to qpi before requeueing.
func (q *Queue) AddUnschedulableIfNotPresent(ctx context.Context, qpi *framework.QueuedPodInfo, cycle int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	uid := qpi.Pod.UID
	fl := q.inFlight[uid] // zero if Done came first
	delete(q.inFlight, uid)
	if e := q.pods[uid]; e != nil {
		return fmt.Errorf("pod %s/%s is already present in the %s queue", qpi.Pod.Namespace, qpi.Pod.Name, e.where)
	}
	if fl.deleted {
		return nil
	}
	if fl.latest != nil {
		qpi.PodInfo = framework.NewPodInfo(fl.latest)
	}
	qpi.Timestamp = q.cfg.Clock.Now()
	e := &queueEntry{qpi: qpi}
	rejected := qpi.UnschedulablePlugins.Len() > 0 || qpi.PendingPlugins.Len() > 0
	if !rejected || q.moveRequestCycle >= cycle || fl.updated {
		q.requeue(ctx, e, queueAfterBackoff)
		return nil
	}
	q.addUnsched(e)
	return nil
}

// Done ends a pod's attempt without requeueing it (it was bound, or the
// caller gave up on it). Calling it after AddUnschedulableIfNotPresent is
// harmless; calling it before loses what happened to the pod in flight.
func (q *Queue) Done(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, uid)
}

// MoveAllToActiveOrBackoffQueue tells the queue that event happened
// (oldObj/newObj are its objects, nil for a missing side). Every parked
// pod whose rejecting plugin registered a matching event, with a hint
// that returns Queue, moves to backoffQ or activeQ; a gated pod only for
// its gating plugin's events. A wildcard event (Resource "*", All)
// moves every parked pod that is not gated.
func (q *Queue) MoveAllToActiveOrBackoffQueue(ctx context.Context, event framework.ClusterEvent, oldObj, newObj interface{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.eventOfInterest(event) {
		return
	}
	// Collect first: requeueing a gated pod may put it straight back in
	// the pool, and a map need not visit entries added while ranging.
	list := make([]*queueEntry, 0, len(q.unsched))
	for _, e := range q.unsched {
		list = append(list, e)
	}
	for _, e := range list {
		s := q.worthRequeuing(e.qpi, event, oldObj, newObj)
		if s == queueSkip {
			continue
		}
		q.removeEntry(e)
		q.requeue(ctx, e, s)
	}
	q.moveRequestCycle = q.cycle
}

// Activate moves the given pods from backoffQ or the pool to activeQ
// (PreEnqueue still applies). A pod in flight will be requeued to
// backoffQ rather than parked when it fails.
func (q *Queue) Activate(ctx context.Context, pods map[string]*corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, pod := range pods {
		if e := q.pods[pod.UID]; e != nil && e.where != queueInActive {
			q.removeEntry(e)
			q.moveToActive(ctx, e)
			continue
		}
		if _, ok := q.inFlight[pod.UID]; ok {
			q.moveRequestCycle = q.cycle
		}
	}
}

// QueueLengths counts pending pods per place. Unschedulable excludes
// Gated; the four add up to the pending pods not in flight.
type QueueLengths struct{ Active, Backoff, Unschedulable, Gated int }

// Lengths counts the pods in each place.
func (q *Queue) Lengths() QueueLengths {
	q.mu.Lock()
	defer q.mu.Unlock()
	return QueueLengths{
		Active:        q.active.Len(),
		Backoff:       q.backoff.Len(),
		Unschedulable: len(q.unsched) - q.gated,
		Gated:         q.gated,
	}
}

// PendingPods lists every queued pod (not those in flight), in no order.
func (q *Queue) PendingPods() []*corev1.Pod {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(q.pods))
	for _, e := range q.pods {
		out = append(out, e.qpi.Pod)
	}
	return out
}

// flushBackoff moves pods whose backoff has ended to activeQ.
func (q *Queue) flushBackoff(ctx context.Context) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	for q.backoff.Len() > 0 && !q.backoff.items[0].expiry.After(now) {
		e := heap.Pop(&q.backoff).(*queueEntry)
		e.where = queueNowhere
		delete(q.pods, e.qpi.Pod.UID)
		q.moveToActive(ctx, e)
	}
}

// flushUnschedulable moves pods parked longer than
// MaxUnschedulableDuration out of the pool, so that a missed or
// unregistered event cannot strand a pod. Gated pods stay: time does not
// open a gate.
func (q *Queue) flushUnschedulable(ctx context.Context) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	var list []*queueEntry
	for _, e := range q.unsched {
		if e.qpi.GatingPlugin == "" && now.Sub(e.qpi.Timestamp) > q.cfg.MaxUnschedulableDuration {
			list = append(list, e)
		}
	}
	for _, e := range list {
		q.removeEntry(e)
		q.requeue(ctx, e, queueAfterBackoff)
	}
	if len(list) > 0 {
		slog.Debug("scheduling queue: flushed pods unschedulable for too long", "pods", len(list))
	}
}

// eventOfInterest reports whether any plugin registered event; others
// cannot move any pod and do not count as move requests.
func (q *Queue) eventOfInterest(event framework.ClusterEvent) bool {
	if queueIsWildcard(event) {
		return true
	}
	for _, reg := range q.allEvents {
		if reg.Match(event) {
			return true
		}
	}
	return false
}

func queueIsWildcard(e framework.ClusterEvent) bool {
	return e.Resource == framework.WildCardResource && e.ActionType == framework.All
}

// worthRequeuing decides whether event may make the parked pod fit: one
// of the plugins that rejected it (only the gating plugin for a gated
// pod) must have registered a matching event whose hint says Queue.
// A Queue from a Pending plugin skips backoff: the pod was waiting for
// something outside the scheduler, not failing.
func (q *Queue) worthRequeuing(qpi *framework.QueuedPodInfo, event framework.ClusterEvent, oldObj, newObj interface{}) queueStrategy {
	var rejectors sets.Set[string]
	if qpi.GatingPlugin != "" {
		rejectors = sets.New(qpi.GatingPlugin)
	} else {
		if queueIsWildcard(event) {
			return queueAfterBackoff
		}
		rejectors = qpi.UnschedulablePlugins.Union(qpi.PendingPlugins)
		if rejectors.Len() == 0 {
			return queueAfterBackoff
		}
	}
	strategy := queueSkip
	for name := range rejectors {
		for _, reg := range q.cfg.Events[name] {
			if !reg.Event.Match(event) {
				continue
			}
			hint := framework.Queue
			if reg.QueueingHintFn != nil {
				h, err := reg.QueueingHintFn(qpi.Pod, oldObj, newObj)
				if err != nil {
					// An erring hint must not strand the pod.
					slog.Error("queueing hint failed", "plugin", name, "pod", qpi.Pod.Namespace+"/"+qpi.Pod.Name, "err", err)
					h = framework.Queue
				}
				hint = h
			}
			if hint != framework.Queue {
				continue
			}
			if qpi.PendingPlugins.Has(name) {
				return queueImmediately
			}
			strategy = queueAfterBackoff
			if qpi.PendingPlugins.Len() == 0 {
				return strategy
			}
		}
	}
	return strategy
}

// requeue puts an entry that is in no place into backoffQ or activeQ.
func (q *Queue) requeue(ctx context.Context, e *queueEntry, s queueStrategy) {
	if s == queueAfterBackoff && q.backingOff(e.qpi) {
		q.pushBackoff(e)
		return
	}
	q.moveToActive(ctx, e)
}

// moveToActive runs PreEnqueue and pushes the entry to activeQ, or parks
// it as gated. It reports whether the pod went to activeQ.
func (q *Queue) moveToActive(ctx context.Context, e *queueEntry) bool {
	if !q.runPreEnqueue(ctx, e.qpi) {
		q.addUnsched(e)
		return false
	}
	heap.Push(&q.active, e)
	q.pods[e.qpi.Pod.UID] = e
	q.cond.Broadcast()
	return true
}

func (q *Queue) pushBackoff(e *queueEntry) {
	e.expiry = e.qpi.Timestamp.Add(q.backoffDuration(e.qpi.Attempts))
	heap.Push(&q.backoff, e)
	q.pods[e.qpi.Pod.UID] = e
}

func (q *Queue) addUnsched(e *queueEntry) {
	e.where = queueInUnschedulable
	q.unsched[e.qpi.Pod.UID] = e
	q.pods[e.qpi.Pod.UID] = e
	if e.qpi.GatingPlugin != "" {
		q.gated++
	}
}

// removeEntry takes an entry out of whichever place holds it.
func (q *Queue) removeEntry(e *queueEntry) {
	switch e.where {
	case queueInActive:
		heap.Remove(&q.active, e.index)
	case queueInBackoff:
		heap.Remove(&q.backoff, e.index)
	case queueInUnschedulable:
		delete(q.unsched, e.qpi.Pod.UID)
		if e.qpi.GatingPlugin != "" {
			q.gated--
		}
	}
	e.where = queueNowhere
	delete(q.pods, e.qpi.Pod.UID)
}

// runPreEnqueue runs the PreEnqueue plugins until one does not succeed;
// that one becomes the pod's GatingPlugin (and a rejector, so that its
// events can release the pod).
func (q *Queue) runPreEnqueue(ctx context.Context, qpi *framework.QueuedPodInfo) bool {
	for _, pl := range q.cfg.PreEnqueue {
		s := pl.PreEnqueue(ctx, qpi.Pod)
		if s.IsSuccess() {
			continue
		}
		qpi.GatingPlugin = pl.Name()
		if qpi.UnschedulablePlugins == nil {
			qpi.UnschedulablePlugins = sets.New[string]()
		}
		qpi.UnschedulablePlugins.Insert(pl.Name())
		if s.Code() == framework.Error {
			slog.Error("PreEnqueue plugin failed", "plugin", pl.Name(), "pod", qpi.Pod.Namespace+"/"+qpi.Pod.Name, "err", s.AsError())
		}
		return false
	}
	qpi.GatingPlugin = ""
	return true
}

// backingOff reports whether the pod's backoff since its last failure
// (Timestamp) has not ended yet. A pod never tried has no backoff.
func (q *Queue) backingOff(qpi *framework.QueuedPodInfo) bool {
	if qpi.Attempts == 0 {
		return false
	}
	return q.cfg.Clock.Now().Before(qpi.Timestamp.Add(q.backoffDuration(qpi.Attempts)))
}

// backoffDuration is InitialBackoff doubled per attempt after the first,
// capped at MaxBackoff: 1, 2, 4, 8, 10, 10 s with the defaults.
func (q *Queue) backoffDuration(attempts int) time.Duration {
	if attempts <= 0 {
		return 0
	}
	d := q.cfg.InitialBackoff
	for i := 1; i < attempts; i++ {
		if d > q.cfg.MaxBackoff-d {
			return q.cfg.MaxBackoff
		}
		d += d
	}
	return min(d, q.cfg.MaxBackoff)
}

// queuePodUpdateActions names the changes between two versions of a
// pending pod that may make it schedulable (0 if none): its labels (for
// its own affinity and spread), tolerations, smaller requests, removed
// scheduling gates, and generated resource claims.
func queuePodUpdateActions(oldPod, newPod *corev1.Pod) framework.ActionType {
	var a framework.ActionType
	if !maps.Equal(oldPod.Labels, newPod.Labels) {
		a |= framework.UpdatePodLabel
	}
	if !equality.Semantic.DeepEqual(oldPod.Spec.Tolerations, newPod.Spec.Tolerations) {
		a |= framework.UpdatePodTolerations
	}
	if len(oldPod.Spec.SchedulingGates) > 0 && len(newPod.Spec.SchedulingGates) == 0 {
		a |= framework.UpdatePodSchedulingGatesEliminated
	}
	if !equality.Semantic.DeepEqual(oldPod.Status.ResourceClaimStatuses, newPod.Status.ResourceClaimStatuses) {
		a |= framework.UpdatePodGeneratedResourceClaim
	}
	if queueScaledDown(framework.PodRequests(oldPod, false), framework.PodRequests(newPod, false)) {
		a |= framework.UpdatePodScaleDown
	}
	return a
}

// queueScaledDown reports whether any request of o is larger than in n.
func queueScaledDown(o, n *framework.Resource) bool {
	if o.MilliCPU > n.MilliCPU || o.Memory > n.Memory || o.EphemeralStorage > n.EphemeralStorage {
		return true
	}
	for name, v := range o.Scalar {
		if v > n.Scalar[name] {
			return true
		}
	}
	return false
}

// queueHeap is a binary heap of entries that keeps each entry's index,
// so that Update and Delete are O(log n) (container/heap.Fix/Remove).
type queueHeap struct {
	items []*queueEntry
	less  func(a, b *queueEntry) bool
	where queueWhere
}

func (h *queueHeap) Len() int           { return len(h.items) }
func (h *queueHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *queueHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = i
	h.items[j].index = j
}

func (h *queueHeap) Push(x any) {
	e := x.(*queueEntry)
	e.refreshKey()
	e.index = len(h.items)
	e.where = h.where
	h.items = append(h.items, e)
}

func (h *queueHeap) Pop() any {
	n := len(h.items) - 1
	e := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	e.index = -1
	return e
}
