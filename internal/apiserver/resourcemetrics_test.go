package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/pki"
)

func TestRMParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		text    string
		wantErr bool
		check   func(t *testing.T, s *rmSample)
	}{
		{
			name: "node and containers with timestamps",
			text: "# HELP x\n# TYPE node_cpu_usage_seconds_total counter\n" +
				"node_cpu_usage_seconds_total 12.5 1000000\n" +
				"node_memory_working_set_bytes 1.5e+09 1000000\n" +
				`container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 3 1000500` + "\n" +
				`container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} 1024 1000500` + "\n" +
				`container_start_time_seconds{container="app",namespace="ns",pod="web"} 900 1000500` + "\n" +
				"resource_scrape_error 0\n",
			check: func(t *testing.T, s *rmSample) {
				if s.node.cpu != 12.5 || s.node.memory != 1.5e9 || !s.node.ts.Equal(time.UnixMilli(1000000)) {
					t.Errorf("node %+v", s.node)
				}
				c := s.containers[rmContainerKey{"ns", "web", "app"}]
				if c.cpu != 3 || c.memory != 1024 || !c.start.Equal(time.Unix(900, 0)) || !c.ts.Equal(time.UnixMilli(1000500)) {
					t.Errorf("container %+v", c)
				}
			},
		},
		{
			name: "escaped label values and no timestamp",
			text: `container_cpu_usage_seconds_total{container="a\"b",namespace="n\\s",pod="p"} 1` + "\n",
			check: func(t *testing.T, s *rmSample) {
				c, ok := s.containers[rmContainerKey{`n\s`, "p", `a"b`}]
				if !ok || c.cpu != 1 || !c.ts.IsZero() {
					t.Errorf("containers %+v", s.containers)
				}
			},
		},
		{name: "no value", text: "node_cpu_usage_seconds_total\n", wantErr: true},
		{name: "bad number", text: "node_cpu_usage_seconds_total x\n", wantErr: true},
		{name: "unterminated label", text: `container_cpu_usage_seconds_total{pod="p 1` + "\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := rmParse([]byte(tc.text))
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

func TestRMCompute(t *testing.T) {
	t0 := time.Unix(1000, 0)
	key := func(c string) rmContainerKey { return rmContainerKey{"ns", "p", c} }
	pt := func(cpu, mem float64, ts, start time.Time) rmPoint {
		return rmPoint{cpu: cpu, memory: mem, hasCPU: true, hasMem: true, ts: ts, start: start}
	}
	prev := &rmSample{node: pt(100, 0, t0, time.Time{}), containers: map[rmContainerKey]rmPoint{
		key("steady"):    pt(10, 5, t0, t0.Add(-time.Minute)),
		key("restarted"): pt(50, 5, t0, t0.Add(-time.Minute)),
	}}
	t1 := t0.Add(10 * time.Second)
	cur := &rmSample{node: pt(120, 2048, t1, time.Time{}), containers: map[rmContainerKey]rmPoint{
		key("steady"):    pt(15, 6, t1, t0.Add(-time.Minute)), // 0.5 cores
		key("restarted"): pt(1, 7, t1, t0.Add(8*time.Second)), // 1 s of cpu in 2 s
		key("new"):       pt(4, 8, t1, t0.Add(6*time.Second)), // 4 s in 4 s
		key("nostart"):   pt(4, 8, t1, time.Time{}),
	}}
	u := rmCompute(prev, cur)
	if !u.nodeOK || u.cpu != 2 || u.memory != 2048 || u.window != 10*time.Second {
		t.Errorf("node: ok %v cpu %v memory %v window %v, want 2 cores, 2048 B over 10s", u.nodeOK, u.cpu, u.memory, u.window)
	}
	want := map[string]float64{"new": 1, "restarted": 0.5, "steady": 0.5}
	got := u.pods["ns/p"]
	if len(got) != len(want) {
		t.Fatalf("containers %+v, want %v (nostart has no rate)", got, want)
	}
	for i, c := range got {
		if i > 0 && got[i-1].name > c.name {
			t.Errorf("containers not in name order: %+v", got)
		}
		if math.Abs(c.cpu-want[c.name]) > 1e-9 {
			t.Errorf("container %s: %v cores, want %v", c.name, c.cpu, want[c.name])
		}
	}
	t.Run("a counter that went back is no rate", func(t *testing.T) {
		back := *cur
		back.node.cpu = 50
		if u := rmCompute(prev, &back); u.nodeOK {
			t.Errorf("node rate %v from a falling counter", u.cpu)
		}
	})
}

func TestKubeletAddress(t *testing.T) {
	node := func(ip string, port int32, labels ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}}
		for _, l := range labels {
			n.Labels[l] = "true"
		}
		if ip != "" {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "host"}, {Type: corev1.NodeInternalIP, Address: ip}}
		}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
		return n
	}
	for _, tc := range []struct {
		name, want, wantErr string
		node                *corev1.Node
	}{
		{name: "simulated node on loopback", node: node("127.1.0.5", 10250), want: "127.1.0.5:10250"},
		{name: "IPv6 loopback", node: node("::1", 4000), want: "[::1]:4000"},
		{name: "port 0", node: node("127.1.0.5", 0), wantErr: `node "n" does not serve the kubelet API`},
		{name: "simulated node off loopback", node: node("10.0.0.1", 10250, labelSimulated), wantErr: `refusing to dial the kubelet of simulated node "n" at 10.0.0.1`},
		{name: "simulated node on loopback", node: node("127.1.0.6", 10250, labelSimulated), want: "127.1.0.6:10250"},
		// Only the address is computed here: nothing is dialed.
		{name: "real node anywhere", node: node("10.0.0.1", 10250), want: "10.0.0.1:10250"},
		{name: "no InternalIP", node: node("", 10250), wantErr: `node "n" has no InternalIP`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kubeletAddress(tc.node)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// fakeKubelet serves /metrics/resource at a steady 1.5 cores, requiring
// a client certificate of the bundle's CA, and counts scrapes.
type fakeKubelet struct {
	srv               *httptest.Server
	scrapes, inFlight atomic.Int64
	maxInFlight       atomic.Int64
	delay             time.Duration
}

func newFakeKubelet(t *testing.T, b *pki.Bundle, delay time.Duration) *fakeKubelet {
	k := &fakeKubelet{delay: delay}
	start := time.Now()
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := k.inFlight.Add(1)
		defer k.inFlight.Add(-1)
		for {
			m := k.maxInFlight.Load()
			if n <= m || k.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		k.scrapes.Add(1)
		time.Sleep(k.delay)
		now := time.Now()
		ms := strconv.FormatInt(now.UnixMilli(), 10)
		secs := float64(now.UnixMilli()-start.UnixMilli()) / 1000
		fmt.Fprintf(w, "node_cpu_usage_seconds_total %g %s\nnode_memory_working_set_bytes 1048576 %s\n", 1.5*secs, ms, ms)
		fmt.Fprintf(w, "container_cpu_usage_seconds_total{container=\"c\",namespace=\"ns\",pod=\"p\"} %g %s\n", 0.5*secs, ms)
		fmt.Fprintf(w, "container_memory_working_set_bytes{container=\"c\",namespace=\"ns\",pod=\"p\"} 4096 %s\n", ms)
	}))
	cert, err := b.IssueServingCert("kubelet", nil, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: b.CAPool}
	k.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are what some tests want
	k.srv.StartTLS()
	t.Cleanup(k.srv.Close)
	return k
}

func (k *fakeKubelet) node(name string) *corev1.Node {
	host, port, _ := net.SplitHostPort(k.srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(p)
	return n
}

func testScraper(t *testing.T, b *pki.Bundle) *rmScraper {
	cert, err := b.KubeletClientCert(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	m := newRMScraper(clock.RealClock{})
	m.dialer = newKubeletDialer(nil, KubeletClientConfig{Cert: cert, CAs: b.CAPool})
	m.firstGap = 200 * time.Millisecond
	m.resolution = time.Second
	return m
}

func TestRMScraper(t *testing.T) {
	b, err := pki.Ensure(pki.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("first request scrapes twice, then the cache serves", func(t *testing.T) {
		k := newFakeKubelet(t, b, 0)
		m := testScraper(t, b)
		u, err := m.usage(ctx, k.node("n"))
		if err != nil {
			t.Fatal(err)
		}
		if !u.nodeOK || math.Abs(u.cpu-1.5) > 0.05 || u.memory != 1048576 {
			t.Errorf("node usage ok %v cpu %v memory %v, want 1.5 cores 1Mi", u.nodeOK, u.cpu, u.memory)
		}
		if c := u.pods["ns/p"]; len(c) != 1 || math.Abs(c[0].cpu-0.5) > 0.05 || c[0].memory != 4096 {
			t.Errorf("pod usage %+v, want c at 0.5 cores 4Ki", c)
		}
		if n := k.scrapes.Load(); n != 2 {
			t.Errorf("%d scrapes, want 2", n)
		}
		for range 5 {
			if _, err := m.usage(ctx, k.node("n")); err != nil {
				t.Fatal(err)
			}
		}
		if n := k.scrapes.Load(); n != 2 {
			t.Errorf("%d scrapes after cached requests, want 2", n)
		}
		time.Sleep(m.resolution + 100*time.Millisecond)
		if _, err := m.usage(ctx, k.node("n")); err != nil {
			t.Fatal(err)
		}
		if n := k.scrapes.Load(); n != 3 {
			t.Errorf("%d scrapes once the cache expired, want 3", n)
		}
	})

	t.Run("scrapes are limited across nodes", func(t *testing.T) {
		k := newFakeKubelet(t, b, 20*time.Millisecond)
		m := testScraper(t, b)
		m.sem = make(chan struct{}, 2)
		var nodes []*corev1.Node
		for i := range 12 {
			nodes = append(nodes, k.node(fmt.Sprintf("n%d", i)))
		}
		got := m.usageOf(ctx, nodes)
		if len(got) != 12 {
			t.Errorf("usage of %d nodes, want 12", len(got))
		}
		if n := k.maxInFlight.Load(); n > 2 {
			t.Errorf("%d scrapes at once, want at most 2", n)
		}
	})

	t.Run("a kubelet certificate of another CA is refused", func(t *testing.T) {
		other, err := pki.Ensure(pki.Config{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		k := newFakeKubelet(t, other, 0)
		m := testScraper(t, b)
		if _, err := m.usage(ctx, k.node("n")); err == nil {
			t.Fatal("scraped a kubelet whose certificate the cluster CA did not sign")
		}
	})

	t.Run("a simulated node's address off loopback is never dialed", func(t *testing.T) {
		m := testScraper(t, b)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "far", Labels: map[string]string{labelSimulated: "true"}}}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
		_, err := m.usage(ctx, n)
		if err == nil || !strings.Contains(err.Error(), "refusing to dial") {
			t.Errorf("err %v, want a refusal", err)
		}
		// Even a URL that names such an address directly is refused at
		// the socket: only the address chosen for a request is dialed.
		_, err = m.dialer.transport.DialContext(ctx, "tcp", "192.0.2.1:10250")
		if !errors.Is(err, errKubeletRefused) {
			t.Errorf("dial: %v, want errKubeletRefused", err)
		}
	})
}

// A kubelet's plain-text error becomes an API status, as upstream's API
// server makes it, so kubectl shows the kubelet's words.
func TestKubeletCheckResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int
		body   string
		pass   bool
		reason metav1.StatusReason
	}{
		{"ok passes", http.StatusOK, "logs", true, ""},
		{"upgrade passes", http.StatusSwitchingProtocols, "", true, ""},
		{"bad request", http.StatusBadRequest, "container \"app\" is waiting to start\n", false, metav1.StatusReasonBadRequest},
		{"not found", http.StatusNotFound, "pod \"ns/p\" does not exist", false, metav1.StatusReasonNotFound},
		{"internal", http.StatusInternalServerError, "boom", false, metav1.StatusReasonInternalError},
		{"forbidden", http.StatusForbidden, "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[proxy])", false, metav1.StatusReasonForbidden},
		{"other", http.StatusServiceUnavailable, "node sim-0 is stopped", false, metav1.StatusReasonUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.code, Body: io.NopCloser(strings.NewReader(tc.body))}
			err := kubeletCheckResponse(resp)
			if tc.pass {
				if err != nil {
					t.Fatalf("got %v, want the response through", err)
				}
				return
			}
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Reason != tc.reason || int(se.ErrStatus.Code) != tc.code ||
				!strings.Contains(se.ErrStatus.Message, strings.TrimSpace(tc.body)) {
				t.Fatalf("got %#v, want %s %d with %q", err, tc.reason, tc.code, tc.body)
			}
		})
	}
}
