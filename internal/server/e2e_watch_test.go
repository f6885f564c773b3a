package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// End-to-end tests of watch semantics: where a watch starts, what it
// sends, how it ends.

// watchTimeout bounds every wait for an event; events normally arrive in
// milliseconds.
const watchTimeout = 10 * time.Second

// describe renders an event as "TYPE name" for comparisons; an ERROR is
// "ERROR <code>".
func describe(ev watch.Event) string {
	switch o := ev.Object.(type) {
	case *metav1.Status:
		return fmt.Sprintf("%s %d", ev.Type, o.Code)
	case metav1.Object:
		if ev.Type == watch.Bookmark {
			return string(ev.Type)
		}
		return fmt.Sprintf("%s %s", ev.Type, o.GetName())
	}
	return fmt.Sprintf("%s %T", ev.Type, ev.Object)
}

func describeAll(evs []watch.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = describe(ev)
	}
	return out
}

// readUntil reads events until one matches last (included), failing if
// the stream ends or stalls first.
func readUntil(t *testing.T, w watch.Interface, last string) []watch.Event {
	t.Helper()
	var evs []watch.Event
	timer := time.NewTimer(watchTimeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended before %q; got %v", last, describeAll(evs))
			}
			evs = append(evs, ev)
			if describe(ev) == last {
				return evs
			}
		case <-timer.C:
			t.Fatalf("no %q within %v; got %v", last, watchTimeout, describeAll(evs))
		}
	}
}

// readToEnd reads events until the server ends the stream.
func readToEnd(t *testing.T, w watch.Interface) []watch.Event {
	t.Helper()
	var evs []watch.Event
	timer := time.NewTimer(watchTimeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timer.C:
			t.Fatalf("watch still open after %v; got %v", watchTimeout, describeAll(evs))
		}
	}
}

func rvOf(t *testing.T, obj any) int64 {
	t.Helper()
	m, ok := obj.(metav1.Object)
	if !ok {
		t.Fatalf("%T has no metadata", obj)
	}
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", m.GetResourceVersion(), err)
	}
	return rv
}

// seedWatchNamespace makes a namespace with configmaps a and b, returns the
// list resourceVersion after them, then updates a: a watch from that
// version must replay the update.
func seedWatchNamespace(t *testing.T, e *apiEnv, name string) (ns, listRV string) {
	t.Helper()
	ctx := context.Background()
	ns = e.namespace(t, name)
	cmc := e.cs.CoreV1().ConfigMaps(ns)
	for _, n := range []string{"a", "b"} {
		if _, err := cmc.Create(ctx, testConfigMap(n, map[string]string{"app": "w"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cmc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := list.Items[0].DeepCopy()
	a.Data["k"] = "updated"
	if _, err := cmc.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns, list.ResourceVersion
}

func TestWatchStartingPoints(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	cases := []struct {
		name string
		rv   func(listRV string) string
		want []string
	}{
		// "" and "0": the current state as ADDED events, then changes.
		{"resourceVersion unset", func(string) string { return "" }, []string{"ADDED a", "ADDED b", "ADDED c"}},
		{"resourceVersion 0", func(string) string { return "0" }, []string{"ADDED a", "ADDED b", "ADDED c"}},
		// N: exactly the changes after N.
		{"resourceVersion N", func(rv string) string { return rv }, []string{"MODIFIED a", "ADDED c"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns, listRV := seedWatchNamespace(t, e, fmt.Sprintf("start-%d", i))
			cmc := e.cs.CoreV1().ConfigMaps(ns)
			w, err := cmc.Watch(ctx, metav1.ListOptions{ResourceVersion: tc.rv(listRV)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if _, err := cmc.Create(ctx, testConfigMap("c", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			evs := readUntil(t, w, "ADDED c")
			got := describeAll(evs)
			stale := false
			if tc.rv(listRV) == "0" {
				// "0" means any state: the cache may not have seen the
				// update yet, and then replays it (upstream does too).
				if i := slices.Index(got, "MODIFIED a"); i >= 0 {
					got, stale = slices.Delete(got, i, i+1), true
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events %v, want %v", describeAll(evs), tc.want)
			}
			// Initial events carry the current state; replayed ones the
			// state at their revision. Either way a is the updated version.
			if a := evs[0].Object.(*corev1.ConfigMap); !stale && a.Data["k"] != "updated" {
				t.Errorf("first event shows a with data %v, want the update", a.Data)
			}
			// The change made after the watch began is newer than all
			// that came before it in the stream.
			last := rvOf(t, evs[len(evs)-1].Object)
			for _, ev := range evs[:len(evs)-1] {
				if rvOf(t, ev.Object) >= last {
					t.Errorf("%s at resourceVersion %d is not older than the final %d", describe(ev), rvOf(t, ev.Object), last)
				}
			}
		})
	}

	t.Run("resourceVersion unset sees an object created just before", func(t *testing.T) {
		// Upstream serves an unset resourceVersion consistently: the
		// initial state includes every write acknowledged before the watch.
		ns := e.namespace(t, "start-fresh")
		cmc := e.cs.CoreV1().ConfigMaps(ns)
		for i := range 20 {
			name := fmt.Sprintf("fresh-%02d", i)
			if _, err := cmc.Create(ctx, testConfigMap(name, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			w, err := cmc.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			readUntil(t, w, "ADDED "+name)
			w.Stop()
		}
	})
}

func TestWatchBookmarksAndTimeouts(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns, listRV := seedWatchNamespace(t, e, "bookmarks")
	cmc := e.cs.CoreV1().ConfigMaps(ns)
	one, two := int64(1), int64(2)

	t.Run("timeoutSeconds ends the watch", func(t *testing.T) {
		start := time.Now()
		w, err := cmc.Watch(ctx, metav1.ListOptions{ResourceVersion: listRV, TimeoutSeconds: &one})
		if err != nil {
			t.Fatal(err)
		}
		evs := readToEnd(t, w)
		if got := describeAll(evs); !slices.Equal(got, []string{"MODIFIED a"}) {
			t.Errorf("events %v, want only the replayed update and no bookmark", got)
		}
		if d := time.Since(start); d < 900*time.Millisecond {
			t.Errorf("watch ended after %v, before its timeout", d)
		}
	})

	t.Run("a watch allowing bookmarks ends with one", func(t *testing.T) {
		w, err := cmc.Watch(ctx, metav1.ListOptions{ResourceVersion: listRV, TimeoutSeconds: &two, AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		created, err := cmc.Create(ctx, testConfigMap("during", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		evs := readToEnd(t, w)
		got := describeAll(evs)
		if !slices.Equal(got, []string{"MODIFIED a", "ADDED during", "BOOKMARK"}) {
			t.Fatalf("events %v, want the changes then a final BOOKMARK", got)
		}
		// The bookmark tells the client where to resume: past everything sent.
		bm := evs[len(evs)-1].Object.(*corev1.ConfigMap)
		if rvOf(t, bm) < rvOf(t, created) || bm.Name != "" {
			t.Errorf("bookmark %+v: want an empty object at resourceVersion >= %s", bm.ObjectMeta, created.ResourceVersion)
		}
	})

	t.Run("the final bookmark covers only what was sent", func(t *testing.T) {
		// A client resumes from the last bookmark, so every event up to its
		// resourceVersion must have been delivered. Writes racing the
		// watch's end are where a bookmark could claim too much.
		for round := range 2 {
			rns := e.namespace(t, fmt.Sprintf("bookmark-race-%d", round))
			rc := e.cs.CoreV1().ConfigMaps(rns)
			w, err := rc.Watch(ctx, metav1.ListOptions{TimeoutSeconds: &one, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			writerCtx, stopWriter := context.WithCancel(ctx)
			writerDone := make(chan error, 1)
			go func() {
				for i := 0; writerCtx.Err() == nil; i++ {
					_, err := rc.Create(writerCtx, testConfigMap(fmt.Sprintf("cm-%04d", i), nil), metav1.CreateOptions{})
					if err != nil && writerCtx.Err() == nil {
						writerDone <- err
						return
					}
				}
				writerDone <- nil
			}()
			evs := readToEnd(t, w)
			stopWriter()
			if err := <-writerDone; err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 || evs[len(evs)-1].Type != watch.Bookmark {
				t.Fatalf("round %d: watch did not end with a bookmark", round)
			}
			bookmarkRV := rvOf(t, evs[len(evs)-1].Object)
			seen := map[string]bool{}
			for _, ev := range evs[:len(evs)-1] {
				seen[ev.Object.(*corev1.ConfigMap).Name] = true
			}
			list, err := rc.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cm := range list.Items {
				if rvOf(t, &cm) <= bookmarkRV && !seen[cm.Name] {
					t.Fatalf("round %d: %s (resourceVersion %s) is covered by the final bookmark at %d but was never sent",
						round, cm.Name, cm.ResourceVersion, bookmarkRV)
				}
			}
		}
	})

	t.Run("sendInitialEvents ends the initial state with a marked bookmark", func(t *testing.T) {
		for _, rv := range []string{"", listRV} {
			t.Run("resourceVersion "+rv, func(t *testing.T) {
				w, err := cmc.Watch(ctx, metav1.ListOptions{SendInitialEvents: new(true), AllowWatchBookmarks: true,
					ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				evs := readUntil(t, w, "BOOKMARK")
				if got := describeAll(evs); !slices.Equal(got, []string{"ADDED a", "ADDED b", "ADDED during", "BOOKMARK"}) {
					t.Fatalf("events %v", got)
				}
				bm := evs[len(evs)-1].Object.(*corev1.ConfigMap)
				if bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
					t.Fatalf("bookmark annotations %v, want %s=true", bm.Annotations, metav1.InitialEventsAnnotationKey)
				}
				for _, ev := range evs[:len(evs)-1] {
					if rvOf(t, ev.Object) > rvOf(t, bm) {
						t.Errorf("initial event %s is newer than the bookmark", describe(ev))
					}
				}
				// After the bookmark the watch goes on with changes.
				if err := cmc.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				readUntil(t, w, "DELETED b")
				if _, err := cmc.Create(ctx, testConfigMap("b", map[string]string{"app": "w"}), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			})
		}
	})

	t.Run("sendInitialEvents requires bookmarks", func(t *testing.T) {
		_, err := cmc.Watch(ctx, metav1.ListOptions{SendInitialEvents: new(true),
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		wantStatus(t, err, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	})
}

// A namespaced watch sees only its namespace, whatever it starts from.
func TestWatchNamespaceScoped(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	a, b := e.namespace(t, "scope-a"), e.namespace(t, "scope-b")
	for _, rv := range []string{"", "0"} {
		t.Run("resourceVersion="+rv, func(t *testing.T) {
			w, err := e.cs.CoreV1().ConfigMaps(a).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			name := "other" + rv
			if _, err := e.cs.CoreV1().ConfigMaps(b).Create(ctx, testConfigMap(name, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			mine := "mine" + rv
			if _, err := e.cs.CoreV1().ConfigMaps(a).Create(ctx, testConfigMap(mine, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, ev := range readUntil(t, w, "ADDED "+mine) {
				if m, ok := ev.Object.(metav1.Object); ok && m.GetNamespace() != a {
					t.Errorf("watch of %s got %s of %s/%s", a, ev.Type, m.GetNamespace(), m.GetName())
				}
			}
		})
	}
}
