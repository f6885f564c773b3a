package nodeipam

import (
	"errors"
	"net/netip"
	"testing"
)

func TestCIDRSet(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		mask    int
		want    []string
	}{
		{"10.42.0.0/22", 24, []string{"10.42.0.0/24", "10.42.1.0/24", "10.42.2.0/24", "10.42.3.0/24"}},
		{"fd00:10::/62", 64, []string{"fd00:10::/64", "fd00:10:0:1::/64", "fd00:10:0:2::/64", "fd00:10:0:3::/64"}},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			s, err := newCIDRSet(netip.MustParsePrefix(tc.cluster), tc.mask)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := s.occupy(netip.MustParsePrefix(tc.want[1]), "old"); !ok || err != nil {
				t.Fatalf("occupy: %v %v", ok, err)
			}
			if ok, _ := s.occupy(netip.MustParsePrefix(tc.want[1]), "dup"); ok {
				t.Error("a held subnet was occupied by another node")
			}
			var got []string
			for _, n := range []string{"a", "b", "c"} {
				p, err := s.allocate(n)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.String())
			}
			if want := []string{tc.want[0], tc.want[2], tc.want[3]}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Errorf("allocated %v, want %v", got, want)
			}
			if _, err := s.allocate("d"); !errors.Is(err, ErrFull) {
				t.Errorf("full set: %v", err)
			}
			s.release(netip.MustParsePrefix(tc.want[2]), "not-the-owner")
			if _, err := s.allocate("d"); !errors.Is(err, ErrFull) {
				t.Error("release by a non-owner freed the subnet")
			}
			s.release(netip.MustParsePrefix(tc.want[2]), "b")
			if p, err := s.allocate("d"); err != nil || p.String() != tc.want[2] {
				t.Errorf("after release: %v %v", p, err)
			}
			if _, err := s.occupy(netip.MustParsePrefix("192.168.0.0/24"), "x"); err == nil {
				t.Error("occupied a subnet outside the cluster CIDR")
			}
		})
	}
}
