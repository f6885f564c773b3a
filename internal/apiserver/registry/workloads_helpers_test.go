package registry

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errKeys renders errors as "<field>: <type>", the part of kubectl's
// message that tests pin down; the detail wording is checked separately
// where it matters.
func strategyErrKeys(errs field.ErrorList) []string {
	keys := make([]string, len(errs))
	for i, e := range errs {
		keys[i] = e.Field + ": " + e.Type.String()
	}
	return keys
}

// checkErrs fails unless errs holds exactly one error per entry of want,
// in any order. Entries look like "spec.selector: Required value".
func expectErrs(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	got := strategyErrKeys(errs)
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Errorf("errors:\n got  %q\n want %q\nfull: %v", got, w, errs.ToAggregate())
	}
}

// checkHasErr fails unless one of errs has the key and, when detail is not
// empty, a message containing it. Use it where the pod spec validation of
// another file may add errors of its own.
func expectErrWith(t *testing.T, errs field.ErrorList, key, detail string) {
	t.Helper()
	for _, e := range errs {
		if e.Field+": "+e.Type.String() == key && strings.Contains(e.Error(), detail) {
			return
		}
	}
	t.Errorf("no error %q (detail %q) in %v", key, detail, errs.ToAggregate())
}

// lookup returns the registry entry of a resource, so that tests go through
// the same wiring the API server uses.
func mustResource(t *testing.T, group, resource string) *Resource {
	t.Helper()
	for _, r := range All() {
		if r.Group == group && r.Resource == resource {
			return r
		}
	}
	t.Fatalf("no resource %s.%s", resource, group)
	return nil
}

// create runs what the API server runs on a create: defaults, the
// create preparation, validation.
func runCreate(r *Resource, obj runtime.Object) field.ErrorList {
	if r.Default != nil {
		r.Default(obj)
	}
	if r.PrepareForCreate != nil {
		r.PrepareForCreate(obj)
	}
	return r.Validate(obj)
}

// update runs what the API server runs on an update of old (already
// stored) to obj.
func runUpdate(r *Resource, obj, old runtime.Object) field.ErrorList {
	if r.Default != nil {
		r.Default(obj)
	}
	if r.PrepareForUpdate != nil {
		r.PrepareForUpdate(obj, old)
	}
	return r.ValidateUpdate(obj, old)
}

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", UID: "8a1c5f7e-6d37-4d3e-9b63-0d4f4f6c2a11"}
}

// stored marks an object's metadata as the server does once it is stored,
// which update validation expects of both sides.
func markStored(m *metav1.ObjectMeta) {
	m.ResourceVersion = "7"
	m.Generation = 1
}

func podTemplateWith(labels map[string]string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers:    []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}
}

func matchLabels(labels map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: labels}
}
