package network

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	rnetns "github.com/rudder-dev/rudder/internal/netns"
)

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
}

// pinned are the namespaces newNetNS made, by path.
var (
	pinnedMu sync.Mutex
	pinned   = map[string]*rnetns.NS{}
)

// newNetNS creates a network namespace pinned to a file under the test's
// temp dir, with loopback up; it is released when the test ends.
func newNetNS(t testing.TB) string {
	t.Helper()
	ns, err := rnetns.Pinned(t.TempDir(), "netns")
	if err != nil {
		t.Fatalf("create netns: %v", err)
	}
	pinnedMu.Lock()
	pinned[ns.Path()] = ns
	pinnedMu.Unlock()
	t.Cleanup(func() { dropNetNS(ns.Path()) })
	return ns.Path()
}

// dropNetNS releases a namespace made by newNetNS: with nothing else in
// it, the kernel destroys it and every link in it.
func dropNetNS(path string) {
	pinnedMu.Lock()
	ns := pinned[path]
	delete(pinned, path)
	pinnedMu.Unlock()
	if ns != nil {
		ns.Close()
	}
}

func nsHandle(t testing.TB, path string) *netlink.Handle {
	t.Helper()
	h, err := handleAt(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// link joins two namespaces with a veth pair named ifname on both sides,
// addressed a and b.
func link(t testing.TB, nsA, nsB, ifname string, a, b string) {
	t.Helper()
	ha, hb := nsHandle(t, nsA), nsHandle(t, nsB)
	fdB, err := openNS(nsB)
	if err != nil {
		t.Fatal(err)
	}
	defer fdB.Close()
	la := netlink.NewLinkAttrs()
	la.Name = ifname
	if err := ha.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: ifname, PeerNamespace: netlink.NsFd(int(fdB))}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		h    *netlink.Handle
		addr string
	}{{ha, a}, {hb, b}} {
		l, err := s.h.LinkByName(ifname)
		if err != nil {
			t.Fatal(err)
		}
		addr, err := netlink.ParseAddr(s.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.h.AddrAdd(l, addr); err != nil {
			t.Fatal(err)
		}
		if err := s.h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
}

// onLinkRoute adds an on-link route to dst on ifname in ns: another
// subnet reachable on the same wire, without sharing a subnet.
func onLinkRoute(t testing.TB, ns, ifname, dst string) {
	t.Helper()
	h := nsHandle(t, ns)
	l, err := h.LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	_, d, _ := net.ParseCIDR(dst)
	if err := h.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: d, Scope: netlink.SCOPE_LINK}); err != nil {
		t.Fatal(err)
	}
}

// createNode registers a Node with a pod CIDR and an InternalIP.
func createNode(t testing.TB, c kubernetes.Interface, name, podCIDR, ip string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: podCIDR}}
	n, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startNetwork starts a bridge network for node in nodeNS, stopped when
// the test ends, and waits until it is ready.
func startNetwork(t testing.TB, c kubernetes.Interface, node, nodeIP, nodeNS, stateDir string, mod ...func(*Config)) *Network {
	t.Helper()
	cfg := Config{NodeName: node, NodeIP: net.ParseIP(nodeIP), Client: c, StateDir: stateDir,
		NodeNetNS: nodeNS, CNIConfDir: t.TempDir(), ReadyTimeout: 20 * time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	eventually(t, 20*time.Second, func() (bool, string) {
		err := n.Ready()
		return err == nil, fmt.Sprint(err)
	})
	return n
}

func eventually(t testing.TB, d time.Duration, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// echo serves a TCP echo on addr inside ns until the test ends.
func echo(t testing.TB, ns, addr string) {
	t.Helper()
	var l net.Listener
	if err := inNetNS(ns, func() (err error) { l, err = net.Listen("tcp", addr); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
}

// roundTrip dials addr from inside ns and checks the echo.
func roundTrip(ns, addr string) error {
	var c net.Conn
	d := net.Dialer{Timeout: 3 * time.Second}
	if err := inNetNS(ns, func() (err error) { c, err = d.Dial("tcp", addr); return }); err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "ping\n" {
		return fmt.Errorf("echo returned %q", buf)
	}
	return nil
}

// ping sends one ICMP echo from inside ns with busybox.
func ping(t testing.TB, ns, ip string) error {
	t.Helper()
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("no /bin/busybox for ping")
	}
	var out []byte
	err := inNetNS(ns, func() (err error) {
		out, err = exec.Command("/bin/busybox", "ping", "-c", "1", "-W", "2", ip).CombinedOutput()
		return
	})
	if err != nil {
		return fmt.Errorf("ping %s: %v: %s", ip, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func mustAddr(t testing.TB, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
