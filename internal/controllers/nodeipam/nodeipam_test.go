package nodeipam_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/nodeipam"
)

func createNode(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func podCIDRs(t *testing.T, c kubernetes.Interface, name string) []string {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Spec.PodCIDRs
}

func waitCIDR(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	var got []string
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		got = podCIDRs(t, c, name)
		return len(got) == 1, fmt.Sprintf("node %s podCIDRs %v", name, got)
	})
	return got[0]
}

// TestAllocator runs the controller against a real API server with a
// cluster CIDR of two /24s: distinct subnets, the range full (event),
// release on delete, and a restart that rebuilds from the Nodes.
func TestAllocator(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	cfg := nodeipam.Config{ClusterCIDRs: []string{"10.50.0.0/23"}, FullRetry: 100 * time.Millisecond}
	stop := controllertest.Run(t, c.Config, nodeipam.NewDescriptor(cfg))
	ctx := context.Background()

	createNode(t, c.Client, "n1")
	createNode(t, c.Client, "n2")
	a, b := waitCIDR(t, c.Client, "n1"), waitCIDR(t, c.Client, "n2")
	if a == b {
		t.Fatalf("two nodes got %s", a)
	}
	for _, s := range []string{a, b} {
		if p := netip.MustParsePrefix(s); p.Bits() != 24 || !netip.MustParsePrefix("10.50.0.0/23").Contains(p.Addr()) {
			t.Errorf("subnet %s is not a /24 of the cluster CIDR", s)
		}
	}

	createNode(t, c.Client, "n3")
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		evs, err := c.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=n3"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "CIDRNotAvailable" {
				return true, ""
			}
		}
		return false, "no CIDRNotAvailable event for n3"
	})
	if got := podCIDRs(t, c.Client, "n3"); len(got) != 0 {
		t.Fatalf("n3 got %v from a full range", got)
	}

	if err := c.Client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitCIDR(t, c.Client, "n3"); got != a {
		t.Errorf("n3 got %s, want n1's freed %s", got, a)
	}

	// Restart: the new controller learns n2's and n3's subnets from the
	// Nodes and has none left for n4.
	stop()
	if err := c.Client.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createNode(t, c.Client, "n4")
	controllertest.Run(t, c.Config, nodeipam.NewDescriptor(cfg))
	if got := waitCIDR(t, c.Client, "n4"); got != b {
		t.Errorf("after restart n4 got %s, want the free %s", got, b)
	}
}

func TestBadConfig(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	for _, cidrs := range [][]string{{"not-a-cidr"}, {"10.0.0.0/16", "10.1.0.0/16"}, {"10.0.0.0/25"}, {"10.0.0.0/8"}} {
		t.Run(fmt.Sprint(cidrs), func(t *testing.T) {
			cx := controllertest.NewContext(t, c.Config)
			cfg := nodeipam.Config{ClusterCIDRs: cidrs}
			if cidrs[0] == "10.0.0.0/8" {
				cfg.NodeMaskIPv4 = 30 // 2^22 subnets: refused
			}
			if _, err := nodeipam.NewDescriptor(cfg).New(context.Background(), cx); err == nil {
				t.Error("accepted")
			}
		})
	}
}
