package registry

import (
	"path"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PersistentVolumes and PersistentVolumeClaims. A PV is a piece of storage
// an administrator (or a provisioner) made available, cluster-wide; a PVC
// is a namespaced request for storage that a controller binds to a PV.
//
// The strategies hold the parts users run into: a PV names exactly one
// storage backend, which never changes afterwards, and a capacity of
// storage only; a claim's spec is fixed once created, except that a bound
// claim may ask for more storage (or, after a failed expansion, for less
// again down to what it has) and may switch its volume attributes class.
// Both start in phase Pending. The per-backend checks of a PV's source are
// in core_volume_sources.go.

// defaultPersistentVolume fills what upstream's defaulting sets, phase
// Pending among them. (Upstream also defaults the phase of a status write;
// the server runs Default on writes of the main resource only.)
func defaultPersistentVolume(obj runtime.Object) {
	pv := obj.(*corev1.PersistentVolume)
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
	}
	coreRoundUpResourceList(pv.Spec.Capacity)
	pvDefaultSource(&pv.Spec.PersistentVolumeSource)
}

// prepareCreatePersistentVolume clears the status a client sent. The new
// volume is Pending, and that is its first phase transition.
func prepareCreatePersistentVolume(obj runtime.Object) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	obj.(*corev1.PersistentVolume).Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &now}
}

func validatePersistentVolume(obj runtime.Object) field.ErrorList {
	pv := obj.(*corev1.PersistentVolume)
	allErrs := validateCoreMeta(&pv.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, pvValidateSpec(&pv.Spec, pv.Name, field.NewPath("spec"))...)
	return coreUniqueErrs(append(allErrs, pvValidateMountOptions(pv)...))
}

// pvAccessModes are the access modes upstream knows, sorted as its
// messages list them.
var pvAccessModes = []corev1.PersistentVolumeAccessMode{
	corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod,
}

func pvValidateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path, required string) field.ErrorList {
	var allErrs field.ErrorList
	if len(modes) == 0 {
		allErrs = append(allErrs, field.Required(fldPath, required))
	}
	var once, other bool
	for _, m := range modes {
		switch m {
		case corev1.ReadWriteOncePod:
			once = true
		case corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce:
			other = true
		default:
			allErrs = append(allErrs, field.NotSupported(fldPath, m, pvAccessModes))
		}
	}
	if once && other {
		allErrs = append(allErrs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return allErrs
}

func pvValidateSpec(spec *corev1.PersistentVolumeSpec, name string, fldPath *field.Path) field.ErrorList {
	allErrs := pvValidateAccessModes(spec.AccessModes, fldPath.Child("accessModes"), "")

	capPath := fldPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		allErrs = append(allErrs, field.Required(capPath, ""))
	}
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		allErrs = append(allErrs, field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for _, r := range sortedResourceNames(spec.Capacity) {
		allErrs = append(allErrs, pvPositiveQuantity(spec.Capacity[r], capPath.Key(string(r)))...)
	}

	if p := spec.PersistentVolumeReclaimPolicy; p != "" {
		switch p {
		case corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain:
		default:
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("persistentVolumeReclaimPolicy"), p, []corev1.PersistentVolumeReclaimPolicy{
				corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain}))
		}
	}

	hasNodeAffinity := spec.NodeAffinity != nil
	if hasNodeAffinity {
		naPath := fldPath.Child("nodeAffinity")
		if spec.NodeAffinity.Required == nil {
			allErrs = append(allErrs, field.Required(naPath.Child("required"), "must specify required node constraints"))
		} else {
			allErrs = append(allErrs, validateNodeSelector(spec.NodeAffinity.Required, naPath.Child("required"))...)
		}
	}
	allErrs = append(allErrs, pvValidateSource(&spec.PersistentVolumeSource, name, hasNodeAffinity, fldPath)...)

	if hp := spec.HostPath; hp != nil && path.Clean(hp.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if spec.StorageClassName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil {
		allErrs = append(allErrs, pvValidateVolumeMode(*spec.VolumeMode, fldPath.Child("volumeMode"))...)
	}
	if vac := spec.VolumeAttributesClassName; vac != nil {
		vacPath := fldPath.Child("volumeAttributesClassName")
		if *vac == "" {
			allErrs = append(allErrs, field.Required(vacPath, "an empty string is disallowed"))
		} else {
			allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *vac, vacPath)...)
		}
		if spec.CSI == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return allErrs
}

func pvValidateVolumeMode(m corev1.PersistentVolumeMode, fldPath *field.Path) field.ErrorList {
	if m == corev1.PersistentVolumeBlock || m == corev1.PersistentVolumeFilesystem {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, m, []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem})}
}

// pvPositiveQuantity is upstream's pair of checks on a capacity: a valid
// (non-negative) quantity, and more than zero of it.
func pvPositiveQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.Value() < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.Value(), "must be a valid resource quantity"))
	}
	if q.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), isNotPositiveMsg))
	}
	return allErrs
}

// validatePersistentVolumeUpdate: the storage backend and the volume mode
// are fixed at creation, and so is node affinity once set. A CSI volume
// may gain a controllerExpandSecretRef, so that volumes created before
// expansion was configured can be expanded.
func validatePersistentVolumeUpdate(obj, old runtime.Object) field.ErrorList {
	pv, oldPV := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
	allErrs := validateCoreMetaUpdate(&pv.ObjectMeta, &oldPV.ObjectMeta)
	allErrs = append(allErrs, validatePersistentVolume(pv)...)

	src := pv.Spec.PersistentVolumeSource
	if oldPV.Spec.CSI != nil && oldPV.Spec.CSI.ControllerExpandSecretRef == nil && src.CSI != nil && src.CSI.ControllerExpandSecretRef != nil {
		csi := *src.CSI
		csi.ControllerExpandSecretRef = nil
		src.CSI = &csi
	}
	if !equality.Semantic.DeepEqual(src, oldPV.Spec.PersistentVolumeSource) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"),
			"spec.persistentvolumesource is immutable after creation\n"+coreDiff(oldPV.Spec.PersistentVolumeSource, src)))
	}
	// Upstream names these two without the "spec." prefix.
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(pv.Spec.VolumeMode, oldPV.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if oldPV.Spec.NodeAffinity != nil {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(pv.Spec.NodeAffinity, oldPV.Spec.NodeAffinity, field.NewPath("nodeAffinity"))...)
	}
	if oldPV.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return coreUniqueErrs(allErrs)
}

// validatePersistentVolumeStatusUpdate accepts any status, as upstream:
// the binder owns it. Metadata is checked by the server.
func validatePersistentVolumeStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	if obj.(*corev1.PersistentVolume).ResourceVersion == "" {
		return field.ErrorList{field.Required(field.NewPath("resourceVersion"), "")}
	}
	return nil
}

var persistentVolumeTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"], 0),
		column("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"], 0),
		column("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"], 0),
		column("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"], 0),
		column("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"], 0),
		column("StorageClass", "string", "StorageClass of the pv", 0),
		column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv", 0),
		column("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"], 0),
		ageColumn,
		column("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"], 1),
	},
	Row: func(obj runtime.Object) []interface{} {
		pv := obj.(*corev1.PersistentVolume)
		claim := ""
		if ref := pv.Spec.ClaimRef; ref != nil {
			claim = ref.Namespace + "/" + ref.Name
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		phase := string(pv.Status.Phase)
		if pv.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		class := pv.Spec.StorageClassName
		if c, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]; ok {
			class = c
		}
		return []interface{}{pv.Name, size.String(), pvAccessModesString(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
			phase, claim, class, pvUnset(pv.Spec.VolumeAttributesClassName), pv.Status.Reason, Age(pv.CreationTimestamp),
			pvUnset((*string)(pv.Spec.VolumeMode))}
	},
}

// pvAccessModesString abbreviates access modes as kubectl does, always in
// the order RWO, ROX, RWX, RWOP and each once.
func pvAccessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	out := ""
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		for _, have := range modes {
			if have == m.mode {
				if out != "" {
					out += ","
				}
				out += m.short
				break
			}
		}
	}
	return out
}

func pvUnset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

// coreDiff renders what changed for an "immutable" message, as upstream
// does with go-cmp. The diff is a courtesy: should go-cmp refuse a type,
// the message goes without it.
func coreDiff(old, new interface{}) (diff string) {
	defer func() {
		if recover() != nil {
			diff = ""
		}
	}()
	return cmp.Diff(old, new)
}

// defaultPersistentVolumeClaim fills the volume mode and the Pending phase,
// and rounds requested quantities as every resource list is rounded.
func defaultPersistentVolumeClaim(obj runtime.Object) {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	if pvc.Spec.VolumeMode == nil {
		pvc.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
	}
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	coreRoundUpResourceList(pvc.Spec.Resources.Requests)
	coreRoundUpResourceList(pvc.Spec.Resources.Limits)
}

func prepareCreatePersistentVolumeClaim(obj runtime.Object) {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	pvcEnforceDataSource(&pvc.Spec, nil)
	pvcNormalizeDataSources(&pvc.Spec)
}

func prepareUpdatePersistentVolumeClaim(obj, old runtime.Object) {
	pvc, oldPVC := obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim)
	pvcEnforceDataSource(&pvc.Spec, &oldPVC.Spec)
	pvcNormalizeDataSources(&pvc.Spec)
}

// pvcEnforceDataSource keeps an old behaviour: spec.dataSource used to
// accept only claims and volume snapshots and silently drop anything else.
// A client that sets dataSourceRef knows the newer rules, and a claim that
// already has a source keeps it.
func pvcEnforceDataSource(spec, oldSpec *corev1.PersistentVolumeClaimSpec) {
	if oldSpec != nil && (oldSpec.DataSource != nil || oldSpec.DataSourceRef != nil) {
		return
	}
	if spec.DataSourceRef != nil || spec.DataSource == nil {
		return
	}
	group := ""
	if spec.DataSource.APIGroup != nil {
		group = *spec.DataSource.APIGroup
	}
	if (spec.DataSource.Kind == "PersistentVolumeClaim" && group == "") ||
		(spec.DataSource.Kind == "VolumeSnapshot" && group == "snapshot.storage.k8s.io") {
		return
	}
	spec.DataSource = nil
}

// pvcNormalizeDataSources fills whichever of dataSource and dataSourceRef
// the client left out from the other, unless the reference points into
// another namespace, which dataSource cannot express.
func pvcNormalizeDataSources(spec *corev1.PersistentVolumeClaimSpec) {
	switch ds, ref := spec.DataSource, spec.DataSourceRef; {
	case ds != nil && ref == nil:
		spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: pvcCloneString(ds.APIGroup), Kind: ds.Kind, Name: ds.Name}
	case ref != nil && ds == nil && (ref.Namespace == nil || *ref.Namespace == ""):
		spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: pvcCloneString(ref.APIGroup), Kind: ref.Kind, Name: ref.Name}
	}
}

func pvcCloneString(s *string) *string {
	if s == nil {
		return nil
	}
	return new(*s)
}

func validatePersistentVolumeClaim(obj runtime.Object) field.ErrorList {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	allErrs := validateCoreMeta(&pvc.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return coreUniqueErrs(append(allErrs, pvcValidateSpec(&pvc.Spec, field.NewPath("spec"))...))
}

func pvcValidateSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	modesPath := fldPath.Child("accessModes")
	var allErrs field.ErrorList
	if len(spec.AccessModes) == 0 {
		allErrs = append(allErrs, field.Required(modesPath, "at least 1 access mode is required"))
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	if len(spec.AccessModes) > 0 {
		allErrs = append(allErrs, pvValidateAccessModes(spec.AccessModes, modesPath, "")...)
	}

	// Upstream reports the storage request as spec.resources[storage].
	storagePath := fldPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		allErrs = append(allErrs, field.Required(storagePath, ""))
	} else if q.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(storagePath, q.String(), isNotPositiveMsg))
	}

	if sc := spec.StorageClassName; sc != nil && *sc != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *sc, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil {
		allErrs = append(allErrs, pvValidateVolumeMode(*spec.VolumeMode, fldPath.Child("volumeMode"))...)
	}
	if spec.DataSource != nil {
		ds := spec.DataSource
		allErrs = append(allErrs, pvcValidateDataSource(ds.APIGroup, ds.Kind, ds.Name, fldPath.Child("dataSource"))...)
	}
	if ref := spec.DataSourceRef; ref != nil {
		p := fldPath.Child("dataSourceRef")
		allErrs = append(allErrs, pvcValidateDataSource(ref.APIGroup, ref.Kind, ref.Name, p)...)
		if ref.Namespace != nil && *ref.Namespace != "" {
			allErrs = append(allErrs, nameErrors(apivalidation.ValidateNamespaceName, *ref.Namespace, p.Child("namespace"))...)
		}
	}
	switch ds, ref := spec.DataSource, spec.DataSourceRef; {
	case ref != nil && ref.Namespace != nil && *ref.Namespace != "":
		if ds != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	case ds != nil && ref != nil:
		if !equality.Semantic.DeepEqual(ds.APIGroup, ref.APIGroup) || ds.Kind != ref.Kind || ds.Name != ref.Name {
			allErrs = append(allErrs, field.Invalid(fldPath, fldPath.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	if vac := spec.VolumeAttributesClassName; vac != nil && *vac != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *vac, fldPath.Child("volumeAttributesClassName"))...)
	}
	return allErrs
}

func pvcValidateDataSource(apiGroup *string, kind, name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	if kind == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("kind"), ""))
	}
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		allErrs = append(allErrs, field.Invalid(fldPath, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		allErrs = append(allErrs, validateDNS1123Subdomain(group, fldPath.Child("apiGroup"))...)
	}
	return allErrs
}

// validatePersistentVolumeClaimUpdate holds the claim's immutability: the
// binder may set volumeName once, a claim without a class may get one (or
// move from the beta annotation to the field), and a bound claim may
// change its storage request and volume attributes class. Everything else
// in the spec is fixed.
func validatePersistentVolumeClaimUpdate(obj, old runtime.Object) field.ErrorList {
	pvc, oldPVC := obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim)
	allErrs := validateCoreMetaUpdate(&pvc.ObjectMeta, &oldPVC.ObjectMeta)
	allErrs = append(allErrs, validatePersistentVolumeClaim(pvc)...)

	newSpec, oldSpec := pvc.Spec.DeepCopy(), oldPVC.Spec.DeepCopy()
	if oldPVC.Spec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	beta := corev1.BetaStorageClassAnnotation
	oldAnn, hadAnn := oldPVC.Annotations[beta]
	newAnn, hasAnn := pvc.Annotations[beta]
	switch {
	case hadAnn && oldPVC.Spec.StorageClassName == nil && pvc.Spec.StorageClassName != nil &&
		*pvc.Spec.StorageClassName == oldAnn && (!hasAnn || newAnn == oldAnn):
		// The class moves from the beta annotation to the field.
		newSpec.StorageClassName = nil
	default:
		if newAnn != oldAnn {
			allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "annotations", beta), newAnn, fieldImmutableMsg))
		}
		if pvc.Spec.StorageClassName != nil && oldPVC.Spec.StorageClassName == nil && (!hadAnn || *pvc.Spec.StorageClassName == oldAnn) {
			newSpec.StorageClassName = oldSpec.StorageClassName
		}
	}
	bound := pvc.Status.Phase == corev1.ClaimBound
	if bound && newSpec.Resources.Requests != nil {
		newSpec.Resources.Requests[corev1.ResourceStorage] = oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	if bound && newSpec.VolumeAttributesClassName != nil {
		newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	}
	if !equality.Semantic.DeepEqual(newSpec, oldSpec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"),
			"spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+coreDiff(*oldSpec, *newSpec)))
	}
	// A claim may ask for less again after an expansion failed, but never
	// for what it already has or less.
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], oldPVC.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		if has := oldPVC.Status.Capacity[corev1.ResourceStorage]; newSize.Cmp(has) <= 0 {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
		}
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(pvc.Spec.VolumeMode, oldPVC.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if oldVAC, newVAC := oldPVC.Spec.VolumeAttributesClassName, pvc.Spec.VolumeAttributesClassName; oldVAC != nil {
		vacPath := field.NewPath("spec", "volumeAttributesClassName")
		if newVAC == nil {
			allErrs = append(allErrs, field.Forbidden(vacPath, "update from non-nil value to nil is forbidden"))
		} else if *newVAC == "" && *oldVAC != "" {
			allErrs = append(allErrs, field.Forbidden(vacPath, "update from non-nil value to an empty string is forbidden"))
		}
	}
	return coreUniqueErrs(allErrs)
}

// pvcResizeStatuses are the states of a resize upstream accepts, sorted.
var pvcResizeStatuses = []corev1.ClaimResourceStatus{
	corev1.PersistentVolumeClaimControllerResizeInProgress, corev1.PersistentVolumeClaimControllerResizeInfeasible,
	corev1.PersistentVolumeClaimNodeResizeInProgress, corev1.PersistentVolumeClaimNodeResizeInfeasible,
	corev1.PersistentVolumeClaimNodeResizePending,
}

// validatePersistentVolumeClaimStatusUpdate checks what the binder and the
// resizer write. Metadata is checked by the server. "Spec" is upstream's
// spelling.
func validatePersistentVolumeClaimStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	var allErrs field.ErrorList
	if pvc.ResourceVersion == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	if len(pvc.Spec.AccessModes) == 0 {
		allErrs = append(allErrs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	capPath := field.NewPath("status", "capacity")
	for _, r := range sortedResourceNames(pvc.Status.Capacity) {
		if q := pvc.Status.Capacity[r]; q.Value() < 0 {
			allErrs = append(allErrs, field.Invalid(capPath.Key(string(r)), q.Value(), "must be a valid resource quantity"))
		}
	}
	statusPath := field.NewPath("status", "allocatedResourceStatus")
	for _, k := range sortedKeys(pvcStringKeys(pvc.Status.AllocatedResourceStatuses)) {
		allErrs = append(allErrs, pvcResourceKey(k, statusPath)...)
		v := pvc.Status.AllocatedResourceStatuses[corev1.ResourceName(k)]
		if !slices.Contains(pvcResizeStatuses, v) {
			allErrs = append(allErrs, field.NotSupported(statusPath, corev1.ResourceName(k), pvcResizeStatuses))
		}
	}
	allocPath := field.NewPath("status", "allocatedResources")
	for _, r := range sortedResourceNames(pvc.Status.AllocatedResources) {
		if errs := pvcResourceKey(string(r), allocPath); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
			continue
		}
		q := pvc.Status.AllocatedResources[r]
		if q.Value() < 0 {
			allErrs = append(allErrs, field.Invalid(allocPath.Key(string(r)), q.Value(), "must be a valid resource quantity"))
		} else if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(allocPath.Key(string(r)), q.String(), apivalidation.IsNegativeErrorMsg))
		}
	}
	return allErrs
}

// pvcResourceKey: a claim tracks only storage among native resources.
func pvcResourceKey(key string, fldPath *field.Path) field.ErrorList {
	if errs := validateQualifiedName(key, fldPath); len(errs) > 0 {
		return errs
	}
	if isNativeResource(corev1.ResourceName(key)) && key != string(corev1.ResourceStorage) {
		return field.ErrorList{field.NotSupported(fldPath, key, []corev1.ResourceName{corev1.ResourceStorage})}
	}
	return nil
}

func pvcStringKeys[V any](m map[corev1.ResourceName]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

var persistentVolumeClaimTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"], 0),
		column("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"], 0),
		column("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"], 0),
		column("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"], 0),
		column("StorageClass", "string", "StorageClass of the pvc", 0),
		column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc", 0),
		ageColumn,
		column("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"], 1),
	},
	// Capacity and access modes are the bound volume's, so they stay empty
	// until the claim is bound.
	Row: func(obj runtime.Object) []interface{} {
		pvc := obj.(*corev1.PersistentVolumeClaim)
		phase := string(pvc.Status.Phase)
		if pvc.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		capacity, modes := "", ""
		if pvc.Spec.VolumeName != "" {
			q := pvc.Status.Capacity[corev1.ResourceStorage]
			capacity, modes = q.String(), pvAccessModesString(pvc.Status.AccessModes)
		}
		class := ""
		if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
			class = c
		}
		return []interface{}{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class,
			pvUnset(pvc.Spec.VolumeAttributesClassName), Age(pvc.CreationTimestamp), pvUnset((*string)(pvc.Spec.VolumeMode))}
	},
}
