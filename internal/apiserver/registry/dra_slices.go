package registry

import (
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceSlices: a driver's devices, one pool split over one or more
// slices. A slice is for one node (nodeName), for the nodes a selector
// picks, for all nodes, or says per device where it is available; the
// driver and the node never change.

func validateResourceSlice(obj runtime.Object) field.ErrorList {
	s := obj.(*resourcev1.ResourceSlice)
	allErrs := validateCoreMeta(&s.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	allErrs = append(allErrs, draValidateDriverName(s.Spec.Driver, spec.Child("driver"))...)
	pool := spec.Child("pool")
	allErrs = append(allErrs, draValidatePoolName(s.Spec.Pool.Name, pool.Child("name"))...)
	if s.Spec.Pool.ResourceSliceCount <= 0 {
		allErrs = append(allErrs, field.Invalid(pool.Child("resourceSliceCount"), s.Spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if s.Spec.Pool.Generation < 0 {
		allErrs = append(allErrs, field.Invalid(pool.Child("generation"), s.Spec.Pool.Generation, "must be greater than or equal to zero"))
	}

	set := 0
	if n := s.Spec.NodeName; n != nil {
		set++
		for _, msg := range apivalidation.NameIsDNSSubdomain(*n, false) {
			allErrs = append(allErrs, field.Invalid(spec.Child("nodeName"), *n, msg))
		}
	}
	if s.Spec.NodeSelector != nil {
		set++
		if len(s.Spec.NodeSelector.NodeSelectorTerms) == 0 {
			allErrs = append(allErrs, field.Required(spec.Child("nodeSelector", "nodeSelectorTerms"), "must have at least one node selector term"))
		}
	}
	if s.Spec.AllNodes != nil && *s.Spec.AllNodes {
		set++
	}
	if s.Spec.PerDeviceNodeSelection != nil && *s.Spec.PerDeviceNodeSelection {
		set++
	}
	if set != 1 {
		allErrs = append(allErrs, field.Invalid(spec, nil,
			"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	}

	dp := spec.Child("devices")
	devices := s.Spec.Devices
	if len(devices) > resourcev1.ResourceSliceMaxDevices {
		allErrs = append(allErrs, field.TooMany(dp, len(devices), resourcev1.ResourceSliceMaxDevices))
	}
	allErrs = append(allErrs, draValidateNames(len(devices), func(i int) string { return devices[i].Name },
		func(i int) *field.Path { return dp.Index(i).Child("name") })...)
	for i := range devices {
		allErrs = append(allErrs, draValidateDevice(&devices[i], dp.Index(i))...)
	}
	return allErrs
}

// draValidateDevice: at most 32 attributes and capacities in all, their
// names qualified or bare identifiers, each attribute one typed value.
func draValidateDevice(d *resourcev1.Device, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		allErrs = append(allErrs, field.Invalid(p, n,
			"the total number of attributes and capacities must not exceed 32"))
	}
	name := func(n string, fp *field.Path) field.ErrorList {
		if strings.Contains(n, "/") {
			return draValidateAttributeName(n, fp)
		}
		return draValidateIdentifier(n, fp)
	}
	for k, a := range d.Attributes {
		ap := p.Child("attributes").Key(string(k))
		allErrs = append(allErrs, name(string(k), ap)...)
		n := 0
		for _, set := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			allErrs = append(allErrs, field.Invalid(ap, a, "exactly one value must be specified"))
		}
		if a.StringValue != nil && len(*a.StringValue) > resourcev1.DeviceAttributeMaxValueLength {
			allErrs = append(allErrs, field.TooLong(ap.Child("string"), "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	for k, c := range d.Capacity {
		cp := p.Child("capacity").Key(string(k))
		allErrs = append(allErrs, name(string(k), cp)...)
		if c.Value.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(cp.Child("value"), c.Value.String(), apivalidation.IsNegativeErrorMsg))
		}
	}
	if len(d.Taints) > resourcev1.DeviceTaintsMaxLength {
		allErrs = append(allErrs, field.TooMany(p.Child("taints"), len(d.Taints), resourcev1.DeviceTaintsMaxLength))
	}
	for i, t := range d.Taints {
		tp := p.Child("taints").Index(i)
		if t.Key == "" {
			allErrs = append(allErrs, field.Required(tp.Child("key"), ""))
		}
		switch t.Effect {
		case resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone:
		default:
			allErrs = append(allErrs, field.NotSupported(tp.Child("effect"), t.Effect,
				[]resourcev1.DeviceTaintEffect{resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule}))
		}
	}
	return allErrs
}

// validateResourceSliceUpdate: the node and the driver are immutable.
func validateResourceSliceUpdate(obj, old runtime.Object) field.ErrorList {
	s, o := obj.(*resourcev1.ResourceSlice), old.(*resourcev1.ResourceSlice)
	allErrs := validateResourceSlice(obj)
	allErrs = append(allErrs, validateCoreMetaUpdate(&s.ObjectMeta, &o.ObjectMeta)...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(s.Spec.NodeName, o.Spec.NodeName, field.NewPath("spec", "nodeName"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(s.Spec.Driver, o.Spec.Driver, field.NewPath("spec", "driver"))...)
	return dedupFieldErrors(allErrs)
}

var resourceSliceTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Node", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Driver", Type: "string", Description: resourcev1.ResourceSliceSpec{}.SwaggerDoc()["driver"]},
		{Name: "Pool", Type: "string", Description: resourcev1.ResourcePool{}.SwaggerDoc()["name"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		s := obj.(*resourcev1.ResourceSlice)
		node := "<none>"
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			node = *s.Spec.NodeName
		}
		return []interface{}{s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, Age(s.CreationTimestamp)}
	},
}
