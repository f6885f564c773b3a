package apiserver

import (
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// openAPI serves /openapi/v3: a root listing one document per group
// version, and per group version the paths and operations, each operation
// tagged with its kind and listing its query parameters. Clients read it to
// learn what the server supports: kubectl checks that writes accept
// fieldValidation before relying on server-side validation.
//
// The documents carry no schemas yet, so `kubectl explain` has nothing to
// show; the schemas come with the API-fidelity work.
type openAPI struct {
	root []byte
	docs map[string][]byte // "api/v1", "apis/apps/v1"
}

func newOpenAPI(resources []*registry.Resource) *openAPI {
	o := &openAPI{docs: map[string][]byte{}}
	byGV := map[string][]*registry.Resource{}
	var order []string
	for _, res := range resources {
		key := "apis/" + res.Group + "/" + res.Version
		if res.Group == "" {
			key = "api/" + res.Version
		}
		if _, ok := byGV[key]; !ok {
			order = append(order, key)
		}
		byGV[key] = append(byGV[key], res)
	}
	type pathRef struct {
		URL string `json:"serverRelativeURL"`
	}
	root := map[string]map[string]pathRef{"paths": {}}
	for _, key := range order {
		doc := mustJSON(openAPIDoc(key, byGV[key]))
		sum := sha512.Sum512(doc)
		o.docs[key] = doc
		root["paths"][key] = pathRef{URL: "/openapi/v3/" + key + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))}
	}
	o.root = mustJSON(root)
	return o
}

type oaParam struct {
	Name     string            `json:"name"`
	In       string            `json:"in"`
	Required bool              `json:"required,omitempty"`
	Schema   map[string]string `json:"schema"`
}

type oaOperation struct {
	OperationID string                 `json:"operationId"`
	GVK         map[string]string      `json:"x-kubernetes-group-version-kind"`
	Action      string                 `json:"x-kubernetes-action"`
	Parameters  []oaParam              `json:"parameters,omitempty"`
	Responses   map[string]interface{} `json:"responses"`
}

func openAPIDoc(key string, resources []*registry.Resource) map[string]interface{} {
	paths := map[string]map[string]interface{}{}
	str := map[string]string{"type": "string"}
	query := func(names ...string) []oaParam {
		var ps []oaParam
		for _, n := range names {
			ps = append(ps, oaParam{Name: n, In: "query", Schema: str})
		}
		return ps
	}
	writeParams := query("dryRun", "fieldManager", "fieldValidation", "pretty")
	for _, res := range resources {
		gvk := map[string]string{"group": res.Group, "version": res.Version, "kind": res.Kind}
		base := "/" + key
		if res.Namespaced {
			base += "/namespaces/{namespace}"
		}
		collection := base + "/" + res.Resource
		item := collection + "/{name}"
		op := func(action, verb string, params []oaParam) oaOperation {
			return oaOperation{OperationID: verb + res.Kind, GVK: gvk, Action: action, Parameters: params,
				Responses: map[string]interface{}{"200": map[string]string{"description": "OK"}}}
		}
		paths[collection] = map[string]interface{}{
			"get":    op("list", "list", query("labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "resourceVersionMatch", "watch", "allowWatchBookmarks", "sendInitialEvents", "timeoutSeconds")),
			"post":   op("post", "create", writeParams),
			"delete": op("deletecollection", "deletecollection", query("labelSelector", "fieldSelector", "gracePeriodSeconds", "propagationPolicy", "dryRun")),
		}
		paths[item] = map[string]interface{}{
			"get":    op("get", "read", query("pretty")),
			"put":    op("put", "replace", writeParams),
			"patch":  op("patch", "patch", append(query("force"), writeParams...)),
			"delete": op("delete", "delete", query("gracePeriodSeconds", "propagationPolicy", "dryRun")),
		}
		for _, sub := range subresourcesOf(res) {
			subGVK := map[string]string{"group": sub.kind.Group, "version": sub.kind.Version, "kind": sub.kind.Kind}
			ops := map[string]interface{}{}
			for _, verb := range sub.verbs {
				o := op(verb, verb+res.Kind+strings.ToUpper(sub.name[:1])+sub.name[1:], writeParams)
				o.GVK = subGVK
				switch verb {
				case "get":
					ops["get"] = o
				case "update":
					ops["put"] = o
				case "patch":
					ops["patch"] = o
				case "create":
					ops["post"] = o
				}
			}
			paths[item+"/"+sub.name] = ops
		}
	}
	return map[string]interface{}{
		"openapi": "3.0.0",
		"info":    map[string]string{"title": "Kubernetes", "version": Version.GitVersion},
		"paths":   paths,
		"components": map[string]interface{}{
			"schemas": map[string]interface{}{},
		},
	}
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p == "/openapi/v3" {
		writeBytes(w, http.StatusOK, mediaJSON, s.openapi.root)
		return
	}
	if doc, ok := s.openapi.docs[strings.TrimPrefix(p, "/openapi/v3/")]; ok {
		w.Header().Set("Cache-Control", "public, immutable")
		writeBytes(w, http.StatusOK, mediaJSON, doc)
		return
	}
	s.writeError(w, r, notFound())
}
