package apiserver

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/munnerz/goautoneg"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What a request for a custom resource needs beyond a built-in's: the
// hooks the generic handlers call when h.custom is set.

// crdAdmitRequest refuses what custom resources do not support, as
// upstream does, before the generic handlers run. It writes the error and
// returns false when the request ends here.
func (h *resourceHandler) crdAdmitRequest(w http.ResponseWriter, r *http.Request, info *requestInfo) bool {
	// Strategic merge needs Go struct tags; a custom resource has none.
	if r.Method == http.MethodPatch && contentType(r) == mediaStrategicPatch {
		h.s.writeError(w, r, unsupportedMediaType(mediaJSONPatch, mediaMergePatch, mediaApplyPatchYAML))
		return false
	}
	if err := h.custom.conversionRefused; err != nil {
		h.s.writeError(w, r, err)
		return false
	}
	if h.custom.terminating.Load() && info.Verb == "create" && info.Subresource == "" {
		err := apierrors.NewMethodNotSupported(h.gr, "create")
		err.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
		h.s.writeError(w, r, err)
		return false
	}
	// Custom resources have no protobuf form: a client asking for it
	// among others gets the next type it accepts, one asking only for
	// it gets 406 (metadata-only and Table forms are typed and fine).
	if accept := r.Header.Get("Accept"); strings.Contains(accept, mediaProtobuf) {
		var kept []string
		for _, part := range strings.Split(accept, ",") {
			a := goautoneg.ParseAccept(part)
			if len(a) == 1 && a[0].Type+"/"+a[0].SubType == mediaProtobuf && a[0].Params["as"] == "" {
				continue
			}
			kept = append(kept, strings.TrimSpace(part))
		}
		if len(kept) == 0 {
			h.s.writeError(w, r, notAcceptable())
			return false
		}
		r.Header.Set("Accept", strings.Join(kept, ","))
	}
	return true
}

// crdWebhookConversion is the error of every request through version v of
// a definition whose versions convert with a webhook (strategy Webhook),
// or nil. Conversion webhooks are not called here: the storage version is
// served as usual (its objects need no conversion, as upstream calls no
// webhook for them), and every other version fails the way upstream fails
// when its webhook cannot be reached, with a 500 naming the conversion,
// rather than serving objects of one version as another.
func crdWebhookConversion(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) error {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || v.Storage {
		return nil
	}
	storage := ""
	for _, sv := range crd.Spec.Versions {
		if sv.Storage {
			storage = sv.Name
		}
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: storage, Kind: crd.Spec.Names.Kind}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
		Message: fmt.Sprintf("conversion webhook for %v failed: conversion webhooks are not supported by this server (%s is served without conversion)", gvk, storage),
	}}
}

// crdDecoded prunes the fields a decoded custom resource's schema does not
// declare. Under fieldValidation=Strict they are an error, under Warn (the
// default) each is a warning, as upstream.
func (h *resourceHandler) crdDecoded(w http.ResponseWriter, mode string, obj runtime.Object) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil // a subresource's own kind (Scale)
	}
	pruned := h.custom.schema.Prune(u.Object)
	if len(pruned) == 0 || mode == "Ignore" {
		return nil
	}
	msgs := make([]string, len(pruned))
	for i, p := range pruned {
		msgs[i] = fmt.Sprintf("unknown field %q", p)
	}
	if mode == "Strict" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s",
			h.gvk.Kind, h.gvk.Version, h.gvk.Kind, strings.Join(msgs, ", ")))
	}
	for _, m := range msgs {
		addWarning(w, m)
	}
	return nil
}

// crdCopyStatus sets dst's status to src's: the spec/status split of a
// custom resource with a status subresource.
func crdCopyStatus(dst, src *unstructured.Unstructured) {
	if st, ok := src.Object["status"]; ok {
		dst.Object["status"] = runtime.DeepCopyJSONValue(st)
	} else {
		delete(dst.Object, "status")
	}
}

// crdSpecChanged reports a change outside metadata, what bumps a custom
// resource's generation. Without a status subresource upstream counts
// status changes too; with one, the main resource's status is the stored
// one by the time this runs, so comparing it is harmless.
func crdSpecChanged(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]interface{} {
		m := make(map[string]interface{}, len(u.Object))
		for k, v := range u.Object {
			if k != "metadata" && k != "apiVersion" && k != "kind" {
				m[k] = v
			}
		}
		return m
	}
	return !apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// rebuildDiscovery publishes discovery for the built-in resources and the
// custom resources served now.
func (s *Server) rebuildDiscovery() {
	resources, groups := s.cfg.Resources, s.groups
	if s.crd != nil {
		custom := *s.crd.resources.Load()
		resources = append(slices.Clip(resources), custom...)
		groups = append(slices.Clip(groups), customGroups(custom, s.groups)...)
	}
	s.discovery.Store(newDiscoveryCache(resources, groups))
}
