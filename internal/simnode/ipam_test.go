package simnode

import (
	"net/netip"
	"testing"
)

func TestIPPool(t *testing.T) {
	t.Run("a /24 hands out .2 to .254, round-robin", func(t *testing.T) {
		p, err := newIPPool("10.128.3.0/24")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[netip.Addr]bool{}
		for i := range 253 {
			a, ok := p.allocate()
			if !ok {
				t.Fatalf("allocation %d failed", i)
			}
			if seen[a] || !netip.MustParsePrefix("10.128.3.0/24").Contains(a) || a.As4()[3] < 2 || a.As4()[3] == 255 {
				t.Fatalf("bad or repeated address %s", a)
			}
			seen[a] = true
		}
		if a, ok := p.allocate(); ok {
			t.Fatalf("pool should be exhausted, got %s", a)
		}
		p.release(netip.MustParseAddr("10.128.3.7"))
		if a, ok := p.allocate(); !ok || a != netip.MustParseAddr("10.128.3.7") {
			t.Fatalf("after a release: got %s %v, want 10.128.3.7", a, ok)
		}
	})
	t.Run("a freed address is not reused at once", func(t *testing.T) {
		p, _ := newIPPool("10.0.0.0/29") // .2-.6
		a, _ := p.allocate()
		p.release(a)
		if b, _ := p.allocate(); b == a {
			t.Fatalf("reused %s straight away", a)
		}
	})
	t.Run("reserve marks an address taken", func(t *testing.T) {
		p, _ := newIPPool("10.0.0.0/29")
		if !p.reserve(netip.MustParseAddr("10.0.0.2")) {
			t.Fatal("reserve in range failed")
		}
		if p.reserve(netip.MustParseAddr("10.0.1.2")) || p.reserve(netip.MustParseAddr("fd00::2")) {
			t.Fatal("reserved an address out of range")
		}
		if a, _ := p.allocate(); a == netip.MustParseAddr("10.0.0.2") {
			t.Fatal("allocated a reserved address")
		}
	})
	t.Run("IPv6", func(t *testing.T) {
		p, err := newIPPool("fd00:10::/64")
		if err != nil {
			t.Fatal(err)
		}
		a, _ := p.allocate()
		if a != netip.MustParseAddr("fd00:10::2") {
			t.Fatalf("first v6 address %s", a)
		}
	})
	t.Run("too small", func(t *testing.T) {
		if _, err := newIPPool("10.0.0.0/31"); err == nil {
			t.Fatal("want an error for a /31")
		}
	})
}

func TestAddressing(t *testing.T) {
	cluster := netip.MustParsePrefix("10.128.0.0/9")
	for _, tc := range []struct {
		name string
		i    int
		cidr string
		ip   string
	}{
		{"first node", 0, "10.128.0.0/24", "198.18.0.1"},
		{"node 255", 255, "10.128.255.0/24", "198.18.1.0"},
		{"node 256", 256, "10.129.0.0/24", "198.18.1.1"},
		{"node 4999", 4999, "10.147.135.0/24", "198.18.19.136"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeCIDR(cluster, 24, tc.i).String(); got != tc.cidr {
				t.Errorf("cidr %s, want %s", got, tc.cidr)
			}
			if got := addAddr(netip.MustParseAddr("198.18.0.0"), uint64(tc.i)+1).String(); got != tc.ip {
				t.Errorf("ip %s, want %s", got, tc.ip)
			}
		})
	}
}
