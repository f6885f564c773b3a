package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const networkingGroup = "networking.k8s.io"

func ingressPath(p string, pt networkingv1.PathType) networkingv1.HTTPIngressPath {
	return networkingv1.HTTPIngressPath{Path: p, PathType: &pt, Backend: networkingv1.IngressBackend{
		Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}
}

func ingress(mutate func(*networkingv1.Ingress)) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: objMeta("web"), Spec: networkingv1.IngressSpec{
		IngressClassName: new("nginx"),
		Rules: []networkingv1.IngressRule{{Host: "example.com", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{ingressPath("/", networkingv1.PathTypePrefix)}}}}},
	}}
	mutate(ing)
	return ing
}

func TestIngressValidate(t *testing.T) {
	path0 := func(ing *networkingv1.Ingress) *networkingv1.HTTPIngressPath { return &ing.Spec.Rules[0].HTTP.Paths[0] }
	for _, tc := range []struct {
		name   string
		mutate func(*networkingv1.Ingress)
		want   []string
	}{
		{name: "valid", mutate: func(*networkingv1.Ingress) {}},
		{name: "default backend only", mutate: func(ing *networkingv1.Ingress) {
			ing.Spec.Rules = nil
			ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
				Port: networkingv1.ServiceBackendPort{Name: "http"}}}
		}},
		{name: "nothing to route", mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules = nil }, want: []string{"spec: Invalid value"}},
		{name: "backend without port", mutate: func(ing *networkingv1.Ingress) { path0(ing).Backend.Service.Port = networkingv1.ServiceBackendPort{} },
			want: []string{"spec.rules[0].http.paths[0].backend: Required value"}},
		{name: "port name and number", mutate: func(ing *networkingv1.Ingress) { path0(ing).Backend.Service.Port.Name = "http" },
			want: []string{"spec.rules[0].http.paths[0].backend: Invalid value"}},
		{name: "bad service name", mutate: func(ing *networkingv1.Ingress) { path0(ing).Backend.Service.Name = "1web" },
			want: []string{"spec.rules[0].http.paths[0].backend.service.name: Invalid value"}},
		{name: "resource backend", mutate: func(ing *networkingv1.Ingress) {
			path0(ing).Backend = networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{APIGroup: new("k8s.example.com"), Kind: "StorageBucket", Name: "assets"}}
		}},
		{name: "both backends", mutate: func(ing *networkingv1.Ingress) {
			path0(ing).Backend.Resource = &corev1.TypedLocalObjectReference{Kind: "StorageBucket", Name: "assets"}
		}, want: []string{"spec.rules[0].http.paths[0].backend: Invalid value"}},
		{name: "no path type", mutate: func(ing *networkingv1.Ingress) { path0(ing).PathType = nil },
			want: []string{"spec.rules[0].http.paths[0].pathType: Required value"}},
		{name: "unknown path type", mutate: func(ing *networkingv1.Ingress) { *path0(ing) = ingressPath("/", "Regex") },
			want: []string{"spec.rules[0].http.paths[0].pathType: Unsupported value"}},
		{name: "relative prefix", mutate: func(ing *networkingv1.Ingress) { path0(ing).Path = "api" },
			want: []string{"spec.rules[0].http.paths[0].path: Invalid value"}},
		{name: "double slash", mutate: func(ing *networkingv1.Ingress) { path0(ing).Path = "/api//v1" },
			want: []string{"spec.rules[0].http.paths[0].path: Invalid value"}},
		{name: "implementation specific regex", mutate: func(ing *networkingv1.Ingress) {
			*path0(ing) = ingressPath("/api/.*", networkingv1.PathTypeImplementationSpecific)
		}},
		{name: "no paths", mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths = nil },
			want: []string{"spec.rules[0].http.paths: Required value"}},
		{name: "wildcard host", mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "*.example.com" }},
		{name: "IP host", mutate: func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "10.0.0.1" },
			want: []string{"spec.rules[0].host: Invalid value"}},
		{name: "tls", mutate: func(ing *networkingv1.Ingress) {
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"example.com", "*.example.com"}, SecretName: "web-tls"}}
		}},
		{name: "bad tls secret", mutate: func(ing *networkingv1.Ingress) {
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"example.com"}, SecretName: "Web_TLS"}}
		}, want: []string{"spec.tls[0].secretName: Invalid value"}},
		{name: "bad class name", mutate: func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = new("Nginx") },
			want: []string{"spec.ingressClassName: Invalid value"}},
		{name: "annotation agrees", mutate: func(ing *networkingv1.Ingress) {
			ing.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
		}},
		{name: "annotation disagrees", mutate: func(ing *networkingv1.Ingress) {
			ing.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
		}, want: []string{"annotations.kubernetes.io/ingress.class: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, networkingGroup, "ingresses"), ingress(tc.mutate)), tc.want...)
		})
	}
}

func TestIngressUpdate(t *testing.T) {
	r := mustResource(t, networkingGroup, "ingresses")
	old := ingress(func(*networkingv1.Ingress) {})
	markStored(&old.ObjectMeta)
	t.Run("annotation is only checked on create", func(t *testing.T) {
		ing := old.DeepCopy()
		ing.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
		expectErrs(t, runUpdate(r, ing, old))
	})
	t.Run("stored bad secret name may stay", func(t *testing.T) {
		bad := old.DeepCopy()
		bad.Spec.TLS = []networkingv1.IngressTLS{{SecretName: "Web_TLS"}}
		ing := bad.DeepCopy()
		ing.Spec.Rules[0].Host = "www.example.com"
		expectErrs(t, runUpdate(r, ing, bad))
		expectErrs(t, runUpdate(r, bad.DeepCopy(), old), "spec.tls[0].secretName: Invalid value")
	})
	t.Run("create drops status", func(t *testing.T) {
		ing := ingress(func(ing *networkingv1.Ingress) {
			ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}
		})
		expectErrs(t, runCreate(r, ing))
		if len(ing.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("status kept: %+v", ing.Status)
		}
	})
	t.Run("status", func(t *testing.T) {
		ing := old.DeepCopy()
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}, {Hostname: "lb.example.com"}}
		expectErrs(t, r.ValidateStatusUpdate(ing, old))
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "300.1.1.1"}, {Hostname: "192.0.2.1"}}
		expectErrs(t, r.ValidateStatusUpdate(ing, old),
			"status.loadBalancer.ingress[0].ip: Invalid value", "status.loadBalancer.ingress[1].hostname: Invalid value")
	})
}

func ingressClass(mutate func(*networkingv1.IngressClass)) *networkingv1.IngressClass {
	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	mutate(ic)
	return ic
}

func TestIngressClass(t *testing.T) {
	r := mustResource(t, networkingGroup, "ingressclasses")
	params := func(scope string, ns *string) *networkingv1.IngressClassParametersReference {
		p := &networkingv1.IngressClassParametersReference{APIGroup: new("k8s.example.com"), Kind: "IngressParameters", Name: "external", Namespace: ns}
		if scope != "" {
			p.Scope = new(scope)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		mutate func(*networkingv1.IngressClass)
		want   []string
	}{
		{name: "valid", mutate: func(*networkingv1.IngressClass) {}},
		{name: "no controller", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "" },
			want: []string{"spec.controller: Required value"}},
		{name: "controller without domain", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "nginx" },
			want: []string{"spec.controller: Invalid value"}},
		{name: "cluster parameters (defaulted scope)", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("", nil) }},
		{name: "namespace parameters", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Namespace", new("ingress")) }},
		{name: "namespace parameters without namespace", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Namespace", nil) },
			want: []string{"spec.parameters.namespace: Required value"}},
		{name: "cluster parameters with namespace", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Cluster", new("ingress")) },
			want: []string{"spec.parameters.namespace: Forbidden"}},
		{name: "unknown scope", mutate: func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = params("Global", nil) },
			want: []string{"spec.parameters.scope: Unsupported value"}},
		{name: "parameters without kind", mutate: func(ic *networkingv1.IngressClass) {
			ic.Spec.Parameters = params("", nil)
			ic.Spec.Parameters.Kind = ""
		}, want: []string{"spec.parameters.kind: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ic := ingressClass(tc.mutate)
			expectErrs(t, runCreate(r, ic), tc.want...)
			if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
				t.Error("parameters.scope not defaulted")
			}
		})
	}

	old := ingressClass(func(*networkingv1.IngressClass) {})
	markStored(&old.ObjectMeta)
	withParams := old.DeepCopy()
	withParams.Spec.Parameters = params("Cluster", nil)
	expectErrs(t, runUpdate(r, withParams, old))
	moved := old.DeepCopy()
	moved.Spec.Controller = "example.com/other"
	expectErrs(t, runUpdate(r, moved, old), "spec.controller: Invalid value")
}

func networkPolicy(mutate func(*networkingv1.NetworkPolicy)) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: objMeta("allow-web"), Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}},
			Ports: []networkingv1.NetworkPolicyPort{{Port: new(intstr.FromInt32(80))}},
		}},
	}}
	mutate(np)
	return np
}

func TestNetworkPolicyDefaults(t *testing.T) {
	r := mustResource(t, networkingGroup, "networkpolicies")
	in := networkPolicy(func(*networkingv1.NetworkPolicy) {})
	r.Default(in)
	if p := in.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Errorf("port protocol = %v, want TCP", p)
	}
	if got := in.Spec.PolicyTypes; len(got) != 1 || got[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policyTypes = %v, want [Ingress]", got)
	}
	both := networkPolicy(func(np *networkingv1.NetworkPolicy) {
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: new(corev1.ProtocolUDP), Port: new(intstr.FromInt32(53))}}}}
	})
	r.Default(both)
	if got := both.Spec.PolicyTypes; len(got) != 2 || got[1] != networkingv1.PolicyTypeEgress {
		t.Errorf("policyTypes = %v, want [Ingress Egress]", got)
	}
	if *both.Spec.Egress[0].Ports[0].Protocol != corev1.ProtocolUDP {
		t.Error("explicit protocol overwritten")
	}
}

func TestNetworkPolicyValidate(t *testing.T) {
	peer0 := func(np *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicyPeer {
		return &np.Spec.Ingress[0].From[0]
	}
	port0 := func(np *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicyPort {
		return &np.Spec.Ingress[0].Ports[0]
	}
	for _, tc := range []struct {
		name   string
		mutate func(*networkingv1.NetworkPolicy)
		want   []string
	}{
		{name: "valid", mutate: func(*networkingv1.NetworkPolicy) {}},
		{name: "deny all", mutate: func(np *networkingv1.NetworkPolicy) {
			np.Spec = networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"}}
		}},
		{name: "port range", mutate: func(np *networkingv1.NetworkPolicy) { port0(np).EndPort = new(int32(90)) }},
		{name: "backwards range", mutate: func(np *networkingv1.NetworkPolicy) { port0(np).EndPort = new(int32(70)) },
			want: []string{"spec.ingress[0].ports[0].endPort: Invalid value"}},
		{name: "range from a named port", mutate: func(np *networkingv1.NetworkPolicy) {
			port0(np).Port, port0(np).EndPort = new(intstr.FromString("http")), new(int32(90))
		}, want: []string{"spec.ingress[0].ports[0].endPort: Invalid value"}},
		{name: "bad port", mutate: func(np *networkingv1.NetworkPolicy) { port0(np).Port = new(intstr.FromInt32(70000)) },
			want: []string{"spec.ingress[0].ports[0].port: Invalid value"}},
		{name: "bad protocol", mutate: func(np *networkingv1.NetworkPolicy) { port0(np).Protocol = new(corev1.Protocol("ICMP")) },
			want: []string{"spec.ingress[0].ports[0].protocol: Unsupported value"}},
		{name: "empty peer", mutate: func(np *networkingv1.NetworkPolicy) { *peer0(np) = networkingv1.NetworkPolicyPeer{} },
			want: []string{"spec.ingress[0].from[0]: Required value"}},
		{name: "ip block", mutate: func(np *networkingv1.NetworkPolicy) {
			*peer0(np) = networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}
		}},
		{name: "ip block and selector", mutate: func(np *networkingv1.NetworkPolicy) {
			peer0(np).IPBlock = &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}
		}, want: []string{"spec.ingress[0].from[0]: Forbidden"}},
		{name: "exception outside the block", mutate: func(np *networkingv1.NetworkPolicy) {
			*peer0(np) = networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.0.0.0/8"}}}
		}, want: []string{"spec.ingress[0].from[0].ipBlock.except[0]: Invalid value"}},
		{name: "bad cidr", mutate: func(np *networkingv1.NetworkPolicy) {
			*peer0(np) = networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/33"}}
		}, want: []string{"spec.ingress[0].from[0].ipBlock.cidr: Invalid value"}},
		{name: "no cidr", mutate: func(np *networkingv1.NetworkPolicy) {
			*peer0(np) = networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{}}
		}, want: []string{"spec.ingress[0].from[0].ipBlock.cidr: Required value"}},
		{name: "unknown policy type", mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.PolicyTypes = []networkingv1.PolicyType{"Sideways"} },
			want: []string{"spec.policyTypes[0]: Unsupported value"}},
		{name: "three policy types", mutate: func(np *networkingv1.NetworkPolicy) {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{"Ingress", "Egress", "Ingress"}
		}, want: []string{"spec.policyTypes: Invalid value"}},
		{name: "bad pod selector", mutate: func(np *networkingv1.NetworkPolicy) {
			np.Spec.PodSelector.MatchLabels = map[string]string{"app": "a b"}
		},
			want: []string{"spec.podSelector.matchLabels: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, networkingGroup, "networkpolicies"), networkPolicy(tc.mutate)), tc.want...)
		})
	}
}

func TestNetworkPolicyUpdate(t *testing.T) {
	r := mustResource(t, networkingGroup, "networkpolicies")
	old := networkPolicy(func(*networkingv1.NetworkPolicy) {})
	r.Default(old)
	markStored(&old.ObjectMeta)
	np := old.DeepCopy()
	np.Spec.PodSelector = metav1.LabelSelector{}
	np.Spec.Ingress = nil
	expectErrs(t, runUpdate(r, np, old))
	np.Spec.PolicyTypes = []networkingv1.PolicyType{"Sideways"}
	expectErrs(t, runUpdate(r, np, old), "spec.policyTypes[0]: Unsupported value")
}
