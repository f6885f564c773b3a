package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/storage"
)

// cacheObject is one version of a stored object. It is shared, read-only,
// by every list and watch that returns it; its encodings are computed at
// most once, on first use, and then served as bytes to every client.
type cacheObject struct {
	key    string
	obj    runtime.Object // TypeMeta and ResourceVersion set; never mutated
	meta   metav1.Object
	rev    int64
	fields fields.Set

	jsonOnce  sync.Once
	json      []byte
	protoOnce sync.Once
	protoEnv  []byte // "k8s\x00" + runtime.Unknown around the object's message
	protoRaw  []byte // the message alone: a slice of protoEnv
	encErr    error
}

// cacheEvent is one change, as watchers see it.
type cacheEvent struct {
	typ  watch.EventType
	obj  *cacheObject // the new state; for Deleted, the last state at the delete's revision
	prev *cacheObject // the state before; nil for Added
	rev  int64

	// The event's stream frames, built on first use (see frame).
	jsonOnce, protoOnce   sync.Once
	jsonFrame, protoFrame []byte
	protoErr, jsonErr     error
}

// watchCache mirrors one resource from etcd with a single watch: the
// current objects ordered by key, and a ring of recent events that every
// watcher reads from. Dispatching an event costs the same for one watcher
// as for a thousand: it is appended to the ring and a channel is closed to
// wake the readers, each of which filters and writes on its own goroutine.
type watchCache struct {
	res    *registry.Resource
	store  *storage.Store
	codec  *storage.Codec
	prefix string
	codecs *codecs

	mu    sync.RWMutex
	items *btree.BTreeG[*cacheObject]
	rev   int64 // everything up to rev is reflected
	// ring holds events with sequence numbers [first, next); an event's slot
	// is seq % len(ring). Events are complete from ringStartRev on: a watch
	// from an older revision cannot be served and gets 410 Gone.
	ring         []*cacheEvent
	first, next  uint64
	ringStartRev int64
	// notify is closed, and replaced, whenever events are appended or rev
	// advances.
	notify chan struct{}
	// generation counts relists; watchers of an older generation end.
	generation int
	ready      chan struct{}
	readyOnce  sync.Once
}

func newWatchCache(res *registry.Resource, store *storage.Store, codec *storage.Codec, cs *codecs, capacity int) *watchCache {
	return &watchCache{
		res:    res,
		store:  store,
		codec:  codec,
		codecs: cs,
		prefix: storagePrefix(res),
		items:  btree.NewG(32, func(a, b *cacheObject) bool { return a.key < b.key }),
		ring:   make([]*cacheEvent, capacity),
		notify: make(chan struct{}),
		ready:  make(chan struct{}),
	}
}

// run lists and watches until ctx ends, relisting when the watch breaks.
func (c *watchCache) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := c.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		slog.Warn("watch cache restarting", "resource", c.res.Resource, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

func (c *watchCache) listAndWatch(ctx context.Context) error {
	list, err := c.store.List(ctx, c.prefix, "", 0, 0)
	if err != nil {
		return err
	}
	items := btree.NewG(32, func(a, b *cacheObject) bool { return a.key < b.key })
	for _, kv := range list.KVs {
		o, err := c.decode(kv)
		if err != nil {
			slog.Error("skipping undecodable object", "key", kv.Key, "err", err)
			continue
		}
		items.ReplaceOrInsert(o)
	}
	c.mu.Lock()
	c.items = items
	c.rev = list.Revision
	c.ringStartRev = list.Revision
	for i := range c.ring {
		c.ring[i] = nil
	}
	c.first = c.next
	c.generation++
	c.wakeLocked()
	c.mu.Unlock()
	c.readyOnce.Do(func() { close(c.ready) })

	batches, errc := c.store.Watch(ctx, c.prefix, list.Revision)
	for b := range batches {
		c.apply(b)
	}
	return <-errc
}

func (c *watchCache) decode(kv *storage.KV) (*cacheObject, error) {
	obj, err := decodeStored(c.codec, c.res, kv.Value)
	if err != nil {
		return nil, err
	}
	return c.newCacheObject(kv.Key, obj, kv.ModRevision)
}

func storagePrefix(res *registry.Resource) string {
	group, resource := storedAs(res)
	return storage.Prefix(group, resource, "")
}

func (c *watchCache) newCacheObject(key string, obj runtime.Object, rev int64) (*cacheObject, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(fmt.Sprint(rev))
	return &cacheObject{key: key, obj: obj, meta: m, rev: rev, fields: objectFields(c.res, obj, m)}, nil
}

// objectFields is the field set selectors match: metadata.name,
// metadata.namespace and the resource's own selectable fields.
func objectFields(res *registry.Resource, obj runtime.Object, m metav1.Object) fields.Set {
	var set fields.Set
	if res.Fields != nil {
		set = res.Fields(obj)
	}
	if set == nil {
		set = fields.Set{}
	}
	set["metadata.name"] = m.GetName()
	if res.Namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	return set
}

func (c *watchCache) apply(b storage.Batch) {
	evs := make([]*cacheEvent, 0, len(b.Events))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range b.Events {
		prev, _ := c.items.Get(&cacheObject{key: e.KV.Key})
		switch e.Type {
		case storage.EventPut:
			o, err := c.decode(e.KV)
			if err != nil {
				slog.Error("skipping undecodable event", "key", e.KV.Key, "err", err)
				continue
			}
			c.items.ReplaceOrInsert(o)
			ev := &cacheEvent{typ: watch.Added, obj: o, rev: o.rev}
			if prev != nil {
				ev.typ, ev.prev = watch.Modified, prev
			}
			evs = append(evs, ev)
		case storage.EventDelete:
			if prev == nil {
				continue
			}
			c.items.Delete(prev)
			gone, err := c.newCacheObject(prev.key, prev.obj.DeepCopyObject(), e.KV.ModRevision)
			if err != nil {
				continue
			}
			evs = append(evs, &cacheEvent{typ: watch.Deleted, obj: gone, prev: prev, rev: e.KV.ModRevision})
		}
	}
	for _, ev := range evs {
		if c.next-c.first == uint64(len(c.ring)) {
			// The oldest event falls out: from now on only watches from its
			// revision or later can be served.
			c.ringStartRev = c.ring[c.first%uint64(len(c.ring))].rev
			c.ring[c.first%uint64(len(c.ring))] = nil
			c.first++
		}
		c.ring[c.next%uint64(len(c.ring))] = ev
		c.next++
	}
	if b.Revision > c.rev {
		c.rev = b.Revision
	}
	c.wakeLocked()
}

func (c *watchCache) wakeLocked() {
	close(c.notify)
	c.notify = make(chan struct{})
}

// errNotFresh means the cache could not catch up with a revision in time;
// the caller reads etcd instead.
var errNotFresh = errors.New("watch cache not fresh")

// progressRetryFirst and progressRetryMax space out the repeated
// progress requests of one waitFresh.
const (
	progressRetryFirst = 50 * time.Millisecond
	progressRetryMax   = 400 * time.Millisecond
)

// waitFresh waits until the cache reflects at least rev, asking etcd for a
// progress notification so an idle resource catches up with writes to
// others. It gives up after timeout.
//
// It asks again while it waits (after 50 ms, doubling to 400 ms): etcd
// answers a progress request only when every watch on the stream has
// caught up, and drops it otherwise. Under a heavy write load (10,000
// pods being created) the pods watch is often behind, so a single
// request was often lost, and a consistent GET of a quiet resource (a
// ReplicaSet) then waited the whole timeout and read etcd after it: 3-5 s.
func (c *watchCache) waitFresh(ctx context.Context, rev int64, timeout time.Duration) error {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var retry *time.Timer
	var retryC <-chan time.Time
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	wait := progressRetryFirst
	for {
		c.mu.RLock()
		cur, notify := c.rev, c.notify
		c.mu.RUnlock()
		if cur >= rev {
			return nil
		}
		if retry == nil {
			if err := c.store.RequestProgress(ctx); err != nil {
				return err
			}
			retry = time.NewTimer(wait)
			retryC = retry.C
		}
		select {
		case <-notify:
		case <-retryC:
			if err := c.store.RequestProgress(ctx); err != nil {
				return err
			}
			wait = min(2*wait, progressRetryMax)
			retry.Reset(wait)
		case <-deadline.C:
			return errNotFresh
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// freshRevision returns etcd's current revision after waiting for the cache
// to reach it: the cost of a consistent read served from memory.
func (c *watchCache) freshRevision(ctx context.Context) (int64, error) {
	rev, err := c.store.CurrentRevision(ctx)
	if err != nil {
		return 0, err
	}
	if err := c.waitFresh(ctx, rev, 3*time.Second); err != nil {
		return 0, err
	}
	return rev, nil
}

// freshNow reports whether the cache already holds etcd's current
// revision, without waiting for it to catch up.
func (c *watchCache) freshNow(ctx context.Context) (bool, error) {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	rev, err := c.store.CurrentRevision(ctx)
	if err != nil {
		return false, err
	}
	return c.revision() >= rev, nil
}

// get returns the cached object at key, or nil.
func (c *watchCache) get(key string) *cacheObject {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, _ := c.items.Get(&cacheObject{key: key})
	return o
}

// list returns the cached objects under prefix that match, and the
// revision the cache was at.
func (c *watchCache) list(prefix string, match func(*cacheObject) bool) ([]*cacheObject, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*cacheObject
	c.items.AscendGreaterOrEqual(&cacheObject{key: prefix}, func(o *cacheObject) bool {
		if !strings.HasPrefix(o.key, prefix) {
			return false
		}
		if match == nil || match(o) {
			out = append(out, o)
		}
		return true
	})
	return out, c.rev
}

// count returns the number of cached objects.
func (c *watchCache) count() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.items.Len()
}

// watchStart is where a new watcher begins: the sequence number of its
// first event, or the objects to send as synthetic ADDED events first.
type watchStart struct {
	seq        uint64
	initial    []*cacheObject
	rev        int64
	generation int
}

// startWatch positions a watcher. With fromRev 0 it starts at the current
// state, sending every object first when initial is true. Otherwise it
// starts after fromRev; a revision older than the ring is ErrCompacted.
func (c *watchCache) startWatch(prefix string, fromRev int64, initial bool) (watchStart, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := watchStart{seq: c.next, rev: c.rev, generation: c.generation}
	if fromRev == 0 {
		if initial {
			c.items.AscendGreaterOrEqual(&cacheObject{key: prefix}, func(o *cacheObject) bool {
				if !strings.HasPrefix(o.key, prefix) {
					return false
				}
				st.initial = append(st.initial, o)
				return true
			})
		}
		return st, nil
	}
	if fromRev < c.ringStartRev {
		return st, &tooOldError{requested: fromRev, oldest: c.ringStartRev}
	}
	// Events are in revision order: find the first one after fromRev.
	lo, hi := c.first, c.next
	for lo < hi {
		mid := lo + (hi-lo)/2
		if c.ring[mid%uint64(len(c.ring))].rev <= fromRev {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	st.seq = lo
	return st, nil
}

// errWatcherTooSlow ends a watcher whose next event has left the ring.
var errWatcherTooSlow = errors.New("watcher fell behind the watch cache")

// errCacheRelisted ends watchers when the cache had to list again: their
// event stream has a gap.
var errCacheRelisted = errors.New("watch cache relisted")

// readEvents returns the events from seq on (at most max), the next
// sequence number, the cache revision and a channel closed when more
// arrive.
func (c *watchCache) readEvents(seq uint64, generation, max int, buf []*cacheEvent) ([]*cacheEvent, uint64, int64, <-chan struct{}, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if generation != c.generation {
		return nil, seq, c.rev, nil, errCacheRelisted
	}
	if seq < c.first {
		return nil, seq, c.rev, nil, errWatcherTooSlow
	}
	buf = buf[:0]
	for ; seq < c.next && len(buf) < max; seq++ {
		buf = append(buf, c.ring[seq%uint64(len(c.ring))])
	}
	return buf, seq, c.rev, c.notify, nil
}

// invalidate ends the cache's watchers, as a relist does, for a cache
// that stops being served (a custom resource whose definition changed or
// went): they end and their clients watch again.
func (c *watchCache) invalidate() {
	c.mu.Lock()
	c.generation++
	c.wakeLocked()
	c.mu.Unlock()
}

// revision returns the revision the cache reflects.
func (c *watchCache) revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}
