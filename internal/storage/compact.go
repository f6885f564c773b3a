package storage

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactKey is written on every compaction tick. Its version doubles as a
// lock between API servers sharing one etcd: only the server whose
// compare-and-swap on it succeeds compacts in that interval.
const compactKey = "/registry/compact_rev_key"

// Compact runs until ctx ends, compacting etcd's history every interval to
// the revision seen one interval earlier. History therefore always spans at
// least one interval: watchers and paginated lists that keep up within it
// never see 410 Gone.
func (s *Store) Compact(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var version, lastRev int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.Version(compactKey), "=", version)).
			Then(clientv3.OpPut(compactKey, "")).
			Else(clientv3.OpGet(compactKey)).
			Commit()
		if err != nil {
			slog.Warn("compaction tick failed", "err", err)
			continue
		}
		rev := resp.Header.Revision
		if !resp.Succeeded {
			// Another server compacted this interval; follow its count.
			if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
				version = kvs[0].Version
			}
			lastRev = rev
			continue
		}
		version++
		if lastRev > 0 {
			start := time.Now()
			if _, err := s.cli.Compact(ctx, lastRev); err != nil {
				slog.Warn("compaction failed", "revision", lastRev, "err", err)
			} else {
				slog.Debug("compacted", "revision", lastRev, "took", time.Since(start))
			}
		}
		lastRev = rev
	}
}

// CompactNow compacts history up to rev immediately. Tests use it to make
// old resource versions expire.
func (s *Store) CompactNow(ctx context.Context, rev int64) error {
	if _, err := s.cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("storage: compact to revision %d: %w", rev, err)
	}
	return nil
}
