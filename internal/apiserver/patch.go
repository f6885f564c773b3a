package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// patch serves PATCH on the resource or its status: the patch is applied
// to the current object on every compare-and-swap attempt, so concurrent
// patches of different fields all land.
func (h *resourceHandler) patch(w http.ResponseWriter, r *http.Request, namespace, name, subresource string) {
	patchBody, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	patchType := contentType(r)
	isDry, err := dryRun(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	req := updateRequest{namespace: namespace, name: name, subresource: subresource, user: requestUser(r), dryRun: isDry,
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			return h.patchObject(w, r, cur, patchType, patchBody)
		},
	}
	out, _, err := h.guaranteedUpdate(r.Context(), req)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.reply(w, r, http.StatusOK, out)
}

// patchObject applies a patch to cur and decodes the result. The result is
// preconditioned when the patch itself changed metadata.resourceVersion.
func (h *resourceHandler) patchObject(w http.ResponseWriter, r *http.Request, cur runtime.Object, patchType string, patchBody []byte) (runtime.Object, bool, error) {
	curRV := objectMeta(cur).GetResourceVersion()
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
	// Decode as a JSON body, with the client's field validation.
	jr := r.Clone(r.Context())
	jr.Header.Set("Content-Type", mediaJSON)
	next, err := h.decodeBody(w, jr, patched, h.kindRef())
	if err != nil {
		return nil, false, err
	}
	m := objectMeta(next)
	if m.GetName() != objectMeta(cur).GetName() || m.GetNamespace() != objectMeta(cur).GetNamespace() {
		return nil, false, apierrors.NewBadRequest("metadata.name and metadata.namespace may not be changed by a patch")
	}
	return next, m.GetResourceVersion() != curRV, nil
}
