package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// Profile is one scheduler profile: the plugins of each extension point,
// built from the configuration, and the Handle its plugins were given.
// It runs the extension points; the scheduling cycle decides the order.
type Profile struct {
	Name string
	// PercentageOfNodesToScore: 0 is adaptive (50% minus 1% per 125
	// nodes, at least 5%).
	PercentageOfNodesToScore int32

	queueSort  framework.QueueSortPlugin
	preEnqueue []framework.PreEnqueuePlugin
	preFilter  []framework.PreFilterPlugin
	filter     []framework.FilterPlugin
	postFilter []framework.PostFilterPlugin
	preScore   []framework.PreScorePlugin
	score      []weightedScore
	reserve    []framework.ReservePlugin
	permit     []framework.PermitPlugin
	preBind    []framework.PreBindPlugin
	bind       []framework.BindPlugin
	postBind   []framework.PostBindPlugin
	// events maps each plugin that can reject a pod to the cluster
	// events after which the pod may fit.
	events map[string][]framework.ClusterEventWithHint

	handle  *handle
	metrics *profileMetrics
	waiting *waitingPods

	// noBatchScore makes runScore call Score node by node even for
	// plugins with a BatchScorer: the reference the batch paths are
	// tested against.
	noBatchScore bool

	// Per-cycle buffers, reused (see runScore).
	totalsBuf      []framework.NodeScore
	activeScoreBuf []weightedScore
	scoreBuf       [][]framework.NodeScore
}

// grow returns (*buf)[:n], reallocating only when it is too short.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

type weightedScore struct {
	framework.ScorePlugin
	weight int64
	// batch is the plugin's BatchScorer, nil if it has none.
	batch framework.BatchScorer
	// normalize is its ScoreExtensions, nil if it has none.
	normalize framework.ScoreExtensions
}

// scoreChunk is how many nodes a Score goroutine takes at a time.
const scoreChunk = 32

// handle is the framework.Handle of one profile.
type handle struct {
	profile   *Profile
	snapshot  *framework.Snapshot
	client    kubernetes.Interface
	informers informers.SharedInformerFactory
	recorder  events.EventRecorder
	parallel  framework.Parallelizer
	nominator nominator
}

// nominator is the part of the queue plugins see through the Handle.
type nominator interface {
	NominatedPodsForNode(nodeName string) []*framework.PodInfo
}

func (h *handle) Snapshot() *framework.Snapshot                          { return h.snapshot }
func (h *handle) ClientSet() kubernetes.Interface                        { return h.client }
func (h *handle) SharedInformerFactory() informers.SharedInformerFactory { return h.informers }
func (h *handle) EventRecorder() events.EventRecorder                    { return h.recorder }
func (h *handle) Parallelizer() framework.Parallelizer                   { return h.parallel }
func (h *handle) NominatedPodsForNode(n string) []*framework.PodInfo {
	if h.nominator == nil {
		return nil
	}
	return h.nominator.NominatedPodsForNode(n)
}

func (h *handle) RunPreFilterExtensionAddPod(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, add *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	for _, p := range h.profile.preFilter {
		ext := p.PreFilterExtensions()
		if ext == nil || state.SkipFilter[p.Name()] {
			continue
		}
		if s := ext.AddPod(ctx, state, pod, add, ni); !s.IsSuccess() {
			return framework.AsStatus(fmt.Errorf("running AddPod on PreFilter plugin %q: %w", p.Name(), s.AsError()))
		}
	}
	return nil
}

func (h *handle) RunPreFilterExtensionRemovePod(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, rm *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	for _, p := range h.profile.preFilter {
		ext := p.PreFilterExtensions()
		if ext == nil || state.SkipFilter[p.Name()] {
			continue
		}
		if s := ext.RemovePod(ctx, state, pod, rm, ni); !s.IsSuccess() {
			return framework.AsStatus(fmt.Errorf("running RemovePod on PreFilter plugin %q: %w", p.Name(), s.AsError()))
		}
	}
	return nil
}

func (h *handle) RunFilterPluginsWithNominatedPods(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	return h.profile.filterWithNominated(ctx, state, pod, ni)
}

// runPreFilter runs the PreFilter plugins. It returns the node names the
// plugins narrowed the search to (nil: all) and, on rejection, the status
// with the plugin set.
func (p *Profile) runPreFilter(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	var result *framework.PreFilterResult
	// Sized for every plugin: most skip for a plain pod, and a map grown
	// past its first size rehashes.
	state.SkipFilter = make(map[string]bool, len(p.preFilter))
	for _, pl := range p.preFilter {
		start := pluginStart(state)
		r, s := pl.PreFilter(ctx, state, pod, nodes)
		observePlugin("PreFilter", pl.Name(), s, start)
		switch {
		case s.IsSkip():
			state.SkipFilter[pl.Name()] = true
			continue
		case !s.IsSuccess():
			if s.IsRejected() {
				return nil, s.WithPlugin(pl.Name())
			}
			return nil, framework.AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
		if r != nil && r.NodeNames != nil {
			if result == nil {
				result = &framework.PreFilterResult{NodeNames: r.NodeNames.Clone()}
			} else {
				result.NodeNames = result.NodeNames.Intersection(r.NodeNames)
			}
			if result.NodeNames.Len() == 0 {
				return result, framework.NewStatus(framework.UnschedulableAndUnresolvable,
					"node(s) didn't satisfy plugin(s) ["+pl.Name()+"] simultaneously").WithPlugin(pl.Name())
			}
		}
	}
	active := make([]framework.FilterPlugin, 0, len(p.filter))
	for _, pl := range p.filter {
		if !state.SkipFilter[pl.Name()] {
			active = append(active, pl)
		}
	}
	state.ActiveFilters = active
	return result, nil
}

// runFilters runs the Filter plugins on one node; the first rejection wins.
func (p *Profile) runFilters(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	filters, checkSkip := state.ActiveFilters, false
	if filters == nil {
		filters, checkSkip = p.filter, len(state.SkipFilter) > 0
	}
	for _, pl := range filters {
		if checkSkip && state.SkipFilter[pl.Name()] {
			continue
		}
		start := nodePluginStart(state)
		s := pl.Filter(ctx, state, pod, ni)
		observePlugin("Filter", pl.Name(), s, start)
		if !s.IsSuccess() {
			if !s.IsRejected() {
				s = framework.AsStatus(fmt.Errorf("running %q filter plugin: %w", pl.Name(), s.AsError()))
			}
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// filterWithNominated runs the filters twice when pods of equal or higher
// priority are nominated to the node: once with them added (they will be
// there) and once without (so that affinity to them is not assumed). Both
// must pass, as upstream.
func (p *Profile) filterWithNominated(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	nominated := p.handle.NominatedPodsForNode(ni.Name())
	if len(nominated) == 0 {
		return p.runFilters(ctx, state, pod, ni)
	}
	prio := podPriority(pod)
	var withNominated *framework.NodeInfo
	var stateWith *framework.CycleState
	for _, np := range nominated {
		if np.Pod.UID == pod.UID || podPriority(np.Pod) < prio {
			continue
		}
		if withNominated == nil {
			withNominated = ni.Clone()
			stateWith = state.Clone()
		}
		withNominated.AddPod(np)
		if s := p.handle.RunPreFilterExtensionAddPod(ctx, stateWith, pod, np, withNominated); !s.IsSuccess() {
			return s
		}
	}
	if withNominated != nil {
		if s := p.runFilters(ctx, stateWith, pod, withNominated); !s.IsSuccess() {
			return s
		}
	}
	return p.runFilters(ctx, state, pod, ni)
}

// runPreScore runs PreScore; Skip disables that plugin's Score.
func (p *Profile) runPreScore(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	state.SkipScore = make(map[string]bool, len(p.preScore))
	for _, pl := range p.preScore {
		start := pluginStart(state)
		s := pl.PreScore(ctx, state, pod, nodes)
		observePlugin("PreScore", pl.Name(), s, start)
		if s.IsSkip() {
			state.SkipScore[pl.Name()] = true
			continue
		}
		if !s.IsSuccess() {
			return framework.AsStatus(fmt.Errorf("running PreScore plugin %q: %w", pl.Name(), s.AsError()))
		}
	}
	return nil
}

// runScore scores every node with every active plugin in parallel,
// normalizes each plugin's scores, and returns the weighted totals.
func (p *Profile) runScore(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) ([]framework.NodeScore, *framework.Status) {
	active := p.activeScoreBuf[:0]
	for _, pl := range p.score {
		if !state.SkipScore[pl.Name()] {
			active = append(active, pl)
		}
	}
	p.activeScoreBuf = active
	// The buffers are reused across cycles: one profile schedules one
	// pod at a time.
	totals := grow(&p.totalsBuf, len(nodes))
	clear(totals)
	if len(active) == 0 {
		for i, n := range nodes {
			totals[i].Name = n.Name()
		}
		return totals, nil
	}
	for len(p.scoreBuf) < len(active) {
		p.scoreBuf = append(p.scoreBuf, nil)
	}
	scores := p.scoreBuf[:len(active)]
	for i := range scores {
		scores[i] = grow(&p.scoreBuf[i], len(nodes))
	}
	var errMu sync.Mutex
	var errs []*framework.Status
	fail := func(j int, st *framework.Status) {
		errMu.Lock()
		if errs == nil {
			errs = make([]*framework.Status, len(active))
		}
		errs[j] = st
		errMu.Unlock()
	}
	// invalid[j] is the lowest index of a node given an out-of-range
	// score by plugin j, which has no NormalizeScore and so is summed
	// into totals inside the ranges (see below); nil while none.
	var invalid []int
	outOfRange := func(j, i int) {
		errMu.Lock()
		if invalid == nil {
			invalid = make([]int, len(active))
			for k := range invalid {
				invalid[k] = -1
			}
		}
		if invalid[j] < 0 || i < invalid[j] {
			invalid[j] = i
		}
		errMu.Unlock()
	}
	// Ranges of nodes, plugin by plugin within a range: a plugin's loop
	// stays hot and the range's node infos stay in cache across plugins.
	p.handle.parallel.UntilChunks(ctx, len(nodes), scoreChunk, func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			totals[i].Name = nodes[i].Name()
		}
		for j, pl := range active {
			out := scores[j][lo:hi]
			if pl.batch != nil && !p.noBatchScore {
				// Names are for NormalizeScore; without one nobody
				// reads this plugin's names, so they are not copied.
				if pl.normalize != nil {
					for i := range out {
						out[i].Name = totals[lo+i].Name
					}
				}
				start := pluginStart(state)
				st := pl.batch.ScoreNodes(ctx, state, pod, nodes[lo:hi], out)
				observePlugin("Score", pl.Name(), st, start)
				if !st.IsSuccess() {
					fail(j, st)
					return false
				}
				continue
			}
			for i := range out {
				start := nodePluginStart(state)
				s, st := pl.Score(ctx, state, pod, nodes[lo+i])
				observePlugin("Score", pl.Name(), st, start)
				if !st.IsSuccess() {
					fail(j, st)
					return false
				}
				out[i] = framework.NodeScore{Name: totals[lo+i].Name, Score: s}
			}
		}
		// Plugins without NormalizeScore have their final scores now:
		// add them up here, in parallel and while the range is in
		// cache, rather than in a serial pass over every node after.
		for j, pl := range active {
			if pl.normalize != nil {
				continue
			}
			for i, ns := range scores[j][lo:hi] {
				if ns.Score < framework.MinNodeScore || ns.Score > framework.MaxNodeScore {
					outOfRange(j, lo+i)
					continue
				}
				totals[lo+i].Score += ns.Score * pl.weight
			}
		}
		return true
	})
	// Ranges not handed out when ctx ended were never scored.
	if err := ctx.Err(); err != nil {
		return nil, framework.AsStatus(err)
	}
	for j, pl := range active {
		if errs != nil && errs[j] != nil {
			return nil, framework.AsStatus(fmt.Errorf("running Score plugin %q: %w", pl.Name(), errs[j].AsError()))
		}
		ext := pl.normalize
		if ext == nil {
			// Summed in the ranges; only an out-of-range score is left
			// to report, the first node's, as the serial pass would.
			if invalid != nil && invalid[j] >= 0 {
				return nil, invalidScore(pl.Name(), scores[j][invalid[j]].Score, nodes[invalid[j]].Name())
			}
			continue
		}
		if s := ext.NormalizeScore(ctx, state, pod, scores[j]); !s.IsSuccess() {
			return nil, framework.AsStatus(fmt.Errorf("running NormalizeScore of %q: %w", pl.Name(), s.AsError()))
		}
		for i := range nodes {
			sc := scores[j][i].Score
			if sc < framework.MinNodeScore || sc > framework.MaxNodeScore {
				return nil, invalidScore(pl.Name(), sc, nodes[i].Name())
			}
			totals[i].Score += sc * pl.weight
		}
	}
	return totals, nil
}

func invalidScore(plugin string, score int64, node string) *framework.Status {
	return framework.AsStatus(fmt.Errorf("plugin %q returns an invalid score %d for node %q, it should be in [%d, %d]",
		plugin, score, node, framework.MinNodeScore, framework.MaxNodeScore))
}

func (p *Profile) runReserve(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node string) *framework.Status {
	for _, pl := range p.reserve {
		start := pluginStart(state)
		s := pl.Reserve(ctx, state, pod, node)
		observePlugin("Reserve", pl.Name(), s, start)
		if !s.IsSuccess() {
			if s.IsRejected() {
				return s.WithPlugin(pl.Name())
			}
			return framework.AsStatus(fmt.Errorf("running Reserve plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	return nil
}

// runUnreserve undoes Reserve in reverse order.
func (p *Profile) runUnreserve(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node string) {
	for i := len(p.reserve) - 1; i >= 0; i-- {
		p.reserve[i].Unreserve(ctx, state, pod, node)
	}
}

// runPermit runs the Permit plugins; a Wait holds the pod in the waiting
// set for the longest timeout asked.
func (p *Profile) runPermit(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node string) *framework.Status {
	var waitFor map[string]time.Duration
	for _, pl := range p.permit {
		start := pluginStart(state)
		s, timeout := pl.Permit(ctx, state, pod, node)
		observePlugin("Permit", pl.Name(), s, start)
		switch {
		case s.IsSuccess():
		case s.Code() == framework.Wait:
			if waitFor == nil {
				waitFor = map[string]time.Duration{}
			}
			waitFor[pl.Name()] = min(timeout, 15*time.Minute)
		case s.IsRejected():
			return s.WithPlugin(pl.Name())
		default:
			return framework.AsStatus(fmt.Errorf("running Permit plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	if len(waitFor) > 0 {
		p.waiting.add(pod, waitFor)
		return framework.NewStatus(framework.Wait)
	}
	return nil
}

func (p *Profile) runPreBind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node string) *framework.Status {
	for _, pl := range p.preBind {
		start := pluginStart(state)
		s := pl.PreBind(ctx, state, pod, node)
		observePlugin("PreBind", pl.Name(), s, start)
		if !s.IsSuccess() {
			if s.IsRejected() {
				return s.WithPlugin(pl.Name())
			}
			return framework.AsStatus(fmt.Errorf("running PreBind plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
	}
	return nil
}

func (p *Profile) runBind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node string) *framework.Status {
	for _, pl := range p.bind {
		start := pluginStart(state)
		s := pl.Bind(ctx, state, pod, node)
		observePlugin("Bind", pl.Name(), s, start)
		if s.IsSkip() {
			continue
		}
		if !s.IsSuccess() {
			return framework.AsStatus(fmt.Errorf("running Bind plugin %q: %w", pl.Name(), s.AsError())).WithPlugin(pl.Name())
		}
		return nil
	}
	return framework.AsStatus(fmt.Errorf("no bind plugin bound pod %s/%s", pod.Namespace, pod.Name))
}

func (p *Profile) runPostBind(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, node string) {
	for _, pl := range p.postBind {
		start := pluginStart(state)
		pl.PostBind(ctx, state, pod, node)
		observePlugin("PostBind", pl.Name(), nil, start)
	}
}

func podPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}
