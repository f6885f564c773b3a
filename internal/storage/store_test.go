package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	etcd, err := StartEmbedded(context.Background(), EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	return NewStore(etcd.Client)
}

func TestStoreCompareAndSwap(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	key := Key("", "configmaps", "default", "a")

	rev, err := s.Create(ctx, key, []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("create of an existing key", func(t *testing.T) {
		if _, err := s.Create(ctx, key, []byte("again")); !errors.Is(err, ErrExists) {
			t.Fatalf("want ErrExists, got %v", err)
		}
	})
	rev2, _, err := s.Update(ctx, key, []byte("v2"), rev)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("update at a stale revision returns the current value", func(t *testing.T) {
		_, cur, err := s.Update(ctx, key, []byte("lost"), rev)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("want ErrConflict, got %v", err)
		}
		if string(cur.Value) != "v2" || cur.ModRevision != rev2 {
			t.Fatalf("current: %q at %d, want v2 at %d", cur.Value, cur.ModRevision, rev2)
		}
	})
	t.Run("delete at a stale revision", func(t *testing.T) {
		if _, _, err := s.Delete(ctx, key, rev); !errors.Is(err, ErrConflict) {
			t.Fatalf("want ErrConflict, got %v", err)
		}
	})
	t.Run("delete then update of a missing key", func(t *testing.T) {
		if _, _, err := s.Delete(ctx, key, rev2); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Update(ctx, key, []byte("x"), rev2); !errors.Is(err, ErrNotFound) {
			t.Fatalf("want ErrNotFound, got %v", err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("want ErrNotFound, got %v", err)
		}
	})
}

// TestStoreErrorsNameTheKey: every failure says which key it was about
// and keeps its cause, a class or etcd's own error, for errors.Is.
func TestStoreErrorsNameTheKey(t *testing.T) {
	s := newTestStore(t)
	key := Key("", "configmaps", "default", "b")
	if _, err := s.Create(t.Context(), key, []byte("v1")); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name string
		op   func() error
		is   error
	}{
		{"exists", func() error { _, err := s.Create(t.Context(), key, nil); return err }, ErrExists},
		{"not found", func() error { _, err := s.Get(t.Context(), key+"-gone"); return err }, ErrNotFound},
		{"conflict", func() error { _, _, err := s.Update(t.Context(), key, nil, 1); return err }, ErrConflict},
		{"etcd's error", func() error { _, err := s.Get(cancelled, key); return err }, context.Canceled},
		{"list", func() error { _, err := s.List(cancelled, key, "", 0, 0); return err }, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want one that is %v", err, tc.is)
			}
			var se *Error
			if !errors.As(err, &se) || !strings.HasPrefix(se.Key, key) || !strings.Contains(err.Error(), key) {
				t.Fatalf("error %q does not name key %s", err, key)
			}
		})
	}
}

// TestStoreNoLostUpdate: concurrent read-modify-write loops that retry on
// conflict never lose an increment.
func TestStoreNoLostUpdate(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	key := Key("", "configmaps", "default", "counter")
	if _, err := s.Create(ctx, key, []byte("0")); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kv, err := s.Get(ctx, key)
			for i := 0; i < each && err == nil; {
				var n int
				fmt.Sscan(string(kv.Value), &n)
				var cur *KV
				_, cur, err = s.Update(ctx, key, []byte(fmt.Sprint(n+1)), kv.ModRevision)
				if errors.Is(err, ErrConflict) {
					kv, err = cur, nil
					continue
				}
				if err == nil {
					kv, err = s.Get(ctx, key)
					i++
				}
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	kv, err := s.Get(ctx, key)
	if err != nil || string(kv.Value) != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %q (%v), want %d", kv.Value, err, workers*each)
	}
}

func TestStoreListPagesAndCompaction(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	prefix := Prefix("", "configmaps", "default")
	for i := 0; i < 5; i++ {
		if _, err := s.Create(ctx, fmt.Sprintf("%sc%d", prefix, i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.List(ctx, prefix, "", 0, 2)
	if err != nil || len(page.KVs) != 2 || !page.More {
		t.Fatalf("first page: %d items, more=%v, err=%v", len(page.KVs), page.More, err)
	}
	rest, err := s.List(ctx, prefix, page.KVs[1].Key+"\x00", page.Revision, 0)
	if err != nil || len(rest.KVs) != 3 || rest.More {
		t.Fatalf("rest: %d items, more=%v, err=%v", len(rest.KVs), rest.More, err)
	}
	old := page.Revision
	if _, err := s.Create(ctx, prefix+"later", []byte("x")); err != nil {
		t.Fatal(err)
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CompactNow(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, prefix, "", old, 0); !errors.Is(err, ErrCompacted) {
		t.Fatalf("list at a compacted revision: want ErrCompacted, got %v", err)
	}
	if _, err := s.List(ctx, prefix, "", cur+1000, 0); !errors.Is(err, ErrFuture) {
		t.Fatalf("list at a future revision: want ErrFuture, got %v", err)
	}
}

func TestStoreWatch(t *testing.T) {
	s := newTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := Prefix("apps", "deployments", "")
	start, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	batches, errc := s.Watch(ctx, prefix, start)
	rev, _ := s.Create(ctx, prefix+"ns/a", []byte("1"))
	s.Create(ctx, Prefix("", "pods", "")+"ns/other", []byte("not watched"))
	s.Delete(ctx, prefix+"ns/a", rev)

	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < 2 {
		select {
		case b := <-batches:
			for _, e := range b.Events {
				got = append(got, fmt.Sprintf("%d:%s", e.Type, e.KV.Key))
			}
		case err := <-errc:
			t.Fatalf("watch ended: %v", err)
		case <-deadline:
			t.Fatalf("events so far: %v", got)
		}
	}
	want := []string{fmt.Sprintf("%d:%sns/a", EventPut, prefix), fmt.Sprintf("%d:%sns/a", EventDelete, prefix)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}

	t.Run("a watch from a compacted revision fails with ErrCompacted", func(t *testing.T) {
		cur, _ := s.CurrentRevision(ctx)
		if err := s.CompactNow(ctx, cur); err != nil {
			t.Fatal(err)
		}
		_, errc := s.Watch(ctx, prefix, start)
		select {
		case err := <-errc:
			if !errors.Is(err, ErrCompacted) {
				t.Fatalf("want ErrCompacted, got %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no error from a watch at a compacted revision")
		}
	})
}
