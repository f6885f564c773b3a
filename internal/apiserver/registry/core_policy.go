package registry

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// LimitRanges and ResourceQuotas: a namespace's resource policy. A
// LimitRange bounds (and defaults) what each pod, container or claim may
// ask for; a ResourceQuota caps what the whole namespace may use, and its
// status (written by the quota controller) says how much is used.
//
// Validation follows upstream's, including its messages, which name the
// values involved ("min value 2 is greater than max value 1"). Upstream
// walks resource maps in random order; this walks them sorted, so errors
// come back in a stable order.

func defaultLimitRange(obj runtime.Object) {
	for i := range obj.(*corev1.LimitRange).Spec.Limits {
		limitRangeDefaultItem(&obj.(*corev1.LimitRange).Spec.Limits[i])
	}
}

// limitRangeDefaultItem fills a container item's defaults the way upstream
// does: the default limit from max, the default request from the default
// limit, and failing both from min.
func limitRangeDefaultItem(item *corev1.LimitRangeItem) {
	for _, l := range []corev1.ResourceList{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
		coreRoundUpResourceList(l)
	}
	if item.Type != corev1.LimitTypeContainer {
		return
	}
	if item.Default == nil {
		item.Default = corev1.ResourceList{}
	}
	if item.DefaultRequest == nil {
		item.DefaultRequest = corev1.ResourceList{}
	}
	fill := func(dst, src corev1.ResourceList) {
		for k, v := range src {
			if _, ok := dst[k]; !ok {
				dst[k] = v.DeepCopy()
			}
		}
	}
	fill(item.Default, item.Max)
	fill(item.DefaultRequest, item.Default)
	fill(item.DefaultRequest, item.Min)
}

var limitRangeTypes = sets.New(corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim)

func validateLimitRange(obj runtime.Object) field.ErrorList {
	lr := obj.(*corev1.LimitRange)
	allErrs := validateCoreMeta(&lr.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	limitsPath := field.NewPath("spec", "limits")
	seen := sets.New[corev1.LimitType]()
	for i := range lr.Spec.Limits {
		item, p := &lr.Spec.Limits[i], limitsPath.Index(i)
		allErrs = append(allErrs, limitRangeValidateType(item.Type, p.Child("type"))...)
		if seen.Has(item.Type) {
			allErrs = append(allErrs, field.Duplicate(p.Child("type"), item.Type))
		}
		seen.Insert(item.Type)
		allErrs = append(allErrs, limitRangeValidateItem(item, p)...)
	}
	return coreUniqueErrs(allErrs)
}

func validateLimitRangeUpdate(obj, old runtime.Object) field.ErrorList {
	lr, o := obj.(*corev1.LimitRange), old.(*corev1.LimitRange)
	allErrs := validateCoreMetaUpdate(&lr.ObjectMeta, &o.ObjectMeta)
	return coreUniqueErrs(append(allErrs, validateLimitRange(lr)...))
}

func limitRangeValidateType(t corev1.LimitType, fldPath *field.Path) field.ErrorList {
	if errs := validateQualifiedName(string(t), fldPath); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(t), "/") && !limitRangeTypes.Has(t) {
		return field.ErrorList{field.Invalid(fldPath, t, "must be a standard limit type or fully qualified")}
	}
	return nil
}

// limitRangeValidateName checks a resource name in an item: pods and
// containers take container resources, other types (claims) any standard
// or qualified name.
func limitRangeValidateName(t corev1.LimitType, name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if t == corev1.LimitTypePod || t == corev1.LimitTypeContainer {
		return validateContainerResourceName(name, fldPath)
	}
	return quotaValidateStandardName(name, fldPath)
}

func limitRangeValidateItem(item *corev1.LimitRangeItem, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	keys := sets.New[corev1.ResourceName]()
	names := func(list corev1.ResourceList, child string) {
		for _, k := range sortedResourceNames(list) {
			allErrs = append(allErrs, limitRangeValidateName(item.Type, k, p.Child(child).Key(string(k)))...)
			keys.Insert(k)
		}
	}
	names(item.Max, "max")
	names(item.Min, "min")
	if item.Type == corev1.LimitTypePod {
		if len(item.Default) > 0 {
			allErrs = append(allErrs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
		}
		if len(item.DefaultRequest) > 0 {
			allErrs = append(allErrs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
		}
	} else {
		names(item.Default, "default")
		names(item.DefaultRequest, "defaultRequest")
	}
	if item.Type == corev1.LimitTypePersistentVolumeClaim {
		_, hasMin := item.Min[corev1.ResourceStorage]
		_, hasMax := item.Max[corev1.ResourceStorage]
		if !hasMin && !hasMax {
			allErrs = append(allErrs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
		}
	}
	names(item.MaxLimitRequestRatio, "maxLimitRequestRatio")

	for _, k := range sets.List(keys) {
		key := string(k)
		minQ, hasMin := item.Min[k]
		maxQ, hasMax := item.Max[k]
		def, hasDef := item.Default[k]
		defReq, hasDefReq := item.DefaultRequest[k]
		ratio, hasRatio := item.MaxLimitRequestRatio[k]
		if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("min").Key(key), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
		}
		if hasDefReq && hasMin && minQ.Cmp(defReq) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
		}
		if hasDefReq && hasMax && defReq.Cmp(maxQ) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
		}
		if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
		}
		if hasDef && hasMin && minQ.Cmp(def) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("default").Key(key), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
		}
		if hasDef && hasMax && def.Cmp(maxQ) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("default").Key(key), maxQ, fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
		}
		if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
		}
		if hasRatio && hasMin && hasMax {
			allErrs = append(allErrs, limitRangeRatioAboveSpan(ratio, minQ, maxQ, p.Child("maxLimitRequestRatio").Key(key))...)
		}
		// Resources that cannot be overcommitted (extended resources,
		// hugepages) must be requested exactly as limited.
		if !isOvercommitAllowed(k) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), key)))
		}
	}
	return allErrs
}

// limitRangeRatioAboveSpan rejects a limit/request ratio that min and max
// leave no room for: no container could be both within bounds and within
// the ratio. Milli precision is used where the values allow it, as
// upstream.
func limitRangeRatioAboveSpan(ratio, minQ, maxQ resource.Quantity, fldPath *field.Path) field.ErrorList {
	r, lo, hi := float64(ratio.Value()), minQ.Value(), maxQ.Value()
	if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
		r, lo, hi = float64(ratio.MilliValue())/1000, minQ.MilliValue(), maxQ.MilliValue()
	}
	span := float64(hi) / float64(lo)
	if r > span {
		return field.ErrorList{field.Invalid(fldPath, ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), span))}
	}
	return nil
}

var limitRangeTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	// Upstream has no columns of its own for limit ranges: kubectl shows
	// the default name and creation time.
	Row: func(obj runtime.Object) []interface{} {
		m := obj.(*corev1.LimitRange).ObjectMeta
		return []interface{}{m.Name, m.CreationTimestamp.UTC().Format(time.RFC3339)}
	},
}

// Quota resource names: the names the quota system tracks, the scopes
// it knows and which resources each scope can limit.
var (
	quotaStandardResources = sets.New[corev1.ResourceName](
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsStorage, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers)
	quotaIntegerResources = sets.New[corev1.ResourceName](
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers)
	quotaScopes = sets.New(
		corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
		corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
		corev1.ResourceQuotaScopeVolumeAttributesClass)
	quotaPodComputeResources = sets.New[corev1.ResourceName](
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory)
)

func quotaIsHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// quotaScopeFits reports whether a scope can restrict a resource: pod
// scopes restrict pod counts and compute, the volume attributes class
// scope restricts claims and their storage.
func quotaScopeFits(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return name == corev1.ResourcePods || quotaPodComputeResources.Has(name)
	case corev1.ResourceQuotaScopeBestEffort:
		return name == corev1.ResourcePods
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return name == corev1.ResourcePersistentVolumeClaims || name == corev1.ResourceRequestsStorage
	}
	return true
}

// quotaValidateStandardName is upstream's generic resource name rule: a
// qualified name that, without a domain, must be one Kubernetes defines.
func quotaValidateStandardName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := validateQualifiedName(string(name), fldPath); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !standardResources.Has(string(name)) && !quotaIsHugePages(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

func quotaValidateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := quotaValidateStandardName(name, fldPath)
	if !strings.Contains(string(name), "/") && !quotaStandardResources.Has(name) && !quotaIsHugePages(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for quota"))
	}
	return allErrs
}

func quotaValidateQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if (quotaIntegerResources.Has(name) || isExtendedResource(name)) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q, isNotIntegerMsg))
	}
	return allErrs
}

func quotaValidateList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, k := range sortedResourceNames(list) {
		p := fldPath.Key(string(k))
		allErrs = append(allErrs, quotaValidateResourceName(k, p)...)
		allErrs = append(allErrs, quotaValidateQuantity(k, list[k], p)...)
	}
	return allErrs
}

func defaultResourceQuota(obj runtime.Object) {
	rq := obj.(*corev1.ResourceQuota)
	coreRoundUpResourceList(rq.Spec.Hard)
	coreRoundUpResourceList(rq.Status.Hard)
	coreRoundUpResourceList(rq.Status.Used)
}

func prepareCreateResourceQuota(obj runtime.Object) {
	obj.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{}
}

func validateResourceQuota(obj runtime.Object) field.ErrorList {
	rq := obj.(*corev1.ResourceQuota)
	allErrs := validateCoreMeta(&rq.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, quotaValidateSpec(&rq.Spec, field.NewPath("spec"))...)
	// A scope that cannot limit several of the hard resources is one
	// error, not one per resource as upstream repeats it.
	return coreUniqueErrs(append(allErrs, quotaValidateStatus(&rq.Status)...))
}

func quotaValidateStatus(s *corev1.ResourceQuotaStatus) field.ErrorList {
	allErrs := quotaValidateList(s.Hard, field.NewPath("status", "hard"))
	return append(allErrs, quotaValidateList(s.Used, field.NewPath("status", "used"))...)
}

func quotaValidateSpec(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	allErrs := quotaValidateList(spec.Hard, fldPath.Child("hard"))
	hard := sortedResourceNames(spec.Hard)
	// Scopes are reported whole, at spec.scopes, as upstream.
	if len(spec.Scopes) > 0 {
		p := fldPath.Child("scopes")
		for _, scope := range spec.Scopes {
			if !quotaScopes.Has(scope) {
				allErrs = append(allErrs, field.Invalid(p, spec.Scopes, "unsupported scope"))
			}
			for _, k := range hard {
				if quotaStandardResources.Has(k) && !quotaScopeFits(scope, k) {
					allErrs = append(allErrs, field.Invalid(p, spec.Scopes, "unsupported scope applied to resource"))
				}
			}
		}
		if quotaConflictingScopes(spec.Scopes) {
			allErrs = append(allErrs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
		}
	}
	if sel := spec.ScopeSelector; sel != nil {
		p := fldPath.Child("scopeSelector", "matchExpressions")
		var scopes []corev1.ResourceQuotaScope
		for _, req := range sel.MatchExpressions {
			allErrs = append(allErrs, quotaValidateScopeRequirement(req, hard, sel, p)...)
			scopes = append(scopes, req.ScopeName)
		}
		if quotaConflictingScopes(scopes) {
			allErrs = append(allErrs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
		}
	}
	return allErrs
}

// quotaConflictingScopes: a pod cannot be both best effort and not, nor
// both terminating and not, so a quota scoped to both matches nothing.
func quotaConflictingScopes(scopes []corev1.ResourceQuotaScope) bool {
	s := sets.New(scopes...)
	return s.HasAll(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort) ||
		s.HasAll(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating)
}

func quotaValidateScopeRequirement(req corev1.ScopedResourceSelectorRequirement, hard []corev1.ResourceName, sel *corev1.ScopeSelector, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !quotaScopes.Has(req.ScopeName) {
		allErrs = append(allErrs, field.Invalid(p.Child("scopeName"), req.ScopeName, "unsupported scope"))
	}
	for _, k := range hard {
		if quotaStandardResources.Has(k) && !quotaScopeFits(req.ScopeName, k) {
			allErrs = append(allErrs, field.Invalid(p, sel, "unsupported scope applied to resource"))
		}
	}
	switch req.ScopeName {
	case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
		corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		if req.Operator != corev1.ScopeSelectorOpExists {
			allErrs = append(allErrs, field.Invalid(p.Child("operator"), req.Operator,
				"must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
		}
	}
	switch req.Operator {
	case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
		if len(req.Values) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
		}
	case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
		if len(req.Values) != 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
		}
	default:
		allErrs = append(allErrs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
	}
	return allErrs
}

// validateResourceQuotaUpdate: hard limits may change, scopes may not
// (in any order they are the same scopes).
func validateResourceQuotaUpdate(obj, old runtime.Object) field.ErrorList {
	rq, o := obj.(*corev1.ResourceQuota), old.(*corev1.ResourceQuota)
	allErrs := validateCoreMetaUpdate(&rq.ObjectMeta, &o.ObjectMeta)
	allErrs = append(allErrs, validateResourceQuota(rq)...)
	if !sets.New(rq.Spec.Scopes...).Equal(sets.New(o.Spec.Scopes...)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "scopes"), rq.Spec.Scopes, fieldImmutableMsg))
	}
	return coreUniqueErrs(allErrs)
}

// validateResourceQuotaStatusUpdate checks what the quota controller
// writes; metadata is checked by the server.
func validateResourceQuotaStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	rq := obj.(*corev1.ResourceQuota)
	var allErrs field.ErrorList
	if rq.ResourceVersion == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return append(allErrs, quotaValidateStatus(&rq.Status)...)
}

// resourceQuotaTable shows usage against the hard limits the controller
// last observed (status, not spec): limits.* resources in the LIMIT
// column, everything else under REQUEST.
var resourceQuotaTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		ageColumn,
		column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume.", 0),
		column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", 0),
	},
	Row: func(obj runtime.Object) []interface{} {
		rq := obj.(*corev1.ResourceQuota)
		names := make([]string, 0, len(rq.Status.Hard))
		for n := range rq.Status.Hard {
			names = append(names, string(n))
		}
		sort.Strings(names)
		var requests, limits []string
		for _, n := range names {
			used, hard := rq.Status.Used[corev1.ResourceName(n)], rq.Status.Hard[corev1.ResourceName(n)]
			cell := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
			if first, _, ok := strings.Cut(n, "."); ok && first == "limits" {
				limits = append(limits, cell)
			} else {
				requests = append(requests, cell)
			}
		}
		return []interface{}{rq.Name, Age(rq.CreationTimestamp), strings.Join(requests, ", "), strings.Join(limits, ", ")}
	},
}

// coreRoundUpResourceList rounds every quantity up to milli precision, as
// upstream's defaulting does for each resource list, so that "0.5m" is
// stored as "1m" rather than rejected later as a fraction of a milli.
func coreRoundUpResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}
