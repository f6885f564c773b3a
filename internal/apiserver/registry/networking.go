package registry

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// networking.k8s.io/v1: Ingresses (HTTP routing from outside the cluster
// to Services), IngressClasses (which controller serves an Ingress) and
// NetworkPolicies (which traffic may reach or leave pods).

func networkingResources() []*Resource {
	const g = "networking.k8s.io"
	rs := []*Resource{
		{Group: g, Version: "v1", Resource: "ingressclasses", Kind: "IngressClass", Singular: "ingressclass", HasGeneration: true,
			New:     func() runtime.Object { return &networkingv1.IngressClass{} },
			Default: defaultIngressClass, Validate: validateIngressClass, ValidateUpdate: validateIngressClassUpdate,
			Table: ingressClassTable},
		{Group: g, Version: "v1", Resource: "ingresses", Kind: "Ingress", Singular: "ingress", Namespaced: true,
			ShortNames: []string{"ing"}, HasStatus: true, HasGeneration: true,
			New:              func() runtime.Object { return &networkingv1.Ingress{} },
			PrepareForCreate: prepareIngressCreate,
			Validate:         validateIngressCreate, ValidateUpdate: validateIngressUpdate, ValidateStatusUpdate: validateIngressStatusUpdate,
			Table: ingressTable},
		{Group: g, Version: "v1", Resource: "networkpolicies", Kind: "NetworkPolicy", Singular: "networkpolicy", Namespaced: true,
			ShortNames: []string{"netpol"}, HasGeneration: true,
			New:     func() runtime.Object { return &networkingv1.NetworkPolicy{} },
			Default: defaultNetworkPolicy, Validate: validateNetworkPolicy, ValidateUpdate: validateNetworkPolicyUpdate,
			Table: networkPolicyTable},
	}
	return append(rs, serviceCIDRResources()...)
}

const (
	// ingressClassAnnotation is the pre-IngressClass way to pick a
	// controller; it must agree with spec.ingressClassName when both are set.
	ingressClassAnnotation  = "kubernetes.io/ingress.class"
	ingressMaxControllerLen = 250
)

var (
	ingressPathTypes = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
	// Sequences that would let a path escape its prefix after a proxy
	// normalizes it.
	ingressBadPathParts    = []string{"//", "/./", "/../", "%2f", "%2F"}
	ingressBadPathSuffixes = []string{"/..", "/."}
	ingressParamScopes     = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}
	netpolProtocols        = []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}
	netpolTypes            = []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
)

// Ingresses

// ingressOptions relax checks that an object stored before they existed
// may fail; an update of such an object is judged as leniently as it was
// when stored.
type ingressOptions struct {
	allowInvalidSecretName       bool
	allowInvalidWildcardHostRule bool
}

func prepareIngressCreate(obj runtime.Object) {
	obj.(*networkingv1.Ingress).Status = networkingv1.IngressStatus{}
}

func validateIngressCreate(obj runtime.Object) field.ErrorList {
	ing := obj.(*networkingv1.Ingress)
	allErrs := ingressValidate(ing, ingressOptions{})
	if v, ok := ing.Annotations[ingressClassAnnotation]; ok && ing.Spec.IngressClassName != nil && v != *ing.Spec.IngressClassName {
		allErrs = append(allErrs, field.Invalid(field.NewPath("annotations").Child(ingressClassAnnotation), v, "must match `ingressClassName` when both are specified"))
	}
	return allErrs
}

func validateIngressUpdate(obj, old runtime.Object) field.ErrorList {
	ing, o := obj.(*networkingv1.Ingress), old.(*networkingv1.Ingress)
	opts := ingressOptions{}
	for _, tls := range o.Spec.TLS {
		if tls.SecretName != "" && len(apivalidation.NameIsDNSSubdomain(tls.SecretName, false)) > 0 {
			opts.allowInvalidSecretName = true
		}
	}
	for _, rule := range o.Spec.Rules {
		if strings.Contains(rule.Host, "*") && len(ingressValidateRuleValue(&rule.IngressRuleValue, field.NewPath("spec"), ingressOptions{})) > 0 {
			opts.allowInvalidWildcardHostRule = true
		}
	}
	allErrs := validateCoreMetaUpdate(&ing.ObjectMeta, &o.ObjectMeta)
	return dedupFieldErrors(append(allErrs, ingressValidate(ing, opts)...))
}

func ingressValidate(ing *networkingv1.Ingress, opts ingressOptions) field.ErrorList {
	allErrs := validateCoreMeta(&ing.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	spec, p := &ing.Spec, field.NewPath("spec")
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		allErrs = append(allErrs, field.Invalid(p, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		allErrs = append(allErrs, ingressValidateBackend(spec.DefaultBackend, p.Child("defaultBackend"))...)
	}
	rulesPath := p.Child("rules")
	for i := range spec.Rules {
		rule := &spec.Rules[i]
		rp := rulesPath.Index(i)
		wildcard := strings.Contains(rule.Host, "*")
		if rule.Host != "" {
			hp := rp.Child("host")
			if netutils.ParseIPSloppy(rule.Host) != nil {
				allErrs = append(allErrs, field.Invalid(hp, rule.Host, "must be a DNS name, not an IP address"))
			}
			check := utilvalidation.IsDNS1123Subdomain
			if wildcard {
				check = utilvalidation.IsWildcardDNS1123Subdomain
			}
			for _, msg := range check(rule.Host) {
				allErrs = append(allErrs, field.Invalid(hp, rule.Host, msg))
			}
		}
		if !wildcard || !opts.allowInvalidWildcardHostRule {
			allErrs = append(allErrs, ingressValidateRuleValue(&rule.IngressRuleValue, rp, opts)...)
		}
	}
	tlsPath := p.Child("tls")
	for i, tls := range spec.TLS {
		tp := tlsPath.Index(i)
		for j, host := range tls.Hosts {
			check := utilvalidation.IsDNS1123Subdomain
			if strings.Contains(host, "*") {
				check = utilvalidation.IsWildcardDNS1123Subdomain
			}
			for _, msg := range check(host) {
				allErrs = append(allErrs, field.Invalid(tp.Child("hosts").Index(j), host, msg))
			}
		}
		if tls.SecretName != "" && !opts.allowInvalidSecretName {
			for _, msg := range apivalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				allErrs = append(allErrs, field.Invalid(tp.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			allErrs = append(allErrs, field.Invalid(p.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return allErrs
}

func ingressValidateRuleValue(rv *networkingv1.IngressRuleValue, fldPath *field.Path, opts ingressOptions) field.ErrorList {
	if rv.HTTP == nil {
		return nil
	}
	var allErrs field.ErrorList
	pathsPath := fldPath.Child("http", "paths")
	if len(rv.HTTP.Paths) == 0 {
		allErrs = append(allErrs, field.Required(pathsPath, ""))
	}
	for i := range rv.HTTP.Paths {
		allErrs = append(allErrs, ingressValidatePath(&rv.HTTP.Paths[i], pathsPath.Index(i))...)
	}
	return allErrs
}

// ingressValidatePath: Exact and Prefix paths are matched by every
// controller alike, so they must be clean absolute paths; what an
// ImplementationSpecific path means is up to the controller.
func ingressValidatePath(hp *networkingv1.HTTPIngressPath, fldPath *field.Path) field.ErrorList {
	if hp.PathType == nil {
		return field.ErrorList{field.Required(fldPath.Child("pathType"), "pathType must be specified")}
	}
	var allErrs field.ErrorList
	pp := fldPath.Child("path")
	switch *hp.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(hp.Path, "/") {
			allErrs = append(allErrs, field.Invalid(pp, hp.Path, "must be an absolute path"))
		}
		for _, seq := range ingressBadPathParts {
			if strings.Contains(hp.Path, seq) {
				allErrs = append(allErrs, field.Invalid(pp, hp.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range ingressBadPathSuffixes {
			if strings.HasSuffix(hp.Path, suffix) {
				allErrs = append(allErrs, field.Invalid(pp, hp.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if hp.Path != "" && !strings.HasPrefix(hp.Path, "/") {
			allErrs = append(allErrs, field.Invalid(pp, hp.Path, "must be an absolute path"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("pathType"), *hp.PathType, ingressPathTypes))
	}
	return append(allErrs, ingressValidateBackend(&hp.Backend, fldPath.Child("backend"))...)
}

// ingressValidateBackend: a backend is a Service port (by name or number)
// or a reference to another resource the controller understands.
func ingressValidateBackend(b *networkingv1.IngressBackend, fldPath *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(fldPath, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		return ingressValidateTypedRef(b.Resource.APIGroup, b.Resource.Kind, b.Resource.Name, fldPath.Child("resource"))
	case b.Service == nil:
		return field.ErrorList{field.Invalid(fldPath, "", "resource or service backend is required")}
	}
	var allErrs field.ErrorList
	svc, sp := b.Service, fldPath.Child("service")
	if svc.Name == "" {
		allErrs = append(allErrs, field.Required(sp.Child("name"), ""))
	} else {
		for _, msg := range apivalidation.NameIsDNS1035Label(svc.Name, false) {
			allErrs = append(allErrs, field.Invalid(sp.Child("name"), svc.Name, msg))
		}
	}
	switch hasName, hasNumber := svc.Port.Name != "", svc.Port.Number != 0; {
	case hasName && hasNumber:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "cannot set both port name & port number"))
	case hasName:
		for _, msg := range utilvalidation.IsValidPortName(svc.Port.Name) {
			allErrs = append(allErrs, field.Invalid(sp.Child("port", "name"), svc.Port.Name, msg))
		}
	case hasNumber:
		for _, msg := range utilvalidation.IsValidPortNum(int(svc.Port.Number)) {
			allErrs = append(allErrs, field.Invalid(sp.Child("port", "number"), svc.Port.Number, msg))
		}
	default:
		allErrs = append(allErrs, field.Required(fldPath, "port name or number is required"))
	}
	return allErrs
}

// ingressValidateTypedRef checks a reference to an arbitrary object: the
// kind and name must at least be usable in a URL.
func ingressValidateTypedRef(apiGroup *string, kind, name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if apiGroup != nil {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(*apiGroup) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("apiGroup"), *apiGroup, msg))
		}
	}
	for _, f := range []struct{ child, value string }{{"kind", kind}, {"name", name}} {
		if f.value == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child(f.child), f.child+" is required"))
			continue
		}
		for _, msg := range path.IsValidPathSegmentName(f.value) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.child), f.value, msg))
		}
	}
	return allErrs
}

// validateIngressStatusUpdate checks the addresses a controller reports.
func validateIngressStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	var allErrs field.ErrorList
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, lb := range obj.(*networkingv1.Ingress).Status.LoadBalancer.Ingress {
		ip := p.Index(i)
		if lb.IP != "" {
			allErrs = append(allErrs, utilvalidation.IsValidIPForLegacyField(ip.Child("ip"), lb.IP, true, nil)...)
		}
		if lb.Hostname != "" {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(lb.Hostname) {
				allErrs = append(allErrs, field.Invalid(ip.Child("hostname"), lb.Hostname, msg))
			}
			if netutils.ParseIPSloppy(lb.Hostname) != nil {
				allErrs = append(allErrs, field.Invalid(ip.Child("hostname"), lb.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return allErrs
}

var ingressTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for additional configuration"},
		{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
		{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
		{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		ing := obj.(*networkingv1.Ingress)
		class := "<none>"
		if ing.Spec.IngressClassName != nil {
			class = *ing.Spec.IngressClassName
		}
		ports := "80"
		if len(ing.Spec.TLS) > 0 {
			ports = "80, 443"
		}
		return []interface{}{ing.Name, class, ingressHosts(ing.Spec.Rules), ingressAddress(ing.Status.LoadBalancer), ports, Age(ing.CreationTimestamp)}
	},
}

// ingressHosts lists the first three rules' hosts; "*" when no rule names
// one, since such an Ingress answers for any host.
func ingressHosts(rules []networkingv1.IngressRule) string {
	var hosts []string
	for _, r := range rules {
		if len(hosts) == 3 {
			return fmt.Sprintf("%s + %d more...", strings.Join(hosts, ","), len(rules)-3)
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	return strings.Join(hosts, ",")
}

// ingressAddress lists the load balancer's addresses, sorted. Upstream's
// printer shortens the list outside -o wide, but its server always prints
// wide, so kubectl gets the whole list.
func ingressAddress(st networkingv1.IngressLoadBalancerStatus) string {
	addrs := sets.New[string]()
	for _, lb := range st.Ingress {
		switch {
		case lb.IP != "":
			addrs.Insert(lb.IP)
		case lb.Hostname != "":
			addrs.Insert(lb.Hostname)
		}
	}
	return strings.Join(sets.List(addrs), ",")
}

// IngressClasses

func defaultIngressClass(obj runtime.Object) {
	if p := obj.(*networkingv1.IngressClass).Spec.Parameters; p != nil && p.Scope == nil {
		p.Scope = new(networkingv1.IngressClassParametersReferenceScopeCluster)
	}
}

func validateIngressClass(obj runtime.Object) field.ErrorList {
	ic := obj.(*networkingv1.IngressClass)
	allErrs := validateCoreMeta(&ic.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	cp := field.NewPath("spec", "controller")
	if len(ic.Spec.Controller) > ingressMaxControllerLen {
		allErrs = append(allErrs, field.TooLong(cp, "", ingressMaxControllerLen))
	}
	allErrs = append(allErrs, utilvalidation.IsDomainPrefixedPath(cp, ic.Spec.Controller)...)
	if params := ic.Spec.Parameters; params != nil {
		allErrs = append(allErrs, ingressValidateClassParameters(params, field.NewPath("spec", "parameters"))...)
	}
	return allErrs
}

// ingressValidateClassParameters: a Namespace-scoped reference needs a
// namespace, a Cluster-scoped one may not have one.
func ingressValidateClassParameters(params *networkingv1.IngressClassParametersReference, fldPath *field.Path) field.ErrorList {
	allErrs := ingressValidateTypedRef(params.APIGroup, params.Kind, params.Name, fldPath)
	sp := fldPath.Child("scope")
	if params.Scope == nil {
		return append(allErrs, field.Required(sp, ""))
	}
	switch scope := *params.Scope; scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		np := fldPath.Child("namespace")
		if params.Namespace == nil {
			allErrs = append(allErrs, field.Required(np, "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apivalidation.NameIsDNSLabel(*params.Namespace, false) {
				allErrs = append(allErrs, field.Invalid(np, *params.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(sp, scope, ingressParamScopes))
	}
	return allErrs
}

// validateIngressClassUpdate keeps the controller: Ingresses of the class
// were picked up by that controller.
func validateIngressClassUpdate(obj, old runtime.Object) field.ErrorList {
	ic, o := obj.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass)
	allErrs := validateCoreMetaUpdate(&ic.ObjectMeta, &o.ObjectMeta)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(ic.Spec.Controller, o.Spec.Controller, field.NewPath("spec", "controller"))...)
	return dedupFieldErrors(append(allErrs, validateIngressClass(obj)...))
}

var ingressClassTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
		{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		ic := obj.(*networkingv1.IngressClass)
		params := "<none>"
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind
			if p.APIGroup != nil {
				params += "." + *p.APIGroup
			}
			params += "/" + p.Name
		}
		return []interface{}{ic.Name, ic.Spec.Controller, params, Age(ic.CreationTimestamp)}
	},
}

// NetworkPolicies

// defaultNetworkPolicy: ports default to TCP, and a policy that names no
// types isolates ingress, plus egress if it has egress rules.
func defaultNetworkPolicy(obj runtime.Object) {
	np := obj.(*networkingv1.NetworkPolicy)
	for i := range np.Spec.Ingress {
		netpolDefaultPorts(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		netpolDefaultPorts(np.Spec.Egress[i].Ports)
	}
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(np.Spec.Egress) > 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

func netpolDefaultPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			ports[i].Protocol = new(corev1.ProtocolTCP)
		}
	}
}

func validateNetworkPolicy(obj runtime.Object) field.ErrorList {
	return netpolValidate(obj.(*networkingv1.NetworkPolicy), false)
}

// validateNetworkPolicyUpdate: every field may change. A pod selector
// stored before label values were checked strictly keeps validating.
func validateNetworkPolicyUpdate(obj, old runtime.Object) field.ErrorList {
	np, o := obj.(*networkingv1.NetworkPolicy), old.(*networkingv1.NetworkPolicy)
	allowInvalid := metav1validation.LabelSelectorHasInvalidLabelValue(&o.Spec.PodSelector)
	allErrs := validateCoreMetaUpdate(&np.ObjectMeta, &o.ObjectMeta)
	return dedupFieldErrors(append(allErrs, netpolValidate(np, allowInvalid)...))
}

func netpolValidate(np *networkingv1.NetworkPolicy, allowInvalidLabelValue bool) field.ErrorList {
	allErrs := validateCoreMeta(&np.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	spec := field.NewPath("spec")
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&np.Spec.PodSelector, opts, spec.Child("podSelector"))...)
	for i, rule := range np.Spec.Ingress {
		rp := spec.Child("ingress").Index(i)
		for j := range rule.Ports {
			allErrs = append(allErrs, netpolValidatePort(&rule.Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range rule.From {
			allErrs = append(allErrs, netpolValidatePeer(&rule.From[j], opts, rp.Child("from").Index(j))...)
		}
	}
	for i, rule := range np.Spec.Egress {
		rp := spec.Child("egress").Index(i)
		for j := range rule.Ports {
			allErrs = append(allErrs, netpolValidatePort(&rule.Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range rule.To {
			allErrs = append(allErrs, netpolValidatePeer(&rule.To[j], opts, rp.Child("to").Index(j))...)
		}
	}
	tp := spec.Child("policyTypes")
	if len(np.Spec.PolicyTypes) > len(netpolTypes) {
		return append(allErrs, field.Invalid(tp, np.Spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range np.Spec.PolicyTypes {
		if !slices.Contains(netpolTypes, string(t)) {
			allErrs = append(allErrs, field.NotSupported(tp.Index(i), t, netpolTypes))
		}
	}
	return allErrs
}

// netpolValidatePort: a numeric port may open a range up to endPort; a
// named port refers to one container port and cannot.
func netpolValidatePort(port *networkingv1.NetworkPolicyPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if p := port.Protocol; p != nil && !slices.Contains(netpolProtocols, string(*p)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("protocol"), *p, netpolProtocols))
	}
	ep := fldPath.Child("endPort")
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			allErrs = append(allErrs, field.Invalid(ep, *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		for _, msg := range utilvalidation.IsValidPortNum(int(port.Port.IntVal)) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("port"), port.Port.IntVal, msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				allErrs = append(allErrs, field.Invalid(ep, port.Port.IntVal, "must be greater than or equal to `port`"))
			}
			for _, msg := range utilvalidation.IsValidPortNum(int(*port.EndPort)) {
				allErrs = append(allErrs, field.Invalid(ep, *port.EndPort, msg))
			}
		}
	default:
		if port.EndPort != nil {
			allErrs = append(allErrs, field.Invalid(ep, *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range utilvalidation.IsValidPortName(port.Port.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("port"), port.Port.StrVal, msg))
		}
	}
	return allErrs
}

// netpolValidatePeer: pod and namespace selectors combine (pods matching
// in namespaces matching); an ipBlock stands alone.
func netpolValidatePeer(peer *networkingv1.NetworkPolicyPeer, opts metav1validation.LabelSelectorValidationOptions, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	if peer.PodSelector != nil {
		n++
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts, fldPath.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		allErrs = append(allErrs, netpolValidateIPBlock(peer.IPBlock, fldPath.Child("ipBlock"))...)
	}
	switch {
	case n == 0:
		allErrs = append(allErrs, field.Required(fldPath, "must specify a peer"))
	case n > 1 && peer.IPBlock != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not specify both ipBlock and another peer"))
	}
	return allErrs
}

// netpolValidateIPBlock: each exception must carve a strictly smaller
// range out of the block, or the rule would allow nothing.
func netpolValidateIPBlock(b *networkingv1.IPBlock, fldPath *field.Path) field.ErrorList {
	cp := fldPath.Child("cidr")
	if b.CIDR == "" {
		return field.ErrorList{field.Required(cp, "")}
	}
	allErrs := utilvalidation.IsValidCIDRForLegacyField(cp, b.CIDR, true, nil)
	_, block, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return allErrs
	}
	blockLen, _ := block.Mask.Size()
	for i, except := range b.Except {
		ep := fldPath.Child("except").Index(i)
		errs := utilvalidation.IsValidCIDRForLegacyField(ep, except, true, nil)
		allErrs = append(allErrs, errs...)
		_, ex, err := netutils.ParseCIDRSloppy(except)
		if err != nil {
			continue
		}
		exLen, _ := ex.Mask.Size()
		if !block.Contains(ex.IP) || blockLen >= exLen {
			allErrs = append(allErrs, field.Invalid(ep, except, "must be a strict subset of `cidr`"))
		}
	}
	return allErrs
}

var networkPolicyTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Pod-Selector", Type: "string", Description: networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		np := obj.(*networkingv1.NetworkPolicy)
		return []interface{}{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), Age(np.CreationTimestamp)}
	},
}
