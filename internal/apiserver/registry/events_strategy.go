package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// events.k8s.io Events are the core Events seen through a newer schema, and
// upstream validates and prints them as core Events. Error paths therefore
// use the core names (message, involvedObject, firstTimestamp, …) where the
// two differ, exactly as kubectl shows them against Kubernetes.

const (
	maxEventsV1ReportingInstance = 128
	maxEventsV1Action            = 128
	maxEventsV1Reason            = 128
	maxEventsV1Note              = 1024
)

func validateEventsV1(obj runtime.Object) field.ErrorList {
	e := obj.(*eventsv1.Event)
	allErrs := validateEventsV1Basics(e)
	allErrs = append(allErrs, ValidateMeta(&e.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)...)
	allErrs = append(allErrs, validateEventsV1Series(e)...)
	if e.EventTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		allErrs = append(allErrs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	// The deprecated fields belong to the core API's clients; a new-style
	// event that sets them would be counted and timed twice.
	if !e.DeprecatedFirstTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !e.DeprecatedLastTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if e.DeprecatedCount != 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		allErrs = append(allErrs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return allErrs
}

// validateEventsV1Update lets a recorder update only the series (the count
// and last time of a repeating event); what happened stays as reported.
func validateEventsV1Update(obj, old runtime.Object) field.ErrorList {
	e, o := obj.(*eventsv1.Event), old.(*eventsv1.Event)
	allErrs := validateEventsV1Basics(e)
	allErrs = append(allErrs, ValidateMetaUpdate(&e.ObjectMeta, &o.ObjectMeta)...)
	if !apiequality.Semantic.DeepEqual(e.Series, o.Series) {
		allErrs = append(allErrs, validateEventsV1Series(e)...)
	}
	for _, f := range []struct {
		path     string
		new, old interface{}
	}{
		{"involvedObject", e.Regarding, o.Regarding},
		{"reason", e.Reason, o.Reason},
		{"message", e.Note, o.Note},
		{"source", e.DeprecatedSource, o.DeprecatedSource},
		{"firstTimestamp", e.DeprecatedFirstTimestamp, o.DeprecatedFirstTimestamp},
		{"lastTimestamp", e.DeprecatedLastTimestamp, o.DeprecatedLastTimestamp},
		{"count", e.DeprecatedCount, o.DeprecatedCount},
		{"type", e.Type, o.Type},
		{"eventTime", e.EventTime, o.EventTime},
		{"action", e.Action, o.Action},
		{"related", e.Related, o.Related},
		{"reportingController", e.ReportingController, o.ReportingController},
		{"reportingInstance", e.ReportingInstance, o.ReportingInstance},
	} {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(f.new, f.old, field.NewPath(f.path))...)
	}
	return allErrs
}

// validateEventsV1Basics is what every event must satisfy, in either API.
func validateEventsV1Basics(e *eventsv1.Event) field.ErrorList {
	var allErrs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		// Old-style events: the event lives in its object's namespace,
		// "default" standing in for cluster-scoped objects.
		if e.Regarding.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				allErrs = append(allErrs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.Regarding.Namespace {
			allErrs = append(allErrs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.Regarding.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			allErrs = append(allErrs, field.Invalid(nsPath, e.Regarding.Namespace, "does not match event.namespace"))
		}
		if e.ReportingController == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("reportingController"), ""))
		}
		for _, msg := range utilvalidation.IsQualifiedName(e.ReportingController) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("reportingController"), e.ReportingController, msg))
		}
		allErrs = append(allErrs, eventsV1RequiredBounded("reportingInstance", e.ReportingInstance, maxEventsV1ReportingInstance)...)
		allErrs = append(allErrs, eventsV1RequiredBounded("action", e.Action, maxEventsV1Action)...)
		allErrs = append(allErrs, eventsV1RequiredBounded("reason", e.Reason, maxEventsV1Reason)...)
		if len(e.Note) > maxEventsV1Note {
			allErrs = append(allErrs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", maxEventsV1Note)))
		}
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(e.Namespace) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return allErrs
}

func eventsV1RequiredBounded(name, value string, limit int) field.ErrorList {
	var allErrs field.ErrorList
	if value == "" {
		allErrs = append(allErrs, field.Required(field.NewPath(name), ""))
	}
	if len(value) > limit {
		allErrs = append(allErrs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return allErrs
}

func validateEventsV1Series(e *eventsv1.Event) field.ErrorList {
	if e.Series == nil {
		return nil
	}
	var allErrs field.ErrorList
	// A series exists only once an event repeats.
	if e.Series.Count < 2 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return allErrs
}

// eventsV1Fields are the field selectors events.k8s.io accepts: the core
// event's, under their events.k8s.io names.
func eventsV1Fields(obj runtime.Object) fields.Set {
	e := obj.(*eventsv1.Event)
	r := e.Regarding
	return fields.Set{
		"regarding.kind":            r.Kind,
		"regarding.namespace":       r.Namespace,
		"regarding.name":            r.Name,
		"regarding.uid":             string(r.UID),
		"regarding.apiVersion":      r.APIVersion,
		"regarding.resourceVersion": r.ResourceVersion,
		"regarding.fieldPath":       r.FieldPath,
		"reason":                    e.Reason,
		"reportingController":       e.ReportingController,
		"type":                      e.Type,
	}
}

// eventsV1Table is kubectl's event table, which upstream uses for both event
// APIs. Unlike every other table it does not lead with NAME: the name of
// an event means little, and it comes last, in -o wide.
var eventsV1Table = &Table{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
		{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
		{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
		{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	},
	Row: func(obj runtime.Object) []interface{} {
		e := obj.(*eventsv1.Event)
		first := Age(e.DeprecatedFirstTimestamp)
		if e.DeprecatedFirstTimestamp.IsZero() {
			first = Age(metav1.Time(e.EventTime))
		}
		last := Age(e.DeprecatedLastTimestamp)
		if e.DeprecatedLastTimestamp.IsZero() {
			last = first
		}
		count := e.DeprecatedCount
		if e.Series != nil {
			last = Age(metav1.Time(e.Series.LastObservedTime))
			count = e.Series.Count
		} else if count == 0 {
			count = 1 // a new-style event seen once has no count
		}
		object := strings.ToLower(e.Regarding.Kind)
		if e.Regarding.Name != "" {
			object += "/" + e.Regarding.Name
		}
		return []interface{}{
			last, e.Type, e.Reason, object, e.Regarding.FieldPath,
			eventsV1Source(e), strings.TrimSpace(e.Note), first, int64(count), e.Name,
		}
	},
}

// eventsV1Source is "component, host", preferring the core fields and falling
// back to the reporting controller and instance.
func eventsV1Source(e *eventsv1.Event) string {
	component, instance := e.DeprecatedSource.Component, e.DeprecatedSource.Host
	if component == "" {
		component = e.ReportingController
	}
	if instance == "" {
		instance = e.ReportingInstance
	}
	if instance == "" {
		return component
	}
	return component + ", " + instance
}
