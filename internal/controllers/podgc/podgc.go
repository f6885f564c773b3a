// Package podgc is the pod garbage collector: a periodic sweep that
// force-deletes pods nobody else will ever clean up, as
// kube-controller-manager's "pod-garbage-collector" does. Every
// CheckPeriod (20 s) it looks at all pods and nodes in its informers and
// collects:
//
//   - terminated pods (Succeeded or Failed) beyond TerminatedPodThreshold
//     (12500), evicted ones first, then the oldest by creation time;
//   - terminating pods on a node that is NotReady and carries the
//     node.kubernetes.io/out-of-service taint: an operator has declared
//     the node dead, so its kubelet will never confirm the deletion;
//   - orphaned pods, bound to a node that no longer exists. A node name
//     the informer does not know is quarantined first (Quarantine, 40 s,
//     as upstream) and then confirmed gone by a live GET, so a node
//     registered a moment ago is not mistaken for a deleted one. These
//     pods get the DisruptionTarget condition (reason DeletionByPodGC)
//     so their owners (Jobs with a pod failure policy) can tell why;
//   - terminating pods that were never scheduled, which no kubelet will
//     ever confirm.
//
// "Force delete" is upstream's two steps: a pod not yet terminal is first
// patched to phase Failed (with the condition, if any) — a pod with no
// kubelet would otherwise stay Running forever for anyone watching its
// status — then deleted with grace period 0.
//
// The decisions are pure (plan, quarantine.due, failedStatus: state in,
// deletions out); the sweep reads the informers, asks them, and does the
// writes.
//
// Usage, through the controller manager:
//
//	runnables, err := podgc.NewDescriptor(podgc.Config{TerminatedPodThreshold: 100}).New(ctx, cx)
package podgc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Metrics with upstream's names and labels (namespace, reason).
var (
	forceDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "pod_gc_collector", Name: "force_delete_pods_total",
		Help: "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
	}, []string{"namespace", "reason"})
	forceDeleteErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "pod_gc_collector", Name: "force_delete_pod_errors_total",
		Help: "Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.",
	}, []string{"namespace", "reason"})
)

// Collectors returns the collector's metrics for a registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{forceDeleted, forceDeleteErrors}
}

// Config tunes the collector; zero fields take the defaults noted.
type Config struct {
	// TerminatedPodThreshold is how many terminated pods may exist before
	// the oldest are deleted (--terminated-pod-gc-threshold, default
	// 12500). Negative keeps all terminated pods.
	TerminatedPodThreshold int
	// CheckPeriod is the time between sweeps (default 20 s).
	CheckPeriod time.Duration
	// Quarantine is how long a pod's node must be missing from the
	// informer before it is checked for deletion (default 40 s).
	Quarantine time.Duration
	// Parallelism bounds concurrent deletions in one sweep (default 16).
	Parallelism int
}

// Defaults, as upstream.
const (
	DefaultTerminatedPodThreshold = 12500
	DefaultCheckPeriod            = 20 * time.Second
	DefaultQuarantine             = 40 * time.Second
)

func (c *Config) defaults() {
	if c.TerminatedPodThreshold == 0 {
		c.TerminatedPodThreshold = DefaultTerminatedPodThreshold
	}
	if c.CheckPeriod <= 0 {
		c.CheckPeriod = DefaultCheckPeriod
	}
	if c.Quarantine <= 0 {
		c.Quarantine = DefaultQuarantine
	}
	if c.Parallelism <= 0 {
		c.Parallelism = 16
	}
}

// Descriptor is the collector with upstream's defaults.
var Descriptor = NewDescriptor(Config{})

// NewDescriptor returns the collector configured by cfg.
func NewDescriptor(cfg Config) controller.Descriptor {
	cfg.defaults()
	return controller.Descriptor{
		Name: "pod-garbage-collector",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			return []controller.Runnable{newCollector(cx, cfg)}, nil
		},
	}
}

type collector struct {
	cfg    Config
	client kubernetes.Interface
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	clock  clock.WithTicker
	log    *slog.Logger
	quar   quarantine
}

func newCollector(cx *controller.Context, cfg Config) *collector {
	podInf := cx.Informers.Core().V1().Pods()
	nodeInf := cx.Informers.Core().V1().Nodes()
	g := &collector{
		cfg:    cfg,
		client: cx.Client,
		pods:   podInf.Lister(),
		nodes:  nodeInf.Lister(),
		synced: []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
		clock:  cx.ClockOrReal(),
		log:    cx.Logger("pod-garbage-collector"),
	}
	return g
}

// Run sweeps at once, then every CheckPeriod, until ctx ends.
func (g *collector) Run(ctx context.Context) error {
	if !cache.WaitForNamedCacheSync("pod-garbage-collector", ctx.Done(), g.synced...) {
		return nil
	}
	t := g.clock.NewTicker(g.cfg.CheckPeriod)
	defer t.Stop()
	for {
		g.sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// sweep is one pass: read, decide, act. Failures are logged; the next
// sweep sees what is still there and tries again.
func (g *collector) sweep(ctx context.Context) {
	pods, err := g.pods.List(labels.Everything())
	if err != nil {
		g.log.Error("list pods", "err", err)
		return
	}
	nodeList, err := g.nodes.List(labels.Everything())
	if err != nil {
		g.log.Error("list nodes", "err", err)
		return
	}
	nodes := make(map[string]*corev1.Node, len(nodeList))
	for _, n := range nodeList {
		nodes[n.Name] = n
	}
	gone := map[string]bool{}
	for _, name := range g.quar.due(pods, nodes, g.clock.Now(), g.cfg.Quarantine) {
		_, err := g.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone[name] = true
		case err != nil:
			g.log.Error("check node", "node", name, "err", err)
		}
	}
	deletions := plan(pods, nodes, gone, g.cfg.TerminatedPodThreshold)
	if len(deletions) == 0 {
		return
	}
	g.log.Info("garbage collecting pods", "count", len(deletions))
	sem := make(chan struct{}, g.cfg.Parallelism)
	var wg sync.WaitGroup
	for _, d := range deletions {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			forceDeleted.WithLabelValues(d.pod.Namespace, string(d.reason)).Inc()
			if err := g.forceDelete(ctx, d); err != nil && ctx.Err() == nil {
				forceDeleteErrors.WithLabelValues(d.pod.Namespace, string(d.reason)).Inc()
				g.log.Error("force delete pod", "pod", d.pod.Namespace+"/"+d.pod.Name, "reason", d.reason, "err", err)
			}
		})
	}
	wg.Wait()
}

// forceDelete marks the pod Failed (unless already terminal) and deletes
// it with grace period 0. A pod already gone is not an error.
func (g *collector) forceDelete(ctx context.Context, d deletion) error {
	p := d.pod
	if st, ok := failedStatus(p, d.condition, metav1.NewTime(g.clock.Now())); ok {
		patch, err := statusPatch(p.UID, st)
		if err != nil {
			return err
		}
		_, err = g.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mark failed: %w", err)
		}
	}
	g.log.Info("force deleting pod", "pod", p.Namespace+"/"+p.Name, "reason", d.reason)
	err := g.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &p.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or replaced by a new pod of the same name that is not ours
		// to judge.
		return nil
	}
	return err
}

// statusPatch is a strategic merge patch setting st's phase and merging
// its conditions by type. The UID makes it apply to this pod only: a
// pod recreated under the same name fails the patch.
func statusPatch(uid types.UID, st corev1.PodStatus) ([]byte, error) {
	type meta struct {
		UID types.UID `json:"uid"`
	}
	return json.Marshal(struct {
		Metadata meta             `json:"metadata"`
		Status   corev1.PodStatus `json:"status"`
	}{meta{uid}, st})
}
