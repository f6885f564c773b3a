package registry

import (
	"fmt"
	"math"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The CSI side of storage.k8s.io/v1: CSIDrivers (how the kubelet and the
// scheduler treat a driver), CSINodes (the drivers each node's kubelet has
// registered) and VolumeAttachments (the attach/detach requests between
// the attach-detach controller and a driver's external attacher).

const (
	csiMaxDriverName       = 63
	csiMaxNodeID           = 256
	csiMaxAttachedMetadata = 256 * (1 << 10)
	csiMaxVolumeErrorMsg   = 1024
	// Token lifetimes a driver may ask the kubelet for.
	csiMinTokenSeconds = 10 * 60
	csiMaxTokenSeconds = 1 << 32
)

var (
	csiFSGroupPolicies = []string{string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)}
	csiLifecycleModes  = []string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}
)

// csiValidateDriverName is the rule for a CSI driver's name wherever it
// appears: a DNS subdomain of at most 63 characters, any case.
func csiValidateDriverName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	if len(name) > csiMaxDriverName {
		allErrs = append(allErrs, field.TooLong(fldPath, name, csiMaxDriverName))
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.ToLower(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// CSIDrivers

// defaultCSIDriver fills what upstream defaults with every feature this
// server's Kubernetes version enables by default.
func defaultCSIDriver(obj runtime.Object) {
	s := &obj.(*storagev1.CSIDriver).Spec
	if s.AttachRequired == nil {
		s.AttachRequired = new(true)
	}
	if s.PodInfoOnMount == nil {
		s.PodInfoOnMount = new(false)
	}
	if s.StorageCapacity == nil {
		s.StorageCapacity = new(false)
	}
	if s.FSGroupPolicy == nil {
		s.FSGroupPolicy = new(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if s.RequiresRepublish == nil {
		s.RequiresRepublish = new(false)
	}
	if s.SELinuxMount == nil {
		s.SELinuxMount = new(false)
	}
}

// prepareCSIDriverCreate drops preventPodSchedulingIfMissing, an alpha
// field whose feature gate is off by default: a server without the feature
// does not store it.
func prepareCSIDriverCreate(obj runtime.Object) {
	obj.(*storagev1.CSIDriver).Spec.PreventPodSchedulingIfMissing = nil
}

// prepareCSIDriverUpdate keeps the alpha field only on objects that
// already carry it.
func prepareCSIDriverUpdate(obj, old runtime.Object) {
	if old.(*storagev1.CSIDriver).Spec.PreventPodSchedulingIfMissing == nil {
		obj.(*storagev1.CSIDriver).Spec.PreventPodSchedulingIfMissing = nil
	}
}

func validateCSIDriver(obj runtime.Object) field.ErrorList {
	d := obj.(*storagev1.CSIDriver)
	allErrs := validateCoreMeta(&d.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, csiValidateDriverSpec(&d.Spec, field.NewPath("spec"))...)
}

func csiValidateDriverSpec(s *storagev1.CSIDriverSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	// Upstream reports attachRequired under the path "attachedRequired";
	// kept so that errors read the same.
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"attachedRequired", s.AttachRequired != nil},
		{"podInfoOnMount", s.PodInfoOnMount != nil},
		{"storageCapacity", s.StorageCapacity != nil},
	} {
		if !f.set {
			allErrs = append(allErrs, field.Required(fldPath.Child(f.name), ""))
		}
	}
	if p := s.FSGroupPolicy; p != nil && !slices.Contains(csiFSGroupPolicies, string(*p)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("fsGroupPolicy"), *p, csiFSGroupPolicies))
	}
	allErrs = append(allErrs, csiValidateTokenRequests(s.TokenRequests, fldPath.Child("tokenRequests"))...)
	for _, mode := range s.VolumeLifecycleModes {
		if !slices.Contains(csiLifecycleModes, string(mode)) {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("volumeLifecycleModes"), mode, csiLifecycleModes))
		}
	}
	if s.SELinuxMount == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("seLinuxMount"), ""))
	}
	if p := s.NodeAllocatableUpdatePeriodSeconds; p != nil && *p < 10 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeAllocatableUpdatePeriodSeconds"), *p, "must be greater than or equal to 10 seconds"))
	}
	// Tokens can only travel in the secrets field if the driver asks for
	// some.
	if v := s.ServiceAccountTokenInSecrets; v != nil && len(s.TokenRequests) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("serviceAccountTokenInSecrets"), *v, "serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	return allErrs
}

// csiValidateTokenRequests: one token per audience, each living between
// ten minutes and 2^32 seconds.
func csiValidateTokenRequests(reqs []storagev1.TokenRequest, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	audiences := sets.New[string]()
	for i, r := range reqs {
		p := fldPath.Index(i)
		if audiences.Has(r.Audience) {
			allErrs = append(allErrs, field.Duplicate(p.Child("audience"), r.Audience))
			continue
		}
		audiences.Insert(r.Audience)
		if r.ExpirationSeconds == nil {
			continue
		}
		if s := *r.ExpirationSeconds; s < csiMinTokenSeconds {
			allErrs = append(allErrs, field.Invalid(p.Child("expirationSeconds"), s, "may not specify a duration less than 10 minutes"))
		} else if s > csiMaxTokenSeconds {
			allErrs = append(allErrs, field.Invalid(p.Child("expirationSeconds"), s, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	return allErrs
}

// validateCSIDriverUpdate keeps attachRequired and the lifecycle modes:
// volumes already attached or mounted were set up under them.
func validateCSIDriverUpdate(obj, old runtime.Object) field.ErrorList {
	d, o := obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver)
	allErrs := validateCSIDriver(obj)
	allErrs = append(allErrs, validateCoreMetaUpdate(&d.ObjectMeta, &o.ObjectMeta)...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(d.Spec.AttachRequired, o.Spec.AttachRequired, field.NewPath("spec", "attachedRequired"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(d.Spec.VolumeLifecycleModes, o.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
	return dedupFieldErrors(allErrs)
}

// csiDriverTable prints booleans a missing field would have by default.
var csiDriverTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "AttachRequired", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"]},
		{Name: "PodInfoOnMount", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"]},
		{Name: "StorageCapacity", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"]},
		{Name: "TokenRequests", Type: "string", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"]},
		{Name: "RequiresRepublish", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"]},
		{Name: "Modes", Type: "string", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		d := obj.(*storagev1.CSIDriver)
		s := &d.Spec
		boolOr := func(p *bool, def bool) bool {
			if p == nil {
				return def
			}
			return *p
		}
		tokens := "<unset>"
		if s.TokenRequests != nil {
			audiences := make([]string, len(s.TokenRequests))
			for i, t := range s.TokenRequests {
				audiences[i] = t.Audience
			}
			tokens = strings.Join(audiences, ",")
		}
		modes := "<none>"
		if len(s.VolumeLifecycleModes) > 0 {
			names := make([]string, len(s.VolumeLifecycleModes))
			for i, m := range s.VolumeLifecycleModes {
				names[i] = string(m)
			}
			modes = strings.Join(names, ",")
		}
		return []interface{}{
			d.Name, boolOr(s.AttachRequired, true), boolOr(s.PodInfoOnMount, false), boolOr(s.StorageCapacity, false),
			tokens, boolOr(s.RequiresRepublish, false), modes, Age(d.CreationTimestamp),
		}
	},
}

// CSINodes

func validateCSINode(obj runtime.Object) field.ErrorList {
	n := obj.(*storagev1.CSINode)
	// A CSINode is named after its Node.
	allErrs := validateCoreMeta(&n.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	driversPath := field.NewPath("spec", "drivers")
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		allErrs = append(allErrs, csiValidateNodeDriver(d, names, driversPath.Index(i))...)
	}
	return allErrs
}

// csiValidateNodeDriver checks one registered driver. Upstream reports
// topology key problems at the driver's path rather than the key's, and so
// does this.
func csiValidateNodeDriver(d storagev1.CSINodeDriver, names sets.Set[string], p *field.Path) field.ErrorList {
	allErrs := csiValidateDriverName(d.Name, p.Child("name"))
	switch idPath := p.Child("nodeID"); {
	case d.NodeID == "":
		allErrs = append(allErrs, field.Required(idPath, ""))
	case len(d.NodeID) > csiMaxNodeID:
		allErrs = append(allErrs, field.Invalid(idPath, d.NodeID, fmt.Sprintf("must be %d characters or less", csiMaxNodeID)))
	}
	if a := d.Allocatable; a != nil && a.Count != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*a.Count), p.Child("allocatable", "count"))...)
	}
	if names.Has(d.Name) {
		allErrs = append(allErrs, field.Duplicate(p.Child("name"), d.Name))
	}
	names.Insert(d.Name)
	keys := sets.New[string]()
	for _, key := range d.TopologyKeys {
		if key == "" {
			allErrs = append(allErrs, field.Required(p, ""))
			continue
		}
		if keys.Has(key) {
			allErrs = append(allErrs, field.Duplicate(p, key))
		}
		keys.Insert(key)
		for _, msg := range utilvalidation.IsQualifiedName(key) {
			allErrs = append(allErrs, field.Invalid(p, key, msg))
		}
	}
	return allErrs
}

// validateCSINodeUpdate lets a kubelet add and remove drivers, and change
// a driver's volume limit, but not redefine a driver it registered: the
// node ID and topology keys are what volumes were provisioned against.
func validateCSINodeUpdate(obj, old runtime.Object) field.ErrorList {
	n, o := obj.(*storagev1.CSINode), old.(*storagev1.CSINode)
	allErrs := validateCSINode(obj)
	allErrs = append(allErrs, validateCoreMetaUpdate(&n.ObjectMeta, &o.ObjectMeta)...)
	for _, od := range o.Spec.Drivers {
		for _, nd := range n.Spec.Drivers {
			if od.Name != nd.Name {
				continue
			}
			a, b := nd.DeepCopy(), od.DeepCopy()
			a.Allocatable, b.Allocatable = nil, nil
			allErrs = append(allErrs, apivalidation.ValidateImmutableField(a, b, field.NewPath("spec", "drivers"))...)
		}
	}
	return dedupFieldErrors(allErrs)
}

var csiNodeTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		n := obj.(*storagev1.CSINode)
		return []interface{}{n.Name, int64(len(n.Spec.Drivers)), Age(n.CreationTimestamp)}
	},
}

// VolumeAttachments

// prepareVolumeAttachmentCreate drops a client's status: only the
// attacher reports whether the volume is attached.
func prepareVolumeAttachmentCreate(obj runtime.Object) {
	obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
}

func validateVolumeAttachment(obj runtime.Object) field.ErrorList {
	va := obj.(*storagev1.VolumeAttachment)
	allErrs := validateCoreMeta(&va.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	allErrs = append(allErrs, csiValidateDriverName(va.Spec.Attacher, spec.Child("attacher"))...)
	allErrs = append(allErrs, csiValidateAttachmentSource(&va.Spec.Source, spec.Child("source"))...)
	for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		allErrs = append(allErrs, field.Invalid(spec.Child("nodeName"), va.Spec.NodeName, msg))
	}
	return append(allErrs, csiValidateAttachmentStatus(&va.Status, field.NewPath("status"))...)
}

// csiValidateAttachmentSource: an attachment names either a
// PersistentVolume or carries an inline volume spec (migrated in-tree
// volumes), never both. The inline spec is not checked field by field:
// only the attach-detach controller writes it, from a pod's volume that
// was validated with the pod.
func csiValidateAttachmentSource(src *storagev1.VolumeAttachmentSource, fldPath *field.Path) field.ErrorList {
	const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		return field.ErrorList{field.Required(fldPath, exactlyOne)}
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		return field.ErrorList{field.Forbidden(fldPath, exactlyOne)}
	case src.PersistentVolumeName != nil:
		p := fldPath.Child("persistentVolumeName")
		if *src.PersistentVolumeName == "" {
			return field.ErrorList{field.Required(p, "must specify non empty persistentVolumeName")}
		}
		var allErrs field.ErrorList
		for _, msg := range apivalidation.NameIsDNSSubdomain(*src.PersistentVolumeName, false) {
			allErrs = append(allErrs, field.Invalid(p, *src.PersistentVolumeName, msg))
		}
		return allErrs
	}
	return nil
}

func csiValidateAttachmentStatus(st *storagev1.VolumeAttachmentStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	size := 0
	for k, v := range st.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > csiMaxAttachedMetadata {
		allErrs = append(allErrs, field.TooLong(fldPath.Child("attachmentMetadata"), "", csiMaxAttachedMetadata))
	}
	allErrs = append(allErrs, csiValidateVolumeError(st.AttachError, fldPath.Child("attachError"))...)
	return append(allErrs, csiValidateVolumeError(st.DetachError, fldPath.Child("detachError"))...)
}

func csiValidateVolumeError(e *storagev1.VolumeError, fldPath *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(e.Message) > csiMaxVolumeErrorMsg {
		// Upstream names the metadata limit here, not the message's own.
		allErrs = append(allErrs, field.TooLong(fldPath.Child("message"), "", csiMaxAttachedMetadata))
	}
	if e.ErrorCode != nil && *e.ErrorCode < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("errorCode"), *e.ErrorCode, utilvalidation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return allErrs
}

// validateVolumeAttachmentUpdate keeps the whole spec: an attachment is
// one request, and a different request is a different attachment.
func validateVolumeAttachmentUpdate(obj, old runtime.Object) field.ErrorList {
	va, o := obj.(*storagev1.VolumeAttachment), old.(*storagev1.VolumeAttachment)
	allErrs := validateVolumeAttachment(obj)
	allErrs = append(allErrs, validateCoreMetaUpdate(&va.ObjectMeta, &o.ObjectMeta)...)
	if !equality.Semantic.DeepEqual(va.Spec, o.Spec) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec"), va.Spec, "field is immutable"))
	}
	return dedupFieldErrors(allErrs)
}

func validateVolumeAttachmentStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	return csiValidateAttachmentStatus(&obj.(*storagev1.VolumeAttachment).Status, field.NewPath("status"))
}

var volumeAttachmentTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
		{Name: "Node", Type: "string", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		va := obj.(*storagev1.VolumeAttachment)
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return []interface{}{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, Age(va.CreationTimestamp)}
	},
}
