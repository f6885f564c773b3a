package network

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func planNode(name, cidr, ip, mac string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	}
	if mac != "" {
		n.Annotations = map[string]string{AnnotationVTEPMAC: mac}
	}
	return n
}

func TestPlanPeers(t *testing.T) {
	local := []netip.Prefix{netip.MustParsePrefix("192.168.1.0/24")}
	nodes := []*corev1.Node{
		planNode("self", "10.42.0.0/24", "192.168.1.1", "02:00:00:00:00:01"),
		planNode("same-subnet", "10.42.1.0/24", "192.168.1.2", "02:00:00:00:00:02"),
		planNode("far", "10.42.2.0/24", "172.16.0.9", "02:00:00:00:00:03"),
		planNode("far-no-vtep", "10.42.3.0/24", "172.16.0.10", ""),
		planNode("simulated", "10.42.4.0/24", "127.1.0.4", ""),
		planNode("no-cidr", "", "192.168.1.5", ""),
		planNode("no-ip", "10.42.6.0/24", "", ""),
	}
	for _, tc := range []struct {
		name    string
		backend Backend
		vxlan   bool
		want    []string
	}{
		{"auto", BackendAuto, true, []string{"10.42.1.0/24 via 192.168.1.2", "10.42.2.0/24 vxlan via 10.42.2.0 -> 172.16.0.9"}},
		{"auto without tunnel", BackendAuto, false, []string{"10.42.1.0/24 via 192.168.1.2"}},
		{"vxlan", BackendVXLAN, true, []string{"10.42.1.0/24 vxlan via 10.42.1.0 -> 192.168.1.2", "10.42.2.0/24 vxlan via 10.42.2.0 -> 172.16.0.9"}},
		{"host-gw", BackendHostGW, true, []string{"10.42.1.0/24 via 192.168.1.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range planPeers("self", nodes, local, tc.backend, tc.vxlan) {
				s := fmt.Sprintf("%s via %s", p.dst, p.via())
				if p.vxlan {
					s = fmt.Sprintf("%s vxlan via %s -> %s", p.dst, p.via(), p.nodeIP)
				}
				got = append(got, s)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestIPAM(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ipam")
	m, err := openIPAM(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.allocate("x", ""); err == nil {
		t.Error("allocated with no range")
	}
	m.setRanges([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/29")}) // .2 … .6 usable
	var got []string
	for i := 0; i < 5; i++ {
		a, err := m.allocate(fmt.Sprint("s", i), "")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a[0].String())
	}
	if fmt.Sprint(got) != "[10.0.0.2/29 10.0.0.3/29 10.0.0.4/29 10.0.0.5/29 10.0.0.6/29]" {
		t.Errorf("addresses %v", got)
	}
	if _, err := m.allocate("s5", ""); err == nil {
		t.Error("allocated from a full range")
	}
	if a, _ := m.allocate("s2", ""); a[0].String() != "10.0.0.4/29" {
		t.Errorf("same id got %v, want its address again", a)
	}
	if err := m.release("s1"); err != nil {
		t.Fatal(err)
	}
	// A restart reads the files back.
	m2, err := openIPAM(dir)
	if err != nil {
		t.Fatal(err)
	}
	m2.setRanges([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/29")})
	if len(m2.holders()) != 4 {
		t.Errorf("after restart %d holders, want 4", len(m2.holders()))
	}
	if a, err := m2.allocate("new", ""); err != nil || a[0].String() != "10.0.0.3/29" {
		t.Errorf("freed address not reused: %v %v", a, err)
	}
	// A half-written file from a crash is dropped.
	os.WriteFile(filepath.Join(dir, "10.0.0.9"), []byte("{"), 0o600)
	if _, err := openIPAM(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "10.0.0.9")); !os.IsNotExist(err) {
		t.Error("corrupt allocation file kept")
	}
}

func TestMasqRules(t *testing.T) {
	got := masqRules(
		[]netip.Prefix{netip.MustParsePrefix("10.42.1.0/24"), netip.MustParsePrefix("fd00:42:1::/64")},
		[]netip.Prefix{netip.MustParsePrefix("10.42.0.0/16"), netip.MustParsePrefix("fd00:42::/48")})
	want := []string{
		"ip saddr 10.42.1.0/24 ip daddr != 10.42.0.0/16 masquerade",
		"ip6 saddr fd00:42:1::/64 ip6 daddr != fd00:42::/48 masquerade",
	}
	if len(got) != len(want) {
		t.Fatalf("rules %v", got)
	}
	for i := range got {
		if got[i].String() != want[i] {
			t.Errorf("rule %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestHostVethName(t *testing.T) {
	for _, id := range []string{"a", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"} {
		if n := hostVethName(id); len(n) != 15 || n != hostVethName(id) {
			t.Errorf("hostVethName(%q) = %q", id, n)
		}
	}
}
