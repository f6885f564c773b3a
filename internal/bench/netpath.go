package bench

import (
	"context"
	"errors"
	"fmt"

	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/netns"
	"github.com/rudder-dev/rudder/internal/network"
	"github.com/rudder-dev/rudder/internal/proxy"
	"github.com/rudder-dev/rudder/internal/server"
)

// The data-path benchmarks (`rudder bench network --part connect,throughput`)
// build a small cluster out of network namespaces: a fresh API server,
// two "nodes" (namespaces joined by one veth "wire", 192.168.97.0/24),
// each running the built-in pod network (internal/network), and "pods"
// (namespaces) networked by it exactly as the agent's sandboxes are.
// Nothing routes out of these namespaces; all of them are removed when
// the run ends, also on error.

const (
	wireA, wireB   = "192.168.97.1", "192.168.97.2"
	podCIDRA       = "10.42.1.0/24"
	podCIDRB       = "10.42.2.0/24"
	benchClusterIP = "10.42.0.0/16"
	serverPort     = 8080
)

// netLab is one run's namespaces, networks and proxies; close undoes
// them all in reverse order.
type netLab struct {
	dir     string
	client  kubernetes.Interface
	undo    []func()
	nodes   map[string]*netns.NS
	nets    map[string]*network.Network
	nodeIPs map[string]string
}

func (l *netLab) close() {
	for i := len(l.undo) - 1; i >= 0; i-- {
		l.undo[i]()
	}
	l.undo = nil
	if l.dir != "" {
		os.RemoveAll(l.dir)
	}
}

func (l *netLab) netns(name string) (*netns.NS, error) {
	ns, err := netns.Pinned(l.dir, name)
	if err != nil {
		return nil, err
	}
	l.undo = append(l.undo, func() { ns.Close() })
	if err := ns.Do(func() error { return linkUp("lo") }); err != nil {
		return nil, err
	}
	return ns, nil
}

func linkUp(name string) error {
	lk, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	return netlink.LinkSetUp(lk)
}

// vethPair joins a and b by a veth named ifname on both ends, addressed
// addrA and addrB (CIDR notation).
func vethPair(a, b *netns.NS, ifname, addrA, addrB string) error {
	fdB, err := unix.Open(b.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fdB)
	if err := a.Do(func() error {
		return netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifname}, PeerName: ifname, PeerNamespace: netlink.NsFd(fdB)})
	}); err != nil {
		return fmt.Errorf("veth %s: %w", ifname, err)
	}
	for _, s := range []struct {
		ns   *netns.NS
		addr string
	}{{a, addrA}, {b, addrB}} {
		if err := s.ns.Do(func() error {
			lk, err := netlink.LinkByName(ifname)
			if err != nil {
				return err
			}
			ad, err := netlink.ParseAddr(s.addr)
			if err != nil {
				return err
			}
			if err := netlink.AddrAdd(lk, ad); err != nil {
				return err
			}
			return netlink.LinkSetUp(lk)
		}); err != nil {
			return fmt.Errorf("veth %s: %w", ifname, err)
		}
	}
	return nil
}

// newNetLab starts an API server and two nodes, a and b, on one wire,
// running the built-in network with backend. With withProxy, node a
// also runs the service proxy.
func newNetLab(ctx context.Context, backend network.Backend, withProxy bool) (_ *netLab, err error) {
	dir, err := os.MkdirTemp("", "rudder-bench-netlab-")
	if err != nil {
		return nil, err
	}
	l := &netLab{dir: dir, nodes: map[string]*netns.NS{}, nets: map[string]*network.Network{},
		nodeIPs: map[string]string{"a": wireA, "b": wireB}}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	rc, _, stop, err := startEmbedded(ctx, server.Config{DisableScheduler: true, Controllers: []string{"-*"}})
	if err != nil {
		return nil, err
	}
	l.undo = append(l.undo, stop)
	if l.client, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	for _, name := range []string{"a", "b"} {
		if l.nodes[name], err = l.netns("node-" + name); err != nil {
			return nil, err
		}
		// Same-node Service traffic is bridged back to a pod on the
		// bridge; the proxy's conntrack must see it (as on any node
		// running kube-proxy).
		if err := l.nodes[name].Do(func() error {
			return os.WriteFile("/proc/sys/net/bridge/bridge-nf-call-iptables", []byte("1"), 0o644)
		}); err != nil {
			return nil, fmt.Errorf("bridge-nf-call-iptables (is br_netfilter loaded?): %w", err)
		}
	}
	if err := vethPair(l.nodes["a"], l.nodes["b"], "wire0", wireA+"/24", wireB+"/24"); err != nil {
		return nil, err
	}
	for name, cidr := range map[string]string{"a": podCIDRA, "b": podCIDRB} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}}}
		if n, err = l.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: l.nodeIPs[name]}}
		if _, err = l.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{"a", "b"} {
		state := filepath.Join(dir, "state-"+name)
		cni := filepath.Join(dir, "cni-"+name)
		if err := os.MkdirAll(cni, 0o755); err != nil {
			return nil, err
		}
		nw, err := network.New(network.Config{NodeName: name, NodeIP: net.ParseIP(l.nodeIPs[name]), Client: l.client,
			StateDir: state, NodeNetNS: l.nodes[name].Path(), CNIConfDir: cni, Backend: backend,
			ClusterCIDRs: []string{benchClusterIP}, ReadyTimeout: 20 * time.Second})
		if err != nil {
			return nil, err
		}
		if err := nw.Start(ctx); err != nil {
			return nil, err
		}
		l.undo = append(l.undo, nw.Stop)
		l.nets[name] = nw
	}
	for name, nw := range l.nets {
		if err := poll(ctx, 20*time.Second, func() error { return nw.Ready() }); err != nil {
			return nil, fmt.Errorf("network on node %s: %w", name, err)
		}
	}
	if withProxy {
		p, err := proxy.New(proxy.Config{Client: l.client, NodeName: "a", NodeIPs: []netip.Addr{netip.MustParseAddr(wireA)},
			ClusterCIDR: netip.MustParsePrefix(benchClusterIP), NetNSPath: l.nodes["a"].Path()})
		if err != nil {
			return nil, err
		}
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Run(pctx) }()
		l.undo = append(l.undo, func() { cancel(); <-done })
		select {
		case <-p.Ready():
		case err := <-done:
			return nil, fmt.Errorf("proxy: %w", err)
		case <-time.After(20 * time.Second):
			return nil, errors.New("proxy: not synced within 20s")
		}
	}
	return l, nil
}

// pod creates a pod namespace on node and networks it; it returns the
// namespace and the pod's IPv4 address.
func (l *netLab) pod(ctx context.Context, node, name string) (*netns.NS, string, error) {
	ns, err := l.netns("pod-" + name)
	if err != nil {
		return nil, "", err
	}
	ips, err := l.nets[node].Setup(ctx, name, ns.Path(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("pod %s: %w", name, err)
	}
	l.undo = append(l.undo, func() { l.nets[node].Teardown(context.Background(), name, ns.Path()) })
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
			return ns, ip, nil
		}
	}
	return nil, "", fmt.Errorf("pod %s: no IPv4 address in %v", name, ips)
}

// service creates a NodePort Service on port 80 and its EndpointSlice
// naming the one endpoint ip:serverPort on node.
func (l *netLab) service(ctx context.Context, name, ip, node string) (*corev1.Service, error) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	svc, err := l.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(int32(serverPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, NodeName: ptr.To(node)}},
	}
	if _, err := l.client.DiscoveryV1().EndpointSlices("default").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	return svc, nil
}

// listen opens a TCP listener on addr inside ns and serves each
// connection with serve until the lab closes.
func (l *netLab) listen(ns *netns.NS, addr string, serve func(net.Conn)) error {
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return }); err != nil {
		return err
	}
	l.undo = append(l.undo, func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serve(c) }()
		}
	}()
	return nil
}

// poll calls f until it succeeds, ctx ends or d passes.
func poll(ctx context.Context, d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s: %w", d, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
