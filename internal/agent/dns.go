package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/dns"
)

// The node's cluster DNS server (Config.DNSAddr): internal/dns, reading
// the API as the node, and the node's entry in the kube-dns Service's
// endpoints — an EndpointSlice kube-system/kube-dns-<node> naming this
// server's address, kept while the agent runs and deleted when it stops,
// so the service proxy sends pods' queries to the servers that are up.

const (
	// DNSManagedBy is the managed-by label of the agents' kube-dns
	// EndpointSlices (a label value cannot hold the "/" of rudder.dev/dns).
	DNSManagedBy = "dns.rudder.dev"
	// DefaultClusterDNS is the kube-dns Service's IP the server creates
	// (the tenth of the default service network).
	DefaultClusterDNS = "10.96.0.10"
	kubeDNSService    = "kube-dns"
	dnsSliceRefresh   = 30 * time.Second
)

// DNSAuto as Config.DNSAddr serves the cluster DNS where every pod can
// reach it without anything else listening there: with the built-in
// bridge network, the gateway of the node's pod CIDR (its first address,
// on the bridge; pods of other nodes reach it through the routes between
// nodes), once the node has its CIDR; with a CNI network, the node's IP
// unless it is loopback. If that address cannot be had the node runs
// without a DNS server, saying so; --dns-addr names another.
const DNSAuto = "auto"

// startDNS starts the DNS server and the publisher of its endpoint.
func (a *Agent) startDNS(ctx context.Context, client kubernetes.Interface) error {
	if a.cfg.DNSAddr != DNSAuto {
		return a.serveDNS(ctx, client, a.cfg.DNSAddr)
	}
	switch {
	case a.cfg.Network == NetworkNone:
		slog.Info("cluster DNS not started: the node has no pod network")
		return nil
	case a.cfg.Network == NetworkBridge:
		// The bridge gets its gateway once the node has a pod CIDR: wait
		// for it in the background rather than hold the agent's start.
		a.run("dns", func() error {
			addr, err := a.bridgeDNSAddr(ctx, client)
			if err != nil {
				if ctx.Err() == nil {
					slog.Warn("cluster DNS not started on this node (pass --dns-addr to choose an address)", "err", err)
				}
				return nil
			}
			if err := a.serveDNS(ctx, client, addr); err != nil {
				slog.Warn("cluster DNS not started on this node (pass --dns-addr to choose an address)", "addr", addr, "err", err)
			}
			return nil
		})
		return nil
	case a.cfg.NodeIP == nil || a.cfg.NodeIP.IsLoopback():
		slog.Info("cluster DNS not started: the node's IP is loopback (pass --dns-addr)", "nodeIP", a.cfg.NodeIP)
		return nil
	}
	addr := net.JoinHostPort(a.cfg.NodeIP.String(), "53")
	if err := a.serveDNS(ctx, client, addr); err != nil {
		slog.Warn("cluster DNS not started on this node (pass --dns-addr to choose an address)", "addr", addr, "err", err)
	}
	return nil
}

// bridgeDNSAddr waits until the node has a pod CIDR and its gateway is an
// address of this network namespace, and returns <gateway>:53.
func (a *Agent) bridgeDNSAddr(ctx context.Context, client kubernetes.Interface) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if gw := a.podGateway(ctx, client); gw != nil && localAddress(gw) {
			return net.JoinHostPort(gw.String(), "53"), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no pod network gateway on this node within 2 minutes")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// podGateway is the first address of the node's (first) pod CIDR, nil
// while it has none.
func (a *Agent) podGateway(ctx context.Context, client kubernetes.Interface) net.IP {
	n, err := client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil || n.Spec.PodCIDR == "" {
		return nil
	}
	_, cidr, err := net.ParseCIDR(n.Spec.PodCIDR)
	if err != nil {
		return nil
	}
	gw := slicesClone(cidr.IP)
	gw[len(gw)-1]++
	return gw
}

func slicesClone(ip net.IP) net.IP { return append(net.IP(nil), ip...) }

// localAddress reports whether ip is assigned to an interface here.
func localAddress(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// serveDNS serves the cluster DNS on addr and lists it in the kube-dns
// endpoints.
func (a *Agent) serveDNS(ctx context.Context, client kubernetes.Interface, addr string) error {
	s, err := dns.New(dns.Config{Client: client, Addrs: []string{addr}, ClusterDomain: a.cfg.ClusterDomain,
		Upstreams: a.cfg.DNSUpstreams})
	if err != nil {
		return err
	}
	a.run("dns", func() error { return s.Run(ctx) })
	ip, port := dnsEndpoint(s.Addrs()[0], a.cfg.NodeIP)
	if ip == nil {
		slog.Info("cluster DNS on loopback only: not listed in the kube-dns endpoints", "addr", s.Addrs()[0])
		return nil
	}
	slog.Info("cluster DNS serving", "addr", s.Addrs()[0])
	p := &dnsPublisher{client: client, node: a.cfg.NodeName, ip: ip, port: port}
	a.run("dns-endpoints", func() error { return p.run(ctx) })
	return nil
}

// dnsEndpoint is the address pods reach the server on: its bound IP, or
// the node's for a wildcard; nil when that is loopback.
func dnsEndpoint(addr string, nodeIP net.IP) (net.IP, int32) {
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() {
		ip = nodeIP
	}
	if ip == nil || ip.IsLoopback() {
		return nil, 0
	}
	return ip, int32(port)
}

type dnsPublisher struct {
	client kubernetes.Interface
	node   string
	ip     net.IP
	port   int32
	// owner is the Node, once read: the slice is owned by it, so the
	// garbage collector removes it with a deleted node whose agent never
	// came back to do so.
	owner []metav1.OwnerReference
}

func (p *dnsPublisher) name() string { return kubeDNSService + "-" + p.node }

// run keeps the slice as it must be until ctx ends, then deletes it.
func (p *dnsPublisher) run(ctx context.Context) error {
	t := time.NewTicker(dnsSliceRefresh)
	defer t.Stop()
	for {
		if err := p.ensure(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("kube-dns endpoint", "node", p.node, "err", err)
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := p.client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Delete(dctx, p.name(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				slog.Warn("removing the kube-dns endpoint", "node", p.node, "err", err)
			}
			return nil
		case <-t.C:
		}
	}
}

// want is the node's slice.
func (p *dnsPublisher) want() *discoveryv1.EndpointSlice {
	ready, node := true, p.node
	addrType := discoveryv1.AddressTypeIPv4
	if p.ip.To4() == nil {
		addrType = discoveryv1.AddressTypeIPv6
	}
	port := func(name string, proto corev1.Protocol) discoveryv1.EndpointPort {
		n := p.port
		return discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &n}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: p.name(), Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			discoveryv1.LabelServiceName: kubeDNSService, discoveryv1.LabelManagedBy: DNSManagedBy}},
		AddressType: addrType,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{p.ip.String()}, NodeName: &node,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
	}
}

func (p *dnsPublisher) ensure(ctx context.Context) error {
	if p.owner == nil {
		if n, err := p.client.CoreV1().Nodes().Get(ctx, p.node, metav1.GetOptions{}); err == nil {
			p.owner = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
		}
	}
	slices := p.client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem)
	want := p.want()
	want.OwnerReferences = p.owner
	cur, err := slices.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = slices.Create(ctx, want, metav1.CreateOptions{})
	case err != nil:
	case cur.AddressType != want.AddressType:
		err = slices.Delete(ctx, want.Name, metav1.DeleteOptions{}) // recreated next pass
	case !equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) || !equality.Semantic.DeepEqual(cur.Ports, want.Ports) ||
		!equality.Semantic.DeepEqual(cur.Labels, want.Labels) || (p.owner != nil && !equality.Semantic.DeepEqual(cur.OwnerReferences, p.owner)):
		cur.Endpoints, cur.Ports, cur.Labels = want.Endpoints, want.Ports, want.Labels
		if p.owner != nil {
			cur.OwnerReferences = p.owner
		}
		_, err = slices.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("endpointslice %s: %w", want.Name, err)
	}
	return nil
}
