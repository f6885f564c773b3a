package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// Patch media types.
const (
	mediaJSONPatch      = "application/json-patch+json"
	mediaMergePatch     = "application/merge-patch+json"
	mediaStrategicPatch = "application/strategic-merge-patch+json"
	mediaApplyPatchYAML = "application/apply-patch+yaml"
)

// applyPatch applies a patch document of the given type to an object's
// JSON. typ is an empty object of the type, for strategic merge.
func applyPatch(patchType string, original, patch []byte, typ runtime.Object) (_ []byte, err error) {
	// The patch libraries panic on some malformed documents (strategic
	// merge with objects in a "$retainKeys" list, for one). The document is
	// the client's, so that is a bad request, not a server error.
	defer func() {
		if p := recover(); p != nil {
			err = apierrors.NewBadRequest(fmt.Sprintf("unable to apply the patch: %v", p))
		}
	}()
	switch patchType {
	case mediaJSONPatch:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		out, err := p.Apply(original)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return out, nil
	case mediaMergePatch:
		out, err := jsonpatch.MergePatch(original, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	case mediaStrategicPatch:
		var m map[string]interface{}
		if err := json.Unmarshal(patch, &m); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		out, err := strategicpatch.StrategicMergePatch(original, patch, typ)
		if err != nil {
			return nil, apierrors.NewInvalid(typ.GetObjectKind().GroupVersionKind().GroupKind(), "", field.ErrorList{field.Invalid(field.NewPath("patch"), string(patch), err.Error())})
		}
		return out, nil
	}
	// Server-side apply (application/apply-patch+yaml) is not served yet.
	return nil, unsupportedMediaType(mediaJSONPatch, mediaMergePatch, mediaStrategicPatch)
}

// patchTypes lists the patch media types PATCH reads, in upstream's order
// (its 415 lists them so); custom resources have no strategic merge.
func (h *resourceHandler) patchTypes() []string {
	if h.res.CustomResource {
		return []string{mediaJSONPatch, mediaMergePatch, mediaApplyPatchYAML}
	}
	return []string{mediaJSONPatch, mediaMergePatch, mediaStrategicPatch, mediaApplyPatchYAML}
}

// patch serves PATCH on the resource or its status: the patch is applied
// to the current object on every compare-and-swap attempt, so concurrent
// patches of different fields all land. A server-side apply
// (application/apply-patch+yaml) is a patch too: see apply.go.
func (h *resourceHandler) patch(w http.ResponseWriter, r *http.Request, namespace, name, subresource string) {
	patchType := contentType(r)
	if !slices.Contains(h.patchTypes(), patchType) {
		h.s.writeError(w, r, unsupportedMediaType(h.patchTypes()...))
		return
	}
	opts, err := parseWriteOptions(r, "PatchOptions", patchType)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	patchBody, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	req := updateRequest{namespace: namespace, name: name, subresource: subresource, user: requestUser(r), dryRun: opts.dryRun,
		track: true, manager: opts.manager,
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			return h.patchObject(w, r, cur, patchType, patchBody)
		},
	}
	if patchType == mediaApplyPatchYAML {
		req = h.applyRequest(w, req, namespace, patchBody, opts)
	}
	out, created, err := h.guaranteedUpdate(r.Context(), req)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	h.reply(w, r, code, out)
}

// patchObject applies a patch to cur and decodes the result. The result is
// preconditioned when the patch itself changed metadata.resourceVersion.
func (h *resourceHandler) patchObject(w http.ResponseWriter, r *http.Request, cur runtime.Object, patchType string, patchBody []byte) (runtime.Object, bool, error) {
	curRV := objectMeta(cur).GetResourceVersion()
	var next runtime.Object
	if patchType == mediaStrategicPatch && !h.res.CustomResource {
		var err error
		if next, err = h.strategicPatch(w, r, cur, patchBody); err != nil {
			return nil, false, err
		}
	} else {
		original, err := json.Marshal(cur)
		if err != nil {
			return nil, false, err
		}
		typ := h.res.New()
		typ.GetObjectKind().SetGroupVersionKind(h.gvk)
		patched, err := applyPatch(patchType, original, patchBody, typ)
		if err != nil {
			return nil, false, err
		}
		if next, err = h.decodePatched(w, r, patchType, patched, patchBody); err != nil {
			return nil, false, err
		}
	}
	m := objectMeta(next)
	if m.GetName() != objectMeta(cur).GetName() {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), objectMeta(cur).GetName()))
	}
	if m.GetNamespace() != objectMeta(cur).GetNamespace() {
		return nil, false, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return next, m.GetResourceVersion() != curRV, nil
}

// strategicPatch applies a strategic merge patch the way upstream does, on
// the object's map form rather than its JSON (which saves encoding and
// decoding the whole object, a third of the patch's cost on a large pod),
// with upstream's field validation: unknown or duplicate fields are, under
// Strict, a 422 on the patch and, under Warn, warnings.
func (h *resourceHandler) strategicPatch(w http.ResponseWriter, r *http.Request, cur runtime.Object, patchBody []byte) (_ runtime.Object, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = apierrors.NewBadRequest(fmt.Sprintf("unable to apply the patch: %v", p))
		}
	}()
	mode := r.URL.Query().Get("fieldValidation")
	checkFields := mode != metav1.FieldValidationIgnore
	patchMap := map[string]interface{}{}
	var strictErrs []error
	if checkFields {
		if strictErrs, err = kjson.UnmarshalStrict(patchBody, &patchMap); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	} else if err = kjson.UnmarshalCaseSensitivePreserveInts(patchBody, &patchMap); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	original, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, err
	}
	schemaObj := h.res.New()
	schemaObj.GetObjectKind().SetGroupVersionKind(h.gvk)
	patched, err := strategicpatch.StrategicMergeMapPatch(original, patchMap, schemaObj)
	if err != nil {
		return nil, strategicPatchError(err, patchBody)
	}
	invalid := func(err error) error {
		return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), fmt.Sprintf("%+v", patchMap), err.Error())})
	}
	obj := h.res.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, obj, checkFields); err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		switch {
		case !isStrict:
			return nil, invalid(err)
		case mode == metav1.FieldValidationStrict:
			return nil, invalid(runtime.NewStrictDecodingError(append(strictErrs, strictErr.Errors()...)))
		}
		strictErrs = append(strictErrs, strictErr.Errors()...)
	}
	if len(strictErrs) > 0 {
		if mode == metav1.FieldValidationStrict {
			return nil, invalid(runtime.NewStrictDecodingError(strictErrs))
		}
		for _, e := range strictErrs {
			addWarning(w, e.Error())
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(h.gvk)
	return obj, nil
}

// strategicPatchError answers a patch the merge could not apply: a
// malformed patch is a 400, one the merge cannot honour a 422, as upstream
// sorts them.
func strategicPatchError(err error, patchBody []byte) error {
	for _, bad := range []error{mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat} {
		if errors.Is(err, bad) {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	for _, unprocessable := range []error{mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys} {
		if errors.Is(err, unprocessable) {
			return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	}
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), string(patchBody), err.Error())})
}

// decodePatched decodes the patched object with the request's field
// validation. As upstream, fields the type does not declare are, under
// Strict, a 422 on the patch; under Warn (the default), warnings.
func (h *resourceHandler) decodePatched(w http.ResponseWriter, r *http.Request, patchType string, patched, patchBody []byte) (runtime.Object, error) {
	mode := r.URL.Query().Get("fieldValidation")
	dec := h.s.codecs.decoderFor(mediaJSON, mode != metav1.FieldValidationIgnore)
	// What the 422 shows as the patch: the patched object, or for a
	// strategic merge the patch itself, as upstream shows them.
	shown := func() string {
		if patchType == mediaStrategicPatch {
			var m map[string]interface{}
			if json.Unmarshal(patchBody, &m) == nil {
				return fmt.Sprintf("%+v", m)
			}
			return string(patchBody)
		}
		return string(patched)
	}
	into := h.res.New()
	want := h.gvk
	obj, actual, err := dec.Decode(patched, &want, into)
	if err != nil && runtime.IsStrictDecodingError(err) {
		if mode == metav1.FieldValidationStrict {
			return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), shown(), err.Error())})
		}
		var sde interface{ Errors() []error }
		if errors.As(err, &sde) {
			for _, e := range sde.Errors() {
				addWarning(w, e.Error())
			}
		}
		err = nil
	}
	if err != nil {
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), shown(), err.Error())})
	}
	if obj != into || (actual != nil && (actual.Kind != h.gvk.Kind || actual.GroupVersion() != h.gvk.GroupVersion())) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data does not match the expected kind (%s)", h.gvk.Kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(h.gvk)
	return obj, nil
}
