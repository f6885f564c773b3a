package network

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestOneNode runs the built-in network in a test "node" namespace with
// two pod namespaces: addresses, gateway, pod-to-pod traffic, hairpin,
// masquerade table, teardown and a failed setup that leaves nothing.
func TestOneNode(t *testing.T) {
	requireRoot(t)
	c := clustertest.Start(t, clustertest.Options{})
	createNode(t, c.Client, "n1", "10.42.1.0/24", "192.168.90.1")
	node := newNetNS(t)
	state := t.TempDir()
	n := startNetwork(t, c.Client, "n1", "192.168.90.1", node, state)
	ctx := context.Background()

	podA, podB := newNetNS(t), newNetNS(t)
	ipsA, err := n.Setup(ctx, "sandbox-a", podA, nil)
	if err != nil {
		t.Fatal(err)
	}
	ipsB, err := n.Setup(ctx, "sandbox-b", podB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ipsA) != 1 || ipsA[0] != "10.42.1.2" || len(ipsB) != 1 || ipsB[0] != "10.42.1.3" {
		t.Fatalf("addresses = %v, %v; want 10.42.1.2, 10.42.1.3", ipsA, ipsB)
	}
	again, err := n.Setup(ctx, "sandbox-a", podA, nil)
	if err != nil || again[0] != ipsA[0] {
		t.Fatalf("second Setup of sandbox-a = %v, %v; want the same address", again, err)
	}

	t.Run("traffic", func(t *testing.T) {
		if err := ping(t, podA, "10.42.1.1"); err != nil {
			t.Error("pod to gateway:", err)
		}
		if err := ping(t, podA, ipsB[0]); err != nil {
			t.Error("pod to pod:", err)
		}
		echo(t, podB, ipsB[0]+":8080")
		if err := roundTrip(podA, ipsB[0]+":8080"); err != nil {
			t.Error("TCP pod to pod:", err)
		}
		if err := roundTrip(node, ipsB[0]+":8080"); err != nil {
			t.Error("TCP node to pod:", err)
		}
	})

	t.Run("links", func(t *testing.T) {
		h := nsHandle(t, node)
		l, err := h.LinkByName(hostVethName("sandbox-a"))
		if err != nil {
			t.Fatal(err)
		}
		br, _ := h.LinkByName("rudder0")
		if l.Attrs().MasterIndex != br.Attrs().Index {
			t.Error("host veth is not on the bridge")
		}
		if p, err := h.LinkGetProtinfo(l); err != nil || !p.Hairpin {
			t.Errorf("hairpin is off: %+v %v", p, err)
		}
		pod := nsHandle(t, podA)
		eth, err := pod.LinkByName("eth0")
		if err != nil {
			t.Fatal(err)
		}
		if eth.Attrs().MTU != 1450 {
			t.Errorf("pod MTU = %d, want 1450", eth.Attrs().MTU)
		}
		routes, _ := pod.RouteList(eth, netlink.FAMILY_V4)
		var dflt bool
		for _, r := range routes {
			if (r.Dst == nil || r.Dst.String() == "0.0.0.0/0") && r.Gw.Equal(net.ParseIP("10.42.1.1")) {
				dflt = true
			}
		}
		if !dflt {
			t.Errorf("no default route via the gateway in %v", routes)
		}
	})

	t.Run("masquerade", func(t *testing.T) {
		rules, err := (nft{nsFd: n.nftFd()}).rules()
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) != 1 {
			t.Fatalf("%d rules in %s, want 1", len(rules), TableName)
		}
		want := "ip saddr 10.42.1.0/24 ip daddr != 10.42.0.0/16 masquerade"
		if got := masqRules(n.bridge.ranges, n.clusters)[0].String(); got != want {
			t.Errorf("rule = %q, want %q", got, want)
		}
	})

	t.Run("teardown", func(t *testing.T) {
		for i := 0; i < 2; i++ { // twice: the second is a no-op
			if err := n.Teardown(ctx, "sandbox-b", podB); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(filepath.Join(state, "ipam", ipsB[0])); !os.IsNotExist(err) {
			t.Errorf("address file still there: %v", err)
		}
		if _, err := nsHandle(t, node).LinkByName(hostVethName("sandbox-b")); err == nil {
			t.Error("host veth still there")
		}
		if err := n.Teardown(ctx, "never-set-up", ""); err != nil {
			t.Errorf("teardown of an unknown sandbox: %v", err)
		}
		// Round robin: the freed address is not the next one given.
		podC := newNetNS(t)
		ips, err := n.Setup(ctx, "sandbox-c", podC, nil)
		if err != nil || ips[0] != "10.42.1.4" {
			t.Errorf("next address = %v, %v; want 10.42.1.4", ips, err)
		}
	})

	t.Run("failed setup leaves nothing", func(t *testing.T) {
		before := files(t, filepath.Join(state, "ipam"))
		if _, err := n.Setup(ctx, "bad-ns", filepath.Join(t.TempDir(), "nothing"), nil); err == nil {
			t.Error("Setup with no namespace succeeded")
		}
		// A pod namespace that already has an eth0: the veth cannot be
		// made, and the address must come back.
		pod := newNetNS(t)
		link(t, pod, newNetNS(t), "eth0", "192.0.2.1/30", "192.0.2.2/30")
		if _, err := n.Setup(ctx, "taken-eth0", pod, nil); err == nil {
			t.Error("Setup into a namespace with an eth0 succeeded")
		}
		if after := files(t, filepath.Join(state, "ipam")); after != before {
			t.Errorf("address files %d after failed setups, %d before", after, before)
		}
		if _, err := nsHandle(t, node).LinkByName(hostVethName("taken-eth0")); err == nil {
			t.Error("a failed setup left its host veth")
		}
	})

	t.Run("stop removes the table", func(t *testing.T) {
		n.Stop()
		fd, err := openNS(node)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		if rules, err := (nft{nsFd: int(fd)}).rules(); err == nil && len(rules) > 0 {
			t.Errorf("table still there after Stop, %d rules", len(rules))
		}
		// A stopped network's handles are closed; it must refuse work
		// rather than fall back to the process's own namespace.
		if _, err := n.Setup(ctx, "late", podA, nil); !errors.Is(err, ErrStopped) {
			t.Errorf("Setup after Stop: %v", err)
		}
		if err := n.Teardown(ctx, "sandbox-a", podA); !errors.Is(err, ErrStopped) {
			t.Errorf("Teardown after Stop: %v", err)
		}
		n.Stop() // twice is fine
	})
}

func files(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestGCAfterCrash: a sandbox whose namespace disappeared while the
// agent was down gets its address back at the next start; a live one
// keeps it; GC with the runtime's list frees what the runtime forgot.
func TestGCAfterCrash(t *testing.T) {
	requireRoot(t)
	c := clustertest.Start(t, clustertest.Options{})
	createNode(t, c.Client, "n1", "10.42.3.0/24", "192.168.91.1")
	node, state := newNetNS(t), t.TempDir()
	n := startNetwork(t, c.Client, "n1", "192.168.91.1", node, state)
	ctx := context.Background()
	gone, kept, forgotten := newNetNS(t), newNetNS(t), newNetNS(t)
	var ips [3]string
	for i, s := range []struct{ id, ns string }{{"gone", gone}, {"kept", kept}, {"forgotten", forgotten}} {
		got, err := n.Setup(ctx, s.id, s.ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		ips[i] = got[0]
	}
	// The "crash": the network stops without tearing down, and one
	// sandbox's namespace is removed meanwhile.
	n.Stop()
	dropNetNS(gone)
	n2 := startNetwork(t, c.Client, "n1", "192.168.91.1", node, state)
	held := n2.bridge.ipam.holders()
	if _, ok := held["gone"]; ok {
		t.Error("the gone sandbox's address is still held")
	}
	if _, ok := held["kept"]; !ok {
		t.Error("the live sandbox lost its address")
	}
	if err := n2.GC(ctx, []string{"kept"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := n2.bridge.ipam.holders()["forgotten"]; ok {
		t.Error("GC kept the address of a sandbox the runtime does not know")
	}
	if _, err := nsHandle(t, node).LinkByName(hostVethName("forgotten")); err == nil {
		t.Error("GC left the forgotten sandbox's veth")
	}
	if _, err := os.Stat(filepath.Join(state, "ipam", ips[1])); err != nil {
		t.Errorf("kept address file: %v", err)
	}
}

// TestAcrossNodes runs two nodes, each a namespace, joined by a veth
// "wire", and checks pod-to-pod TCP between them with host-gw routes
// (one subnet) and over VXLAN (two subnets on one wire), and that a
// deleted Node's routes go away.
func TestAcrossNodes(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		name          string
		ipA, ipB      string
		subnetA, subB string // on-link routes to the other's subnet
		cidrA, cidrB  string
		wantVXLAN     bool
	}{
		{name: "host-gw", ipA: "192.168.92.1", ipB: "192.168.92.2", cidrA: "10.42.4.0/24", cidrB: "10.42.5.0/24"},
		{name: "vxlan", ipA: "192.168.93.1", ipB: "192.168.94.1", subnetA: "192.168.94.0/24", subB: "192.168.93.0/24",
			cidrA: "10.42.6.0/24", cidrB: "10.42.7.0/24", wantVXLAN: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clustertest.Start(t, clustertest.Options{})
			nodeA, nodeB := newNetNS(t), newNetNS(t)
			link(t, nodeA, nodeB, "wire0", tc.ipA+"/24", tc.ipB+"/24")
			if tc.subnetA != "" {
				onLinkRoute(t, nodeA, "wire0", tc.subnetA)
				onLinkRoute(t, nodeB, "wire0", tc.subB)
			}
			createNode(t, c.Client, "a", tc.cidrA, tc.ipA)
			createNode(t, c.Client, "b", tc.cidrB, tc.ipB)
			na := startNetwork(t, c.Client, "a", tc.ipA, nodeA, t.TempDir())
			nb := startNetwork(t, c.Client, "b", tc.ipB, nodeB, t.TempDir())
			ctx := context.Background()
			podA, podB := newNetNS(t), newNetNS(t)
			ipsA, err := na.Setup(ctx, "pa", podA, nil)
			if err != nil {
				t.Fatal(err)
			}
			ipsB, err := nb.Setup(ctx, "pb", podB, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, dstB, _ := net.ParseCIDR(tc.cidrB)
			hA := nsHandle(t, nodeA)
			eventually(t, 10*time.Second, func() (bool, string) {
				rs, _ := hA.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: dstB}, netlink.RT_FILTER_DST)
				if len(rs) != 1 {
					return false, "no route to node b's pods on node a"
				}
				vx, _ := hA.LinkByName(VXLANDevice)
				viaVXLAN := vx != nil && rs[0].LinkIndex == vx.Attrs().Index
				return viaVXLAN == tc.wantVXLAN, "route " + rs[0].String()
			})
			echo(t, podB, ipsB[0]+":9090")
			eventually(t, 10*time.Second, func() (bool, string) {
				err := roundTrip(podA, ipsB[0]+":9090")
				return err == nil, "pod a to pod b: " + errString(err)
			})
			echo(t, podA, ipsA[0]+":9090")
			if err := roundTrip(podB, ipsA[0]+":9090"); err != nil {
				t.Error("pod b to pod a:", err)
			}

			if err := c.Client.CoreV1().Nodes().Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, func() (bool, string) {
				rs, _ := hA.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProtocol}, netlink.RT_FILTER_PROTOCOL)
				return len(rs) == 0, "routes left on node a after node b was deleted"
			})
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
