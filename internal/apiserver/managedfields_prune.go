package apiserver

import (
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Two savings on the write path that compute exactly what they replace.
//
// The field manager finds the fields a write changed by walking the live
// object and the new one side by side (structured-merge-diff's Compare)
// and records, for the writer, what was added or modified, and takes
// from every other manager what was removed. A subtree that is the same
// on both sides adds nothing to any of those sets: Compare reports a
// field only where one side lacks it or the two differ. Yet the walk
// visits every field of it, and most writes leave most of the object
// alone: a kubelet's status write carries the pod's spec unchanged, a
// controller's spec write the status. withoutCommonParts hands the field
// manager copies of both objects in which such a top-level part (spec,
// status, data, ...) and such a metadata field (labels, owners, ...) is
// blanked on both sides, so the walk skips it and the entries come out
// the same. Only top-level parts and metadata fields are blanked: their
// parent is the object itself or its metadata, a struct that stays on
// both sides however empty, so no parent appears or vanishes.
//
// The one case where a blanked part could matter is a managedFields entry
// of another API version: the field manager then converts both objects to
// that version, and a conversion may move fields between parts. Such
// writes (HorizontalPodAutoscalers, Events written through both groups)
// are left whole. (The walk also reports malformed data, such as a keyed
// list item without its key, which fails the tracking; in a part the
// write left unchanged it now goes unnoticed. The API's validation keeps
// such data out of stored objects.)
//
// The second saving, semanticallyEqual, orders the comparison that tells
// a write that changed nothing.

// withoutCommonParts returns shallow copies of live and next with every
// top-level field but the type, and every field of the object metadata
// but those in keptMeta, that is deeply equal on both sides set to its
// zero value on both. ok is false when it saves nothing or does not
// apply: a create, an object without a metav1.ObjectMeta field of its
// own (an unstructured one keeps its metadata, managedFields included, in
// its one map), entries of another version. The caller then uses the
// objects themselves.
func withoutCommonParts(live, next runtime.Object, version string) (l, n runtime.Object, ok bool) {
	lv, nv := reflect.ValueOf(live), reflect.ValueOf(next)
	if lv.Kind() != reflect.Pointer || lv.Type() != nv.Type() || lv.IsNil() || nv.IsNil() {
		return nil, nil, false
	}
	t := lv.Type().Elem()
	if t.Kind() != reflect.Struct {
		return nil, nil, false
	}
	metaField, found := t.FieldByName("ObjectMeta")
	if !found || metaField.Type != objectMetaType || len(metaField.Index) != 1 {
		return nil, nil, false
	}
	meta := metaField.Index[0]
	if objectMeta(live).GetUID() == "" {
		// A create: the live object is empty, and parts empty on both
		// sides cost the walk nothing.
		return nil, nil, false
	}
	if !entriesOfVersion(objectMeta(live).GetManagedFields(), version) ||
		!entriesOfVersion(objectMeta(next).GetManagedFields(), version) {
		return nil, nil, false
	}
	commonMeta := commonFields(lv.Elem().Field(meta), nv.Elem().Field(meta), keptMeta)
	var common []int
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if i == meta || !f.IsExported() || f.Type == typeMetaType {
			continue
		}
		if equalParts(lv.Elem().Field(i), nv.Elem().Field(i)) {
			common = append(common, i)
		}
	}
	if len(common) == 0 && len(commonMeta) == 0 {
		return nil, nil, false
	}
	lc, nc := reflect.New(t), reflect.New(t)
	lc.Elem().Set(lv.Elem())
	nc.Elem().Set(nv.Elem())
	for _, i := range common {
		lc.Elem().Field(i).SetZero()
		nc.Elem().Field(i).SetZero()
	}
	// The copies' ObjectMeta are their own (a struct, not a pointer):
	// blanking fields of it leaves the originals alone.
	for _, j := range commonMeta {
		lc.Elem().Field(meta).Field(j).SetZero()
		nc.Elem().Field(meta).Field(j).SetZero()
	}
	return lc.Interface().(runtime.Object), nc.Interface().(runtime.Object), true
}

// keptMeta are the ObjectMeta fields never blanked: the ones the field
// manager reads besides comparing, managedFields, uid (an object without
// one is being created), and name and namespace, which it logs. Blanking
// the others cannot make metadata vanish from either side: a struct field
// is never omitted, however empty.
var keptMeta = map[string]bool{"ManagedFields": true, "UID": true, "Name": true, "Namespace": true}

// commonFields lists the fields of structs a and b, both of one type,
// that are deeply equal and not both zero, leaving out those named in
// kept.
func commonFields(a, b reflect.Value, kept map[string]bool) []int {
	var out []int
	t := a.Type()
	for j := 0; j < t.NumField(); j++ {
		if f := t.Field(j); f.IsExported() && !kept[f.Name] && equalParts(a.Field(j), b.Field(j)) {
			out = append(out, j)
		}
	}
	return out
}

// equalParts reports whether a and b are deeply equal and worth
// blanking: parts zero on both sides cost the walk nothing.
func equalParts(a, b reflect.Value) bool {
	if a.IsZero() && b.IsZero() {
		return false
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

var (
	typeMetaType   = reflect.TypeFor[metav1.TypeMeta]()
	objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()
)

// entriesOfVersion reports whether every entry was written through
// version.
func entriesOfVersion(entries []metav1.ManagedFieldsEntry, version string) bool {
	for _, e := range entries {
		if e.APIVersion != version {
			return false
		}
	}
	return true
}

// semanticallyEqual is apiequality.Semantic.DeepEqual(a, b), comparing a
// struct object's top-level fields in the order that finds a difference
// soonest for the usual write: the metadata first (a label write, and a
// spec write, which bumps the generation, differ there), then the others
// from the last to the first, status before spec, as a status write or a
// binding leaves the long spec as it was. The answer is the same.
func semanticallyEqual(a, b runtime.Object) bool {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	if av.Kind() != reflect.Pointer || av.Type() != bv.Type() || av.IsNil() || bv.IsNil() || av.Elem().Kind() != reflect.Struct {
		return apiequality.Semantic.DeepEqual(a, b)
	}
	ae, be := av.Elem(), bv.Elem()
	t := ae.Type()
	var buf [8]int
	order := buf[:0]
	for i := 0; i < t.NumField(); i++ {
		if !t.Field(i).IsExported() {
			return apiequality.Semantic.DeepEqual(a, b)
		}
		if ft := t.Field(i).Type; ft == typeMetaType || ft == objectMetaType {
			order = append(order, i)
		}
	}
	for i := t.NumField() - 1; i >= 0; i-- {
		if ft := t.Field(i).Type; ft != typeMetaType && ft != objectMetaType {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if !apiequality.Semantic.DeepEqual(ae.Field(i).Interface(), be.Field(i).Interface()) {
			return false
		}
	}
	return true
}
