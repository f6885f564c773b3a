package proxy_test

import (
	"github.com/rudder-dev/rudder/internal/netns"
	"github.com/rudder-dev/rudder/internal/proxy"
	"os"
	"strconv"
	"testing"
)

// requireRoot skips tests that need to create network namespaces.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and nftables tables")
	}
}

func tempNetNS(t testing.TB, name string) *netns.NS {
	t.Helper()
	ns, err := netns.Pinned(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

func TestMeasureSync(t *testing.T) {
	requireRoot(t)
	ns := tempNetNS(t, "bench")
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("PROXY_BENCH_SERVICES")); err == nil {
		n = v
	}
	res, err := proxy.MeasureSync(ns.Path(), n, 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d services: full %v (cpu %v), one endpoint %v, one removed %v, %d rules", n, res.Full, res.FullCPU, res.OneEndpoint, res.EndpointRemoved, res.Rules)
	if ok, err := proxy.TableExists(ns.Path(), "rudder-proxy-bench"); err != nil || ok {
		t.Fatalf("table left behind: %v %v", ok, err)
	}
}
