package registry

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Leases

func validateLease(obj runtime.Object) field.ErrorList {
	l := obj.(*coordinationv1.Lease)
	allErrs := ValidateMeta(&l.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, validateLeaseSpec(&l.Spec, field.NewPath("spec"))...)
}

func validateLeaseUpdate(obj, old runtime.Object) field.ErrorList {
	l := obj.(*coordinationv1.Lease)
	allErrs := ValidateMetaUpdate(&l.ObjectMeta, &old.(*coordinationv1.Lease).ObjectMeta)
	return append(allErrs, validateLeaseSpec(&l.Spec, field.NewPath("spec"))...)
}

func validateLeaseSpec(spec *coordinationv1.LeaseSpec, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("leaseDurationSeconds"), d, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("leaseTransitions"), t, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		// Upstream names this field spec.strategy.strategy; kept so that
		// errors read the same.
		sp := p.Child("strategy").Child("strategy")
		s := *spec.Strategy
		if !strings.Contains(string(s), "/") {
			// Unprefixed strategies are Kubernetes-defined; others must be
			// qualified names of their owner's choosing.
			if s != coordinationv1.OldestEmulationVersion {
				allErrs = append(allErrs, field.NotSupported(sp, s, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
			}
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(string(s)) {
				allErrs = append(allErrs, field.Invalid(sp, s, msg))
			}
		}
	}
	if h := spec.PreferredHolder; h != nil && *h != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		allErrs = append(allErrs, field.Forbidden(p.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return allErrs
}

var leaseTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		l := obj.(*coordinationv1.Lease)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []interface{}{l.Name, holder, Age(l.CreationTimestamp)}
	},
}

// EndpointSlices

const (
	maxEndpointsPerSlice = 1000
	maxAddressesPerEP    = 100
	maxPortsPerSlice     = 20000
	maxTopologyLabels    = 16
	maxZoneHints         = 8
	maxNodeHints         = 8
)

var addressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

func defaultEndpointSlice(obj runtime.Object) {
	s := obj.(*discoveryv1.EndpointSlice)
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			p.Name = new("")
		}
		if p.Protocol == nil {
			p.Protocol = new(corev1.ProtocolTCP)
		}
	}
}

func validateEndpointSlice(obj runtime.Object) field.ErrorList {
	s := obj.(*discoveryv1.EndpointSlice)
	allErrs := ValidateMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	switch p := field.NewPath("addressType"); {
	case s.AddressType == "":
		allErrs = append(allErrs, field.Required(p, ""))
	case !slices.Contains(addressTypes, s.AddressType):
		allErrs = append(allErrs, field.NotSupported(p, s.AddressType, addressTypes))
	}
	allErrs = append(allErrs, validateSliceEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))...)
	return append(allErrs, validateSlicePorts(s.Ports, field.NewPath("ports"))...)
}

// validateEndpointSliceUpdate keeps the address type: consumers (proxies,
// DNS) index slices by family and would not expect one to change under them.
func validateEndpointSliceUpdate(obj, old runtime.Object) field.ErrorList {
	s, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
	allErrs := validateEndpointSlice(obj)
	allErrs = append(allErrs, ValidateMetaUpdate(&s.ObjectMeta, &o.ObjectMeta)...)
	return append(allErrs, apivalidation.ValidateImmutableField(s.AddressType, o.AddressType, field.NewPath("addressType"))...)
}

func validateSliceEndpoints(endpoints []discoveryv1.Endpoint, at discoveryv1.AddressType, p *field.Path) field.ErrorList {
	if len(endpoints) > maxEndpointsPerSlice {
		return field.ErrorList{field.TooMany(p, len(endpoints), maxEndpointsPerSlice)}
	}
	var allErrs field.ErrorList
	for i, ep := range endpoints {
		ip := p.Index(i)
		ap := ip.Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			allErrs = append(allErrs, field.Required(ap, "must contain at least 1 address"))
		case len(ep.Addresses) > maxAddressesPerEP:
			allErrs = append(allErrs, field.TooMany(ap, len(ep.Addresses), maxAddressesPerEP))
		}
		for k, addr := range ep.Addresses {
			allErrs = append(allErrs, validateSliceAddress(addr, at, ap.Index(k))...)
		}
		if ep.NodeName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				allErrs = append(allErrs, field.Invalid(ip.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		tp := ip.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxTopologyLabels {
			allErrs = append(allErrs, field.TooMany(tp, len(ep.DeprecatedTopology), maxTopologyLabels))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabels(ep.DeprecatedTopology, tp)...)
		if ep.Hostname != nil {
			for _, msg := range utilvalidation.IsDNS1123Label(*ep.Hostname) {
				allErrs = append(allErrs, field.Invalid(ip.Child("hostname"), *ep.Hostname, msg))
			}
		}
		if ep.Hints != nil {
			allErrs = append(allErrs, validateSliceHints(ep.Hints, ip.Child("hints"))...)
		}
	}
	return allErrs
}

// validateSliceAddress checks an address against the slice's type. Unknown
// types were already reported and their addresses are not judged.
func validateSliceAddress(addr string, at discoveryv1.AddressType, p *field.Path) field.ErrorList {
	switch at {
	case discoveryv1.AddressTypeFQDN:
		return utilvalidation.IsFullyQualifiedDomainName(p, addr)
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		if errs := utilvalidation.IsValidIPForLegacyField(p, addr, true, nil); len(errs) > 0 {
			return errs
		}
		ip := net.ParseIP(addr)
		if is4 := ip.To4() != nil; is4 != (at == discoveryv1.AddressTypeIPv4) {
			return field.ErrorList{field.Invalid(p, addr, fmt.Sprintf("must be an %s address", at))}
		}
		return validateEndpointIP(ip, addr, p)
	}
	return nil
}

// validateEndpointIP rejects addresses no Service should route to: they
// name the node itself (loopback, unspecified) or node-local services such
// as cloud metadata endpoints (link-local).
func validateEndpointIP(ip net.IP, addr string, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ip.IsUnspecified() {
		allErrs = append(allErrs, field.Invalid(p, addr, fmt.Sprintf("may not be unspecified (%v)", addr)))
	}
	if ip.IsLoopback() {
		allErrs = append(allErrs, field.Invalid(p, addr, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		allErrs = append(allErrs, field.Invalid(p, addr, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		allErrs = append(allErrs, field.Invalid(p, addr, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return allErrs
}

func validateSliceHints(h *discoveryv1.EndpointHints, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	zp := p.Child("forZones")
	if len(h.ForZones) > maxZoneHints {
		allErrs = append(allErrs, field.TooMany(zp, len(h.ForZones), maxZoneHints))
	} else {
		seen := map[string]bool{}
		for i, z := range h.ForZones {
			np := zp.Index(i).Child("name")
			if seen[z.Name] {
				allErrs = append(allErrs, field.Duplicate(np, z.Name))
			}
			seen[z.Name] = true
			for _, msg := range utilvalidation.IsValidLabelValue(z.Name) {
				allErrs = append(allErrs, field.Invalid(np, z.Name, msg))
			}
		}
	}
	np := p.Child("forNodes")
	if len(h.ForNodes) > maxNodeHints {
		return append(allErrs, field.TooMany(np, len(h.ForNodes), maxNodeHints))
	}
	seen := map[string]bool{}
	for i, n := range h.ForNodes {
		pp := np.Index(i).Child("name")
		if seen[n.Name] {
			allErrs = append(allErrs, field.Duplicate(pp, n.Name))
		}
		seen[n.Name] = true
		for _, msg := range apivalidation.NameIsDNSSubdomain(n.Name, false) {
			allErrs = append(allErrs, field.Invalid(pp, n.Name, msg))
		}
	}
	return allErrs
}

var slicePortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validateSlicePorts(ports []discoveryv1.EndpointPort, p *field.Path) field.ErrorList {
	if len(ports) > maxPortsPerSlice {
		return field.ErrorList{field.TooMany(p, len(ports), maxPortsPerSlice)}
	}
	var allErrs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		ip := p.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			for _, msg := range utilvalidation.IsDNS1123Label(name) {
				allErrs = append(allErrs, field.Invalid(ip.Child("name"), name, msg))
			}
		}
		if names[name] {
			allErrs = append(allErrs, field.Duplicate(ip.Child("name"), name))
		}
		names[name] = true
		switch {
		case port.Protocol == nil:
			allErrs = append(allErrs, field.Required(ip.Child("protocol"), ""))
		case !slices.Contains(slicePortProtocols, *port.Protocol):
			allErrs = append(allErrs, field.NotSupported(ip.Child("protocol"), *port.Protocol, slicePortProtocols))
		}
		if port.AppProtocol != nil {
			for _, msg := range utilvalidation.IsQualifiedName(*port.AppProtocol) {
				allErrs = append(allErrs, field.Invalid(ip.Child("appProtocol"), *port.AppProtocol, msg))
			}
		}
	}
	return allErrs
}

var endpointSliceTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "AddressType", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]},
		{Name: "Ports", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]},
		{Name: "Endpoints", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		s := obj.(*discoveryv1.EndpointSlice)
		var ports []string
		for _, p := range s.Ports {
			switch {
			case p.Port != nil:
				ports = append(ports, strconv.Itoa(int(*p.Port)))
			case p.Name != nil:
				ports = append(ports, *p.Name)
			default:
				ports = append(ports, "*")
			}
		}
		var addrs []string
		for _, ep := range s.Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
		return []interface{}{s.Name, string(s.AddressType), firstThree(ports), firstThree(addrs), Age(s.CreationTimestamp)}
	},
}

// firstThree is kubectl's way of fitting a list in a cell: three items and
// a count of the rest.
func firstThree(items []string) string {
	if len(items) == 0 {
		return "<unset>"
	}
	if len(items) <= 3 {
		return strings.Join(items, ",")
	}
	return fmt.Sprintf("%s + %d more...", strings.Join(items[:3], ","), len(items)-3)
}
