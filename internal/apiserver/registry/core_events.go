package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Core/v1 events. Two generations of clients write them: old recorders set
// firstTimestamp/lastTimestamp/count, new ones (events.k8s.io semantics
// through core/v1) set eventTime, series and the reporting fields. The
// rules differ by which one a client used, told apart by eventTime.

const (
	eventReasonLengthLimit   = 128
	eventActionLengthLimit   = 128
	eventInstanceLengthLimit = 128
	eventNoteLengthLimit     = 1024
)

func validateCoreEvent(obj runtime.Object) field.ErrorList {
	ev := obj.(*corev1.Event)
	allErrs := validateCoreMeta(&ev.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, validateCoreEventFields(ev)...)
}

func validateCoreEventFields(ev *corev1.Event) field.ErrorList {
	var allErrs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if ev.EventTime.IsZero() {
		if ev.InvolvedObject.Namespace == "" {
			// Old clients put cluster-scoped objects' events in "default".
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
			allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		// core/v1 calls reportingController reportingComponent.
		rcPath := field.NewPath("reportingComponent")
		if ev.ReportingController == "" {
			allErrs = append(allErrs, field.Required(rcPath, ""))
		}
		allErrs = append(allErrs, validateQualifiedName(ev.ReportingController, rcPath)...)
		allErrs = append(allErrs, requiredAndShort(ev.ReportingInstance, eventInstanceLengthLimit, field.NewPath("reportingInstance"))...)
		allErrs = append(allErrs, requiredAndShort(ev.Action, eventActionLengthLimit, field.NewPath("action"))...)
		allErrs = append(allErrs, requiredAndShort(ev.Reason, eventReasonLengthLimit, field.NewPath("reason"))...)
		if len(ev.Message) > eventNoteLengthLimit {
			allErrs = append(allErrs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", eventNoteLengthLimit)))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(ev.Namespace) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("namespace"), ev.Namespace, msg))
	}
	return allErrs
}

func requiredAndShort(value string, limit int, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if len(value) > limit {
		return field.ErrorList{field.Invalid(fldPath, "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}

func validateCoreEventUpdate(obj, old runtime.Object) field.ErrorList {
	ev, oldEv := obj.(*corev1.Event), old.(*corev1.Event)
	allErrs := validateCoreMetaUpdate(&ev.ObjectMeta, &oldEv.ObjectMeta)
	return append(allErrs, validateCoreEventFields(ev)...)
}

func coreEventFields(obj runtime.Object) fields.Set {
	ev := obj.(*corev1.Event)
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            ev.InvolvedObject.Kind,
		"involvedObject.namespace":       ev.InvolvedObject.Namespace,
		"involvedObject.name":            ev.InvolvedObject.Name,
		"involvedObject.uid":             string(ev.InvolvedObject.UID),
		"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	}
}

// coreEventTable is the one core table whose first column is not NAME:
// kubectl shows events by recency, and the name is a wide-only column.
var coreEventTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		column("Last Seen", "string", corev1.Event{}.SwaggerDoc()["lastTimestamp"], 0),
		column("Type", "string", corev1.Event{}.SwaggerDoc()["type"], 0),
		column("Reason", "string", corev1.Event{}.SwaggerDoc()["reason"], 0),
		column("Object", "string", corev1.Event{}.SwaggerDoc()["involvedObject"], 0),
		column("Subobject", "string", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"], 1),
		column("Source", "string", corev1.Event{}.SwaggerDoc()["source"], 1),
		column("Message", "string", corev1.Event{}.SwaggerDoc()["message"], 0),
		column("First Seen", "string", corev1.Event{}.SwaggerDoc()["firstTimestamp"], 1),
		column("Count", "string", corev1.Event{}.SwaggerDoc()["count"], 1),
		{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	},
	Row: coreEventRow,
}

func coreEventRow(obj runtime.Object) []interface{} {
	ev := obj.(*corev1.Event)
	first := Age(ev.FirstTimestamp)
	if ev.FirstTimestamp.IsZero() {
		first = microAge(ev.EventTime)
	}
	last := Age(ev.LastTimestamp)
	if ev.LastTimestamp.IsZero() {
		last = first
	}
	count := ev.Count
	if ev.Series != nil {
		last = microAge(ev.Series.LastObservedTime)
		count = ev.Series.Count
	} else if count == 0 {
		// Events written the new way leave count unset for a single occurrence.
		count = 1
	}
	target := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		target += "/" + ev.InvolvedObject.Name
	}
	return []interface{}{
		last, ev.Type, ev.Reason, target, ev.InvolvedObject.FieldPath,
		coreEventSource(ev), strings.TrimSpace(ev.Message), first, int64(count), ev.Name,
	}
}

func microAge(t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return Age(metav1.NewTime(t.Time))
}

// coreEventSource prefers the old source fields and falls back to the
// reporting ones, e.g. "kubelet, node-1".
func coreEventSource(ev *corev1.Event) string {
	component, host := ev.Source.Component, ev.Source.Host
	if component == "" {
		component = ev.ReportingController
	}
	if host == "" {
		host = ev.ReportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}
