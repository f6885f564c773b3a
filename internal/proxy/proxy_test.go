package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/proxy"
)

const testNodeName = "node-a"

type backend struct {
	pod, node string
	ready     bool
}

func endpointSlice(svc, name string, port int32, proto corev1.Protocol, eps []backend, ips map[string]string) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(port), Protocol: ptr.To(proto)}},
	}
	for _, b := range eps {
		ip := ips[b.pod]
		if ip == "" {
			ip = b.pod // a literal address
		}
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(b.ready)}, NodeName: ptr.To(b.node)})
	}
	return sl
}

type proxyEnv struct {
	node   *testNode
	client kubernetes.Interface
	ctx    context.Context
}

func (e *proxyEnv) service(t *testing.T, name string, mutate func(*corev1.Service)) *corev1.Service {
	t.Helper()
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	if mutate != nil {
		mutate(s)
	}
	s, err := e.client.CoreV1().Services("default").Create(e.ctx, s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *proxyEnv) slice(t *testing.T, sl *discoveryv1.EndpointSlice) {
	t.Helper()
	_, err := e.client.DiscoveryV1().EndpointSlices("default").Create(e.ctx, sl, metav1.CreateOptions{})
	if err != nil {
		old, gerr := e.client.DiscoveryV1().EndpointSlices("default").Get(e.ctx, sl.Name, metav1.GetOptions{})
		if gerr != nil {
			t.Fatal(err)
		}
		sl.ResourceVersion = old.ResourceVersion
		if _, err := e.client.DiscoveryV1().EndpointSlices("default").Update(e.ctx, sl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// spread connects n times and counts answers per backend.
func (e *proxyEnv) spread(from, addr string, n int) (map[string]int, error) {
	got := map[string]int{}
	for range n {
		b, _, err := e.node.dialFrom(from, addr)
		if err != nil {
			return got, err
		}
		got[b]++
	}
	return got, nil
}

func TestProxy(t *testing.T) {
	requireRoot(t)
	node := newTestNode(t)
	node.addPod(t, "client", "10.42.0.10")
	for i, b := range []string{"b1", "b2", "b3"} {
		node.addPod(t, b, fmt.Sprintf("10.42.0.%d", 11+i))
		node.serve(t, b, 8080)
	}
	node.addOutside(t, "outside", "192.168.50.2", "192.168.50.1")
	node.serveEcho(t, "b1", 9090)
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := proxy.Config{Client: c.Client, NodeName: testNodeName, NodeIPs: []netip.Addr{netip.MustParseAddr("10.42.0.1"), netip.MustParseAddr("192.168.50.1")},
		ClusterCIDR: netip.MustParsePrefix("10.42.0.0/16"), NetNSPath: node.ns.Path()}
	done := startProxy(t, ctx, cfg)
	e := &proxyEnv{node: node, client: c.Client, ctx: ctx}
	all := []backend{{"b1", testNodeName, true}, {"b2", testNodeName, true}, {"b3", "node-b", true}}

	t.Run("cluster IP spreads over all endpoints", func(t *testing.T) {
		s := e.service(t, "web", nil)
		e.slice(t, endpointSlice("web", "web-1", 8080, corev1.ProtocolTCP, all, node.ips))
		addr := s.Spec.ClusterIP + ":80"
		eventually(t, "all three backends answer", func() error {
			got, err := e.spread("client", addr, 30)
			if err != nil {
				return err
			}
			if len(got) != 3 {
				return fmt.Errorf("answers %v", got)
			}
			return nil
		})
		// From the node itself too (nat output).
		eventually(t, "from the node", func() error { _, _, err := node.dialFrom("node", addr); return err })

		t.Run("removed endpoint gets no new connections", func(t *testing.T) {
			e.slice(t, endpointSlice("web", "web-1", 8080, corev1.ProtocolTCP, all[:2], node.ips))
			eventually(t, "b3 gone", func() error {
				got, err := e.spread("client", addr, 20)
				if err != nil {
					return err
				}
				if got["b3"] > 0 || len(got) != 2 {
					return fmt.Errorf("answers %v", got)
				}
				return nil
			})
		})
		t.Run("hairpin: a backend reaching itself is masqueraded", func(t *testing.T) {
			eventually(t, "b1 through the service", func() error {
				for range 20 {
					b, from, err := node.dialFrom("b1", addr)
					if err != nil {
						return err
					}
					if b == "b1" {
						if from != "10.42.0.1" {
							return fmt.Errorf("b1 saw itself as %s, want the node's 10.42.0.1", from)
						}
						return nil
					}
				}
				return errors.New("never landed on itself")
			})
		})
	})

	t.Run("NodePort via the node IP", func(t *testing.T) {
		s := e.service(t, "np", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
		e.slice(t, endpointSlice("np", "np-1", 8080, corev1.ProtocolTCP, all, node.ips))
		addr := fmt.Sprintf("10.42.0.1:%d", s.Spec.Ports[0].NodePort)
		eventually(t, "node port answers", func() error { _, _, err := node.dialFrom("client", addr); return err })
	})

	t.Run("session affinity sticks", func(t *testing.T) {
		s := e.service(t, "sticky", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
		})
		e.slice(t, endpointSlice("sticky", "sticky-1", 8080, corev1.ProtocolTCP, all, node.ips))
		eventually(t, "one backend for every connection", func() error {
			got, err := e.spread("client", s.Spec.ClusterIP+":80", 20)
			if err != nil {
				return err
			}
			if len(got) != 1 {
				return fmt.Errorf("answers %v", got)
			}
			return nil
		})
	})

	t.Run("externalTrafficPolicy Local", func(t *testing.T) {
		s := e.service(t, "local", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		})
		// b3 is "on another node": external traffic must not reach it.
		e.slice(t, endpointSlice("local", "local-1", 8080, corev1.ProtocolTCP, all, node.ips))
		addr := fmt.Sprintf("10.42.0.1:%d", s.Spec.Ports[0].NodePort)
		addr = fmt.Sprintf("192.168.50.1:%d", s.Spec.Ports[0].NodePort)
		eventually(t, "only local backends from outside", func() error {
			got, err := e.spread("outside", addr, 30)
			if err != nil {
				return err
			}
			if got["b3"] > 0 || len(got) != 2 {
				return fmt.Errorf("answers %v", got)
			}
			return nil
		})
	})

	t.Run("no endpoints: refused at once", func(t *testing.T) {
		s := e.service(t, "empty", nil)
		eventually(t, "connection refused", func() error {
			start := time.Now()
			_, _, err := node.dialFrom("client", s.Spec.ClusterIP+":80")
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("got %v, want connection refused", err)
			}
			if d := time.Since(start); d > time.Second {
				return fmt.Errorf("refused after %v", d)
			}
			return nil
		})
	})

	t.Run("UDP service", func(t *testing.T) {
		s := e.service(t, "dns", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Port: 53, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolUDP}}
		})
		e.slice(t, endpointSlice("dns", "dns-1", 8080, corev1.ProtocolUDP, all[:1], node.ips))
		addr := s.Spec.ClusterIP + ":53"
		eventually(t, "b1 answers", func() error {
			a, err := node.udpFrom("client", addr, 40000)
			if err == nil && a != "b1" {
				err = fmt.Errorf("answer %q", a)
			}
			return err
		})
		// Move the service to b2: the old flow (same source port) is
		// flushed from conntrack, so the next datagram goes to b2.
		e.slice(t, endpointSlice("dns", "dns-1", 8080, corev1.ProtocolUDP, all[1:2], node.ips))
		eventually(t, "b2 answers the same flow", func() error {
			a, err := node.udpFrom("client", addr, 40000)
			if err == nil && a != "b2" {
				err = fmt.Errorf("answer %q", a)
			}
			return err
		})
	})

	t.Run("bad input is survived", func(t *testing.T) {
		s := e.service(t, "big", nil)
		var many []backend
		for i := range 1000 {
			many = append(many, backend{fmt.Sprintf("10.43.%d.%d", i/250, 1+i%250), "node-x", true})
		}
		// (Addresses that are not IPv4 the API server refuses; the
		// planner's skipping of them is in TestPlanService.)
		many = append(many, all[0])
		e.slice(t, endpointSlice("big", "big-1", 8080, corev1.ProtocolTCP, many[:500], node.ips))
		e.slice(t, endpointSlice("big", "big-2", 8080, corev1.ProtocolTCP, many[500:], node.ips))
		_ = s
		// The proxy keeps syncing: a later service works.
		s2 := e.service(t, "after", nil)
		e.slice(t, endpointSlice("after", "after-1", 8080, corev1.ProtocolTCP, all[:1], node.ips))
		eventually(t, "later service answers", func() error { _, _, err := node.dialFrom("client", s2.Spec.ClusterIP+":80"); return err })
	})

	// An established connection through a service survives a restart
	// of the proxy. While no table exists the kernel has no nat hook and
	// does not translate its packets (they are retransmitted); the next
	// proxy's table brings the translation back from conntrack.
	echoSvc := e.service(t, "echo", func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{{Port: 7, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP}}
	})
	e.slice(t, endpointSlice("echo", "echo-1", 9090, corev1.ProtocolTCP, all[:1], node.ips))
	var conn interface {
		Close() error
	}
	var held = func() error { return errors.New("no connection") }
	eventually(t, "echo through the service", func() error {
		c, err := node.connFrom("client", echoSvc.Spec.ClusterIP+":7")
		if err != nil {
			return err
		}
		if err := echo(c, "one"); err != nil {
			c.Close()
			return err
		}
		conn, held = c, func() error { return echo(c, "again") }
		return nil
	})
	defer conn.Close()

	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if ok, err := proxy.TableExists(node.ns.Path(), proxy.DefaultTable); err != nil || ok {
		t.Fatalf("table after stop: exists=%v err=%v", ok, err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	done = startProxy(t, ctx2, cfg)
	eventually(t, "the established connection after a restart", held)
	cancel2()
	<-done
}

// startProxy runs a proxy until ctx ends and waits for its first sync.
func startProxy(t *testing.T, ctx context.Context, cfg proxy.Config) chan error {
	t.Helper()
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-p.Ready():
	case err := <-done:
		t.Fatalf("proxy stopped: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("proxy not ready in 20 s")
	}
	return done
}
