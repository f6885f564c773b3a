package registry

import (
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceClaims and ResourceClaimTemplates. A claim's spec is immutable:
// what was asked for is what was allocated. Its status is the scheduler's
// allocation (immutable once written, until cleared) and the consumers
// holding the claim (reservedFor, only while allocated).

func defaultResourceClaim(obj runtime.Object) {
	draDefaultClaimSpec(&obj.(*resourcev1.ResourceClaim).Spec)
}

func defaultResourceClaimTemplate(obj runtime.Object) {
	draDefaultClaimSpec(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec)
}

// draDefaultClaimSpec: allocationMode ExactCount with a count of one, and
// tolerations with the Equal operator, as upstream defaults them.
func draDefaultClaimSpec(s *resourcev1.ResourceClaimSpec) {
	defaultTolerations := func(ts []resourcev1.DeviceToleration) {
		for i := range ts {
			if ts[i].Operator == "" {
				ts[i].Operator = resourcev1.DeviceTolerationOpEqual
			}
		}
	}
	for i := range s.Devices.Requests {
		r := &s.Devices.Requests[i]
		if e := r.Exactly; e != nil {
			if e.AllocationMode == "" {
				e.AllocationMode = resourcev1.DeviceAllocationModeExactCount
			}
			if e.AllocationMode == resourcev1.DeviceAllocationModeExactCount && e.Count == 0 {
				e.Count = 1
			}
			defaultTolerations(e.Tolerations)
		}
		for j := range r.FirstAvailable {
			sub := &r.FirstAvailable[j]
			if sub.AllocationMode == "" {
				sub.AllocationMode = resourcev1.DeviceAllocationModeExactCount
			}
			if sub.AllocationMode == resourcev1.DeviceAllocationModeExactCount && sub.Count == 0 {
				sub.Count = 1
			}
			defaultTolerations(sub.Tolerations)
		}
	}
}

func prepareResourceClaimCreate(obj runtime.Object) {
	obj.(*resourcev1.ResourceClaim).Status = resourcev1.ResourceClaimStatus{}
}

func validateResourceClaim(obj runtime.Object) field.ErrorList {
	c := obj.(*resourcev1.ResourceClaim)
	allErrs := validateCoreMeta(&c.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, draValidateClaimSpec(&c.Spec, field.NewPath("spec"))...)
}

// validateResourceClaimUpdate: the spec never changes.
func validateResourceClaimUpdate(obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
	allErrs := validateCoreMetaUpdate(&c.ObjectMeta, &o.ObjectMeta)
	return append(allErrs, apivalidation.ValidateImmutableField(c.Spec, o.Spec, field.NewPath("spec"))...)
}

func validateResourceClaimTemplate(obj runtime.Object) field.ErrorList {
	t := obj.(*resourcev1.ResourceClaimTemplate)
	allErrs := validateCoreMeta(&t.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	// The claim's own metadata: labels and annotations only.
	allErrs = append(allErrs, draValidateTemplateMeta(&t.Spec.ObjectMeta, field.NewPath("spec", "metadata"))...)
	return append(allErrs, draValidateClaimSpec(&t.Spec.Spec, field.NewPath("spec", "spec"))...)
}

func draValidateTemplateMeta(m *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
	return append(allErrs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
}

// validateResourceClaimTemplateUpdate: the spec never changes.
func validateResourceClaimTemplateUpdate(obj, old runtime.Object) field.ErrorList {
	t, o := obj.(*resourcev1.ResourceClaimTemplate), old.(*resourcev1.ResourceClaimTemplate)
	allErrs := validateCoreMetaUpdate(&t.ObjectMeta, &o.ObjectMeta)
	return append(allErrs, apivalidation.ValidateImmutableField(t.Spec, o.Spec, field.NewPath("spec"))...)
}

// draValidateClaimSpec checks the requests (unique names; each either
// exactly one device class request or a list of first-available
// alternatives), the constraints and the configuration.
func draValidateClaimSpec(s *resourcev1.ResourceClaimSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	devices := fldPath.Child("devices")
	reqPath := devices.Child("requests")
	reqs := s.Devices.Requests
	if len(reqs) > resourcev1.DeviceRequestsMaxSize {
		allErrs = append(allErrs, field.TooMany(reqPath, len(reqs), resourcev1.DeviceRequestsMaxSize))
	}
	allErrs = append(allErrs, draValidateNames(len(reqs), func(i int) string { return reqs[i].Name },
		func(i int) *field.Path { return reqPath.Index(i).Child("name") })...)
	names := sets.New[string]()
	for i, r := range reqs {
		p := reqPath.Index(i)
		names.Insert(r.Name)
		switch {
		case r.Exactly == nil && len(r.FirstAvailable) == 0:
			allErrs = append(allErrs, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
		case r.Exactly != nil && len(r.FirstAvailable) > 0:
			allErrs = append(allErrs, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
		case r.Exactly != nil:
			e := r.Exactly
			allErrs = append(allErrs, draValidateClassRequest(e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, p.Child("exactly"))...)
		default:
			sp := p.Child("firstAvailable")
			if len(r.FirstAvailable) > resourcev1.FirstAvailableDeviceRequestMaxSize {
				allErrs = append(allErrs, field.TooMany(sp, len(r.FirstAvailable), resourcev1.FirstAvailableDeviceRequestMaxSize))
			}
			subs := r.FirstAvailable
			allErrs = append(allErrs, draValidateNames(len(subs), func(j int) string { return subs[j].Name },
				func(j int) *field.Path { return sp.Index(j).Child("name") })...)
			for j, sub := range subs {
				names.Insert(r.Name + "/" + sub.Name)
				allErrs = append(allErrs, draValidateClassRequest(sub.DeviceClassName, sub.Selectors, sub.AllocationMode, sub.Count, sp.Index(j))...)
			}
		}
	}
	refs := func(rs []string, p *field.Path) field.ErrorList {
		var errs field.ErrorList
		for i, r := range rs {
			if !names.Has(r) && !names.Has(strings.SplitN(r, "/", 2)[0]) {
				errs = append(errs, field.Invalid(p.Index(i), r, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"))
			}
		}
		return errs
	}
	cp := devices.Child("constraints")
	if len(s.Devices.Constraints) > resourcev1.DeviceConstraintsMaxSize {
		allErrs = append(allErrs, field.TooMany(cp, len(s.Devices.Constraints), resourcev1.DeviceConstraintsMaxSize))
	}
	for i, c := range s.Devices.Constraints {
		p := cp.Index(i)
		allErrs = append(allErrs, refs(c.Requests, p.Child("requests"))...)
		switch {
		case c.MatchAttribute == nil && c.DistinctAttribute == nil:
			allErrs = append(allErrs, field.Required(p, "exactly one of `matchAttribute` or `distinctAttribute` is required"))
		case c.MatchAttribute != nil:
			allErrs = append(allErrs, draValidateAttributeName(string(*c.MatchAttribute), p.Child("matchAttribute"))...)
		}
	}
	fp := devices.Child("config")
	if len(s.Devices.Config) > resourcev1.DeviceConfigMaxSize {
		allErrs = append(allErrs, field.TooMany(fp, len(s.Devices.Config), resourcev1.DeviceConfigMaxSize))
	}
	for i, c := range s.Devices.Config {
		allErrs = append(allErrs, refs(c.Requests, fp.Index(i).Child("requests"))...)
		allErrs = append(allErrs, draValidateOpaque(c.Opaque, fp.Index(i))...)
	}
	return allErrs
}

// draValidateClassRequest: a device class, selectors, and a count that
// fits the allocation mode.
func draValidateClassRequest(class string, selectors []resourcev1.DeviceSelector, mode resourcev1.DeviceAllocationMode, count int64, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if class == "" {
		allErrs = append(allErrs, field.Required(p.Child("deviceClassName"), ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(class, false) {
			allErrs = append(allErrs, field.Invalid(p.Child("deviceClassName"), class, msg))
		}
	}
	allErrs = append(allErrs, draValidateSelectors(selectors, p.Child("selectors"))...)
	switch mode {
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("count"), count, "must be greater than zero"))
		}
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("count"), count, "must not be specified when allocationMode is 'All'"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(p.Child("allocationMode"), mode,
			[]resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}))
	}
	return allErrs
}

// draValidateAttributeName: a fully qualified name, domain/identifier.
func draValidateAttributeName(name string, p *field.Path) field.ErrorList {
	domain, id, ok := strings.Cut(name, "/")
	if !ok {
		return field.ErrorList{field.Invalid(p, name, "must include a domain")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(domain) {
		allErrs = append(allErrs, field.Invalid(p, name, msg))
	}
	allErrs = append(allErrs, draValidateIdentifier(id, p)...)
	return allErrs
}

// draValidateIdentifier: a C identifier of at most 32 characters (an
// attribute's or capacity's name within its domain).
func draValidateIdentifier(id string, p *field.Path) field.ErrorList {
	if id == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var allErrs field.ErrorList
	if len(id) > resourcev1.DeviceMaxIDLength {
		allErrs = append(allErrs, field.TooLong(p, "", resourcev1.DeviceMaxIDLength))
	}
	for _, msg := range utilvalidation.IsCIdentifier(id) {
		allErrs = append(allErrs, field.Invalid(p, id, msg))
	}
	return allErrs
}

// validateResourceClaimStatusUpdate holds upstream's invariants: consumers
// (reservedFor) only while allocated, unique by uid, none added once the
// claim is being deleted; an allocation is immutable once written (it may
// only be cleared), and a new one names requests of the claim.
func validateResourceClaimStatusUpdate(obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*resourcev1.ResourceClaim), old.(*resourcev1.ResourceClaim)
	allErrs := validateCoreMetaUpdate(&c.ObjectMeta, &o.ObjectMeta)
	status := field.NewPath("status")
	rp := status.Child("reservedFor")
	if len(c.Status.ReservedFor) > resourcev1.ResourceClaimReservedForMaxSize {
		allErrs = append(allErrs, field.TooMany(rp, len(c.Status.ReservedFor), resourcev1.ResourceClaimReservedForMaxSize))
	}
	uids := sets.New[types.UID]()
	for i, r := range c.Status.ReservedFor {
		p := rp.Index(i)
		if r.APIGroup != "" {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(r.APIGroup) {
				allErrs = append(allErrs, field.Invalid(p.Child("apiGroup"), r.APIGroup, msg))
			}
		}
		for _, f := range []struct{ name, value string }{{"resource", r.Resource}, {"name", r.Name}, {"uid", string(r.UID)}} {
			if f.value == "" {
				allErrs = append(allErrs, field.Required(p.Child(f.name), ""))
			}
		}
		if r.UID != "" && uids.Has(r.UID) {
			allErrs = append(allErrs, field.Duplicate(p.Child("uid"), r.UID))
		}
		uids.Insert(r.UID)
	}
	if len(c.Status.ReservedFor) > 0 {
		if c.Status.Allocation == nil {
			allErrs = append(allErrs, field.Forbidden(rp, "may not be specified when `allocated` is not set"))
		} else if c.DeletionTimestamp != nil {
			oldUIDs := sets.New[types.UID]()
			for _, r := range o.Status.ReservedFor {
				oldUIDs.Insert(r.UID)
			}
			if !oldUIDs.IsSuperset(uids) {
				allErrs = append(allErrs, field.Forbidden(rp, "new entries may not be added while `deletionTimestamp` is set"))
			}
		}
	}
	ap := status.Child("allocation")
	switch {
	case o.Status.Allocation != nil && c.Status.Allocation != nil:
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(c.Status.Allocation, o.Status.Allocation, ap)...)
	case c.Status.Allocation != nil:
		allErrs = append(allErrs, draValidateAllocation(c, ap)...)
	}
	return allErrs
}

// draValidateAllocation: each result names a request of the claim and a
// device (driver, pool, name); at most 32 results.
func draValidateAllocation(c *resourcev1.ResourceClaim, ap *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for _, r := range c.Spec.Devices.Requests {
		names.Insert(r.Name)
		for _, sub := range r.FirstAvailable {
			names.Insert(r.Name + "/" + sub.Name)
		}
	}
	results := c.Status.Allocation.Devices.Results
	rp := ap.Child("devices", "results")
	if len(results) > resourcev1.AllocationResultsMaxSize {
		allErrs = append(allErrs, field.TooMany(rp, len(results), resourcev1.AllocationResultsMaxSize))
	}
	for i, r := range results {
		p := rp.Index(i)
		if !names.Has(r.Request) {
			allErrs = append(allErrs, field.Invalid(p.Child("request"), r.Request, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"))
		}
		allErrs = append(allErrs, draValidateDriverName(r.Driver, p.Child("driver"))...)
		allErrs = append(allErrs, draValidatePoolName(r.Pool, p.Child("pool"))...)
		if r.Device == "" {
			allErrs = append(allErrs, field.Required(p.Child("device"), ""))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Label(r.Device) {
				allErrs = append(allErrs, field.Invalid(p.Child("device"), r.Device, msg))
			}
		}
	}
	return allErrs
}

// resourceClaimTable: upstream's STATE column ("pending",
// "allocated,reserved", "deleted", ...).
var resourceClaimTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "State", Type: "string", Description: "A summary of the current state (allocated, pending, reserved, etc.)."},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		c := obj.(*resourcev1.ResourceClaim)
		return []interface{}{c.Name, resourceClaimState(c), Age(c.CreationTimestamp)}
	},
}

func resourceClaimState(c *resourcev1.ResourceClaim) string {
	var states []string
	if c.DeletionTimestamp != nil {
		states = append(states, "deleted")
	}
	if c.Status.Allocation == nil {
		if c.DeletionTimestamp == nil {
			states = append(states, "pending")
		}
	} else {
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		} else if c.DeletionTimestamp != nil {
			states = append(states, "deallocating")
		}
	}
	return strings.Join(states, ",")
}
