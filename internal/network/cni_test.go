package network

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestCNI runs Debian's containernetworking-plugins (bridge + host-local
// from /usr/lib/cni) through libcni in a test node namespace: a CNI
// configuration in the directory replaces the built-in network.
func TestCNI(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Skip("no CNI plugins in /usr/lib/cni (apt-get install containernetworking-plugins)")
	}
	confDir, ipamDir := t.TempDir(), t.TempDir()
	conf := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "rudder-test", "plugins": [
	  {"type": "bridge", "bridge": "cnitest0", "isGateway": true,
	   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/24"}]], "dataDir": %q}}]}`, ipamDir)
	if err := os.WriteFile(filepath.Join(confDir, "10-test.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	node := newNetNS(t)
	// Mode bridge: the configuration found replaces the built-in one,
	// with no Node or client needed.
	n, err := New(Config{StateDir: t.TempDir(), NodeNetNS: node, CNIConfDir: confDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	ctx := context.Background()
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u1"}}
	podA, podB := newNetNS(t), newNetNS(t)
	ipsA, err := n.Setup(ctx, "cni-a", podA, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ipsB, err := n.Setup(ctx, "cni-b", podB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	subnet := netip.MustParsePrefix("10.88.0.0/24")
	for _, ip := range []string{ipsA[0], ipsB[0]} {
		if !subnet.Contains(mustAddr(t, ip)) {
			t.Fatalf("address %s not in %s", ip, subnet)
		}
	}
	if _, err := nsHandle(t, node).LinkByName("cnitest0"); err != nil {
		t.Errorf("the plugin's bridge is not in the node namespace: %v", err)
	}
	echo(t, podB, ipsB[0]+":7070")
	if err := roundTrip(podA, ipsB[0]+":7070"); err != nil {
		t.Error("TCP pod to pod over the CNI bridge:", err)
	}
	leased := filepath.Join(ipamDir, "rudder-test", ipsB[0])
	if _, err := os.Stat(leased); err != nil {
		t.Fatalf("host-local has no lease for %s: %v", ipsB[0], err)
	}
	if err := n.Teardown(ctx, "cni-b", podB); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leased); !os.IsNotExist(err) {
		t.Errorf("host-local still holds %s after teardown: %v", ipsB[0], err)
	}
	if err := n.Teardown(ctx, "cni-b", podB); err != nil {
		t.Errorf("second teardown: %v", err)
	}

	// GC: a sandbox whose namespace is gone is DELeted at the next start.
	dropNetNS(podA)
	n2, err := New(Config{StateDir: n.cfg.StateDir, NodeNetNS: node, CNIConfDir: confDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := n2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n2.Stop)
	if _, err := os.Stat(filepath.Join(ipamDir, "rudder-test", ipsA[0])); !os.IsNotExist(err) {
		t.Errorf("host-local still holds %s of a gone sandbox after the GC: %v", ipsA[0], err)
	}
}

// TestCNIModeNeedsConfig: mode cni without a configuration is refused.
func TestCNIModeNeedsConfig(t *testing.T) {
	_, err := New(Config{StateDir: t.TempDir(), Mode: ModeCNI, CNIConfDir: t.TempDir()})
	if err == nil {
		t.Fatal("mode cni without a configuration was accepted")
	}
}
