package apiserver

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/storage"
)

// maxBodyBytes is upstream's limit on a request body.
const maxBodyBytes = 3 * 1024 * 1024

// readBody reads a request body up to the size limit (413 beyond it).
func readBody(r *http.Request) ([]byte, error) {
	size := 512 // io.ReadAll's start
	if n := r.ContentLength; n > 0 && n <= maxBodyBytes {
		// One byte more than announced, to see the end without growing.
		size = int(n) + 1
	}
	data, err := readAll(io.LimitReader(r.Body, maxBodyBytes+1), size)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to read request body: %v", err))
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

// readAll is io.ReadAll starting from a buffer of size bytes: a body of
// known length is read into one allocation instead of a buffer grown
// from 512 bytes through every size up to it.
func readAll(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
		}
	}
}

// decodeBody decodes a request body of the request's content type into a
// new object of the resource, checking that it is of the resource's kind.
// Unknown or duplicate fields are errors under fieldValidation=Strict and
// warnings under Warn (the default), as upstream.
func (h *resourceHandler) decodeBody(w http.ResponseWriter, r *http.Request, data []byte, gvk kindRef) (runtime.Object, error) {
	media := contentType(r)
	mode := r.URL.Query().Get("fieldValidation")
	switch mode {
	case "", "Warn", "Strict", "Ignore":
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got %q", mode))
	}
	dec := h.s.codecs.decoderFor(media, mode != "Ignore")
	if dec == nil {
		return nil, unsupportedMediaType()
	}
	into := gvk.newObject()
	defaults := gvk.kind
	obj, actual, err := dec.Decode(data, &defaults, into)
	if err != nil && runtime.IsStrictDecodingError(err) {
		var sde interface{ Errors() []error }
		if mode == "Strict" {
			return nil, decodeError(err, gvk.kind.Kind, actual, data)
		}
		if errors.As(err, &sde) {
			for _, e := range sde.Errors() {
				addWarning(w, e.Error())
			}
		}
		err = nil
	}
	if err != nil {
		return nil, decodeError(err, gvk.kind.Kind, actual, data)
	}
	if actual != nil && (actual.Kind != gvk.kind.Kind || actual.GroupVersion() != gvk.kind.GroupVersion()) {
		if actual.GroupVersion() != gvk.kind.GroupVersion() {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", actual.GroupVersion(), gvk.kind.GroupVersion()))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", actual.Kind, gvk.kind.Kind))
	}
	if obj != into {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data does not match the expected kind (%s)", gvk.kind.Kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk.kind)
	if h.custom != nil {
		if err := h.crdDecoded(w, mode, obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// decodeError is upstream's 400 for a body that does not decode as kind,
// in its words: naming the kind the body claims when it got that far, or
// else a summary of the body's first bytes.
func decodeError(err error, kind string, actual *schema.GroupVersionKind, body []byte) error {
	if actual != nil && actual.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", actual.Kind, actual.Version, kind, err))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summarizeBody(body, 30)))
}

// summarizeBody shows at most n bytes of a body: as text when it looks like
// JSON, in hex otherwise.
func summarizeBody(data []byte, n int) string {
	more := ""
	if len(data) > n {
		data, more = data[:n], " ..."
	}
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		return string(data) + more
	}
	return hex.EncodeToString(data) + more
}

// kindRef is the kind a body must decode to, and how to make one.
type kindRef struct {
	kind      schema.GroupVersionKind
	newObject func() runtime.Object
}

func (h *resourceHandler) kindRef() kindRef { return kindRef{kind: h.gvk, newObject: h.res.New} }

// unsupportedMediaType is upstream's 415 for a body it cannot read.
func unsupportedMediaType(accepted ...string) error {
	if len(accepted) == 0 {
		accepted = []string{mediaJSON, mediaYAML, mediaProtobuf}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(accepted, ", "),
	}}
}

func addWarning(w http.ResponseWriter, msg string) {
	w.Header().Add("Warning", `299 - "`+strings.ReplaceAll(msg, `"`, `\"`)+`"`)
}

// dryRun reports whether the request asked for dryRun=All (and rejects
// other values, as upstream).
func dryRun(r *http.Request) (bool, error) {
	vals := r.URL.Query()["dryRun"]
	for _, v := range vals {
		if v != "All" {
			return false, apierrors.NewBadRequest(fmt.Sprintf("Invalid dry run value: %q, supported values are: [All]", v))
		}
	}
	return len(vals) > 0, nil
}

func (h *resourceHandler) create(w http.ResponseWriter, r *http.Request, namespace string) {
	opts, err := parseWriteOptions(r, "CreateOptions", "")
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	obj, _, err := h.readObject(w, r, h.kindRef())
	if err == nil {
		err = h.placeInNamespace(obj, namespace)
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	created, err := h.createTracked(r.Context(), obj, createRequest{user: requestUser(r), dryRun: opts.dryRun, track: true, manager: opts.manager})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.reply(w, r, http.StatusCreated, created)
}

// readObject reads and decodes the body of a write as ref's kind, and
// reads the request's dryRun.
func (h *resourceHandler) readObject(w http.ResponseWriter, r *http.Request, ref kindRef) (runtime.Object, bool, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, false, err
	}
	obj, err := h.decodeBody(w, r, data, ref)
	if err != nil {
		return nil, false, err
	}
	isDry, err := dryRun(r)
	return obj, isDry, err
}

// placeInNamespace puts a body's object in the request's namespace: an
// empty namespace takes the URL's, a different one is a 400.
func (h *resourceHandler) placeInNamespace(obj runtime.Object, namespace string) error {
	m := objectMeta(obj)
	switch {
	case !h.res.Namespaced:
		m.SetNamespace("")
	case m.GetNamespace() == "":
		m.SetNamespace(namespace)
	case m.GetNamespace() != namespace:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// reply writes the object a write produced, in the negotiated form (JSON
// when the Accept header names nothing we serve: the write already
// happened).
func (h *resourceHandler) reply(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	t, ok := h.negotiate(r)
	if !ok {
		t = target{media: mediaJSON}
	}
	h.s.writeObject(w, r, t, code, h, obj)
}

// createObject runs a create through defaults, admission and validation,
// and stores it: the server's own creates (bootstrap objects), recorded in
// managedFields as upstream's API server records its own, as
// "kube-apiserver".
func (h *resourceHandler) createObject(ctx context.Context, in runtime.Object, user *auth.User, isDry bool) (runtime.Object, error) {
	return h.createTracked(ctx, in, createRequest{user: user, dryRun: isDry, track: true, manager: serverManager})
}

// serverManager is the manager of the server's own writes.
const serverManager = "kube-apiserver"

// createRequest is one create through the pipeline.
type createRequest struct {
	user   *auth.User
	dryRun bool
	// track means managedFields record the create: manager becomes the
	// manager of every field the object sets (an Update entry).
	track   bool
	manager string
	// applied means in is the result of a server-side apply, which has
	// already recorded its managedFields.
	applied bool
}

// createTracked is createObject for a client's create, create-on-update
// and create-by-apply: the same pipeline, with managedFields recorded
// after defaults and before admission, as upstream records them.
func (h *resourceHandler) createTracked(ctx context.Context, in runtime.Object, req createRequest) (runtime.Object, error) {
	user, isDry := req.user, req.dryRun
	if h.res.Default != nil {
		h.res.Default(in)
	}
	if req.track && !req.applied {
		in = h.trackUpdate(h.emptyObject(), in, req.manager, "")
	}
	m := objectMeta(in)
	attrs := &admit.Attributes{Operation: admit.Create, Kind: h.gvk, Resource: h.res.GroupVersionResource(),
		Namespace: m.GetNamespace(), Name: m.GetName(), Object: in, User: user, DryRun: isDry}
	if err := admitKeepingManagedFields(in, func() error { return h.s.admission.Admit(ctx, attrs) }); err != nil {
		return nil, err
	}
	if m.GetName() == "" && m.GetGenerateName() == "" {
		return nil, apierrors.NewInvalid(h.gvk.GroupKind(), "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	generated := m.GetName() == ""
	for attempt := 0; ; attempt++ {
		// Each attempt starts from the admitted object: the strategy may
		// derive fields from the name (a Job's job-name label), so the name
		// is chosen before it runs.
		obj := in.DeepCopyObject()
		m := objectMeta(obj)
		if generated {
			m.SetName(m.GetGenerateName() + randomSuffix())
		}
		m.SetUID(types.UID(uuid.NewUUID()))
		m.SetCreationTimestamp(metav1.NewTime(h.s.now().Truncate(time.Second)))
		m.SetResourceVersion("")
		m.SetDeletionTimestamp(nil)
		m.SetDeletionGracePeriodSeconds(nil)
		m.SetSelfLink("")
		m.SetGeneration(0)
		if h.res.HasGeneration {
			m.SetGeneration(1)
		}
		if h.res.PrepareForCreate != nil {
			h.res.PrepareForCreate(obj)
		}
		if h.res.RecordCreator != nil {
			h.res.RecordCreator(obj, user)
		}
		attrs.Name, attrs.Object = m.GetName(), obj
		if err := h.validateCreate(obj); err != nil {
			return nil, err
		}
		if err := h.s.admission.Validate(ctx, attrs); err != nil {
			return nil, err
		}
		if isDry {
			return obj, nil
		}
		rev, err := h.storeNew(ctx, obj)
		if errors.Is(err, storage.ErrExists) && generated && attempt < 8 {
			continue
		}
		if err != nil {
			return nil, toStatusError(err, h.gr, m.GetName())
		}
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		return obj, nil
	}
}

// storeNew writes a new object, with its hooks' allocations undone if the
// write fails.
func (h *resourceHandler) storeNew(ctx context.Context, obj runtime.Object) (int64, error) {
	undo := func() {}
	if h.hooks != nil {
		var err error
		if undo, err = h.hooks.beforeWrite(ctx, obj, nil); err != nil {
			return 0, err
		}
	}
	data, err := h.encodeForStorage(obj)
	if err != nil {
		undo()
		return 0, err
	}
	m := objectMeta(obj)
	rev, err := h.s.store.Create(ctx, h.key(m.GetNamespace(), m.GetName()), data)
	if err != nil {
		undo()
	}
	return rev, err
}

func (h *resourceHandler) validateCreate(obj runtime.Object) error {
	var errs field.ErrorList
	if h.res.Validate != nil {
		errs = h.res.Validate(obj)
	} else {
		errs = registry.ValidateMeta(objectMetaStruct(obj), h.res.Namespaced, pathSegmentName)
	}
	return h.invalid(obj, errs)
}

func (h *resourceHandler) invalid(obj runtime.Object, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(h.gvk.GroupKind(), objectMeta(obj).GetName(), errs)
}

// pathSegmentName accepts any name that can be a path segment, the rule
// for kinds without a stricter one.
func pathSegmentName(name string, prefix bool) []string {
	if !prefix {
		switch name {
		case ".", "..":
			return []string{fmt.Sprintf("may not be '%s'", name)}
		}
	}
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			return []string{fmt.Sprintf("may not contain '%s'", bad)}
		}
	}
	return nil
}

// randomSuffix is what generateName appends: five characters from an
// alphabet without vowels, so no words are formed, as upstream.
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// objectMetaStruct returns the ObjectMeta struct of a registered type.
func objectMetaStruct(obj runtime.Object) *metav1.ObjectMeta {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return unstructuredMeta(u) // a custom resource: a converted copy
	}
	// meta.Accessor returns the object itself for typed kinds, not its
	// ObjectMeta: the struct is reached through GetObjectMeta.
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if om, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return om
		}
	}
	return &metav1.ObjectMeta{}
}

// structField returns the named field (Spec, Status) of a pointer to a
// registered API struct, or an invalid Value.
func structField(obj runtime.Object, name string) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.Elem().FieldByName(name)
}

// copyStatus sets dst's status to src's.
func copyStatus(dst, src runtime.Object) {
	if d, ok := dst.(*unstructured.Unstructured); ok {
		crdCopyStatus(d, src.(*unstructured.Unstructured))
		return
	}
	d, s := structField(dst, "Status"), structField(src, "Status")
	if d.IsValid() && s.IsValid() && d.CanSet() {
		d.Set(s)
	}
}

// specChanged reports whether anything besides metadata and status
// differs: what bumps metadata.generation.
func specChanged(a, b runtime.Object) bool {
	if ua, ok := a.(*unstructured.Unstructured); ok {
		return crdSpecChanged(ua, b.(*unstructured.Unstructured))
	}
	ac, bc := a.DeepCopyObject(), b.DeepCopyObject()
	for _, o := range []runtime.Object{ac, bc} {
		if f := structField(o, "ObjectMeta"); f.IsValid() {
			f.Set(reflect.Zero(f.Type()))
		}
		if f := structField(o, "Status"); f.IsValid() {
			f.Set(reflect.Zero(f.Type()))
		}
		if f := structField(o, "TypeMeta"); f.IsValid() {
			f.Set(reflect.Zero(f.Type()))
		}
	}
	return !apiequality.Semantic.DeepEqual(ac, bc)
}
