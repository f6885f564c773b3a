package registry

import (
	"slices"

	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// policy/v1: PodDisruptionBudgets. A budget limits how many of the pods
// its selector matches may be down at once through voluntary disruptions
// (evictions); the disruption controller keeps status.disruptionsAllowed
// current and the eviction subresource of pods consults it.

func policyResources() []*Resource {
	return []*Resource{
		{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Kind: "PodDisruptionBudget", Singular: "poddisruptionbudget",
			Namespaced: true, ShortNames: []string{"pdb"}, HasStatus: true, HasGeneration: true,
			New:              func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
			PrepareForCreate: preparePDBCreate,
			Validate:         validatePDB, ValidateUpdate: validatePDBUpdate, ValidateStatusUpdate: validatePDBStatusUpdate,
			Table: pdbTable},
	}
}

// pdbEvictionPolicies are the values of spec.unhealthyPodEvictionPolicy,
// sorted as upstream lists them in its "supported values".
var pdbEvictionPolicies = []policyv1.UnhealthyPodEvictionPolicyType{policyv1.AlwaysAllow, policyv1.IfHealthyBudget}

// preparePDBCreate drops a client's status: only the disruption controller
// reports how many pods are healthy.
func preparePDBCreate(obj runtime.Object) {
	obj.(*policyv1.PodDisruptionBudget).Status = policyv1.PodDisruptionBudgetStatus{}
}

// validatePDB checks a new budget. Upstream's strategy validates only the
// spec itself and leaves metadata to the generic check every kind gets, so
// a budget's name need only be a valid path segment, not a DNS name.
func validatePDB(obj runtime.Object) field.ErrorList {
	pdb := obj.(*policyv1.PodDisruptionBudget)
	allErrs := validatePDBSpec(&pdb.Spec, false, field.NewPath("spec"))
	return append(allErrs, ValidateMeta(&pdb.ObjectMeta, true, path.ValidatePathSegmentName)...)
}

// validatePDBUpdate allows every spec field to change. A selector stored
// before label values were checked strictly keeps validating, so that such
// a budget can still be edited.
func validatePDBUpdate(obj, old runtime.Object) field.ErrorList {
	pdb, o := obj.(*policyv1.PodDisruptionBudget), old.(*policyv1.PodDisruptionBudget)
	allowInvalid := o.Spec.Selector != nil && metav1validation.LabelSelectorHasInvalidLabelValue(o.Spec.Selector)
	allErrs := validatePDBSpec(&pdb.Spec, allowInvalid, field.NewPath("spec"))
	return append(allErrs, ValidateMetaUpdate(&pdb.ObjectMeta, &o.ObjectMeta)...)
}

func validatePDBSpec(spec *policyv1.PodDisruptionBudgetSpec, allowInvalidLabelValue bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	// The two fields are alternative ways to state one budget; with both
	// set it would be unclear which one the eviction check honours.
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		p := fldPath.Child("minAvailable")
		allErrs = append(allErrs, validateIntOrPercent(*spec.MinAvailable, p)...)
		allErrs = append(allErrs, validateAtMost100Percent(*spec.MinAvailable, p)...)
	}
	if spec.MaxUnavailable != nil {
		p := fldPath.Child("maxUnavailable")
		allErrs = append(allErrs, validateIntOrPercent(*spec.MaxUnavailable, p)...)
		allErrs = append(allErrs, validateAtMost100Percent(*spec.MaxUnavailable, p)...)
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, opts, fldPath.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && !slices.Contains(pdbEvictionPolicies, *p) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("unhealthyPodEvictionPolicy"), *p, pdbEvictionPolicies))
	}
	return allErrs
}

// validatePDBStatusUpdate checks what the disruption controller writes:
// well-formed conditions and counts that cannot be negative.
func validatePDBStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	st := &obj.(*policyv1.PodDisruptionBudget).Status
	p := field.NewPath("status")
	allErrs := metav1validation.ValidateConditions(st.Conditions, p.Child("conditions"))
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"disruptionsAllowed", st.DisruptionsAllowed},
		{"currentHealthy", st.CurrentHealthy},
		{"desiredHealthy", st.DesiredHealthy},
		{"expectedPods", st.ExpectedPods},
	} {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(f.value), p.Child(f.name))...)
	}
	return allErrs
}

// pdbTable prints "N/A" for the one of minAvailable and maxUnavailable a
// budget does not use.
var pdbTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Min Available", Type: "string", Description: "The minimum number of pods that must be available."},
		{Name: "Max Unavailable", Type: "string", Description: "The maximum number of pods that may be unavailable."},
		{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		pdb := obj.(*policyv1.PodDisruptionBudget)
		minAvailable, maxUnavailable := "N/A", "N/A"
		if v := pdb.Spec.MinAvailable; v != nil {
			minAvailable = v.String()
		}
		if v := pdb.Spec.MaxUnavailable; v != nil {
			maxUnavailable = v.String()
		}
		return []interface{}{pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), Age(pdb.CreationTimestamp)}
	},
}
