package dns

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// packWriter packs each reply as the UDP server would, without a socket.
type packWriter struct {
	fakeWriter
	n int
}

func (w *packWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	w.n += len(b)
	return err
}

// benchServer is a server over 1,000 services, fed directly (no API).
func benchServer(b testing.TB) *Server {
	s, err := New(Config{Client: fake.NewClientset(), Addrs: []string{"127.0.0.1:0"}, Upstreams: []string{"127.0.0.1:1"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.close)
	namespaceStore{s.ix}.Replace([]any{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}}, "")
	var svcs []any
	for i := range 1000 {
		svcs = append(svcs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d", i), Namespace: "bench"},
			Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
	}
	serviceStore{s.ix}.Replace(svcs, "")
	sliceStore{s.ix}.Replace(nil, "")
	return s
}

// BenchmarkServe is the cost of answering one A query for a service
// name, reply packed, without the socket.
func BenchmarkServe(b *testing.B) {
	s := benchServer(b)
	m := new(dns.Msg)
	m.SetQuestion("svc-42.bench.svc.cluster.local.", dns.TypeA)
	w := &packWriter{}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s.ServeDNS(ctx, w, m)
	}
}

// BenchmarkUDP is one client asking over loopback UDP, one query at a
// time: the round trip, server and client on the same cores.
func BenchmarkUDP(b *testing.B) {
	s := benchServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	conn, err := net.Dial("udp", s.Addrs()[0])
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	m := new(dns.Msg)
	m.SetQuestion("svc-42.bench.svc.cluster.local.", dns.TypeA)
	q, _ := m.Pack()
	buf := make([]byte, 512)
	conn.SetDeadline(time.Now().Add(time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(q); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}
