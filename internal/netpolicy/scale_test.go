package netpolicy

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rudder-dev/rudder/internal/netns"
)

// syntheticPlans are n fenced pods, each with an ingress rule from a
// group of 50 peer pods on two ports, an ipBlock with an exception,
// and an egress rule.
func syntheticPlans(n int) []PodPlan {
	peers := make([]netip.Prefix, 50)
	for i := range peers {
		peers[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 43, byte(i), 7}), 32)
	}
	out := make([]PodPlan, n)
	for i := range out {
		out[i] = PodPlan{IP: netip.AddrFrom4([4]byte{10, 42, byte(i >> 8), byte(i)}), IngressIsolated: true, EgressIsolated: true,
			Ingress: []Allow{
				{Peers: peers, Ports: []PortRange{{6, 8080, 8080}, {6, 9000, 9100}}},
				{Peers: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, Except: []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}},
			},
			Egress: []Allow{{Peers: peers, Ports: []PortRange{{17, 53, 53}}}},
		}
	}
	return out
}

// syncIn commits a full sync of plans in ns and then one pod's change,
// returning both durations.
func syncIn(t testing.TB, ns *netns.NS, plans []PodPlan) (full, one time.Duration) {
	t.Helper()
	fd, err := unix.Open(ns.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	rs := newRuleset(DefaultTable)
	start := time.Now()
	c, err := newConn(fd)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.full(c, plans); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatalf("full sync of %d pods: %v", len(plans), err)
	}
	full = time.Since(start)
	changed := append([]PodPlan(nil), plans...)
	changed[len(changed)/2].Ingress = changed[len(changed)/2].Ingress[:1]
	start = time.Now()
	c, _ = newConn(fd)
	if ok, err := rs.update(c, changed); err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if err := c.Flush(); err != nil {
		t.Fatalf("update: %v", err)
	}
	return full, time.Since(start)
}

// TestSyncScale checks the table grows linearly: a full sync of 4× the
// pods costs well under 16× (quadratic) the time, and one pod's change
// stays small at any size.
func TestSyncScale(t *testing.T) {
	RequireRoot(t)
	sizes := []int{100, 400}
	var fulls []time.Duration
	for _, n := range sizes {
		ns := TempNetNS(t, t.TempDir(), fmt.Sprintf("scale-%d", n))
		full, one := syncIn(t, ns, syntheticPlans(n))
		t.Logf("%d fenced pods: full sync %v, one pod changed %v", n, full, one)
		if one > 100*time.Millisecond {
			t.Errorf("one pod's change at %d pods took %v", n, one)
		}
		fulls = append(fulls, full)
	}
	if fulls[1] > 10*fulls[0] && fulls[1] > 200*time.Millisecond {
		t.Errorf("full sync grows faster than linear: %v for %d pods, %v for %d", fulls[0], sizes[0], fulls[1], sizes[1])
	}
}
