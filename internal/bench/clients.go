package bench

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

const (
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	mediaJSON     = "application/json"
)

// clientPool is n client-go clients, each on its own HTTP/2 connection.
// Without this, client-go would share one cached transport, and every
// request and watch of the benchmark would multiplex on a single TCP
// connection, read by one goroutine on each side: that measures the
// connection, not the server, and is not how many independent clients
// reach a real API server.
type clientPool struct {
	conns []conn
	json  kubernetes.Interface // JSON, for the LIST stage's comparison
}

// conn is one connection's clients: a typed clientset and a REST client for
// metadata-only watches, sharing the connection.
type conn struct {
	typed kubernetes.Interface
	meta  rest.Interface
}

func newClientPool(ctx context.Context, base *rest.Config, n int) (*clientPool, error) {
	p := &clientPool{}
	for i := 0; i < n; i++ {
		cfg := connConfig(base, mediaProtobuf)
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		typed, err := kubernetes.NewForConfigAndClient(cfg, hc)
		if err != nil {
			return nil, err
		}
		mcfg := rest.CopyConfig(cfg)
		mcfg.APIPath = "/api"
		mcfg.GroupVersion = &corev1.SchemeGroupVersion
		mcfg.AcceptContentTypes = mediaProtobuf
		mcfg.NegotiatedSerializer = metadataSerializer{scheme.Codecs.WithoutConversion()}
		meta, err := rest.RESTClientForConfigAndClient(mcfg, hc)
		if err != nil {
			return nil, err
		}
		p.conns = append(p.conns, conn{typed: typed, meta: meta})
	}
	json, err := kubernetes.NewForConfig(connConfig(base, mediaJSON))
	if err != nil {
		return nil, err
	}
	p.json = json
	// Open every connection now, so TLS handshakes are not timed as part of
	// the first stage.
	clients := []kubernetes.Interface{json}
	for _, c := range p.conns {
		clients = append(clients, c.typed)
	}
	for i, cs := range clients {
		if _, err := cs.Discovery().ServerVersion(); err != nil {
			return nil, fmt.Errorf("connection %d: %w", i, err)
		}
	}
	return p, ctx.Err()
}

// get returns the clientset of worker i: workers are spread round-robin.
func (p *clientPool) get(i int) kubernetes.Interface { return p.conns[i%len(p.conns)].typed }

// watchPods opens watcher i's watch, decoding events in full or their
// metadata only.
func (p *clientPool) watchPods(ctx context.Context, i int, namespace, decode string, opts metav1.ListOptions) (watch.Interface, error) {
	c := p.conns[i%len(p.conns)]
	if decode == DecodeMetadata {
		opts.Watch = true
		return c.meta.Get().Namespace(namespace).Resource("pods").VersionedParams(&opts, scheme.ParameterCodec).Watch(ctx)
	}
	return c.typed.CoreV1().Pods(namespace).Watch(ctx, opts)
}

// connConfig is base made into a benchmark client of its own connection.
func connConfig(base *rest.Config, media string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.UserAgent = "rudder-bench"
	cfg.ContentType = media
	cfg.AcceptContentTypes = media
	if media == mediaProtobuf {
		cfg.AcceptContentTypes = mediaProtobuf + "," + mediaJSON
	}
	// No client-side throttling: the benchmark measures the server, and
	// client-go's default of 5 QPS would measure the limiter.
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.Timeout = 0 // watches live as long as their stage
	// client-go caches transports by TLS settings, so equal configs would
	// share one connection. A Dial of its own makes the cache key unique.
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = d.DialContext
	return cfg
}
