package apiserver

// Field management: every create, update and patch records, in
// metadata.managedFields, which client (the "manager") last set each
// field, the way upstream does it, with apimachinery's managedfields
// package doing the bookkeeping. A write records an Update entry for its
// manager; a server-side apply records an Apply entry and may be refused
// with a conflict naming the managers that own the fields it changes
// (apply.go).
//
// The manager is the request's fieldManager parameter or, when absent, the
// part of its User-Agent before the first "/" ("kubectl", "helm"), as
// upstream names it. The entry records the subresource the write went
// through ("status", "scale"), so a status writer and a spec applier do not
// conflict.
//
// Which fields a write can own depends on where it goes: a write to the
// main resource never sets status (the strategy resets it), a write to
// /status never sets spec. Resource.ResetFields, or the usual split below,
// tells the field manager so, and nobody is given ownership of what the
// write could not change.
//
// The managedfields package works in terms of a scheme: it converts
// objects between versions, creates empty ones, and defaults them.
// resourceScheme is that scheme for one resource: it knows its one kind
// and version, turns the unstructured results of an apply back into the
// resource's Go type, and refuses every other version, which the field
// manager takes as "this entry's version is not served" and drops the
// entry, as upstream does for a version it no longer serves. The versions
// of a kind served from the same objects (autoscaling/v1 and v2
// HorizontalPodAutoscalers, core and events.k8s.io Events) are the
// exception: their entries are converted, so a manager that wrote
// through one version keeps its fields across writes through the other
// (managedfields_versions.go).

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/rudder-dev/rudder/internal/apiserver/openapi"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// fieldManagers holds a resource's field managers, one per subresource a
// write goes through ("" for the main resource), built on first use: the
// schemas behind them are built once per process, on the first write.
type fieldManagers struct {
	mu    sync.Mutex
	bySub map[string]*managedfields.FieldManager
	// scale merges applied autoscaling/v1 Scales (scale_apply.go).
	scale *managedfields.FieldManager
}

// fieldManager returns the field manager of writes through subresource.
func (h *resourceHandler) fieldManager(subresource string) (*managedfields.FieldManager, error) {
	h.fields.mu.Lock()
	defer h.fields.mu.Unlock()
	if fm := h.fields.bySub[subresource]; fm != nil {
		return fm, nil
	}
	tc, err := h.typeConverter()
	if err != nil {
		return nil, err
	}
	tc = lazyTypeConverter{tc}
	sc := &resourceScheme{gvk: h.gvk, res: h.res, peers: h.versionPeers()}
	reset := resetFilters(h.res, h.gvk.GroupVersion(), subresource)
	newFM := managedfields.NewDefaultFieldManager
	if h.res.CustomResource {
		newFM = managedfields.NewDefaultCRDFieldManager
	}
	fm, err := newFM(tc, sc, sc, sc, h.gvk, h.gvk.GroupVersion(), subresource, reset)
	if err != nil {
		return nil, err
	}
	if h.fields.bySub == nil {
		h.fields.bySub = map[string]*managedfields.FieldManager{}
	}
	h.fields.bySub[subresource] = fm
	return fm, nil
}

// typeConverter is the schema of the resource's objects: its own when it
// supplies one (custom resources), the built-in kinds' otherwise. A custom
// resource without a schema gets the one deduced from each object, where
// every field is a plain value and every list atomic, as upstream treats a
// CRD without a structural schema.
func (h *resourceHandler) typeConverter() (managedfields.TypeConverter, error) {
	switch {
	case h.res.TypeConverter != nil:
		return h.res.TypeConverter()
	case h.res.CustomResource:
		return managedfields.NewDeducedTypeConverter(), nil
	}
	return openapi.TypeConverter()
}

// trackUpdate records a non-apply write of next over live (an empty object
// on create) as manager's Update. As upstream, a failure to compute the
// entries never fails the write: the object is then stored without
// managedFields.
func (h *resourceHandler) trackUpdate(live, next runtime.Object, manager, subresource string) runtime.Object {
	fm, err := h.fieldManager(subresource)
	if err != nil {
		objectMeta(next).SetManagedFields(nil)
		return next
	}
	live.GetObjectKind().SetGroupVersionKind(h.gvk)
	next.GetObjectKind().SetGroupVersionKind(h.gvk)
	if l, n, ok := withoutCommonParts(live, next, h.gvk.GroupVersion().String()); ok {
		// The field manager writes only the copy's metadata.managedFields.
		out := fm.UpdateNoErrors(l, n, manager)
		objectMeta(next).SetManagedFields(objectMeta(out).GetManagedFields())
		return next
	}
	return fm.UpdateNoErrors(live, next, manager)
}

// emptyObject is the live object of a create: no uid, so the field
// manager knows it is one.
func (h *resourceHandler) emptyObject() runtime.Object {
	obj := h.res.New()
	obj.GetObjectKind().SetGroupVersionKind(h.gvk)
	return obj
}

// defaultResetFields are the kinds whose strategies reset more, or other,
// fields than the usual split, by group/resource and subresource.
var defaultResetFields = map[string]map[string][]string{
	"apps/deployments": {"status": {"spec", "metadata.labels"}},
	"/pods":            {"status": {"spec", "metadata.deletionTimestamp", "metadata.ownerReferences"}},
	"certificates.k8s.io/certificatesigningrequests": {
		"":         {"spec", "status"},
		"status":   {"spec", "status.conditions"},
		"approval": {"spec", "status.certificate"},
	},
}

// resetFields returns the dotted paths a write through subresource cannot
// set.
func resetFields(res *registry.Resource, subresource string) []string {
	if res.ResetFields != nil {
		return res.ResetFields[subresource]
	}
	if byKind, ok := defaultResetFields[res.Group+"/"+res.Resource]; ok {
		if paths, ok := byKind[subresource]; ok {
			return paths
		}
	}
	if !res.HasStatus {
		return nil
	}
	switch subresource {
	case "":
		return []string{"status"}
	case "status":
		return []string{"spec"}
	}
	return nil
}

// resetFilters is resetFields in the field manager's terms.
func resetFilters(res *registry.Resource, gv schema.GroupVersion, subresource string) map[fieldpath.APIVersion]fieldpath.Filter {
	paths := resetFields(res, subresource)
	if len(paths) == 0 {
		return nil
	}
	set := fieldpath.NewSet()
	for _, p := range paths {
		parts := strings.Split(p, ".")
		elems := make([]interface{}, len(parts))
		for i, s := range parts {
			elems[i] = s
		}
		set.Insert(fieldpath.MakePathOrDie(elems...))
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(gv.String()): fieldpath.NewExcludeSetFilter(set),
	}
}

// resourceScheme is the scheme the field manager sees for one resource
// (runtime.ObjectConvertor, ObjectCreater and ObjectDefaulter).
type resourceScheme struct {
	gvk schema.GroupVersionKind
	res *registry.Resource
	// peers are the other versions of the kind served from the same
	// objects (managedfields_versions.go), by group version; nil for a
	// kind served in one version.
	peers map[schema.GroupVersion]*registry.Resource
}

func (s *resourceScheme) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if peer := s.peers[gvk.GroupVersion()]; peer != nil && gvk.Kind == s.gvk.Kind && gvk != s.gvk {
		obj := peer.New()
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return obj, nil
	}
	if gvk != s.gvk {
		return nil, runtime.NewNotRegisteredErrForKind("rudder", gvk)
	}
	obj := s.res.New()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

func (s *resourceScheme) Default(obj runtime.Object) {
	if s.res.Default != nil {
		s.res.Default(obj)
	}
}

func (s *resourceScheme) Convert(in, out, context interface{}) error {
	return errors.New("conversion between objects is not supported")
}

// ConvertToVersion returns in as the resource's Go type: unstructured
// apply results become typed objects. The resource serves one version; any
// other is not registered. Custom resources stay unstructured, and change
// version by changing apiVersion, as a CRD with conversion None does.
func (s *resourceScheme) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	if l, ok := in.(*lazyObject); ok {
		obj, err := l.materialize()
		if err != nil {
			return nil, err
		}
		in = obj
	}
	from := in.GetObjectKind().GroupVersionKind()
	if from.Empty() {
		from = s.gvk
	}
	var to schema.GroupVersion
	if gv, ok := target.(schema.GroupVersion); ok {
		to = gv
	} else if gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from}); ok {
		to = gvk.GroupVersion()
	} else {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("rudder", from, target)
	}
	u, isUnstructured := in.(*unstructured.Unstructured)
	if s.res.CustomResource {
		if from.Group != s.gvk.Group || from.Kind != s.gvk.Kind || to.Group != s.gvk.Group || !isUnstructured {
			return nil, runtime.NewNotRegisteredGVKErrForTarget("rudder", from, target)
		}
		if from.GroupVersion() == to {
			return in, nil
		}
		out := u.DeepCopy()
		out.SetAPIVersion(to.String())
		return out, nil
	}
	if from.Kind == s.gvk.Kind && (from.GroupVersion() != s.gvk.GroupVersion() || to != s.gvk.GroupVersion()) && s.peers != nil {
		return s.convertPeer(in, from, to)
	}
	if from.GroupVersion() != s.gvk.GroupVersion() || to != s.gvk.GroupVersion() || from.Kind != s.gvk.Kind {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("rudder", from, target)
	}
	if !isUnstructured {
		return in, nil
	}
	out := s.res.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(s.gvk)
	return out, nil
}

func (s *resourceScheme) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// writeOptions are the query parameters of a create, update or patch.
type writeOptions struct {
	dryRun bool
	// fieldManager is the parameter as sent; manager is the name the
	// managedFields entry records (fieldManager or the User-Agent prefix).
	fieldManager, manager string
	// fieldValidation is "Ignore", "Warn" (the default) or "Strict".
	fieldValidation string
	force           bool
}

// parseWriteOptions reads and validates the options of a write, as upstream
// validates CreateOptions, UpdateOptions and PatchOptions (kind names
// which): a bad value is a 422 naming the parameter. patchType is the
// patch's media type, "" for other verbs.
func parseWriteOptions(r *http.Request, kind, patchType string) (writeOptions, error) {
	q := r.URL.Query()
	opts := writeOptions{fieldManager: q.Get("fieldManager"), fieldValidation: q.Get("fieldValidation")}
	dry := q["dryRun"]
	var force *bool
	if v, ok := q["force"]; ok && len(v) > 0 {
		b, err := strconv.ParseBool(v[0])
		if err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid value for force: %v", err))
		}
		force = &b
	}
	var errs field.ErrorList
	switch kind {
	case "CreateOptions":
		errs = metav1validation.ValidateCreateOptions(&metav1.CreateOptions{DryRun: dry, FieldManager: opts.fieldManager, FieldValidation: opts.fieldValidation})
	case "UpdateOptions":
		errs = metav1validation.ValidateUpdateOptions(&metav1.UpdateOptions{DryRun: dry, FieldManager: opts.fieldManager, FieldValidation: opts.fieldValidation})
	default:
		errs = metav1validation.ValidatePatchOptions(&metav1.PatchOptions{DryRun: dry, FieldManager: opts.fieldManager, FieldValidation: opts.fieldValidation, Force: force}, types.PatchType(patchType))
	}
	if len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	opts.dryRun = len(dry) > 0
	if force != nil {
		opts.force = *force
	}
	if opts.fieldValidation == "" {
		opts.fieldValidation = metav1.FieldValidationWarn
	}
	opts.manager = managerName(opts.fieldManager, r.UserAgent())
	return opts, nil
}

// managerName is the manager a write records: the fieldManager parameter,
// else the User-Agent up to its first "/", printable characters only, at
// most 128 of them, as upstream derives it.
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b bytes.Buffer
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len() >= metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// sameButManagedTimes reports whether next is cur with nothing changed
// but the times of its managedFields entries; it then gives next cur's
// entries, so a write that changes nothing stays a no-op (no new
// resourceVersion), as upstream keeps it.
func sameButManagedTimes(next, cur runtime.Object) bool {
	nm, cm := objectMeta(next), objectMeta(cur)
	nf, cf := nm.GetManagedFields(), cm.GetManagedFields()
	if len(nf) != len(cf) {
		return false
	}
	for i := range nf {
		a, b := nf[i], cf[i]
		a.Time, b.Time = nil, nil
		if !apiequality.Semantic.DeepEqual(a, b) {
			return false
		}
	}
	nm.SetManagedFields(cf)
	if semanticallyEqual(next, cur) {
		return true
	}
	nm.SetManagedFields(nf)
	return false
}

// admitKeepingManagedFields runs mutating admission and undoes what it did
// to managedFields if that left them invalid, as upstream guards them
// against outdated webhooks.
func admitKeepingManagedFields(obj runtime.Object, admit func() error) error {
	m := objectMeta(obj)
	before := slices.Clone(m.GetManagedFields())
	if err := admit(); err != nil {
		return err
	}
	m = objectMeta(obj)
	after := m.GetManagedFields()
	// Decoding every entry to validate it costs more than the rest of
	// admission on a small object: do it only when admission touched them.
	if sameEntries(before, after) {
		return nil
	}
	if err := managedfields.ValidateManagedFields(after); err != nil {
		m.SetManagedFields(before)
	}
	return nil
}

// sameEntries reports whether b holds a's entries, unreplaced.
func sameEntries(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.APIVersion != y.APIVersion ||
			x.FieldsType != y.FieldsType || x.Subresource != y.Subresource || x.Time != y.Time || x.FieldsV1 != y.FieldsV1 {
			return false
		}
	}
	return true
}

// requestManager is the manager a subresource write records.
func requestManager(r *http.Request) string {
	return managerName(r.URL.Query().Get("fieldManager"), r.UserAgent())
}

// lazyTypeConverter defers TypedToObject until the object is needed. The
// field manager turns the live object back into an unstructured one once
// per manager on every write only to read its apiVersion (to see whether
// that manager's entry needs converting: for a resource with one version,
// never), which was a third of what field management cost; a lazyObject
// answers that from the typed value, and becomes an object only when
// converted (resourceScheme.ConvertToVersion) or copied.
type lazyTypeConverter struct{ managedfields.TypeConverter }

func (c lazyTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if l, ok := obj.(*lazyObject); ok {
		if l.obj == nil && l.err == nil {
			return l.tv, nil
		}
		// Once an object, it may have been changed: convert that.
		if obj, err := l.materialize(); err != nil {
			return nil, err
		} else {
			return c.TypeConverter.ObjectToTyped(obj, opts...)
		}
	}
	return c.TypeConverter.ObjectToTyped(obj, opts...)
}

func (c lazyTypeConverter) TypedToObject(tv *typed.TypedValue) (runtime.Object, error) {
	l := &lazyObject{tv: tv, tc: c.TypeConverter}
	if v := tv.AsValue(); v.IsMap() {
		m := v.AsMap()
		if av, ok := m.Get("apiVersion"); ok && av.IsString() {
			l.meta.APIVersion = av.AsString()
		}
		if k, ok := m.Get("kind"); ok && k.IsString() {
			l.meta.Kind = k.AsString()
		}
	}
	return l, nil
}

// lazyObject is a typed value that becomes an object on first use.
type lazyObject struct {
	tv   *typed.TypedValue
	tc   managedfields.TypeConverter
	meta metav1.TypeMeta
	obj  runtime.Object
	err  error
}

func (l *lazyObject) materialize() (runtime.Object, error) {
	if l.obj == nil && l.err == nil {
		l.obj, l.err = l.tc.TypedToObject(l.tv)
	}
	return l.obj, l.err
}

func (l *lazyObject) GetObjectKind() schema.ObjectKind { return &l.meta }

func (l *lazyObject) DeepCopyObject() runtime.Object {
	obj, err := l.materialize()
	if err != nil {
		return &lazyObject{tv: l.tv, tc: l.tc, meta: l.meta, err: err}
	}
	return obj.DeepCopyObject()
}
