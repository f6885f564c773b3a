package agent

import (
	"context"
	"net"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/dns"
)

// TestClusterDNSWiring checks, as a node would act: the server made the
// kube-dns Service on 10.96.0.10; a node's credentials may run DNS (read
// Services, EndpointSlices, Namespaces) and publish its endpoint; the
// endpoint goes when the agent stops; DNS answers kube-dns by name.
func TestClusterDNSWiring(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	creds, err := LocalCredentials(c.Server.PKI, t.TempDir(), c.Server.URL, "node-a", net.ParseIP("10.0.0.5"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", creds.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	node, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	poll := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20 s", what)
			}
		}
	}
	poll("kube-dns service", func() bool {
		svc, err := c.Client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
		return err == nil && svc.Spec.ClusterIP == DefaultClusterDNS && len(svc.Spec.Ports) == 3 && svc.Spec.Selector == nil
	})

	// The node as its kubelet registers it: the slice is owned by it.
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	p := &dnsPublisher{client: node, node: "node-a", ip: net.ParseIP("10.0.0.5"), port: 53}
	done := make(chan error, 1)
	go func() { done <- p.run(pctx) }()
	var slice *discoveryv1.EndpointSlice
	poll("the node's kube-dns endpointslice", func() bool {
		slice, err = c.Client.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, "kube-dns-node-a", metav1.GetOptions{})
		return err == nil
	})
	if slice.Labels[discoveryv1.LabelServiceName] != "kube-dns" || slice.Labels[discoveryv1.LabelManagedBy] != DNSManagedBy ||
		slice.Endpoints[0].Addresses[0] != "10.0.0.5" || *slice.Endpoints[0].NodeName != "node-a" || *slice.Ports[0].Port != 53 ||
		len(slice.OwnerReferences) != 1 || slice.OwnerReferences[0].Kind != "Node" {
		t.Errorf("slice %+v", slice)
	}

	s, err := dns.New(dns.Config{Client: node, Addrs: []string{"127.0.0.1:0"}, Upstreams: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	sctx, sstop := context.WithCancel(ctx)
	defer sstop()
	go s.Run(sctx)
	poll("dns sync as the node", s.Synced)
	m := new(mdns.Msg)
	m.SetQuestion("kube-dns.kube-system.svc.cluster.local.", mdns.TypeA)
	r, _, err := new(mdns.Client).Exchange(m, s.Addrs()[0])
	if err != nil || len(r.Answer) != 1 || r.Answer[0].(*mdns.A).A.String() != DefaultClusterDNS {
		t.Fatalf("kube-dns A: %v %v", r, err)
	}
	m.SetQuestion("_dns._udp.kube-dns.kube-system.svc.cluster.local.", mdns.TypeSRV)
	if r, _, err = new(mdns.Client).Exchange(m, s.Addrs()[0]); err != nil || len(r.Answer) != 1 {
		t.Fatalf("kube-dns SRV: %v %v", r, err)
	}

	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, "kube-dns-node-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the endpoint outlived its agent: %v", err)
	}
	// A node may not write EndpointSlices outside kube-system.
	p2 := &dnsPublisher{client: node, node: "node-a", ip: net.ParseIP("10.0.0.5"), port: 53}
	w := p2.want()
	w.Namespace = "default"
	if _, err := node.DiscoveryV1().EndpointSlices("default").Create(ctx, w, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node wrote an EndpointSlice in default: %v", err)
	}
}

func TestDNSEndpoint(t *testing.T) {
	for _, tc := range []struct {
		addr, node, want string
		port             int32
	}{
		{"10.0.0.5:53", "10.0.0.9", "10.0.0.5", 53},
		{"0.0.0.0:5353", "10.0.0.9", "10.0.0.9", 5353},
		{"127.0.0.1:53", "10.0.0.9", "", 0},
		{"[::]:53", "127.0.0.1", "", 0},
	} {
		ip, port := dnsEndpoint(tc.addr, net.ParseIP(tc.node))
		if got := ""; ip != nil {
			got = ip.String()
			if got != tc.want || port != tc.port {
				t.Errorf("%s: %s %d", tc.addr, got, port)
			}
		} else if tc.want != "" {
			t.Errorf("%s: no endpoint", tc.addr)
		}
	}
}
