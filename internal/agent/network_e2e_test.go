package agent_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/agent"
	"github.com/rudder-dev/rudder/internal/netns"
)

// testNetNS creates a network namespace pinned under the test's temp
// dir, released when the test ends.
func testNetNS(t *testing.T) string {
	t.Helper()
	ns, err := netns.Pinned(t.TempDir(), "netns")
	if err != nil {
		t.Fatalf("create netns: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns.Path()
}

// TestPodNetwork runs a node whose pod network (bridge mode) lives in a
// namespace the test created, with the server's node-ipam controller
// giving the node its pod CIDR: pods get addresses from it, reported as
// status.podIP(s), reach each other, hostNetwork pods keep the node's
// address, and deleted pods give their addresses back.
func TestPodNetwork(t *testing.T) {
	requireRoot(t)
	nodeNS := testNetNS(t)
	n := startNodeWith(t, func(c *agent.Config) {
		c.NodeName = "node-net"
		c.Network = agent.NetworkBridge
		c.NetworkNetNS = nodeNS
		c.CNIConfDir = t.TempDir() // the host's CNI configurations are not this test's
	})
	k := n.kubectl
	node, err := n.client.CoreV1().Nodes().Get(n.ctx, "node-net", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cidr, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil {
		t.Fatalf("node pod CIDR %q: %v", node.Spec.PodCIDR, err)
	}

	k.OK(t, "run", "web", "--image=busybox:e2e", "--restart=Never", "--", "sh", "-c",
		"mkdir -p /www && echo served > /www/index.html && exec httpd -f -p 8080 -h /www")
	k.OK(t, "run", "client", "--image=busybox:e2e", "--restart=Never", "--", "sleep", "3602")
	k.OK(t, "run", "hostnet", "--image=busybox:e2e", "--restart=Never", "--overrides",
		`{"spec":{"hostNetwork":true}}`, "--", "sleep", "3603")
	web := n.waitPhase(t, "web", corev1.PodRunning)
	client := n.waitPhase(t, "client", corev1.PodRunning)
	hostnet := n.waitPhase(t, "hostnet", corev1.PodRunning)
	for _, p := range []*corev1.Pod{web, client} {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !cidr.Contains(ip) || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP {
			t.Errorf("pod %s: podIP %q podIPs %v, want one address in %s", p.Name, p.Status.PodIP, p.Status.PodIPs, cidr)
		}
	}
	if web.Status.PodIP == client.Status.PodIP {
		t.Errorf("two pods share %s", web.Status.PodIP)
	}
	if hostnet.Status.PodIP != "127.0.0.1" {
		t.Errorf("hostNetwork pod's IP %q, want the node's 127.0.0.1", hostnet.Status.PodIP)
	}
	if got := k.OK(t, "exec", "client", "--", "cat", "/etc/hosts"); !strings.Contains(got, client.Status.PodIP+"\tclient") {
		t.Errorf("/etc/hosts does not name the pod's address:\n%s", got)
	}
	n.eventually(t, 20*time.Second, "pod to pod over the bridge", func() (bool, string) {
		// busybox's wget crashes (static glibc); nc speaks HTTP/1.0 well enough.
		r := k.Run(t, "", "exec", "client", "--", "sh", "-c", "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 "+web.Status.PodIP+" 8080")
		return strings.HasSuffix(r.Stdout, "\r\n\r\nserved\n"), r.Stdout + r.Stderr
	})

	ipam := filepath.Join(agent.NetworkDir(n.cfg), "ipam")
	if ents, _ := os.ReadDir(ipam); len(ents) != 2 {
		t.Errorf("%d addresses held for 2 pods", len(ents))
	}
	k.OK(t, "delete", "pod", "web", "client", "hostnet", "--grace-period=1")
	n.waitNoPods(t)
	n.eventually(t, 20*time.Second, "addresses released", func() (bool, string) {
		ents, _ := os.ReadDir(ipam)
		return len(ents) == 0, fmt.Sprintf("%d address files left", len(ents))
	})
}
