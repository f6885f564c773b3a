package registry

import (
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateMeta checks ObjectMeta as upstream does for every kind: name
// format (nameFn, e.g. apivalidation.NameIsDNSSubdomain), namespace
// presence, labels, annotations, ownerReferences and finalizers.
func ValidateMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apivalidation.ValidateNameFunc) field.ErrorList {
	return apivalidation.ValidateObjectMeta(meta, namespaced, nameFn, field.NewPath("metadata"))
}

// ValidateMetaUpdate checks that immutable metadata (name, namespace, uid,
// creationTimestamp, …) did not change and that the new metadata is valid.
func ValidateMetaUpdate(meta, old *metav1.ObjectMeta) field.ErrorList {
	return apivalidation.ValidateObjectMetaUpdate(meta, old, field.NewPath("metadata"))
}

// Age renders a timestamp as kubectl's AGE column does ("5m", "3d4h").
func Age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// nameColumn and ageColumn are the first and last columns of nearly every table.
var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)
