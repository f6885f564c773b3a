package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// monitor is the health loop: every NodeMonitorPeriod one pass over all
// nodes. Its memory (nodes, zones) is touched only by the pass, and in
// the pass's parallel part each worker touches only its own node's entry.
type monitor struct {
	cfg      Config
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	leases   coordlisters.LeaseLister
	pods     cache.Indexer
	synced   []cache.InformerSynced
	clock    clock.WithTicker
	log      *slog.Logger
	recorder record.EventRecorder

	known map[string]*nodeMemory
	zones map[string]*zone
}

// nodeMemory is what the monitor keeps per node.
type nodeMemory struct {
	health   *nodeHealth // nil until first observed
	zone     string
	excluded bool
	// marked are the pods whose Ready condition was set False in the
	// node's current NotReady spell. They are not marked again in it, so
	// a live kubelet that sets them Ready again is not fought every pass.
	marked map[types.UID]bool
}

func newMonitor(cx *controller.Context, cfg Config) (*monitor, error) {
	nodeInf := cx.Informers.Core().V1().Nodes()
	leaseInf := cx.Informers.Coordination().V1().Leases()
	podInf := cx.Informers.Core().V1().Pods()
	if err := addPodNodeIndex(podInf.Informer()); err != nil {
		return nil, fmt.Errorf("pod index: %w", err)
	}
	m := &monitor{
		cfg:      cfg,
		client:   cx.Client,
		nodes:    nodeInf.Lister(),
		leases:   leaseInf.Lister(),
		pods:     podInf.Informer().GetIndexer(),
		synced:   []cache.InformerSynced{nodeInf.Informer().HasSynced, leaseInf.Informer().HasSynced, podInf.Informer().HasSynced},
		clock:    cx.ClockOrReal(),
		log:      cx.Logger(Name),
		recorder: cx.Recorder(eventSource),
		known:    map[string]*nodeMemory{},
		zones:    map[string]*zone{},
	}
	return m, nil
}

// Run makes a pass at once, then every NodeMonitorPeriod, until ctx ends.
func (m *monitor) Run(ctx context.Context) error {
	if !cache.WaitForNamedCacheSync(Name, ctx.Done(), m.synced...) {
		return nil
	}
	t := m.clock.NewTicker(m.cfg.NodeMonitorPeriod)
	defer t.Stop()
	for {
		m.pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// nodeResult is one node after the parallel part of a pass.
type nodeResult struct {
	node    *corev1.Node // as written this pass, or as cached
	action  noExecuteAction
	counted bool // in its zone's health count
}

// pass is one look at every node: health, pods, taints, zones.
func (m *monitor) pass(ctx context.Context) {
	now := m.clock.Now()
	nodes, err := m.nodes.List(labels.Everything())
	if err != nil {
		m.log.Error("list nodes", "err", err)
		return
	}
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	m.syncKnown(nodes)

	// Health and everything that follows from one node alone, in
	// parallel: the writes are the time.
	results := make([]nodeResult, len(nodes))
	workqueue.ParallelizeUntil(ctx, m.cfg.Workers, len(nodes), func(i int) {
		results[i] = m.checkNode(ctx, nodes[i], now)
	})
	if ctx.Err() != nil {
		return
	}

	// Zones: count, then plan rates.
	counts := map[string]zoneCount{}
	byName := make(map[string]*corev1.Node, len(nodes))
	for _, r := range results {
		byName[r.node.Name] = r.node
		if !r.counted {
			continue
		}
		z := m.known[r.node.Name].zone
		c := counts[z]
		if readyStatus(r.node) == corev1.ConditionTrue {
			c.ready++
		} else {
			c.notReady++
		}
		counts[z] = c
	}
	for _, r := range results {
		q := &m.zone(m.known[r.node.Name].zone).queue
		if r.action == noExecuteQueue {
			q.add(r.node.Name)
		} else {
			q.remove(r.node.Name)
		}
	}
	m.applyDisruption(ctx, counts, results, now)
	m.drain(ctx, byName, now)
}

// syncKnown records events for nodes seen or gone since the last pass
// and keeps the memory to the nodes that exist.
func (m *monitor) syncKnown(nodes []*corev1.Node) {
	present := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		present[n.Name] = true
		mem := m.known[n.Name]
		if mem == nil {
			mem = &nodeMemory{}
			m.known[n.Name] = mem
			m.recorder.Eventf(nodeRef(n), corev1.EventTypeNormal, "RegisteredNode", "Node %s event: Registered Node %s in Controller", n.Name, n.Name)
		}
		if z := zoneKey(n); z != mem.zone {
			// A relabelled node waits in its new zone's queue.
			if old := m.zones[mem.zone]; old != nil {
				old.queue.remove(n.Name)
			}
			mem.zone = z
		}
		_, mem.excluded = n.Labels[labelExcludeDisruption]
		m.zone(mem.zone)
	}
	for name, mem := range m.known {
		if present[name] {
			continue
		}
		m.recorder.Eventf(&corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: name}, corev1.EventTypeNormal,
			"RemovingNode", "Node %s event: Removing Node %s from Controller", name, name)
		if z := m.zones[mem.zone]; z != nil {
			z.queue.remove(name)
		}
		delete(m.known, name)
	}
}

// zone returns the memory of zone key, made on first use: a new zone
// starts Initial, tainting at the normal rate.
func (m *monitor) zone(key string) *zone {
	z := m.zones[key]
	if z == nil {
		z = &zone{state: stateInitial, lim: limiter{qps: m.cfg.EvictionLimiterQPS}}
		m.zones[key] = z
	}
	return z
}

// checkNode updates one node's health (writing Unknown conditions when
// it went silent), marks its pods not ready when it is not Ready, and
// fixes its NoExecute taints where that needs no rate limit.
func (m *monitor) checkNode(ctx context.Context, node *corev1.Node, now time.Time) nodeResult {
	mem := m.known[node.Name]
	var wasReady corev1.ConditionStatus
	if mem.health != nil && mem.health.ready != nil {
		wasReady = mem.health.ready.Status
	}
	node = m.updateHealth(ctx, mem, node, now)
	res := nodeResult{node: node, counted: !mem.excluded}
	ready := readyStatus(node)
	if ready == "" {
		// Never posted and still in its startup grace: nothing to say.
		return res
	}
	if ready == corev1.ConditionTrue {
		mem.marked = nil
	} else {
		if wasReady == corev1.ConditionTrue {
			m.log.Info("node is not ready", "node", node.Name, "ready", ready)
			m.recorder.Eventf(nodeRef(node), corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: %s", node.Name, "NodeNotReady")
		}
		m.markPodsNotReady(ctx, mem, node, now)
	}

	action, want := noExecuteFor(node)
	res.action = action
	switch action {
	case noExecuteSwap:
		err := writeTaints(ctx, m.client, node, func(n *corev1.Node) ([]corev1.Taint, bool) {
			if a, w := noExecuteFor(n); a != noExecuteSwap || w.Key != want.Key {
				return nil, false
			}
			return swapTaints(n.Spec.Taints, []corev1.Taint{want}, []corev1.Taint{notReadyNoExecute, unreachableNoExecute}, now), true
		})
		if err != nil {
			m.log.Error("swap NoExecute taint; next pass retries", "node", node.Name, "err", err)
		}
	case noExecuteRemove:
		if err := m.removeNoExecute(ctx, node); err != nil {
			m.log.Error("remove NoExecute taints; next pass retries", "node", node.Name, "err", err)
		} else {
			m.log.Info("node is ready again: NoExecute taints removed", "node", node.Name)
		}
	}
	return res
}

// updateHealth observes node and, when it has been silent past its
// grace period, writes its kubelet conditions Unknown. It returns the
// node as it now is (the write's result, or as cached). A write that
// conflicts is tried again on the live node, whose newer status may
// show it is alive after all.
func (m *monitor) updateHealth(ctx context.Context, mem *nodeMemory, node *corev1.Node, now time.Time) *corev1.Node {
	lease, err := m.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name)
	if err != nil {
		lease = nil
	}
	for attempt := 1; ; attempt++ {
		h := observeHealth(mem.health, node, lease, now)
		mem.health = &h
		if !h.stale(now, m.cfg.NodeMonitorGracePeriod, m.cfg.NodeStartupGracePeriod) {
			return node
		}
		conds, changed := markUnknown(node, now)
		if !changed {
			return node
		}
		upd := node.DeepCopy()
		upd.Status.Conditions = conds
		out, err := m.client.CoreV1().Nodes().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err == nil {
			m.log.Info("node stopped posting status: conditions Unknown", "node", node.Name, "silentFor", now.Sub(h.probe).Round(time.Millisecond))
			// Remember the Ready condition as written, so the next pass
			// does not take our own write for a sign of life.
			h.ready = findNodeCondition(out.Status.Conditions, corev1.NodeReady)
			mem.health = &h
			return out
		}
		if !apierrors.IsConflict(err) || attempt == writeAttempts {
			m.log.Error("mark node Unknown; next pass retries", "node", node.Name, "err", err)
			return node
		}
		live, err := m.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return node
		}
		node = live
	}
}

// markPodsNotReady sets the Ready condition of node's pods False, each
// once per NotReady spell.
func (m *monitor) markPodsNotReady(ctx context.Context, mem *nodeMemory, node *corev1.Node, now time.Time) {
	for _, pod := range podsOnNode(m.pods, node.Name) {
		if mem.marked[pod.UID] {
			continue
		}
		cond, ok := podNotReadyCondition(pod, now)
		if !ok {
			continue
		}
		if err := patchPodCondition(ctx, m.client, pod, cond); err != nil {
			m.log.Error("mark pod not ready; next pass retries", "pod", pod.Namespace+"/"+pod.Name, "node", node.Name, "err", err)
			continue
		}
		if mem.marked == nil {
			mem.marked = map[types.UID]bool{}
		}
		mem.marked[pod.UID] = true
		m.recorder.Event(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
}

// removeNoExecute removes the not-ready and unreachable NoExecute taints.
func (m *monitor) removeNoExecute(ctx context.Context, node *corev1.Node) error {
	return writeTaints(ctx, m.client, node, func(n *corev1.Node) ([]corev1.Taint, bool) {
		if !hasTaint(n, notReadyNoExecute) && !hasTaint(n, unreachableNoExecute) {
			return nil, false
		}
		return swapTaints(n.Spec.Taints, nil, []corev1.Taint{notReadyNoExecute, unreachableNoExecute}, time.Time{}), true
	})
}

// applyDisruption sets zone states and rates from this pass's counts;
// on entering an all-zones disruption it removes every NoExecute taint
// of ours, on leaving it gives every node a fresh grace period.
func (m *monitor) applyDisruption(ctx context.Context, counts map[string]zoneCount, results []nodeResult, now time.Time) {
	prev := make(map[string]zoneState, len(m.zones))
	for k, z := range m.zones {
		prev[k] = z.state
	}
	plan := planDisruption(prev, counts, &m.cfg)
	for k, c := range counts {
		size := c.ready + c.notReady
		zoneSizeGauge.WithLabelValues(k).Set(float64(size))
		unhealthyNodesGauge.WithLabelValues(k).Set(float64(c.notReady))
		zoneHealthGauge.WithLabelValues(k).Set(float64(100*c.ready) / float64(size))
	}
	for k, s := range plan.states {
		z := m.zone(k)
		if z.state != s && z.state != stateInitial {
			m.log.Info("zone changed state", "zone", k, "from", z.state, "to", s)
		}
		z.state = s
	}
	for k, qps := range plan.qps {
		m.zone(k).lim.setQPS(qps)
	}
	switch {
	case plan.enterFull:
		m.log.Info("no node in any zone is Ready: the controller may be the one cut off; stopping NoExecute tainting and removing its taints")
		workqueue.ParallelizeUntil(ctx, m.cfg.Workers, len(results), func(i int) {
			if err := m.removeNoExecute(ctx, results[i].node); err != nil {
				m.log.Error("remove NoExecute taints", "node", results[i].node.Name, "err", err)
			}
		})
	case plan.exitFull:
		m.log.Info("some node is Ready again: resuming NoExecute tainting; every node gets a fresh grace period")
		for _, mem := range m.known {
			if mem.health != nil {
				mem.health.probe = now
			}
		}
	}
}

// drain adds the NoExecute taints the zones' queues hold, as far as
// each zone's rate allows, oldest first.
func (m *monitor) drain(ctx context.Context, byName map[string]*corev1.Node, now time.Time) {
	keys := make([]string, 0, len(m.zones))
	for k := range m.zones {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		z := m.zones[k]
		for _, name := range slices.Clone(z.queue.names) {
			node := byName[name]
			if node == nil {
				z.queue.remove(name)
				continue
			}
			action, want := noExecuteFor(node)
			if action != noExecuteQueue {
				z.queue.remove(name)
				continue
			}
			if !z.lim.tryAccept(now) {
				break
			}
			z.queue.remove(name)
			err := writeTaints(ctx, m.client, node, func(n *corev1.Node) ([]corev1.Taint, bool) {
				if a, w := noExecuteFor(n); (a != noExecuteQueue && a != noExecuteSwap) || w.Key != want.Key {
					return nil, false
				}
				return swapTaints(n.Spec.Taints, []corev1.Taint{want}, []corev1.Taint{notReadyNoExecute, unreachableNoExecute}, now), true
			})
			if err != nil {
				m.log.Error("add NoExecute taint; next pass retries", "node", name, "err", err)
				z.queue.add(name)
				continue
			}
			evictionsTotal.WithLabelValues(k).Inc()
			m.log.Info("node tainted for eviction", "node", name, "taint", want.Key)
		}
	}
}
