package registry

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceCIDRValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cidrs []string
		want  []string
	}{
		{name: "v4", cidrs: []string{"10.96.0.0/12"}},
		{name: "dual", cidrs: []string{"10.96.0.0/12", "fd00:10:96::/112"}},
		{name: "none", want: []string{"spec.cidrs: Required value"}},
		{name: "three", cidrs: []string{"10.0.0.0/24", "10.1.0.0/24", "fd00::/64"}, want: []string{"spec.cidrs: Invalid value"}},
		{name: "two v4", cidrs: []string{"10.0.0.0/24", "10.1.0.0/24"}, want: []string{"spec.cidrs: Invalid value"}},
		{name: "not a cidr", cidrs: []string{"10.0.0.0"}, want: []string{"spec.cidrs[0]: Invalid value"}},
		{name: "host bits", cidrs: []string{"10.96.0.1/12"}, want: []string{"spec.cidrs[0]: Invalid value"}},
		{name: "leading zeros", cidrs: []string{"010.96.0.0/12"}, want: []string{"spec.cidrs[0]: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: tc.cidrs}}
			expectErrs(t, runCreate(mustResource(t, networkingGroup, "servicecidrs"), c), tc.want...)
		})
	}
}

func TestServiceCIDRUpdate(t *testing.T) {
	r := mustResource(t, networkingGroup, "servicecidrs")
	old := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12"}}}
	markStored(&old.ObjectMeta)
	for _, tc := range []struct {
		name  string
		cidrs []string
		want  []string
	}{
		{name: "same", cidrs: []string{"10.96.0.0/12"}},
		{name: "to dual stack", cidrs: []string{"10.96.0.0/12", "fd00::/112"}},
		{name: "changed", cidrs: []string{"10.97.0.0/16"}, want: []string{"spec.cidrs[0]: Invalid value"}},
		{name: "second of the same family", cidrs: []string{"10.96.0.0/12", "10.200.0.0/16"}, want: []string{"spec.cidrs: Invalid value"}},
		{name: "first changed while adding", cidrs: []string{"10.97.0.0/16", "fd00::/112"}, want: []string{"spec.cidrs[0]: Invalid value"}},
		{name: "removed", cidrs: nil, want: []string{"spec.cidrs: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := old.DeepCopy()
			c.Spec.CIDRs = tc.cidrs
			expectErrs(t, runUpdate(r, c, old), tc.want...)
		})
	}
	st := old.DeepCopy()
	st.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Message: "Kubernetes default Service CIDR is ready", LastTransitionTime: metav1.Now()}}
	expectErrs(t, r.ValidateStatusUpdate(st, old))
	st.Name = "renamed"
	expectErrs(t, r.ValidateStatusUpdate(st, old), "metadata.name: Invalid value")
}

func TestIPAddressValidate(t *testing.T) {
	ref := func(mutate func(*networkingv1.ParentReference)) *networkingv1.ParentReference {
		p := &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}
		mutate(p)
		return p
	}
	for _, tc := range []struct {
		name   string
		ipName string
		ref    *networkingv1.ParentReference
		want   []string
	}{
		{name: "service", ipName: "10.96.0.10", ref: ref(func(*networkingv1.ParentReference) {})},
		{name: "v6", ipName: "fd00::a", ref: ref(func(*networkingv1.ParentReference) {})},
		{name: "gateway", ipName: "10.96.0.11", ref: ref(func(p *networkingv1.ParentReference) { p.Group = "gateway.networking.k8s.io"; p.Resource = "gateways" })},
		{name: "not an ip", ipName: "web", ref: ref(func(*networkingv1.ParentReference) {}), want: []string{"metadata.name: Invalid value"}},
		{name: "non-canonical v6", ipName: "fd00:0::a", ref: ref(func(*networkingv1.ParentReference) {}), want: []string{"metadata.name: Invalid value"}},
		{name: "no parent", ipName: "10.96.0.12", want: []string{"spec.parentRef: Required value"}},
		{name: "parent without name and resource", ipName: "10.96.0.13", ref: ref(func(p *networkingv1.ParentReference) { p.Name, p.Resource = "", "" }),
			want: []string{"spec.parentRef.name: Required value", "spec.parentRef.resource: Required value"}},
		{name: "parent name with slash", ipName: "10.96.0.14", ref: ref(func(p *networkingv1.ParentReference) { p.Name = "a/b" }),
			want: []string{"spec.parentRef.name: Invalid value"}},
		{name: "bad group", ipName: "10.96.0.15", ref: ref(func(p *networkingv1.ParentReference) { p.Group = "Not_A_Group" }),
			want: []string{"spec.parentRef.group: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: tc.ipName}, Spec: networkingv1.IPAddressSpec{ParentRef: tc.ref}}
			expectErrs(t, runCreate(mustResource(t, networkingGroup, "ipaddresses"), a), tc.want...)
		})
	}
	r := mustResource(t, networkingGroup, "ipaddresses")
	old := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.10"}, Spec: networkingv1.IPAddressSpec{
		ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}}}
	markStored(&old.ObjectMeta)
	moved := old.DeepCopy()
	moved.Spec.ParentRef.Name = "db"
	expectErrs(t, runUpdate(r, moved, old), "spec.parentRef: Invalid value")
}
