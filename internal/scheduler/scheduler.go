package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
	"github.com/rudder-dev/rudder/internal/scheduler/plugins"
)

// Config configures a Scheduler. Zero values take upstream's defaults.
type Config struct {
	Client kubernetes.Interface
	// Informers is the factory the scheduler and its plugins watch
	// through; nil creates one. The scheduler starts it in Run.
	Informers informers.SharedInformerFactory
	// Configuration is a KubeSchedulerConfiguration; nil is one
	// default-scheduler profile with the default plugins.
	Configuration *configv1.KubeSchedulerConfiguration
	// Registry adds plugins to (or replaces plugins of) plugins.Registry(),
	// e.g. the benchmark's in-process binder.
	Registry map[string]framework.Factory
	// DisableEvents turns off Scheduled/FailedScheduling events (the
	// in-process benchmark measures the algorithm alone).
	DisableEvents bool
	// Parallelism is the goroutines filtering and scoring (GOMAXPROCS).
	Parallelism int
	Clock       clock.WithTicker
	Log         *slog.Logger
	// Seed makes tie-breaking between equal nodes repeatable (0: random).
	Seed uint64
	// OnAttempt, when set, is told the result ("scheduled",
	// "unschedulable", "error") and duration of every scheduling attempt,
	// from Pop to the end of binding (benchmarks' latency figures).
	OnAttempt func(pod *corev1.Pod, result string, d time.Duration)
}

// Scheduler assigns pending pods to nodes. It is a client of the API
// server only: it watches pods and nodes and writes bindings, events and
// pod status.
type Scheduler struct {
	client    kubernetes.Interface
	informers informers.SharedInformerFactory
	podLister corelisters.PodLister
	profiles  map[string]*Profile
	queue     *Queue
	cache     *Cache
	// parallel runs every profile's Filter and Score sections.
	parallel     *framework.Pool
	snapshot     *framework.Snapshot
	clock        clock.WithTicker
	log          *slog.Logger
	rand         *rand.Rand
	broadcaster  events.EventBroadcaster
	recordEvents bool
	binding      sync.WaitGroup
	synced       []cache.InformerSynced
	onAttempt    func(pod *corev1.Pod, result string, d time.Duration)
	// nextStartNodeIndex rotates where filtering starts, so that with
	// adaptive percentages all nodes get examined over time.
	nextStartNodeIndex uint64
	// Per-cycle buffers and figures, reused (one cycle at a time).
	feasibleBuf   []*framework.NodeInfo
	statusBuf     []*framework.Status
	lastProcessed int
}

// New builds a scheduler and its profiles. Plugins request the informers
// they need here; Run starts them.
func New(ctx context.Context, cfg Config) (*Scheduler, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("scheduler: a client is required")
	}
	if cfg.Informers == nil {
		cfg.Informers = informers.NewSharedInformerFactory(cfg.Client, 0)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default().With("component", "scheduler")
	}
	if cfg.Configuration == nil {
		cfg.Configuration = &configv1.KubeSchedulerConfiguration{}
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	s := &Scheduler{
		client: cfg.Client, informers: cfg.Informers, clock: cfg.Clock, log: cfg.Log,
		cache: NewCache(), snapshot: framework.NewEmptySnapshot(), profiles: map[string]*Profile{},
		rand: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), recordEvents: !cfg.DisableEvents, onAttempt: cfg.OnAttempt,
	}
	podInformerFor(cfg.Informers)
	specs, err := resolveProfiles(cfg.Configuration)
	if err != nil {
		return nil, err
	}
	registry := maps.Clone(plugins.Registry())
	maps.Copy(registry, cfg.Registry)
	if s.recordEvents {
		s.broadcaster = events.NewBroadcaster(&events.EventSinkImpl{Interface: cfg.Client.EventsV1()})
	}
	parallel := framework.NewParallelizer(cfg.Parallelism)
	s.parallel = parallel
	var first *Profile
	allEvents := map[string][]framework.ClusterEventWithHint{}
	for _, spec := range specs {
		h := &handle{snapshot: s.snapshot, client: cfg.Client, informers: cfg.Informers, parallel: parallel}
		if s.recordEvents {
			h.recorder = s.broadcaster.NewRecorder(scheme.Scheme, spec.name)
		} else {
			h.recorder = &events.FakeRecorder{} // nil channel: events dropped, never blocking
		}
		p, err := buildProfile(ctx, spec, registry, h)
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = p
		}
		s.profiles[p.Name] = p
		for name, evs := range p.events {
			allEvents[name] = evs
		}
	}
	less := first.queueSort.Less
	if _, ok := first.queueSort.(*plugins.PrioritySort); ok {
		// The queue's own default is the same order on cached keys.
		less = nil
	}
	s.queue = NewQueue(QueueConfig{Less: less, PreEnqueue: first.preEnqueue, Events: allEvents, Clock: cfg.Clock})
	for _, p := range s.profiles {
		p.handle.nominator = s.queue
	}
	s.addHandlers(allEvents)
	return s, nil
}

// WaitForCacheSync starts the informers and returns once the cache and
// the queue hold every node and pod of their initial lists (Run does this
// first; a caller may do it earlier, as the benchmark does to keep start-up
// out of what it measures).
func (s *Scheduler) WaitForCacheSync(ctx context.Context) error {
	s.informers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return ctx.Err()
	}
	for typ, ok := range s.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("scheduler: informer for %v did not sync", typ)
		}
	}
	return nil
}

// Run starts the informers, waits for them, and schedules until ctx
// ends. It returns once in-flight bindings finished.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.broadcaster != nil {
		s.broadcaster.StartRecordingToSink(ctx.Done())
		defer s.broadcaster.Shutdown()
	}
	if err := s.WaitForCacheSync(ctx); err != nil {
		return err
	}
	go s.queue.Run(ctx)
	go s.reportQueue(ctx)
	s.log.Info("scheduler started", "profiles", len(s.profiles))
	defer func() {
		s.queue.Close()
		s.binding.Wait()
	}()
	for ctx.Err() == nil {
		if err := s.scheduleOne(ctx); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

func (s *Scheduler) reportQueue(ctx context.Context) {
	t := s.clock.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		l := s.queue.Lengths()
		pendingPods.WithLabelValues("active").Set(float64(l.Active))
		pendingPods.WithLabelValues("backoff").Set(float64(l.Backoff))
		pendingPods.WithLabelValues("unschedulable").Set(float64(l.Unschedulable))
		pendingPods.WithLabelValues("gated").Set(float64(l.Gated))
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (s *Scheduler) profileFor(pod *corev1.Pod) *Profile {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	return s.profiles[name]
}

func (s *Scheduler) responsibleFor(pod *corev1.Pod) bool { return s.profileFor(pod) != nil }

// skipPod drops pods being deleted, and pods already assumed (an update
// event re-added a pod whose bind is in flight).
func (s *Scheduler) skipPod(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil || s.cache.IsAssumedPod(pod)
}

// pendingPod returns the informer's current version of pod if it still
// exists unbound.
func (s *Scheduler) pendingPod(pod *corev1.Pod) (*corev1.Pod, bool) {
	cur, err := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cur.UID != pod.UID || cur.Spec.NodeName != "" {
		return nil, false
	}
	return cur, true
}

// updatePodStatus sets PodScheduled=False with the reason and message, and
// the nominated node, unless they are already so (retries do not write).
func (s *Scheduler) updatePodStatus(ctx context.Context, pod *corev1.Pod, reason, msg, nominated string, clearNomination bool) {
	cur, ok := s.pendingPod(pod)
	if !ok {
		return
	}
	for _, c := range cur.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == reason && c.Message == msg &&
			(nominated == "" || cur.Status.NominatedNodeName == nominated) && !(clearNomination && cur.Status.NominatedNodeName != "") {
			return
		}
	}
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(s.clock.Now())}
	status := map[string]any{"conditions": []corev1.PodCondition{cond}}
	switch {
	case nominated != "":
		status["nominatedNodeName"] = nominated
	case clearNomination:
		status["nominatedNodeName"] = nil
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   status,
	})
	_, err := s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		s.log.Warn("updating pod status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}
