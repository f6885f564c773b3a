package apiserver

// Watch-cache benchmarks, in memory (the cache is fed directly, as its
// etcd watch would feed it; etcd only backs the server's setup):
//
//	go test -run '^$' -bench 'BenchmarkWatchCache' -benchmem ./internal/apiserver/
//
// scripts/allocs.sh guards their allocations per operation.

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/storage"
)

// benchCache returns the pods handler of a fresh server and a watch cache
// of its pods holding n pods, fed without etcd.
func benchCache(b *testing.B, n int) (*resourceHandler, *watchCache) {
	s := newApplyServer(b)
	h := s.handlers[schema.GroupVersionResource{Version: "v1", Resource: "pods"}]
	c := newWatchCache(h.res, nil, s.codec, s.codecs, 1000)
	var batch storage.Batch
	for i := 0; i < n; i++ {
		batch.Events = append(batch.Events, storage.Event{Type: storage.EventPut, KV: benchKV(b, s, h, i, "0", int64(i+1))})
	}
	batch.Revision = int64(n)
	c.apply(batch)
	return h, c
}

// benchKV is pod number i with label rev, as etcd would hand it over.
func benchKV(b *testing.B, s *Server, h *resourceHandler, i int, rev string, modRev int64) *storage.KV {
	pod := benchPod("p"+strconv.Itoa(i), 1, rev)
	pod.UID = "uid-" + types.UID(strconv.Itoa(i))
	h.res.Default(pod)
	data, err := s.codec.Encode(pod)
	if err != nil {
		b.Fatal(err)
	}
	return &storage.KV{Key: h.prefix("default") + pod.Name, Value: data, ModRevision: modRev, CreateRevision: int64(i + 1)}
}

// BenchmarkWatchCacheList measures a LIST of 1,000 pods served from the
// watch cache in protobuf, encodings cached: the selection and the
// response's assembly.
func BenchmarkWatchCacheList(b *testing.B) {
	h, c := benchCache(b, 1000)
	r := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods", nil)
	t := target{media: mediaProtobuf}
	prefix := h.prefix("default")
	items, _ := c.list(prefix, nil)
	h.writeList(discardWriter{}, r, t, items, metav1.ListMeta{}) // warm the encodings
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		items, rev := c.list(prefix, nil)
		h.writeList(discardWriter{}, r, t, items, metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)})
	}
}

// BenchmarkWatchCacheDispatch measures one pod update going through the
// cache (decoded once, appended to the ring) and out to 100 watchers, half
// of them with a label selector, in protobuf.
func BenchmarkWatchCacheDispatch(b *testing.B) {
	h, c := benchCache(b, 100)
	sel := labels.SelectorFromSet(labels.Set{"app": "bench"})
	const watchers = 100
	ws := make([]*watcher, watchers)
	for i := range ws {
		ws[i] = &watcher{h: h, w: bufio.NewWriterSize(io.Discard, 64<<10), t: target{media: mediaProtobuf}}
		if i%2 == 1 {
			ws[i].match = func(o *cacheObject) bool { return sel.Matches(labels.Set(o.meta.GetLabels())) }
		}
	}
	// Two versions of pod p7, alternated: each iteration is a Modified.
	kvs := [2]*storage.KV{}
	for j := range kvs {
		kvs[j] = benchKV(b, h.s, h, 7, strconv.Itoa(j+1), 0)
	}
	seq := c.next
	buf := make([]*cacheEvent, 0, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rev := int64(1000 + i)
		kv := *kvs[i%2]
		kv.ModRevision = rev
		c.apply(storage.Batch{Events: []storage.Event{{Type: storage.EventPut, KV: &kv}}, Revision: rev})
		var err error
		buf, seq, _, _, err = c.readEvents(seq, c.generation, 16, buf)
		if err != nil || len(buf) != 1 {
			b.Fatalf("read %d events: %v", len(buf), err)
		}
		for _, ww := range ws {
			if err := ww.dispatch(buf[0]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{}

var discardHeader = http.Header{}

func (discardWriter) Header() http.Header         { return discardHeader }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}
