package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

const listPrefix = "list"

// runList grows the (so far empty) namespace through each of the sizes and,
// at each, measures LIST with resourceVersion=0 — the read informers start
// with, which the server answers from its watch cache without touching
// etcd — in protobuf and in JSON.
func runList(ctx context.Context, env *env) []ListResult {
	var out []ListResult
	have := 0
	fillers := maxOf(env.cfg.Clients)
	for _, size := range env.cfg.ListSizes {
		var maxRV atomic.Int64
		fill := runOps(ctx, env.pool, "fill", fillers, size-have, func(ctx context.Context, cs kubernetes.Interface, i int) error {
			p, err := cs.CoreV1().Pods(env.namespace).Create(ctx, env.pods.pod(listPrefix, have+i), metav1.CreateOptions{})
			if err == nil {
				storeMax(&maxRV, p.ResourceVersion)
			}
			return err
		})
		have = size
		if fill.Errors > 0 {
			env.logf("list: filling to %d pods: %d errors (first: %s)", size, fill.Errors, fill.FirstError)
			out = append(out, ListResult{Pods: size, Encoding: "fill", Errors: fill.Errors})
			return out
		}
		env.logf("list: namespace holds %d pods (filled at %.0f creates/s)", size, fill.PerSec)
		// A GET at the newest resourceVersion returns only once the cache
		// has caught up with every create, so the LISTs below see all of
		// them. GET encodes one pod: the LISTs' first run stays cold.
		_, err := env.pool.get(0).CoreV1().Pods(env.namespace).Get(ctx, podName(listPrefix, 0),
			metav1.GetOptions{ResourceVersion: strconv.FormatInt(maxRV.Load(), 10)})
		if err != nil {
			env.logf("list: waiting for the cache: %v", err)
		}
		out = append(out,
			measureList(ctx, env.pool.get(0).CoreV1().RESTClient(), env, size, "protobuf"),
			measureList(ctx, env.pool.json.CoreV1().RESTClient(), env, size, "json"))
	}
	return out
}

// measureList times one cold LIST, then cfg.ListReps warm ones. The time
// is to the last byte of the body, which is what the server controls; the
// client's decoding is timed once, apart, because for JSON it dwarfs the
// serving and would hide it.
func measureList(ctx context.Context, rc rest.Interface, env *env, size int, encoding string) ListResult {
	res := ListResult{Pods: size, Encoding: encoding, Reps: env.cfg.ListReps}
	get := func() ([]byte, time.Duration, error) {
		t0 := time.Now()
		raw, err := rc.Get().Namespace(env.namespace).Resource("pods").Param("resourceVersion", "0").DoRaw(ctx)
		return raw, time.Since(t0), err
	}
	raw, cold, err := get()
	if err != nil {
		env.logf("list %d %s: %v", size, encoding, err)
		res.Errors++
		return res
	}
	res.ColdMS = round3(float64(cold) / float64(time.Millisecond))
	res.Bytes = len(raw)

	t0 := time.Now()
	var list corev1.PodList
	_, _, err = scheme.Codecs.UniversalDeserializer().Decode(raw, nil, &list)
	res.DecodeMS = round3(float64(time.Since(t0)) / float64(time.Millisecond))
	if err != nil || len(list.Items) != size {
		env.logf("list %d %s: decoded %d items, err %v", size, encoding, len(list.Items), err)
		res.Errors++
	}

	var h histogram
	for r := 0; r < env.cfg.ListReps && ctx.Err() == nil; r++ {
		raw, d, err := get()
		if err != nil || len(raw) != res.Bytes {
			res.Errors++
			continue
		}
		h.record(d)
	}
	res.summary = h.summary()
	return res
}

// storeMax keeps the largest resourceVersion seen. resourceVersions are
// opaque to clients in general; every server this benchmark targets uses
// etcd revisions, and only the wait above relies on it.
func storeMax(m *atomic.Int64, rv string) {
	v, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return
	}
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

func maxOf(vals []int) int {
	m := 0
	for _, v := range vals {
		m = max(m, v)
	}
	return m
}
