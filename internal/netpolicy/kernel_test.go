package netpolicy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/netpolicy"
)

const testNode = "node-a"

// testNet is a node namespace with a bridge (10.42.0.1/24) and pod
// namespaces on it by veths; nothing in it routes anywhere else.
type testNet struct {
	dir  string
	node *netpolicy.TestNetNS
	pods map[string]*netpolicy.TestNetNS
}

func newTestNet(t *testing.T) *testNet {
	t.Helper()
	netpolicy.RequireRoot(t)
	n := &testNet{dir: t.TempDir(), pods: map[string]*netpolicy.TestNetNS{}}
	n.node = netpolicy.TempNetNS(t, n.dir, "node")
	err := n.node.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return err
		}
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
		addr, _ := netlink.ParseAddr("10.42.0.1/24")
		if err := netlink.AddrAdd(br, addr); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(br); err != nil {
			return err
		}
		for file, v := range map[string]string{
			"/proc/sys/net/ipv4/ip_forward":                "1",
			"/proc/sys/net/bridge/bridge-nf-call-iptables": "1",
		} {
			if err := os.WriteFile(file, []byte(v), 0o644); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("node namespace: %v", err)
	}
	return n
}

func (n *testNet) addPod(t *testing.T, name, ip string) {
	t.Helper()
	pod := netpolicy.TempNetNS(t, n.dir, name)
	fd, err := unix.Open(pod.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	err = n.node.Do(func() error {
		br, err := netlink.LinkByName("br0")
		if err != nil {
			return err
		}
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v-" + name, MasterIndex: br.Attrs().Index}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("veth: %w", err)
		}
		host, err := netlink.LinkByName("v-" + name)
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(host)
	})
	if err == nil {
		err = pod.Do(func() error {
			for _, l := range []string{"lo", "eth0"} {
				link, err := netlink.LinkByName(l)
				if err != nil {
					return err
				}
				if err := netlink.LinkSetUp(link); err != nil {
					return err
				}
			}
			eth, _ := netlink.LinkByName("eth0")
			addr, _ := netlink.ParseAddr(ip + "/24")
			if err := netlink.AddrAdd(eth, addr); err != nil {
				return err
			}
			return netlink.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.ParseIP("10.42.0.1")})
		})
	}
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	n.pods[name] = pod
}

// serve answers every TCP connection on port in the pod with a line
// echo, so a test can hold a connection open and use it again.
func (n *testNet) serve(t *testing.T, pod string, port int) {
	t.Helper()
	var ln net.Listener
	if err := n.pods[pod].Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
}

// serveUDP echoes datagrams on port in the pod.
func (n *testNet) serveUDP(t *testing.T, pod string, port int) {
	t.Helper()
	var pc net.PacketConn
	if err := n.pods[pod].Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp4", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			m, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:m], from)
		}
	}()
}

// reachUDP sends a datagram from the pod and waits briefly for its echo.
func (n *testNet) reachUDP(from, addr string) error {
	return n.ns(from).Do(func() error {
		c, err := net.Dial("udp4", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 16)
		m, err := c.Read(buf)
		if err != nil {
			return err
		}
		if string(buf[:m]) != "ping" {
			return fmt.Errorf("answer %q", buf[:m])
		}
		return nil
	})
}

func (n *testNet) ns(name string) *netpolicy.TestNetNS {
	if name == "node" {
		return n.node
	}
	return n.pods[name]
}

// dial opens a TCP connection from the pod (or "node"); blocked
// traffic is dropped, so a short timeout tells.
func (n *testNet) dial(from, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.ns(from).Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp4", addr, 300*time.Millisecond)
		return err
	})
	return c, err
}

func echo(c net.Conn, msg string) error {
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := fmt.Fprintln(c, msg); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != msg {
		return fmt.Errorf("echo %q, want %q", line, msg)
	}
	return nil
}

// reach reports whether a full request/answer from → addr works.
func (n *testNet) reach(from, addr string) error {
	c, err := n.dial(from, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return echo(c, "ping")
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (within %v): %v", what, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type env struct {
	net    *testNet
	client kubernetes.Interface
	ctx    context.Context
}

func (e *env) apply(t *testing.T, p *networkingv1.NetworkPolicy) {
	t.Helper()
	if _, err := e.client.NetworkingV1().NetworkPolicies(p.Namespace).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) remove(t *testing.T, p *networkingv1.NetworkPolicy) {
	t.Helper()
	if err := e.client.NetworkingV1().NetworkPolicies(p.Namespace).Delete(e.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expect checks a reachability matrix: from → want (true = reaches).
// Allowed pairs are polled (the enforcer syncs within a second), and
// then blocked pairs are checked to fail.
func (e *env) expect(t *testing.T, addr string, want map[string]bool) {
	t.Helper()
	for from, ok := range want {
		if ok {
			eventually(t, time.Second, from+" reaches "+addr, func() error { return e.net.reach(from, addr) })
		}
	}
	for from, ok := range want {
		if !ok {
			eventually(t, time.Second, from+" is blocked from "+addr, func() error {
				if err := e.net.reach(from, addr); err == nil {
					return errors.New("it got through")
				}
				return nil
			})
		}
	}
}

func (e *env) pod(t *testing.T, ns, name, ip string, lbl map[string]string, ports ...corev1.ContainerPort) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
		Spec: corev1.PodSpec{NodeName: testNode, Containers: []corev1.Container{{Name: "c", Image: "busybox", Ports: ports}}}}
	p, err := e.client.CoreV1().Pods(ns).Create(e.ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase, p.Status.PodIP = corev1.PodRunning, ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	if _, err := e.client.CoreV1().Pods(ns).UpdateStatus(e.ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func np(ns, name string, sel map[string]string, spec func(*networkingv1.NetworkPolicySpec)) *networkingv1.NetworkPolicy {
	p := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}}}
	if spec != nil {
		spec(&p.Spec)
	}
	return p
}

func TestEnforcer(t *testing.T) {
	netpolicy.RequireRoot(t)
	tn := newTestNet(t)
	tn.addPod(t, "srv", "10.42.0.20")
	tn.addPod(t, "a", "10.42.0.10")
	tn.addPod(t, "b", "10.42.0.11")
	tn.serve(t, "srv", 8080)
	tn.serve(t, "srv", 9090)
	tn.serve(t, "a", 8080)
	tn.serve(t, "b", 7070)
	tn.serveUDP(t, "srv", 5353)

	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{net: tn, client: c.Client, ctx: ctx}
	for ns, lbl := range map[string]map[string]string{"team-a": {"team": "a"}, "team-b": {"team": "b"}} {
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: lbl}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.pod(t, "team-a", "srv", "10.42.0.20", map[string]string{"app": "srv"}, corev1.ContainerPort{Name: "web", ContainerPort: 9090})
	e.pod(t, "team-a", "a", "10.42.0.10", map[string]string{"role": "client"})
	e.pod(t, "team-b", "b", "10.42.0.11", map[string]string{"role": "client"})

	enf, err := netpolicy.New(netpolicy.Config{Client: c.Client, NodeName: testNode, NetNSPath: tn.node.Path()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- enf.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	select {
	case <-enf.Ready():
	case err := <-done:
		t.Fatalf("enforcer ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no first sync")
	}

	const web, other = "10.42.0.20:8080", "10.42.0.20:9090"
	all := map[string]bool{"a": true, "b": true, "node": true}
	t.Run("no policy: everything passes", func(t *testing.T) { e.expect(t, web, all) })

	t.Run("established connection survives a new deny", func(t *testing.T) {
		conn, err := tn.dial("a", web)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := echo(conn, "before"); err != nil {
			t.Fatal(err)
		}
		deny := np("team-a", "deny-now", nil, nil)
		e.apply(t, deny)
		defer e.remove(t, deny)
		// Within a second, new connections are refused (policy added
		// while traffic flows) ...
		e.expect(t, web, map[string]bool{"a": false, "b": false, "node": true})
		// ... but the one already open carries on, as in the
		// iptables-based reference implementations.
		if err := echo(conn, "after"); err != nil {
			t.Errorf("established connection cut: %v", err)
		}
	})

	cases := []struct {
		name string
		pol  *networkingv1.NetworkPolicy
		addr string
		want map[string]bool
		// also: a second address and who reaches it, so that each
		// case shows the policy in force, not only what passes.
		addr2 string
		want2 map[string]bool
	}{
		{"default deny ingress; the node still reaches its pods", np("team-a", "deny", nil, nil), web,
			map[string]bool{"a": false, "b": false, "node": true}, "", nil},
		{"podSelector lets the labelled pod in, not the other namespace's", np("team-a", "from-clients", map[string]string{"app": "srv"}, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}
		}), web, map[string]bool{"a": true, "b": false}, "", nil},
		{"namespaceSelector", np("team-a", "from-team-b", map[string]string{"app": "srv"}, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}}}}
		}), web, map[string]bool{"a": false, "b": true}, "", nil},
		{"ipBlock with except", np("team-a", "block", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.42.0.0/24", Except: []string{"10.42.0.10/32"}}}}}}
		}), web, map[string]bool{"a": false, "b": true}, "", nil},
		{"ipBlock 0.0.0.0/0 with except (the whole range in an interval set)", np("team-a", "world", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.42.0.11/32", "10.42.0.12/30"}}}}}}
		}), web, map[string]bool{"a": true, "b": false}, "", nil},
		{"egress to 0.0.0.0/0 except b", np("team-a", "out-world", map[string]string{"role": "client"}, func(s *networkingv1.NetworkPolicySpec) {
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
			s.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.42.0.11/32"}}}}}}
		}), web, map[string]bool{"a": true, "b": true}, "10.42.0.11:7070", map[string]bool{"a": false, "srv": true}},
		{"port rule with endPort: that port passes, another is blocked", np("team-a", "port", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(9000)), EndPort: ptr.To[int32](9100)}}}}
		}), other, map[string]bool{"a": true, "b": true}, web, map[string]bool{"a": false, "b": false}},
		{"named port resolves on the target", np("team-a", "named", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("web"))}}}}
		}), other, map[string]bool{"a": true, "b": true}, web, map[string]bool{"a": false, "b": false}},
		{"egress deny from a", np("team-a", "no-out", map[string]string{"role": "client"}, func(s *networkingv1.NetworkPolicySpec) {
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		}), web, map[string]bool{"a": false, "b": true}, "", nil},
		{"egress allowed to srv only", np("team-a", "out-srv", map[string]string{"role": "client"}, func(s *networkingv1.NetworkPolicySpec) {
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
			s.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "srv"}}}}}}
		}), web, map[string]bool{"a": true, "b": true}, "10.42.0.10:8080", map[string]bool{"srv": true, "b": true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.apply(t, tc.pol)
			e.expect(t, tc.addr, tc.want)
			if tc.addr2 != "" {
				e.expect(t, tc.addr2, tc.want2)
			}
			e.remove(t, tc.pol)
			e.expect(t, tc.addr, all)
		})
	}
	t.Run("egress allowed to srv only: a cannot reach b", func(t *testing.T) {
		pol := cases[len(cases)-1].pol.DeepCopy()
		pol.ResourceVersion = ""
		e.apply(t, pol)
		defer e.remove(t, pol)
		e.expect(t, "10.42.0.11:7070", map[string]bool{"a": false, "srv": true})
	})

	t.Run("policies add up; changing a fenced pod's rules swaps its chains", func(t *testing.T) {
		deny := np("team-a", "deny-base", nil, nil)
		e.apply(t, deny)
		e.expect(t, web, map[string]bool{"a": false, "b": false})
		allow := np("team-a", "allow-a", map[string]string{"app": "srv"}, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}
		})
		e.apply(t, allow)
		e.expect(t, web, map[string]bool{"a": true, "b": false})
		e.remove(t, allow)
		e.expect(t, web, map[string]bool{"a": false, "b": false})
		// A pod's labels decide too: b's new label lets it in.
		allowLabel := np("team-a", "allow-vip", map[string]string{"app": "srv"}, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"vip": "yes"}}}}}}
		})
		e.apply(t, allowLabel)
		e.expect(t, web, map[string]bool{"a": false, "b": false})
		pb, err := c.Client.CoreV1().Pods("team-b").Get(ctx, "b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pb.Labels["vip"] = "yes"
		if _, err := c.Client.CoreV1().Pods("team-b").Update(ctx, pb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.expect(t, web, map[string]bool{"a": false, "b": true})
		e.remove(t, allowLabel)
		e.remove(t, deny)
		e.expect(t, web, all)
	})

	t.Run("a UDP port rule lets that port's datagrams in, not TCP", func(t *testing.T) {
		udp := corev1.ProtocolUDP
		pol := np("team-a", "udp-only", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: ptr.To(intstr.FromInt32(5353))}},
			}}
		})
		e.apply(t, pol)
		defer e.remove(t, pol)
		e.expect(t, web, map[string]bool{"a": false, "b": false})
		eventually(t, time.Second, "a's datagrams reach srv", func() error { return tn.reachUDP("a", "10.42.0.20:5353") })
		if err := tn.reachUDP("b", "10.42.0.20:5353"); err == nil {
			t.Error("b's datagrams got through")
		}
	})

	t.Run("an invalid CIDR is refused by the API server", func(t *testing.T) {
		for _, cidr := range []string{"10.0.0.0/33", "nonsense", "10.0.0.1/8"} {
			p := np("team-a", "bad", nil, func(s *networkingv1.NetworkPolicySpec) {
				s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}}}}
			})
			_, err := c.Client.NetworkingV1().NetworkPolicies("team-a").Create(ctx, p, metav1.CreateOptions{})
			if err == nil {
				c.Client.NetworkingV1().NetworkPolicies("team-a").Delete(ctx, "bad", metav1.DeleteOptions{})
				t.Errorf("CIDR %q accepted", cidr)
			}
		}
		// The enforcer is still running and enforcing.
		select {
		case err := <-done:
			t.Fatalf("enforcer ended: %v", err)
		default:
		}
		e.expect(t, web, all)
	})

	t.Run("no pod chains or sets left once no policy selects a pod", func(t *testing.T) {
		eventually(t, time.Second, "only the skeleton", func() error {
			chains, sets, err := netpolicy.TableObjects(tn.node.Path(), netpolicy.DefaultTable)
			if err != nil {
				return err
			}
			if chains != 1 || sets != 2 {
				return fmt.Errorf("%d chains and %d sets, want the forward chain and the two maps", chains, sets)
			}
			return nil
		})
	})

	var open net.Conn // an allowed connection held across the restart
	t.Cleanup(func() {
		if open != nil {
			open.Close()
		}
	})
	t.Run("table gone after Stop", func(t *testing.T) {
		var err error
		if open, err = tn.dial("a", web); err != nil {
			t.Fatal(err)
		}
		if ok, err := netpolicy.TableExists(tn.node.Path(), netpolicy.DefaultTable); err != nil || !ok {
			t.Fatalf("table before stop: %v %v", ok, err)
		}
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
		done <- nil // for the cleanup
		if ok, err := netpolicy.TableExists(tn.node.Path(), netpolicy.DefaultTable); err != nil || ok {
			t.Errorf("table after stop: exists=%v err=%v", ok, err)
		}
	})

	t.Run("a restarted enforcer rebuilds the table; established connections carry on", func(t *testing.T) {
		if open == nil {
			t.Skip("no connection from the previous step")
		}
		deny := np("team-a", "deny-after-restart", nil, nil)
		e.apply(t, deny)
		defer e.remove(t, deny)
		enf, err := netpolicy.New(netpolicy.Config{Client: c.Client, NodeName: testNode, NetNSPath: tn.node.Path()})
		if err != nil {
			t.Fatal(err)
		}
		ctx2, stop2 := context.WithCancel(ctx)
		done2 := make(chan error, 1)
		go func() { done2 <- enf.Run(ctx2) }()
		defer func() { stop2(); <-done2 }()
		select {
		case <-enf.Ready():
		case err := <-done2:
			t.Fatalf("enforcer ended: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("no first sync")
		}
		e.expect(t, web, map[string]bool{"a": false, "b": false, "node": true})
		if err := echo(open, "still here"); err != nil {
			t.Errorf("established connection cut by the restart: %v", err)
		}
	})
}
