package apiserver

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	openapiutil "k8s.io/kube-openapi/pkg/builder3/util"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/apiserver/openapi"
)

// A custom resource's OpenAPI schema: the version's openAPIV3Schema, with
// apiVersion, kind and metadata filled in as upstream publishes them
// (metadata a reference to ObjectMeta), tagged with its group, version and
// kind. Server-side apply builds its type converter from it.

const (
	objectMetaModel = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	patchModel      = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
)

// crdModelName is the definition name upstream gives a custom kind: the
// group reversed, then version and kind ("com.example.v1.Widget").
func crdModelName(group, version, kind string) string {
	parts := strings.Split(group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(append(parts, version, kind), ".")
}

// crdOpenAPISchema converts a version's schema to kube-openapi's form,
// references in refPrefix style ("#/components/schemas/" or
// "#/definitions/").
func crdOpenAPISchema(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, refPrefix string) (*spec.Schema, error) {
	out := &spec.Schema{}
	if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
		// Both are JSON schema: the JSON of one is the other.
		data, err := json.Marshal(v.Schema.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, out); err != nil {
			return nil, err
		}
	} else {
		out.Type = spec.StringOrArray{"object"}
		out.AddExtension("x-kubernetes-preserve-unknown-fields", true)
	}
	if out.Properties == nil {
		out.Properties = map[string]spec.Schema{}
	}
	typeMeta := metav1.TypeMeta{}.SwaggerDoc()
	out.Properties["apiVersion"] = *spec.StringProperty().WithDescription(typeMeta["apiVersion"])
	out.Properties["kind"] = *spec.StringProperty().WithDescription(typeMeta["kind"])
	out.Properties["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(refPrefix + objectMetaModel)}}
	addGVKExtension(out, crd, v)
	return out, nil
}

func addGVKExtension(s *spec.Schema, crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) {
	s.AddExtension("x-kubernetes-group-version-kind", []interface{}{map[string]interface{}{
		"group": crd.Spec.Group, "version": v.Name, "kind": crd.Spec.Names.Kind}})
}

// crdPublishedSchema is the schema of a custom kind in the OpenAPI
// documents, as upstream publishes it: crdOpenAPISchema with metadata
// described as every kind's is (kubectl explain <kind>.metadata prints
// it); in v3 a reference with such siblings wrapped in allOf. A version
// without a schema, or one that keeps unknown fields in the v2 document,
// is published as a bare object: properties there would make kubectl
// refuse every field not listed.
func crdPublishedSchema(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, refPrefix string, v2 bool) (*spec.Schema, error) {
	noSchema := v.Schema == nil || v.Schema.OpenAPIV3Schema == nil
	if noSchema || v2 && (crd.Spec.PreserveUnknownFields || ptr.Deref(v.Schema.OpenAPIV3Schema.XPreserveUnknownFields, false)) {
		out := &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
		addGVKExtension(out, crd, v)
		return out, nil
	}
	out, err := crdOpenAPISchema(crd, v, refPrefix)
	if err != nil {
		return nil, err
	}
	out.Properties["metadata"] = *spec.RefSchema(refPrefix + objectMetaModel).
		WithDescription(metav1beta1.PartialObjectMetadata{}.SwaggerDoc()["metadata"])
	if !v2 {
		out = openapiutil.WrapRefs(out)
	}
	return out, nil
}

// crdTypeConverter returns the type converter of one version, built on
// first use (server-side apply's first write of the resource).
func crdTypeConverter(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) func() (managedfields.TypeConverter, error) {
	crd = crd.DeepCopy()
	return sync.OnceValues(func() (managedfields.TypeConverter, error) {
		builtin, err := openapi.Schemas()
		if err != nil {
			return nil, err
		}
		s, err := crdOpenAPISchema(crd, v, "#/components/schemas/")
		if err != nil {
			return nil, err
		}
		// ObjectMeta and what it references; the builtin map is shared and
		// is only read.
		models := make(map[string]*spec.Schema, len(builtin)+1)
		for name, m := range builtin {
			if strings.HasPrefix(name, "io.k8s.apimachinery.") {
				models[name] = m
			}
		}
		models[crdModelName(crd.Spec.Group, v.Name, crd.Spec.Names.Kind)] = s
		return managedfields.NewTypeConverter(models, crd.Spec.PreserveUnknownFields)
	})
}

// crdOpenAPI is the OpenAPI v3 documents of the served custom resources,
// one per group version, rebuilt whenever the served set changes.
type crdOpenAPI struct {
	docs map[string][]byte // "apis/<group>/<version>" → JSON
	hash map[string]string // the same keys → SHA-512 of the JSON, hex

	// The same for /openapi/v2, which has one document for everything:
	// the custom definitions and paths, merged into the built-in
	// document on first request.
	v2Defs  map[string]interface{}
	v2Paths map[string]interface{}
	v2Once  sync.Once
	// v2 serves the merged document as JSON or protobuf, with
	// kube-openapi's negotiation, ETag and gzip, as the built-in one is.
	v2 http.Handler
}

// buildCRDOpenAPI describes every served version of the given
// definitions. A version whose schema cannot be converted is left out.
func buildCRDOpenAPI(crds []*apiextensionsv1.CustomResourceDefinition) *crdOpenAPI {
	out := &crdOpenAPI{docs: map[string][]byte{}, hash: map[string]string{}, v2Defs: map[string]interface{}{}, v2Paths: map[string]interface{}{}}
	builtin, err := openapi.Schemas()
	if err != nil {
		slog.Error("OpenAPI schemas", "err", err)
		return out
	}
	meta := map[string]interface{}{}
	for name, m := range builtin {
		if strings.HasPrefix(name, "io.k8s.apimachinery.") || strings.HasPrefix(name, "io.k8s.api.autoscaling.v1.Scale") {
			meta[name] = m
		}
	}
	type gvDoc struct {
		paths   map[string]interface{}
		schemas map[string]interface{}
	}
	byGV := map[string]*gvDoc{}
	for _, crd := range crds {
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			if !v.Served {
				continue
			}
			s, err := crdPublishedSchema(crd, v, "#/components/schemas/", false)
			if err != nil {
				continue
			}
			key := "apis/" + crd.Spec.Group + "/" + v.Name
			d := byGV[key]
			if d == nil {
				d = &gvDoc{paths: map[string]interface{}{}, schemas: map[string]interface{}{}}
				for k, m := range meta {
					d.schemas[k] = m
				}
				byGV[key] = d
			}
			model := crdModelName(crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
			listModel := crdModelName(crd.Spec.Group, v.Name, crd.Spec.Names.ListKind)
			d.schemas[model] = s
			d.schemas[listModel] = crdListSchema(crd, v, model, "#/components/schemas/")
			crdPaths(d.paths, crd, v, model, listModel, false)
			if s2, err := crdPublishedSchema(crd, v, "#/definitions/", true); err == nil {
				out.v2Defs[model] = s2
				out.v2Defs[listModel] = crdListSchema(crd, v, model, "#/definitions/")
				crdPaths(out.v2Paths, crd, v, model, listModel, true)
			}
		}
	}
	// apiextensions.k8s.io/v1 itself.
	self := &gvDoc{paths: map[string]interface{}{}, schemas: apiextensionsSchemas("#/components/schemas/")}
	for k, m := range meta {
		self.schemas[k] = m
	}
	model, listModel := apiextensionsModelPrefix+"CustomResourceDefinition", apiextensionsModelPrefix+"CustomResourceDefinitionList"
	crdPaths(self.paths, crdSelf, &crdSelf.Spec.Versions[0], model, listModel, false)
	byGV["apis/apiextensions.k8s.io/v1"] = self
	for name, s := range apiextensionsSchemas("#/definitions/") {
		out.v2Defs[name] = s
	}
	crdPaths(out.v2Paths, crdSelf, &crdSelf.Spec.Versions[0], model, listModel, true)
	// Its group has a document of its own, as every built-in group does:
	// the group discovery path. Custom groups have none, as upstream.
	groupDoc := &gvDoc{paths: map[string]interface{}{}, schemas: map[string]interface{}{}}
	for k, m := range meta {
		groupDoc.schemas[k] = m
	}
	groupDoc.paths["/apis/apiextensions.k8s.io/"] = apiGroupPath("apiextensions.k8s.io", false)
	byGV["apis/apiextensions.k8s.io"] = groupDoc
	out.v2Paths["/apis/apiextensions.k8s.io/"] = apiGroupPath("apiextensions.k8s.io", true)

	for key, d := range byGV {
		doc := map[string]interface{}{
			"openapi":    "3.0.0",
			"info":       map[string]interface{}{"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
			"paths":      d.paths,
			"components": map[string]interface{}{"schemas": d.schemas},
		}
		data, err := json.Marshal(doc)
		if err != nil {
			slog.Error("OpenAPI document of custom resources", "gv", key, "err", err)
			continue
		}
		sum := sha512.Sum512(data)
		out.docs[key], out.hash[key] = data, strings.ToUpper(hex.EncodeToString(sum[:]))
	}
	return out
}

func crdListSchema(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, model, refPrefix string) map[string]interface{} {
	return map[string]interface{}{
		"type": "object", "required": []string{"items"},
		"properties": map[string]interface{}{
			"apiVersion": map[string]interface{}{"type": "string"},
			"kind":       map[string]interface{}{"type": "string"},
			"metadata":   map[string]interface{}{"$ref": refPrefix + "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"},
			"items":      map[string]interface{}{"type": "array", "items": map[string]interface{}{"$ref": refPrefix + model}},
		},
		"x-kubernetes-group-version-kind": []interface{}{map[string]interface{}{"group": crd.Spec.Group, "version": v.Name, "kind": crd.Spec.Names.ListKind}},
	}
}

// crdPaths adds the REST paths of one version's resource, with the
// operation extensions and query parameters clients look for: kubectl
// decides to use server-side field validation by finding fieldValidation
// among the parameters of the kind's PATCH.
func crdPaths(paths map[string]interface{}, crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion, model, listModel string, v2 bool) {
	group, kind, plural := crd.Spec.Group, crd.Spec.Names.Kind, crd.Spec.Names.Plural
	// An operation names one kind (a schema lists every kind it is).
	gvk := map[string]interface{}{"group": group, "version": v.Name, "kind": kind}
	root := "/apis/" + group + "/" + v.Name
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	idPart := camelGroup(group) + strings.ToUpper(v.Name[:1]) + v.Name[1:]
	scopeWord := ""
	if namespaced {
		scopeWord = "Namespaced"
		root += "/namespaces/{namespace}"
	}
	// Swagger 2 and OpenAPI 3 differ in where schemas and types go.
	refPrefix := "#/components/schemas/"
	if v2 {
		refPrefix = "#/definitions/"
	}
	ref := func(m string) map[string]interface{} {
		schema := map[string]interface{}{"$ref": refPrefix + m}
		if v2 {
			return map[string]interface{}{"description": "OK", "schema": schema}
		}
		return map[string]interface{}{"description": "OK", "content": map[string]interface{}{"application/json": map[string]interface{}{"schema": schema}}}
	}
	param := func(name, in string) map[string]interface{} {
		p := map[string]interface{}{"name": name, "in": in, "uniqueItems": true}
		if v2 {
			p["type"] = "string"
		} else {
			p["schema"] = map[string]interface{}{"type": "string"}
		}
		if in == "path" {
			p["required"] = true
		}
		return p
	}
	query := func(names ...string) []interface{} {
		var out []interface{}
		for _, n := range names {
			out = append(out, param(n, "query"))
		}
		return out
	}
	pathParams := func(names ...string) []interface{} {
		var out []interface{}
		for _, n := range names {
			out = append(out, param(n, "path"))
		}
		return out
	}
	op := func(verb, id, action, resp string, body bool, params []interface{}, bodyTypes ...string) map[string]interface{} {
		o := map[string]interface{}{
			"operationId":                     verb + idPart + id,
			"tags":                            []string{idPart},
			"parameters":                      params,
			"responses":                       map[string]interface{}{"200": ref(resp)},
			"x-kubernetes-action":             action,
			"x-kubernetes-group-version-kind": gvk,
		}
		// A patch's body is a patch document, not the object.
		bodyModel := model
		if verb == "patch" {
			bodyModel = patchModel
		}
		switch {
		case body && v2:
			o["parameters"] = append([]interface{}{map[string]interface{}{"name": "body", "in": "body", "required": true,
				"schema": map[string]interface{}{"$ref": refPrefix + bodyModel}}}, params...)
			o["consumes"] = bodyTypes
		case body:
			content := map[string]interface{}{}
			for _, t := range bodyTypes {
				content[t] = map[string]interface{}{"schema": map[string]interface{}{"$ref": refPrefix + bodyModel}}
			}
			o["requestBody"] = map[string]interface{}{"required": true, "content": content}
		}
		return o
	}
	writeParams := query("dryRun", "fieldManager", "fieldValidation")
	patchParams := query("dryRun", "fieldManager", "fieldValidation", "force")
	patchTypes := []string{"application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"}
	nsParams := []interface{}{}
	if namespaced {
		nsParams = pathParams("namespace")
	}
	item := func(suffix, idSuffix string, withDelete bool) map[string]interface{} {
		p := map[string]interface{}{
			"parameters": append(append([]interface{}{}, nsParams...), pathParams("name")...),
			"get":        op("read", scopeWord+kind+idSuffix, "get", model, false, nil),
			"put":        op("replace", scopeWord+kind+idSuffix, "put", model, true, writeParams, "application/json"),
			"patch":      op("patch", scopeWord+kind+idSuffix, "patch", model, true, patchParams, patchTypes...),
		}
		if withDelete {
			p["delete"] = op("delete", scopeWord+kind, "delete", "io.k8s.apimachinery.pkg.apis.meta.v1.Status", false, query("dryRun", "gracePeriodSeconds", "propagationPolicy"))
		}
		paths[root+"/"+plural+"/{name}"+suffix] = p
		return p
	}
	paths[root+"/"+plural] = map[string]interface{}{
		"parameters": nsParams,
		"get":        op("list", scopeWord+kind, "list", listModel, false, query("labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "watch")),
		"post":       op("create", scopeWord+kind, "post", model, true, writeParams, "application/json"),
		"delete":     op("deletecollection", scopeWord+kind, "deletecollection", "io.k8s.apimachinery.pkg.apis.meta.v1.Status", false, query("labelSelector", "fieldSelector")),
	}
	item("", "", true)
	if namespaced {
		paths["/apis/"+group+"/"+v.Name+"/"+plural] = map[string]interface{}{
			"get": op("list", kind+"ForAllNamespaces", "list", listModel, false, query("labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "watch")),
		}
	}
	if v.Subresources != nil && v.Subresources.Status != nil {
		item("/status", "Status", false)
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		p := item("/scale", "Scale", false)
		for _, verb := range []string{"get", "put", "patch"} {
			o := p[verb].(map[string]interface{})
			o["responses"] = map[string]interface{}{"200": ref("io.k8s.api.autoscaling.v1.Scale")}
			o["x-kubernetes-group-version-kind"] = map[string]interface{}{"group": "autoscaling", "version": "v1", "kind": "Scale"}
			if verb != "put" {
				continue
			}
			// A scale update sends a Scale, not the custom object.
			if rb, ok := o["requestBody"].(map[string]interface{}); ok {
				for _, c := range rb["content"].(map[string]interface{}) {
					c.(map[string]interface{})["schema"] = map[string]interface{}{"$ref": refPrefix + "io.k8s.api.autoscaling.v1.Scale"}
				}
			}
			if v2 {
				o["parameters"] = append([]interface{}{map[string]interface{}{"name": "body", "in": "body", "required": true,
					"schema": map[string]interface{}{"$ref": refPrefix + "io.k8s.api.autoscaling.v1.Scale"}}}, o["parameters"].([]interface{})[1:]...)
			}
		}
	}
}

// apiGroupPath is the group discovery path /apis/<group>/, which answers
// the group's APIGroup.
func apiGroupPath(group string, v2 bool) map[string]interface{} {
	const model = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup"
	types := []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	get := map[string]interface{}{
		"description": "get information of a group",
		"operationId": "get" + camelGroup(strings.Split(group, ".")[0]) + "APIGroup",
		"tags":        []string{strings.Split(group, ".")[0]},
	}
	if v2 {
		get["consumes"], get["produces"] = types, types
		get["schemes"] = []string{"https"}
		get["responses"] = map[string]interface{}{"200": map[string]interface{}{"description": "OK",
			"schema": map[string]interface{}{"$ref": "#/definitions/" + model}}, "401": map[string]interface{}{"description": "Unauthorized"}}
	} else {
		content := map[string]interface{}{}
		for _, t := range types {
			content[t] = map[string]interface{}{"schema": map[string]interface{}{"$ref": "#/components/schemas/" + model}}
		}
		get["responses"] = map[string]interface{}{"200": map[string]interface{}{"description": "OK", "content": content},
			"401": map[string]interface{}{"description": "Unauthorized"}}
	}
	return map[string]interface{}{"get": get}
}

// camelGroup is the operation-id form of a group: "example.com" →
// "ExampleCom".
func camelGroup(group string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// serveCRDOpenAPI answers the /openapi/v3 requests custom resources
// change: the index, which lists their group versions besides the
// built-in ones, and their documents. It reports false for everything
// else, which the built-in service answers.
func (s *Server) serveCRDOpenAPI(w http.ResponseWriter, r *http.Request) bool {
	if s.crd == nil {
		return false
	}
	docs := s.crd.openAPIDocs()
	if docs == nil || len(docs.docs) == 0 {
		return false
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p == "/openapi/v2" {
		docs.v2Once.Do(func() { docs.v2 = s.mergeCRDOpenAPIV2(r, docs) })
		if docs.v2 == nil {
			return false
		}
		docs.v2.ServeHTTP(w, r)
		return true
	}
	if p == "/openapi/v3" {
		rec := httptest.NewRecorder()
		r2 := r.Clone(r.Context())
		r2.Header.Del("Accept-Encoding")
		r2.Header.Del("If-None-Match")
		r2.Header.Del("If-Modified-Since")
		s.openapi.svc.Serve(rec, r2)
		var index struct {
			Paths map[string]map[string]string `json:"paths"`
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &index) != nil {
			return false
		}
		for key, h := range docs.hash {
			index.Paths[key] = map[string]string{"serverRelativeURL": "/openapi/v3/" + key + "?hash=" + h}
		}
		data, _ := json.Marshal(index)
		// The merged index has its own validator: a client's cached copy
		// of an older index must not be confirmed by the built-in one's.
		sum := sha512.Sum512(data)
		etag := `"` + strings.ToUpper(hex.EncodeToString(sum[:])) + `"`
		w.Header().Set("Etag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return true
		}
		writeBytes(w, http.StatusOK, mediaJSON, data)
		return true
	}
	key := strings.TrimPrefix(p, "/openapi/v3/")
	data, ok := docs.docs[key]
	if !ok {
		return false
	}
	etag := `"` + docs.hash[key] + `"`
	w.Header().Set("Etag", etag)
	if r.URL.Query().Get("hash") == docs.hash[key] {
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	} else {
		w.Header().Set("Cache-Control", "no-cache, private")
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	writeBytes(w, http.StatusOK, mediaJSON, data)
	return true
}

// mergeCRDOpenAPIV2 adds the custom definitions and paths to the built-in
// /openapi/v2 document and returns the handler serving the result in both
// of v2's encodings (clients that read OpenAPI as protobuf, such as
// kubectl's v2 fallback, see custom kinds too), or nil when the built-in
// document cannot be read.
func (s *Server) mergeCRDOpenAPIV2(r *http.Request, docs *crdOpenAPI) http.Handler {
	rec := httptest.NewRecorder()
	r2 := r.Clone(r.Context())
	for _, h := range []string{"Accept-Encoding", "If-None-Match", "If-Modified-Since"} {
		r2.Header.Del(h)
	}
	r2.Header.Set("Accept", mediaJSON)
	s.openapi.svc.Serve(rec, r2)
	var doc map[string]json.RawMessage
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
		return nil
	}
	for key, add := range map[string]map[string]interface{}{"definitions": docs.v2Defs, "paths": docs.v2Paths} {
		var m map[string]json.RawMessage
		if json.Unmarshal(doc[key], &m) != nil {
			return nil
		}
		for name, v := range add {
			data, err := json.Marshal(v)
			if err != nil {
				return nil
			}
			m[name] = data
		}
		data, err := json.Marshal(m)
		if err != nil {
			return nil
		}
		doc[key] = data
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil
	}
	swagger := &spec.Swagger{}
	if err := json.Unmarshal(data, swagger); err != nil {
		slog.Error("OpenAPI v2 with custom resources", "err", err)
		return nil
	}
	mux := &crdV2Mux{}
	handler.NewOpenAPIService(swagger).RegisterOpenAPIVersionedService("/openapi/v2", mux)
	return mux.h
}

// crdV2Mux keeps the one handler kube-openapi registers.
type crdV2Mux struct{ h http.Handler }

func (m *crdV2Mux) Handle(_ string, h http.Handler) { m.h = h }

// openAPIDocs returns the documents of the definitions served now,
// building them if they changed since the last request.
func (c *crdController) openAPIDocs() *crdOpenAPI {
	c.openapiMu.Lock()
	defer c.openapiMu.Unlock()
	if c.openapiDocs == nil || c.openapiBuilt != c.openapiSeq {
		c.openapiDocs = buildCRDOpenAPI(c.openapiCRDs)
		c.openapiBuilt = c.openapiSeq
	}
	return c.openapiDocs
}
