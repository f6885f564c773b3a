package registry

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Compute resources: names, quantities, requests against limits, and the
// QoS class a pod's resources put it in.

var standardContainerResources = sets.New(
	string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage))

// standardResources are the unprefixed names upstream knows anywhere; a
// container naming one of the others gets a narrower message.
var standardResources = sets.New(
	"cpu", "memory", "ephemeral-storage", "storage", "pods", "services", "replicationcontrollers",
	"resourcequotas", "secrets", "configmaps", "persistentvolumeclaims", "services.nodeports",
	"services.loadbalancers", "requests.cpu", "requests.memory", "requests.storage",
	"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage")

func isHugePageResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// isNativeResource is true for unprefixed names and the kubernetes.io domain.
func isNativeResource(name corev1.ResourceName) bool {
	s := string(name)
	return !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResource(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// isOvercommitAllowed: hugepages and extended resources must be requested
// exactly as limited.
func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResource(name)
}

func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	if len(allErrs) != 0 {
		return allErrs
	}
	if !strings.Contains(string(name), "/") {
		if !standardResources.Has(string(name)) && !isHugePageResource(name) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
		}
		if !standardContainerResources.Has(string(name)) && !isHugePageResource(name) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResource(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if isExtendedResource(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, q, isNotIntegerMsg))
	}
	return allErrs
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// validateResourceRequirements walks names in sorted order so that the
// errors come back in a stable order (upstream's follow map order).
func validateResourceRequirements(req *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	var cpuOrMemory, hugePages bool
	for _, name := range sortedResourceNames(req.Limits) {
		q := req.Limits[name]
		p := limPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, p)...)
		allErrs = append(allErrs, validateResourceQuantity(name, q, p)...)
		hugePages = hugePages || isHugePageResource(name)
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	for _, name := range sortedResourceNames(req.Requests) {
		q := req.Requests[name]
		p := reqPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, p)...)
		allErrs = append(allErrs, validateResourceQuantity(name, q, p)...)
		if lim, ok := req.Limits[name]; ok {
			if q.Cmp(lim) != 0 && !isOvercommitAllowed(name) {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
			} else if q.Cmp(lim) > 0 {
				allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
			}
		} else if !isOvercommitAllowed(name) {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		hugePages = hugePages || isHugePageResource(name)
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	if hugePages && !cpuOrMemory {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return allErrs
}

// validatePodLevelResources checks spec.resources, which may name only
// the resources a pod-level budget supports.
func validatePodLevelResources(req *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(req.Claims) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	supported := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "hugepages-*"}
	for _, l := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", req.Limits}, {"requests", req.Requests}} {
		for _, name := range sortedResourceNames(l.list) {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && !isHugePageResource(name) {
				allErrs = append(allErrs, field.NotSupported(fldPath.Child(l.name).Key(string(name)), name, supported))
			}
		}
	}
	return append(allErrs, validateResourceRequirements(req, fldPath)...)
}

// podQOSClass classifies a pod as upstream does: BestEffort without any
// cpu or memory request or limit, Guaranteed when every container limits
// both and requests equal limits, Burstable otherwise. Pod-level resources,
// when set, decide on their own.
func podQOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	add := func(into corev1.ResourceList, list corev1.ResourceList) sets.Set[corev1.ResourceName] {
		found := sets.New[corev1.ResourceName]()
		for name, q := range list {
			if (name != corev1.ResourceCPU && name != corev1.ResourceMemory) || q.Sign() <= 0 {
				continue
			}
			found.Insert(name)
			sum := q.DeepCopy()
			if prev, ok := into[name]; ok {
				sum.Add(prev)
			}
			into[name] = sum
		}
		return found
	}
	if spec.Resources != nil && (len(spec.Resources.Requests) > 0 || len(spec.Resources.Limits) > 0) {
		add(requests, spec.Resources.Requests)
		if !add(limits, spec.Resources.Limits).HasAll(corev1.ResourceCPU, corev1.ResourceMemory) {
			guaranteed = false
		}
	} else {
		for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
			for i := range list {
				add(requests, list[i].Resources.Requests)
				if !add(limits, list[i].Resources.Limits).HasAll(corev1.ResourceCPU, corev1.ResourceMemory) {
					guaranteed = false
				}
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
