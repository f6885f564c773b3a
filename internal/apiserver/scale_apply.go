package apiserver

// Server-side apply on /scale. The client applies an autoscaling/v1 Scale,
// not the parent object, so the merge runs on a Scale: the parent's
// managedFields are first narrowed to the Scale's view (the managers that
// own the parent's replicas field own the Scale's .spec.replicas), the
// Scale field manager merges the applied configuration into that view and
// detects conflicts, and the resulting entries are mapped back onto the
// parent (the applier now owns, for example, deployment .spec.replicas,
// recorded with subresource "scale"; a manager that lost the field keeps
// the rest of its entry). apimachinery's managedfields.ScaleHandler does
// both mappings; upstream's scale storage goes the same way, and, as
// upstream, the Scale a client reads back carries no managedFields.

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/rudder-dev/rudder/internal/apiserver/openapi"
)

// scaleFieldManager returns the field manager that merges applied Scales.
func (h *resourceHandler) scaleFieldManager() (*managedfields.FieldManager, error) {
	h.fields.mu.Lock()
	defer h.fields.mu.Unlock()
	if h.fields.scale != nil {
		return h.fields.scale, nil
	}
	tc, err := openapi.TypeConverter()
	if err != nil {
		return nil, err
	}
	// A Scale's status is the parent's: an apply never sets it.
	reset := map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(scaleGVK.GroupVersion().String()): fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))),
	}
	var sc scaleScheme
	fm, err := managedfields.NewDefaultFieldManager(tc, sc, sc, sc, scaleGVK, scaleGVK.GroupVersion(), "scale", reset)
	if err != nil {
		return nil, err
	}
	h.fields.scale = fm
	return fm, nil
}

// scaleHandler maps managedFields between the parent object cur and its
// Scale. A custom resource's versions each name their replicas path (or
// have no scale); an entry of a version the handler cannot map keeps its
// fields as they are.
func (h *resourceHandler) scaleHandler(cur runtime.Object) (*managedfields.ScaleHandler, error) {
	gv := h.gvk.GroupVersion()
	mappings := managedfields.ResourcePathMappings{}
	if h.custom != nil {
		for v, p := range h.custom.scalePaths {
			if p == "" {
				mappings[v] = nil
				continue
			}
			path, err := replicasFieldPath(p)
			if err != nil {
				return nil, err
			}
			mappings[v] = path
		}
	}
	path, err := replicasFieldPath(h.res.Scale.SpecReplicasPath)
	if err != nil {
		return nil, err
	}
	mappings[gv.String()] = path
	entries := objectMeta(cur).GetManagedFields()
	for _, e := range entries {
		if _, ok := mappings[e.APIVersion]; !ok {
			mappings[e.APIVersion] = nil
		}
	}
	return managedfields.NewScaleHandler(entries, gv, mappings), nil
}

// replicasFieldPath is a scale's JSON path (".spec.replicas", the
// default when empty) as a field path.
func replicasFieldPath(jsonPath string) (fieldpath.Path, error) {
	p := strings.TrimPrefix(jsonPath, ".")
	if p == "" {
		p = "spec.replicas"
	}
	parts := strings.Split(p, ".")
	elems := make([]interface{}, len(parts))
	for i, s := range parts {
		elems[i] = s
	}
	return fieldpath.MakePath(elems...)
}

// applyScale is the mutation of a server-side apply on /scale: it merges
// the applied Scale body into cur's Scale and writes the result's replicas
// and field ownership back into cur.
func (h *resourceHandler) applyScale(w http.ResponseWriter, cur runtime.Object, name string, body []byte, opts writeOptions) (runtime.Object, bool, error) {
	applied := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := unmarshalApplied(body, &applied.Object); err != nil {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	fm, err := h.scaleFieldManager()
	if err != nil {
		return nil, false, err
	}
	mapper, err := h.scaleHandler(cur)
	if err != nil {
		return nil, false, err
	}
	live := h.scaleOf(cur)
	if live.ManagedFields, err = mapper.ToSubresource(); err != nil {
		return nil, false, err
	}
	out, err := fm.Apply(live, applied, opts.fieldManager, opts.force)
	if err != nil {
		return nil, false, applyError(err)
	}
	// Duplicate keys are what strict decoding adds to the merge, which
	// already refused unknown fields (as for the parent, apply.go).
	if opts.fieldValidation != metav1.FieldValidationIgnore {
		if err := strictApplied(body); err != nil {
			if opts.fieldValidation == metav1.FieldValidationStrict {
				return nil, false, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", err))
			}
			addWarning(w, err.Error())
		}
	}
	want, ok := out.(*autoscalingv1.Scale)
	if !ok {
		return nil, false, fmt.Errorf("apply on scale produced %T", out)
	}
	if want.Name != name {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", want.Name, name))
	}
	if want.Spec.Replicas < 0 {
		return nil, false, apierrors.NewInvalid(scaleGVK.GroupKind(), name, fieldErrs("spec.replicas", want.Spec.Replicas, "must be greater than or equal to 0"))
	}
	m := objectMeta(cur)
	if want.UID != "" && want.UID != m.GetUID() {
		gr := schema.GroupResource{Group: h.gr.Group, Resource: h.gr.Resource + "/scale"}
		return nil, false, apierrors.NewConflict(gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", want.UID, m.GetUID()))
	}
	entries, err := mapper.ToParent(want.ManagedFields)
	if err != nil {
		return nil, false, err
	}
	curRV := m.GetResourceVersion()
	h.res.Scale.Set(cur, want.Spec.Replicas)
	m.SetManagedFields(entries)
	// A resourceVersion in the applied Scale is a precondition.
	m.SetResourceVersion(want.ResourceVersion)
	return cur, want.ResourceVersion != curRV, nil
}

// scaleScheme is the scheme the Scale field manager sees: one kind,
// autoscaling/v1 Scale, which apply results are turned back into.
type scaleScheme struct{}

func (scaleScheme) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if gvk != scaleGVK {
		return nil, runtime.NewNotRegisteredErrForKind("rudder", gvk)
	}
	sc := &autoscalingv1.Scale{}
	sc.GetObjectKind().SetGroupVersionKind(scaleGVK)
	return sc, nil
}

func (scaleScheme) Default(runtime.Object) {}

func (scaleScheme) Convert(in, out, context interface{}) error {
	return errors.New("conversion between objects is not supported")
}

func (scaleScheme) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	if gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{scaleGVK}); !ok || gvk != scaleGVK {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("rudder", in.GetObjectKind().GroupVersionKind(), target)
	}
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return in, nil
	}
	out := &autoscalingv1.Scale{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(scaleGVK)
	return out, nil
}

func (scaleScheme) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
