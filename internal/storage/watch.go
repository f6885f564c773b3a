package storage

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EventType says what happened to a key.
type EventType int

const (
	EventPut EventType = iota
	EventDelete
)

// Event is one change under a watched prefix. For a delete, KV.Value is
// empty and KV.ModRevision is the revision of the delete.
type Event struct {
	Type EventType
	KV   *KV
}

// Batch is what one etcd watch response carries: events, or none for a
// progress notification. Revision is the revision the watcher is known to
// have seen everything up to.
type Batch struct {
	Events   []Event
	Revision int64
}

// Watch streams the changes under prefix after revision fromRev, in
// revision order, until ctx ends or an error occurs. The error channel gets
// one value and then both channels close; ErrCompacted means fromRev is no
// longer in etcd's history and the caller must list again. Progress
// notifications (see RequestProgress) arrive as batches without events.
func (s *Store) Watch(ctx context.Context, prefix string, fromRev int64) (<-chan Batch, <-chan error) {
	out := make(chan Batch, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(out)
		defer close(errc)
		wctx, cancel := context.WithCancel(watchContext(ctx))
		defer cancel()
		wch := s.cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(fromRev+1), clientv3.WithProgressNotify())
		for resp := range wch {
			if resp.CompactRevision != 0 {
				errc <- &Error{"watch", prefix, fmt.Errorf("%w: watch from %d, compacted at %d", ErrCompacted, fromRev, resp.CompactRevision)}
				return
			}
			if err := resp.Err(); err != nil {
				errc <- &Error{"watch", prefix, mapRevErr(err)}
				return
			}
			var batch Batch
			if resp.IsProgressNotify() {
				batch.Revision = resp.Header.Revision
			} else {
				if len(resp.Events) == 0 {
					continue
				}
				batch.Events = make([]Event, len(resp.Events))
				for i, e := range resp.Events {
					batch.Events[i] = Event{KV: kv(e.Kv)}
					if e.Type == clientv3.EventTypeDelete {
						batch.Events[i].Type = EventDelete
					}
				}
				batch.Revision = resp.Events[len(resp.Events)-1].Kv.ModRevision
			}
			select {
			case out <- batch:
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
		}
		if ctx.Err() != nil {
			errc <- ctx.Err()
			return
		}
		errc <- &Error{"watch", prefix, errors.New("etcd watch closed")}
	}()
	return out, errc
}

// watchContext gives every watch of this process the same gRPC metadata, so
// they share one stream and one RequestProgress reaches them all.
//
// The watches do not ask for a leader (clientv3.WithRequireLeader), as
// kube-apiserver's do: with it, etcd cancels every watch when its member
// loses the leader (as an embedded etcd does when it stops), and etcd's
// client v3.6 then panics if a progress notification — which waitFresh
// requests often — reaches the stream before those cancellations are
// cleaned up (send on closed channel in broadcastResponse,
// etcd-io/etcd#21969, open). A partitioned member's watches go quiet
// instead of failing; the progress requests of consistent reads notice
// that (they time out and read from etcd).
func watchContext(ctx context.Context) context.Context {
	return ctx
}

// RequestProgress asks etcd to tell every watch of this store how far it
// has got, even when nothing under its prefix changed. A consistent read
// served from a cache calls it to learn that the cache is fresh.
func (s *Store) RequestProgress(ctx context.Context) error {
	return s.cli.RequestProgress(watchContext(ctx))
}
