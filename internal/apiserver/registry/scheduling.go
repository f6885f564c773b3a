package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// scheduling.k8s.io/v1: PriorityClasses, cluster-scoped names for pod
// priorities. Values above one billion are reserved for the two system
// classes the server creates at start-up, so that no user workload can
// preempt the cluster's own critical pods.
//
// Upstream also allows at most one class with globalDefault=true, but that
// rule lives in its Priority admission plugin, which lists the existing
// classes; a strategy sees one object and cannot enforce it. It belongs in
// internal/admission.

const (
	// pcHighestUserValue is the largest value a user-defined class may have.
	pcHighestUserValue = 1_000_000_000
	// pcSystemCriticalValue is system-cluster-critical's value;
	// system-node-critical is 1000 above it.
	pcSystemCriticalValue = 2 * pcHighestUserValue
	pcSystemPrefix        = "system-"
)

func schedulingResources() []*Resource {
	return []*Resource{
		{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses", Kind: "PriorityClass", Singular: "priorityclass",
			ShortNames: []string{"pc"},
			New:        func() runtime.Object { return &schedulingv1.PriorityClass{} },
			Default:    defaultPriorityClass, Validate: validatePriorityClass, ValidateUpdate: validatePriorityClassUpdate,
			Table: priorityClassTable},
	}
}

// SystemPriorityClasses returns new copies of the two classes every
// cluster has, for the server to create at start-up: system-node-critical
// for pods that must stay on their node (2000001000) and
// system-cluster-critical for pods that must run somewhere (2000000000).
// Their TypeMeta is set, so they can be passed to the server's bootstrap
// as they are.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	tm := metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"}
	return []*schedulingv1.PriorityClass{
		{TypeMeta: tm, ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: pcSystemCriticalValue + 1000,
			Description: "Used for system critical pods that must not be moved from their current node."},
		{TypeMeta: tm, ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: pcSystemCriticalValue,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	}
}

func defaultPriorityClass(obj runtime.Object) {
	pc := obj.(*schedulingv1.PriorityClass)
	if pc.PreemptionPolicy == nil {
		pc.PreemptionPolicy = new(corev1.PreemptLowerPriority)
	}
}

func validatePriorityClass(obj runtime.Object) field.ErrorList {
	pc := obj.(*schedulingv1.PriorityClass)
	allErrs := validateCoreMeta(&pc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	if strings.HasPrefix(pc.Name, pcSystemPrefix) {
		// A "system-" class must be exactly one of the built-in ones, so a
		// user cannot mint a class that outranks them or fake one.
		if err := pcCheckSystemClass(pc); err != nil {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+pcSystemPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > pcHighestUserValue {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("value"),
			fmt.Sprintf("maximum allowed value of a user defined priority is %v", pcHighestUserValue)))
	}
	if pc.PreemptionPolicy != nil {
		allErrs = append(allErrs, pcValidatePreemptionPolicy(*pc.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
	}
	return allErrs
}

// pcCheckSystemClass reports how a "system-" class differs from the
// built-in class of its name, or that there is none of that name.
func pcCheckSystemClass(pc *schedulingv1.PriorityClass) error {
	for _, sys := range SystemPriorityClasses() {
		if sys.Name != pc.Name {
			continue
		}
		if sys.Value != pc.Value {
			return fmt.Errorf("value of %v PriorityClass must be %v", sys.Name, sys.Value)
		}
		if sys.GlobalDefault != pc.GlobalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", sys.Name, sys.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", pc.Name)
}

func pcValidatePreemptionPolicy(p corev1.PreemptionPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.PreemptLowerPriority, corev1.PreemptNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever})}
}

// validatePriorityClassUpdate keeps value and preemptionPolicy: pods copy
// both from their class when created, so changing them would leave running
// pods disagreeing with the class they name. Description and globalDefault
// may change.
func validatePriorityClassUpdate(obj, old runtime.Object) field.ErrorList {
	pc, o := obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass)
	allErrs := validateCoreMetaUpdate(&pc.ObjectMeta, &o.ObjectMeta)
	if pc.Value != o.Value {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(allErrs, apivalidation.ValidateImmutableField(pc.PreemptionPolicy, o.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
}

// priorityClassTable: upstream's server always prints the wide cells, so
// PREEMPTIONPOLICY shows without -o wide although it is filled only there.
var priorityClassTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Value", Type: "integer", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["value"]},
		{Name: "Global-Default", Type: "boolean", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]},
		ageColumn,
		{Name: "PreemptionPolicy", Type: "string", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]},
	},
	Row: func(obj runtime.Object) []interface{} {
		pc := obj.(*schedulingv1.PriorityClass)
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, Age(pc.CreationTimestamp), policy}
	},
}
