package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/quota"
)

// ResourceQuota enforces a namespace's ResourceQuotas, as upstream's
// validating plugin of that name does. A create (and an update that can
// raise usage: a service changing type, a claim growing, a pod resized)
// is measured with the quota controller's own evaluators
// (quota.MeasureFor), and for every quota that covers it — it
// limits something the object uses and the object falls under its scopes
// — it is refused with 403 and upstream's words when
//
//   - a container does not state a cpu or memory request or limit the
//     quota limits: "failed quota: q: must specify limits.cpu for: app";
//   - the controller has not measured a limit yet (status.hard names it,
//     status.used does not): "status unknown for quota: q, resources:
//     pods";
//   - used + requested would pass hard: "exceeded quota: q, requested:
//     pods=1, used: pods=10, limited: pods=10".
//
// Quota judges by status.hard, the limits the controller has taken up,
// as upstream does: a quota it has not synced at all covers nothing yet.
//
// Otherwise the usage is *committed* before the write is admitted: the
// quota's status.used is raised by a compare-and-swap status write. That
// is what makes quota exact under concurrency: two creates can never both
// take the last unit, because the second write to the quota fails (409)
// and is judged again on what the first one left. Dry runs are judged
// but not charged. Deletes are never judged: the controller recalculates
// and gives back what they freed (and what a write charged here but then
// failed to store).
//
// # Concurrency
//
// The writes of one namespace are judged in batches, as upstream does: the
// first request to arrive leads, judging every request queued for the
// namespace at that moment one after another against a running copy of
// the quotas, then writing each changed quota once. Requests that arrive
// meanwhile wait, and the next of them leads the next batch. So a burst of
// N creates costs a few status writes, not N, and in-process requests
// never race each other into conflicts; a conflict with another writer
// (the controller, or another API server) re-reads the quota from storage
// and judges the batch again (up to rqRetries times).
//
// # Reading and writing quotas
//
// Quotas are read from the API server's watch cache (ObjectSource), with
// each quota this plugin wrote itself overlaid when it is newer than the
// cached copy (resourceVersions are etcd revisions, so they compare as
// numbers): back-to-back batches do not trip over a cache a moment
// behind. A namespace the cache shows without quotas is confirmed against
// storage and remembered for LiveTTL, as upstream's live lookup does.
//
// Status writes go straight to the API server's update path
// (StatusWriter), not through a loopback client: the same
// compare-and-swap on the etcd revision, validation and watch events as a
// client's PUT .../status (admission included), without a TLS round
// trip and authentication per batch, and with no credentials to keep.
type ResourceQuota struct {
	cfg ResourceQuotaConfig

	mu sync.Mutex
	// queues holds, per namespace with a batch under way, the requests
	// waiting for the next one.
	queues map[string]*rqQueue
	// written are the quotas this plugin stored last, by namespace/name.
	written map[string]*corev1.ResourceQuota
	// live: namespaces confirmed to have no quotas, until when.
	live map[string]time.Time
}

// ResourceQuotaConfig configures ResourceQuota; zero fields take the
// defaults noted.
type ResourceQuotaConfig struct {
	// Objects lists the namespace's ResourceQuotas (required).
	Objects ObjectSource
	// Status stores a quota's new status.used (required).
	Status StatusWriter
	// LiveTTL is how long a namespace confirmed to have no quotas is
	// trusted when the cache shows none (30 s).
	LiveTTL time.Duration
	// Timeout bounds how long a request waits for its judgement (10 s,
	// as upstream).
	Timeout time.Duration
	// Clock tells when terminating pods stop counting (real time).
	Clock clock.PassiveClock
}

// StatusWriter writes an object's status with compare-and-swap:
// obj's resourceVersion must be the stored one, else a 409 Conflict comes
// back and nothing is written (a 404 if the object is gone). It returns
// the stored object. apiserver.Server implements it.
type StatusWriter interface {
	UpdateObjectStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
}

const (
	// rqRetries bounds how often a batch is judged again after losing a
	// compare-and-swap to another writer.
	rqRetries = 5
	// rqMapMax bounds the remembered namespaces and written quotas.
	rqMapMax = 10000
)

var resourceQuotasGVR = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}

// NewResourceQuota returns the plugin with cfg's defaults filled.
func NewResourceQuota(cfg ResourceQuotaConfig) *ResourceQuota {
	if cfg.LiveTTL <= 0 {
		cfg.LiveTTL = 30 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &ResourceQuota{cfg: cfg, queues: map[string]*rqQueue{}, written: map[string]*corev1.ResourceQuota{}, live: map[string]time.Time{}}
}

func (*ResourceQuota) Name() string { return "ResourceQuota" }

// rqWaiter is one request waiting for its batch.
type rqWaiter struct {
	a *Attributes
	m quota.Measure
	// done is closed when err is final, or when the request is to lead
	// the next batch (lead set first). Both are written under
	// ResourceQuota.mu.
	done chan struct{}
	lead bool
	err  error
	// charged: judged and waiting for its quotas to be stored.
	charged bool
}

type rqQueue struct {
	waiting []*rqWaiter
}

// Validate implements Validator.
func (p *ResourceQuota) Validate(ctx context.Context, a *Attributes) error {
	m, ok := rqHandles(a)
	if !ok {
		return nil
	}
	quotas, err := p.quotas(ctx, a.Namespace, false)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("error resolving quota: %w", err))
	}
	// Most writes meet no quota that covers them; they need no batch.
	covered := false
	for _, q := range quotas {
		if _, ok, err := rqCovers(q, m, a.Object); ok || err != nil {
			covered = true
			break
		}
	}
	if !covered {
		return nil
	}
	return p.evaluate(ctx, &rqWaiter{a: a, m: m, done: make(chan struct{})})
}

// evaluate queues w for its namespace's next batch and returns its
// judgement, leading the batch if no other request is.
func (p *ResourceQuota) evaluate(ctx context.Context, w *rqWaiter) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	ns := w.a.Namespace
	p.mu.Lock()
	q, busy := p.queues[ns]
	if !busy {
		q = &rqQueue{}
		p.queues[ns] = q
		w.lead = true
	}
	q.waiting = append(q.waiting, w)
	p.mu.Unlock()

	if busy {
		select {
		case <-w.done:
		case <-ctx.Done():
			p.mu.Lock()
			select {
			case <-w.done: // judged, or made leader, as we gave up
			default:
				// Still queued: leave. If a batch has taken it already,
				// it may still be charged; the controller gives that back.
				q.waiting = slices.DeleteFunc(q.waiting, func(x *rqWaiter) bool { return x == w })
				p.mu.Unlock()
				return apierrors.NewInternalError(errors.New("resource quota evaluation timed out"))
			}
			p.mu.Unlock()
		}
		if !w.lead {
			return w.err
		}
	}
	p.leadBatch(ns, q)
	return w.err
}

// leadBatch judges every request queued for ns, then hands the queue to
// the next request that arrived meanwhile, or retires it.
func (p *ResourceQuota) leadBatch(ns string, q *rqQueue) {
	p.mu.Lock()
	batch := q.waiting
	q.waiting = nil
	p.mu.Unlock()

	// The batch is judged for everyone in it, so it must not end with the
	// leader's own request if that one is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	p.judge(ctx, ns, batch)
	cancel()

	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range batch {
		if !w.lead {
			close(w.done)
		}
	}
	if len(q.waiting) > 0 {
		next := q.waiting[0]
		next.lead = true
		close(next.done)
		return
	}
	delete(p.queues, ns)
}

// judge decides every waiter of one batch: each is checked against the
// quotas as the ones before it left them, then every quota that changed
// is written once. A write that loses to another writer re-reads that
// quota from storage and judges the requests charged to it again; the
// quotas already written stay charged.
func (p *ResourceQuota) judge(ctx context.Context, ns string, batch []*rqWaiter) {
	now := p.cfg.Clock.Now()
	quotas, err := p.quotas(ctx, ns, false)
	if err != nil {
		for _, w := range batch {
			w.err = apierrors.NewInternalError(fmt.Errorf("error resolving quota: %w", err))
		}
		return
	}
	pending := batch
	for attempt := 0; ; attempt++ {
		running := quotas
		var charged []*rqWaiter
		for _, w := range pending {
			next, err := rqCheck(running, w.a, w.m, now)
			switch {
			case err != nil:
				w.err, w.charged = err, false
			case w.a.DryRun:
				w.err, w.charged = nil, false
			default:
				changed := false
				for i := range next {
					if next[i] != running[i] {
						changed = true
						break
					}
				}
				w.err, w.charged = nil, changed
				if changed {
					charged = append(charged, w)
					running = next
				}
			}
		}
		var lost []string
		var conflict, fatal error
		for i, q := range running {
			if q == quotas[i] {
				continue
			}
			stored, err := p.cfg.Status.UpdateObjectStatus(ctx, resourceQuotasGVR, q)
			switch {
			case err == nil:
				if rq, ok := stored.(*corev1.ResourceQuota); ok {
					p.remember(rq)
				}
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				lost, conflict = append(lost, q.Name), err
			default:
				lost, fatal = append(lost, q.Name), err
			}
		}
		if len(lost) == 0 {
			return
		}
		if fatal != nil || attempt >= rqRetries {
			if fatal == nil {
				fatal = conflict
			}
			for _, w := range charged {
				w.err = rqWriteError(fatal)
			}
			return
		}
		fresh, err := p.quotas(ctx, ns, true)
		if err != nil {
			for _, w := range charged {
				w.err = apierrors.NewInternalError(fmt.Errorf("error resolving quota: %w", err))
			}
			return
		}
		// Only the quotas that were not stored are judged again; one
		// deleted meanwhile charges nothing.
		quotas = slices.DeleteFunc(fresh, func(q *corev1.ResourceQuota) bool { return !slices.Contains(lost, q.Name) })
		pending = charged
	}
}

func rqWriteError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return apierrors.NewInternalError(err)
}

// quotas returns ns's quotas sorted by name, newest known version of
// each; they are shared and must not be modified. fresh reads through
// to storage.
func (p *ResourceQuota) quotas(ctx context.Context, ns string, fresh bool) ([]*corev1.ResourceQuota, error) {
	objs, err := p.cfg.Objects.ListObjects(ctx, resourceQuotasGVR, ns, fresh)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 && !fresh {
		now := p.cfg.Clock.Now()
		p.mu.Lock()
		until, ok := p.live[ns]
		p.mu.Unlock()
		if ok && now.Before(until) {
			return nil, nil
		}
		if objs, err = p.cfg.Objects.ListObjects(ctx, resourceQuotasGVR, ns, true); err != nil {
			return nil, err
		}
		if len(objs) == 0 {
			p.mu.Lock()
			if len(p.live) >= rqMapMax {
				clear(p.live)
			}
			p.live[ns] = now.Add(p.cfg.LiveTTL)
			p.mu.Unlock()
			return nil, nil
		}
	}
	out := make([]*corev1.ResourceQuota, 0, len(objs))
	p.mu.Lock()
	for _, o := range objs {
		q, ok := o.(*corev1.ResourceQuota)
		if !ok {
			continue
		}
		key := q.Namespace + "/" + q.Name
		if mine, ok := p.written[key]; ok {
			if rqNewer(mine, q) {
				q = mine
			} else {
				delete(p.written, key) // the cache has caught up
			}
		}
		out = append(out, q)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b *corev1.ResourceQuota) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// remember keeps a quota this plugin stored, for reads until the cache
// has it.
func (p *ResourceQuota) remember(q *corev1.ResourceQuota) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.written) >= rqMapMax {
		clear(p.written)
	}
	p.written[q.Namespace+"/"+q.Name] = q
}

// rqNewer reports whether a is a later version of the same quota than b.
// A quota deleted and created again under the name is another object.
func rqNewer(a, b *corev1.ResourceQuota) bool {
	if a.UID != b.UID {
		return false
	}
	ra, errA := strconv.ParseInt(a.ResourceVersion, 10, 64)
	rb, errB := strconv.ParseInt(b.ResourceVersion, 10, 64)
	return errA == nil && errB == nil && ra > rb
}
