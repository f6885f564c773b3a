package registry

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds what the workload kinds that own a pod template
// (deployments, replicasets, statefulsets, daemonsets, jobs, cronjobs) share:
// template validation, selector checks, int-or-percent strategy values and
// the CONTAINERS/IMAGES table cells.

// validatePodTemplate checks a workload's pod template the way upstream's
// pod-template validation does. Labels are reported under <template>.labels,
// not <template>.metadata.labels: that is where upstream puts them, and
// kubectl users see upstream's paths.
func validatePodTemplate(tmpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateTemplateMeta(tmpl, fldPath)
	allErrs = append(allErrs, ValidatePodSpec(&tmpl.Spec, fldPath.Child("spec"))...)
	if len(tmpl.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}

func validateTemplateMeta(tmpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabels(tmpl.Labels, fldPath.Child("labels"))
	allErrs = append(allErrs, apivalidation.ValidateAnnotations(tmpl.Annotations, fldPath.Child("annotations"))...)
	return allErrs
}

// validateRequiredSelector checks the selector of a deployment, replicaset or
// statefulset: present, well formed and selecting something. kind only
// appears in the message, which upstream words per kind (and says
// "deployment" for replicasets too).
func validateRequiredSelector(sel *metav1.LabelSelector, kind string, fldPath *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	allErrs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, sel, "empty selector is invalid for "+kind))
	}
	return allErrs
}

// validateSelectorMatchesTemplate reports a template whose labels the
// selector would not select: the workload could never find its own pods.
func validateSelectorMatchesTemplate(selector labels.Selector, tmpl *corev1.PodTemplateSpec, tmplPath *field.Path) field.ErrorList {
	if selector.Matches(labels.Set(tmpl.Labels)) {
		return nil
	}
	return field.ErrorList{field.Invalid(tmplPath.Child("metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`")}
}

// validateLongRunningTemplate holds the rules for pods that a controller
// keeps running forever: they must restart always and may not have a
// deadline. kind names the controller in upstream's message.
func validateLongRunningTemplate(tmpl *corev1.PodTemplateSpec, kind string, tmplPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(tmplPath.Child("spec", "restartPolicy"), tmpl.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(tmplPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return allErrs
}

// validateIntOrPercent accepts a non-negative integer or a percentage string.
func validateIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range utilvalidation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
		}
	case intstr.Int:
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(v.IntValue()), fldPath)...)
	default:
		allErrs = append(allErrs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%')"))
	}
	return allErrs
}

// percentOf returns the number in a valid percentage string.
func percentOf(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(utilvalidation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, true
}

// intOrPercentValue is the number in v whether it is a count or a
// percentage; what matters to callers is only whether it is zero.
func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if n, ok := percentOf(*v); ok {
		return n
	}
	return v.IntValue()
}

func validateAtMost100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if n, ok := percentOf(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
	}
	return nil
}

// validateOptionalIntOrPercent validates a pointer field the defaults should
// have filled; a nil value counts as zero, as upstream's internal types do.
func validateOptionalIntOrPercent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	val := intstr.FromInt32(0)
	if v != nil {
		val = *v
	}
	allErrs := validateIntOrPercent(val, fldPath)
	return append(allErrs, validateAtMost100Percent(val, fldPath)...)
}

func derefInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// containerCells lays out a template's containers as kubectl's wide
// CONTAINERS and IMAGES columns do: one comma-separated cell each.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	im := make([]string, len(containers))
	for i, c := range containers {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// scaleSelector is the label selector string a /scale subresource reports
// in status.selector, which an autoscaler uses to find the pods.
func scaleSelector(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return ""
	}
	return s.String()
}

// templateColumns are the -o wide columns of every workload table.
var (
	containersColumn = metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	imagesColumn     = metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
)

func selectorColumn(description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Selector", Type: "string", Priority: 1, Description: description}
}

// mustBe names the valid values in upstream's "must be 'A' or 'B'" phrasing.
func mustBe(a, b string) string {
	return fmt.Sprintf("must be '%s' or '%s'", a, b)
}
