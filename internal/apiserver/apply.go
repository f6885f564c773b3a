package apiserver

// Server-side apply: PATCH with Content-Type application/apply-patch+yaml.
// The body is the client's whole intent for the fields it manages (a
// partial object in YAML or JSON); the server merges it into the live
// object with the schema's merge rules (lists keyed by name, atomic
// structs, ...), records the fields in an Apply entry of managedFields
// under the request's fieldManager (required), and refuses, with 409, to
// change a field another manager owns unless the request says force=true:
//
//	Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas
//
// Fields the manager applied before and leaves out now are removed, unless
// another manager also owns them. An apply to an object that does not
// exist creates it, through the same defaults, admission and validation as
// a POST. The merge itself is apimachinery's managedfields.FieldManager
// (which wraps structured-merge-diff); this file feeds it and maps its
// answers onto the write pipeline of update.go.

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
)

// applyRequest turns a patch request into a server-side apply: the
// mutation merges the applied configuration into the live object, and a
// missing object is created (not through a subresource, as upstream).
func (h *resourceHandler) applyRequest(w http.ResponseWriter, req updateRequest, namespace string, body []byte, opts writeOptions) updateRequest {
	req.applied = true
	req.manager = opts.fieldManager
	req.forceCreate = true
	req.mutate = func(cur runtime.Object) (runtime.Object, bool, error) {
		curRV := objectMeta(cur).GetResourceVersion()
		next, err := h.applyObject(w, cur, body, opts, req.subresource)
		if err != nil {
			return nil, false, err
		}
		if err := h.checkApplied(next, namespace, req.name); err != nil {
			return nil, false, err
		}
		return next, objectMeta(next).GetResourceVersion() != curRV, nil
	}
	req.create = func() (runtime.Object, error) {
		next, err := h.applyObject(w, h.emptyObject(), body, opts, "")
		if err != nil {
			return nil, err
		}
		if uid := objectMeta(next).GetUID(); uid != "" {
			return nil, apierrors.NewConflict(h.gr, req.name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", uid))
		}
		if err := h.checkApplied(next, namespace, req.name); err != nil {
			return nil, err
		}
		return next, nil
	}
	return req
}

// applyObject merges the applied configuration body into live (an empty
// object when creating) and returns the result, with managedFields.
func (h *resourceHandler) applyObject(w http.ResponseWriter, live runtime.Object, body []byte, opts writeOptions, subresource string) (runtime.Object, error) {
	applied := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := unmarshalApplied(body, &applied.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	fm, err := h.fieldManager(subresource)
	if err != nil {
		return nil, err
	}
	live.GetObjectKind().SetGroupVersionKind(h.gvk)
	out, err := fm.Apply(live, applied, opts.fieldManager, opts.force)
	if err != nil {
		return nil, applyError(err)
	}
	// Unknown fields already failed the merge (the schema does not have
	// them); what strict decoding adds is duplicate keys.
	if opts.fieldValidation != metav1.FieldValidationIgnore {
		if err := strictApplied(body); err != nil {
			if opts.fieldValidation == metav1.FieldValidationStrict {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", err))
			}
			addWarning(w, err.Error())
		}
	}
	out.GetObjectKind().SetGroupVersionKind(h.gvk)
	return out, nil
}

// unmarshalApplied reads an applied configuration as upstream does, as
// YAML with numbers kept as int64 or float64. kubectl and client-go send
// JSON, which the YAML parser reads ten times slower than a JSON parser
// does to the same value: JSON takes the fast path, and anything else,
// including JSON with an error, goes to the YAML parser, whose errors are
// upstream's.
func unmarshalApplied(body []byte, into *map[string]interface{}) error {
	if looksLikeJSON(body) {
		if err := utiljson.Unmarshal(body, into); err == nil && *into != nil {
			return nil
		}
		*into = map[string]interface{}{}
	}
	return yaml.Unmarshal(body, into)
}

// strictApplied is the strict decoding of an applied configuration:
// duplicate keys are errors. JSON without duplicates needs no YAML parse;
// the rest gets the YAML parser's own error, as upstream reports it.
func strictApplied(body []byte) error {
	if looksLikeJSON(body) {
		strictErrs, err := kjson.UnmarshalStrict(body, &map[string]interface{}{})
		if err == nil && len(strictErrs) == 0 {
			return nil
		}
	}
	return yaml.UnmarshalStrict(body, &map[string]interface{}{})
}

// looksLikeJSON reports whether body may take the JSON path: an object,
// and no tabs, which JSON allows as whitespace and YAML refuses in places.
func looksLikeJSON(body []byte) bool {
	trimmed := bytes.TrimLeft(body, " \r\n")
	return len(trimmed) > 0 && trimmed[0] == '{' && bytes.IndexByte(body, '\t') < 0
}

// checkApplied holds the applied object to the URL: its name must be the
// URL's, its namespace the URL's or empty (then set).
func (h *resourceHandler) checkApplied(obj runtime.Object, namespace, name string) error {
	if got := objectMeta(obj).GetName(); got != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", got, name))
	}
	return h.placeInNamespace(obj, namespace)
}

// applyError passes on the field manager's API errors (409 conflicts, 400
// for a wrong apiVersion or managedFields in the body) and answers the rest
// as upstream does an error that is not an API status: 500 with the
// error's text, e.g. ".spec.foo: field not declared in schema".
func applyError(err error) error {
	var aps apierrors.APIStatus
	if errors.As(err, &aps) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
	}}
}
