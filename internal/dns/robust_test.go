package dns

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// rawExchange sends b over UDP and returns the reply, nil when none came
// within wait.
func rawExchange(t *testing.T, addr string, b []byte, wait time.Duration) *dns.Msg {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 65535)
	n, err := c.Read(buf)
	if err != nil {
		return nil
	}
	m := new(dns.Msg)
	if err := m.Unpack(buf[:n]); err != nil {
		t.Fatalf("unpack reply: %v", err)
	}
	return m
}

// TestBadInput: malformed queries get FORMERR or nothing, never a crash;
// the server answers normally afterwards.
func TestBadInput(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	fixture(t, c.Client)
	s := startServer(t, c.Client, fakeUpstream(t))
	addr := s.Addrs()[0]
	q := func(name string, qtype uint16, mod func(*dns.Msg)) []byte {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		mod(m)
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := q("web.ns1.svc.cluster.local.", dns.TypeA, func(*dns.Msg) {})
	for _, tc := range []struct {
		name  string
		wire  []byte
		rcode int // -1: no reply
	}{
		{"short header", []byte{1, 2, 3}, -1},
		{"header only, no question (SERVFAIL, as CoreDNS)", good[:12], dns.RcodeServerFailure},
		{"cut in the question", good[:20], dns.RcodeFormatError},
		{"two questions", func() []byte {
			b := q("web.ns1.svc.cluster.local.", dns.TypeA, func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) })
			return b
		}(), dns.RcodeFormatError},
		{"a response", q("web.ns1.svc.cluster.local.", dns.TypeA, func(m *dns.Msg) { m.Response = true }), -1},
		{"an update", q("cluster.local.", dns.TypeSOA, func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate }), dns.RcodeNotImplemented},
		{"class CHAOS", q("version.bind.", dns.TypeTXT, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), dns.RcodeRefused},
		{"EDNS version 1", q("web.ns1.svc.cluster.local.", dns.TypeA, func(m *dns.Msg) { m.SetEdns0(4096, false); m.IsEdns0().SetVersion(1) }), dns.RcodeBadVers},
		{"label pointer loop", append(append([]byte{}, good[:12]...), 0xc0, 12, 0, 1, 0, 1), dns.RcodeFormatError},
		{"text read as a header with an opcode not served", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), dns.RcodeNotImplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rawExchange(t, addr, tc.wire, 300*time.Millisecond)
			switch {
			case tc.rcode == -1 && r != nil:
				t.Errorf("replied %s, want no reply", dns.RcodeToString[r.Rcode])
			case tc.rcode != -1 && r == nil:
				t.Errorf("no reply, want %s", dns.RcodeToString[tc.rcode])
			case r != nil && r.Rcode != tc.rcode:
				t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
			}
		})
	}
	if r := rawExchange(t, addr, good, 2*time.Second); r == nil || len(r.Answer) != 1 {
		t.Fatalf("after the bad input: %v", r)
	}
}

// TestUpdates: answers follow the API within moments, and a name error
// before the first sync is SERVFAIL, not a cacheable NXDOMAIN.
func TestUpdates(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	fixture(t, c.Client)
	s := startServer(t, c.Client, fakeUpstream(t))
	addr := s.Addrs()[0]
	ctx := context.Background()
	waitFor := func(name string, qtype uint16, ok func(*dns.Msg) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if ok(ask(t, addr, name, qtype, "udp")) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no change within 10 s", name)
			}
		}
	}
	svc, err := c.Client.CoreV1().Services("ns1").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443})
	if _, err := c.Client.CoreV1().Services("ns1").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("_https._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV, func(m *dns.Msg) bool { return len(m.Answer) == 1 })
	if err := c.Client.DiscoveryV1().EndpointSlices("ns1").Delete(ctx, "db-def", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("db.ns1.svc.cluster.local.", dns.TypeA, func(m *dns.Msg) bool { return len(m.Answer) == 2 })
	if err := c.Client.CoreV1().Services("ns1").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("web.ns1.svc.cluster.local.", dns.TypeA, func(m *dns.Msg) bool { return m.Rcode == dns.RcodeNameError })
	waitFor("1.100.96.10.in-addr.arpa.", dns.TypePTR, func(m *dns.Msg) bool { return m.Rcode == dns.RcodeNameError && !m.Authoritative })

	// Not synced yet: a server whose lists never arrive answers a name
	// error with SERVFAIL.
	ns, err := New(Config{Client: fake.NewClientset(), Addrs: []string{"127.0.0.1:0"}, Upstreams: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	w := &captureWriter{ResponseWriter: fakeWriter{}}
	m := new(dns.Msg)
	m.SetQuestion("missing.ns1.svc.cluster.local.", dns.TypeA)
	ns.ServeDNS(ctx, w, m)
	if w.msg == nil || w.msg.Rcode != dns.RcodeServerFailure || len(w.msg.Ns) != 1 {
		t.Errorf("before sync: %v", w.msg)
	}
	ns.close()
}

// fakeWriter is a UDP client's ResponseWriter for calls of ServeDNS.
type fakeWriter struct{ dns.ResponseWriter }

func (fakeWriter) RemoteAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353} }

// TestNSWithLocalIPs: the apex NS names the Service whose endpoint this
// server is, with its address in additional.
func TestNSWithLocalIPs(t *testing.T) {
	ix := newIndex()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}}}}
	serviceStore{ix}.Add(svc)
	ready := true
	sliceStore{ix}.Add(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-a", Namespace: "kube-system",
		Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}})
	k := &kube{ix: ix, zones: []string{"cluster.local."}, domain: "cluster.local.", ttl: 5, localIPs: []netip.Addr{netip.MustParseAddr("10.0.0.5")}}
	rr, extra := k.ns(query{qname: "cluster.local.", name: "cluster.local.", qtype: dns.TypeNS, zone: "cluster.local."})
	if len(rr) != 1 || rr[0].(*dns.NS).Ns != "kube-dns.kube-system.svc.cluster.local." || len(extra) != 1 || extra[0].(*dns.A).A.String() != "10.96.0.10" {
		t.Errorf("NS %v extra %v", rr, extra)
	}
}

// TestFlood: 20,000 queries sent as fast as one socket can, to names of
// every kind including forwarded ones to an upstream that never answers,
// leave the goroutines and the heap where they were.
func TestFlood(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	fixture(t, c.Client)
	// An upstream that swallows everything: forwarded queries wait out
	// their timeout, the case that could pile up.
	black, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer black.Close()
	s, err := New(Config{Client: c.Client, Addrs: []string{"127.0.0.1:0"}, Upstreams: []string{black.LocalAddr().String()},
		ForwardTimeout: 200 * time.Millisecond, MaxForwards: 50})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	for deadline := time.Now().Add(20 * time.Second); !s.Synced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no sync")
		}
	}
	measure := func() (int, uint64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}
	g0, h0 := measure()
	conn, err := net.Dial("udp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	names := []string{"web.ns1.svc.cluster.local.", "missing.ns1.svc.cluster.local.", "db.ns1.svc.cluster.local.", "slow.example."}
	for i := range 20000 {
		m := new(dns.Msg)
		m.SetQuestion(names[i%len(names)], dns.TypeA)
		b, _ := m.Pack()
		conn.Write(b)
	}
	// Wait for the forwarded ones to time out, then compare.
	var g1 int
	var h1 uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		g1, h1 = measure()
		if g1 <= g0+10 || time.Now().After(deadline) {
			break
		}
	}
	if g1 > g0+10 {
		t.Errorf("goroutines %d → %d after the flood", g0, g1)
	}
	if h1 > h0+32<<20 {
		t.Errorf("heap %d → %d MiB after the flood", h0>>20, h1>>20)
	}
	if r := ask(t, s.Addrs()[0], "web.ns1.svc.cluster.local.", dns.TypeA, "udp"); len(r.Answer) != 1 {
		t.Errorf("after the flood: %v", r)
	}
}

// TestConfigErrors: settings that cannot work are refused with a clear
// error and leave no socket bound.
func TestConfigErrors(t *testing.T) {
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	c := fake.NewClientset()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{Addrs: []string{"127.0.0.1:0"}}},
		{"no address", Config{Client: c}},
		{"bad address", Config{Client: c, Addrs: []string{"nowhere"}}},
		{"address in use", Config{Client: c, Addrs: []string{"127.0.0.1:0", busy.LocalAddr().String()}, Upstreams: []string{"127.0.0.1"}}},
		{"bad domain", Config{Client: c, Addrs: []string{"127.0.0.1:0"}, ClusterDomain: "bad..domain"}},
		{"bad upstream", Config{Client: c, Addrs: []string{"127.0.0.1:0"}, Upstreams: []string{"resolver.example"}}},
		{"bad upstream port", Config{Client: c, Addrs: []string{"127.0.0.1:0"}, Upstreams: []string{"127.0.0.1:99999"}}},
		{"TTL too long", Config{Client: c, Addrs: []string{"127.0.0.1:0"}, TTL: 86400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.cfg)
			if err == nil {
				s.close()
				t.Fatal("accepted")
			}
			t.Log(err)
		})
	}
}

// TestMutatedQueries: every message that unpacks from a randomly damaged
// query is answered without a panic.
func TestMutatedQueries(t *testing.T) {
	s := benchServer(t)
	ix := s.ix
	namespaceStore{ix}.Update(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}})
	rng := rand.New(rand.NewPCG(1, 2))
	var seeds [][]byte
	for _, q := range goldenQueries {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		m.SetEdns0(1232, true)
		b, _ := m.Pack()
		seeds = append(seeds, b)
	}
	answered := 0
	for i := range 20000 {
		b := append([]byte(nil), seeds[i%len(seeds)]...)
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		m := new(dns.Msg)
		if m.Unpack(b) != nil {
			continue
		}
		w := &captureWriter{ResponseWriter: fakeWriter{}}
		s.ServeDNS(context.Background(), w, m)
		answered++
	}
	if n := s.panics.Load(); n > 0 {
		t.Fatalf("%d queries panicked", n)
	}
	if answered < 1000 {
		t.Fatalf("only %d mutated queries unpacked", answered)
	}
}
