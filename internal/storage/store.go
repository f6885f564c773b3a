package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Error classes. Callers test with errors.Is; the API server maps each to
// one metav1.Status.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrConflict  = errors.New("the object has been modified")
	ErrCompacted = errors.New("resource version compacted")
	ErrFuture    = errors.New("resource version is in the future")
)

// Error is a failed store operation: what was done, on which key (or
// prefix), and why. Err is one of the classes above or etcd's own error,
// so errors.Is finds ErrConflict, rpctypes.ErrCompacted or
// context.DeadlineExceeded through it.
type Error struct {
	Op  string // create, get, update, delete, list, count, current_revision
	Key string
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("storage: %s %s: %v", e.Op, e.Key, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// KV is one stored object: its key, encoded value and revisions.
type KV struct {
	Key         string
	Value       []byte
	ModRevision int64
	// CreateRevision is the revision at which the key was created.
	CreateRevision int64
}

// Store reads and writes objects in etcd. Every write is a transaction that
// compares a revision, so a write based on stale data fails with
// ErrConflict instead of overwriting a newer one. It is safe for concurrent
// use; it keeps no state besides the client.
type Store struct {
	cli *clientv3.Client
}

// NewStore returns a Store over an etcd client.
func NewStore(cli *clientv3.Client) *Store { return &Store{cli: cli} }

// Client returns the etcd client, for health checks.
func (s *Store) Client() *clientv3.Client { return s.cli }

var etcdLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "etcd_request_duration_seconds",
	Help:    "Latency of etcd requests made by the API server, by operation.",
	Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15),
}, []string{"operation"})

// Metrics returns the store's Prometheus collectors.
func Metrics() []prometheus.Collector { return []prometheus.Collector{etcdLatency} }

func observe(op string, start time.Time) {
	etcdLatency.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

// Create stores value at key if the key does not exist, and returns the
// revision of the write.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	defer observe("create", time.Now())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return 0, &Error{"create", key, err}
	}
	if !resp.Succeeded {
		return 0, &Error{"create", key, ErrExists}
	}
	return resp.Header.Revision, nil
}

// Get returns the object at key, at the latest revision (a quorum read).
func (s *Store) Get(ctx context.Context, key string) (*KV, error) {
	defer observe("get", time.Now())
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return nil, &Error{"get", key, err}
	}
	if len(resp.Kvs) == 0 {
		return nil, &Error{"get", key, ErrNotFound}
	}
	return kv(resp.Kvs[0]), nil
}

// Update replaces the object at key if its revision is still modRevision.
// On a mismatch it returns ErrConflict and the current object (nil and
// ErrNotFound if it was deleted), so the caller can retry without another
// read.
func (s *Store) Update(ctx context.Context, key string, value []byte, modRevision int64) (int64, *KV, error) {
	defer observe("update", time.Now())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", modRevision)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, nil, &Error{"update", key, err}
	}
	if !resp.Succeeded {
		cur, err := current(resp)
		return 0, cur, &Error{"update", key, err}
	}
	return resp.Header.Revision, nil, nil
}

// Delete removes the object at key if its revision is still modRevision,
// with the same conflict contract as Update.
func (s *Store) Delete(ctx context.Context, key string, modRevision int64) (int64, *KV, error) {
	defer observe("delete", time.Now())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", modRevision)).
		Then(clientv3.OpDelete(key)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, nil, &Error{"delete", key, err}
	}
	if !resp.Succeeded {
		cur, err := current(resp)
		return 0, cur, &Error{"delete", key, err}
	}
	return resp.Header.Revision, nil, nil
}

func current(resp *clientv3.TxnResponse) (*KV, error) {
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, ErrNotFound
	}
	return kv(kvs[0]), ErrConflict
}

// ListResult is one page of a range read.
type ListResult struct {
	KVs []*KV
	// Revision is the revision the page was read at.
	Revision int64
	// More is true when keys remain after the last one returned.
	More bool
	// Count is how many keys the range holds from the start key on,
	// returned or not: a paged list tells its client how many remain.
	Count int64
}

// List reads keys under prefix, starting at startKey (inclusive; "" for the
// beginning), at revision rev (0 for the latest), at most limit keys (0 for
// all). A compacted rev gives ErrCompacted, a future one ErrFuture.
func (s *Store) List(ctx context.Context, prefix, startKey string, rev, limit int64) (*ListResult, error) {
	defer observe("list", time.Now())
	if startKey == "" {
		startKey = prefix
	}
	if !strings.HasPrefix(startKey, prefix) {
		return nil, &Error{"list", startKey, fmt.Errorf("start key outside prefix %q", prefix)}
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit))
	}
	resp, err := s.cli.Get(ctx, startKey, opts...)
	if err != nil {
		return nil, &Error{"list", startKey, mapRevErr(err)}
	}
	out := &ListResult{KVs: make([]*KV, len(resp.Kvs)), Revision: resp.Header.Revision, More: resp.More, Count: resp.Count}
	if rev > 0 {
		out.Revision = rev
	}
	for i, k := range resp.Kvs {
		out.KVs[i] = kv(k)
	}
	return out, nil
}

// Count returns how many keys are under prefix.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, &Error{"count", prefix, err}
	}
	return resp.Count, nil
}

// CurrentRevision returns etcd's latest revision with a quorum read, the
// cheapest way to learn how fresh a consistent read must be.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	defer observe("current_revision", time.Now())
	resp, err := s.cli.Get(ctx, compactKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, &Error{"current_revision", compactKey, err}
	}
	return resp.Header.Revision, nil
}

func mapRevErr(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %w", ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %w", ErrFuture, err)
	}
	return err
}

func kv(k *mvccpb.KeyValue) *KV {
	return &KV{Key: string(k.Key), Value: k.Value, ModRevision: k.ModRevision, CreateRevision: k.CreateRevision}
}
