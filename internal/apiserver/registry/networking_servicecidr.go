package registry

import (
	"net/netip"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// ServiceCIDRs and IPAddresses (networking.k8s.io/v1, GA in 1.33): the
// ranges Services take their cluster IPs from, and one object per IP
// taken. The API server creates the ServiceCIDR named "kubernetes" from
// --service-cluster-ip-range at start (DefaultServiceCIDRName); more may
// be added to grow the service network.
//
// Not yet: rudder's allocator (internal/apiserver/services.go) does not
// allocate from these objects. It takes a cluster IP with a
// compare-and-swap create of the raw etcd key
// /registry/ranges/serviceips/<ip> (value "namespace/name"), outside the
// object pipeline, and only from --service-cluster-ip-range: IPAddress
// objects are served and validated but not written for Services, and
// extra ServiceCIDRs do not widen the range. Making the allocation key the
// IPAddress object itself means encoding a full object (uid, timestamps,
// managedFields) in the allocator and migrating the existing keys and
// their repair loop; that is the allocator's rewrite, left for it.

// DefaultServiceCIDRName is the ServiceCIDR the API server keeps for its
// --service-cluster-ip-range, as upstream names it.
const DefaultServiceCIDRName = "kubernetes"

func serviceCIDRResources() []*Resource {
	const g = "networking.k8s.io"
	return []*Resource{
		{Group: g, Version: "v1", Resource: "servicecidrs", Kind: "ServiceCIDR", Singular: "servicecidr", HasStatus: true,
			New:              func() runtime.Object { return &networkingv1.ServiceCIDR{} },
			PrepareForCreate: func(obj runtime.Object) { obj.(*networkingv1.ServiceCIDR).Status = networkingv1.ServiceCIDRStatus{} },
			Validate:         validateServiceCIDR, ValidateUpdate: validateServiceCIDRUpdate,
			ValidateStatusUpdate: validateServiceCIDRStatusUpdate, Table: serviceCIDRTable},
		{Group: g, Version: "v1", Resource: "ipaddresses", Kind: "IPAddress", Singular: "ipaddress", ShortNames: []string{"ip"},
			New:      func() runtime.Object { return &networkingv1.IPAddress{} },
			Validate: validateIPAddress, ValidateUpdate: validateIPAddressUpdate, Table: ipAddressTable},
	}
}

// validateServiceCIDR: one or two CIDRs, and two only if one of each
// family.
func validateServiceCIDR(obj runtime.Object) field.ErrorList {
	c := obj.(*networkingv1.ServiceCIDR)
	allErrs := validateCoreMeta(&c.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, serviceCIDRValidateSpec(&c.Spec)...)
}

func serviceCIDRValidateSpec(spec *networkingv1.ServiceCIDRSpec) field.ErrorList {
	p := field.NewPath("spec", "cidrs")
	switch n := len(spec.CIDRs); {
	case n == 0:
		return field.ErrorList{field.Required(p, "at least one CIDR required")}
	case n > 2:
		return field.ErrorList{field.Invalid(p, spec, "may only hold up to 2 values")}
	}
	var allErrs field.ErrorList
	for i, cidr := range spec.CIDRs {
		allErrs = append(allErrs, utilvalidation.IsValidCIDR(p.Index(i), cidr)...)
	}
	if len(spec.CIDRs) == 2 && len(allErrs) == 0 {
		if dual, err := netutils.IsDualStackCIDRStrings(spec.CIDRs); err != nil || !dual {
			allErrs = append(allErrs, field.Invalid(p, spec, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return allErrs
}

// validateServiceCIDRUpdate: the CIDRs are immutable, except that a
// single-stack range may gain a range of the other family.
func validateServiceCIDRUpdate(obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR)
	allErrs := validateCoreMetaUpdate(&c.ObjectMeta, &o.ObjectMeta)
	p := field.NewPath("spec", "cidrs")
	switch {
	case len(o.Spec.CIDRs) == len(c.Spec.CIDRs):
		for i, cidr := range o.Spec.CIDRs {
			if cidr != c.Spec.CIDRs[i] {
				allErrs = append(allErrs, field.Invalid(p.Index(i), c.Spec.CIDRs[i], apivalidation.FieldImmutableErrorMsg))
			}
		}
	case len(o.Spec.CIDRs) == 1 && len(c.Spec.CIDRs) == 2:
		if c.Spec.CIDRs[0] != o.Spec.CIDRs[0] {
			allErrs = append(allErrs, field.Invalid(p.Index(0), c.Spec.CIDRs[0], apivalidation.FieldImmutableErrorMsg))
		}
		allErrs = append(allErrs, serviceCIDRValidateSpec(&c.Spec)...)
	default:
		allErrs = append(allErrs, field.Invalid(p, c.Spec.CIDRs, apivalidation.FieldImmutableErrorMsg))
	}
	return dedupFieldErrors(allErrs)
}

// validateServiceCIDRStatusUpdate checks only metadata, as upstream: the
// API server's own default-CIDR controller writes a Ready condition
// without a reason.
func validateServiceCIDRStatusUpdate(obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR)
	return validateCoreMetaUpdate(&c.ObjectMeta, &o.ObjectMeta)
}

var serviceCIDRTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "CIDRs", Type: "string", Description: networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		c := obj.(*networkingv1.ServiceCIDR)
		cidrs := "<none>"
		if len(c.Spec.CIDRs) > 0 {
			cidrs = strings.Join(c.Spec.CIDRs, ",")
		}
		return []interface{}{c.Name, cidrs, Age(c.CreationTimestamp)}
	},
}

// IPAddresses

// ipAddressName: the object's name is the IP itself, in canonical form
// (so one address cannot be allocated twice under two spellings).
func ipAddressName(name string, _ bool) []string {
	ip, err := netip.ParseAddr(name)
	if err != nil {
		return []string{err.Error()}
	}
	if ip.String() != name {
		return []string{"must be a canonical format IP address"}
	}
	return nil
}

func validateIPAddress(obj runtime.Object) field.ErrorList {
	a := obj.(*networkingv1.IPAddress)
	allErrs := validateCoreMeta(&a.ObjectMeta, false, ipAddressName)
	return append(allErrs, ipAddressValidateParentRef(a.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
}

// ipAddressValidateParentRef: the object the IP belongs to (a Service):
// resource and name required, group (empty for core) and namespace
// optional.
func ipAddressValidateParentRef(ref *networkingv1.ParentReference, p *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var allErrs field.ErrorList
	if ref.Group != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(ref.Group) {
			allErrs = append(allErrs, field.Invalid(p.Child("group"), ref.Group, msg))
		}
	}
	for _, f := range []struct{ name, value string }{{"resource", ref.Resource}, {"name", ref.Name}} {
		if f.value == "" {
			allErrs = append(allErrs, field.Required(p.Child(f.name), ""))
			continue
		}
		for _, msg := range path.IsValidPathSegmentName(f.value) {
			allErrs = append(allErrs, field.Invalid(p.Child(f.name), f.value, msg))
		}
	}
	if ref.Namespace != "" {
		for _, msg := range path.ValidatePathSegmentName(ref.Namespace, false) {
			allErrs = append(allErrs, field.Invalid(p.Child("namespace"), ref.Namespace, msg))
		}
	}
	return allErrs
}

// validateIPAddressUpdate: the parent reference never changes.
func validateIPAddressUpdate(obj, old runtime.Object) field.ErrorList {
	a, o := obj.(*networkingv1.IPAddress), old.(*networkingv1.IPAddress)
	allErrs := validateCoreMetaUpdate(&a.ObjectMeta, &o.ObjectMeta)
	return append(allErrs, apivalidation.ValidateImmutableField(a.Spec.ParentRef, o.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
}

var ipAddressTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "ParentRef", Type: "string", Description: networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		a := obj.(*networkingv1.IPAddress)
		parent := "<none>"
		if r := a.Spec.ParentRef; r != nil {
			parent = strings.ToLower(schema.GroupResource{Group: r.Group, Resource: r.Resource}.String())
			if r.Namespace != "" {
				parent += "/" + r.Namespace
			}
			parent += "/" + r.Name
		}
		return []interface{}{a.Name, parent, Age(a.CreationTimestamp)}
	},
}
