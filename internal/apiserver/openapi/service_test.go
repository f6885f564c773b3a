package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// testResources is a small server: a namespaced core kind with the
// subresources of a pod, a namespaced group kind with /scale, a
// cluster-scoped kind with /approval and a create-only kind.
func testResources() []Resource {
	statusOf := func(gvk schema.GroupVersionKind) Subresource {
		return Subresource{Name: "status", Kind: gvk, Verbs: []string{"get", "patch", "update"}}
	}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	csr := schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"}
	return []Resource{
		{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true, Verbs: allVerbs, DeleteReturnsObject: true,
			Subresources: []Subresource{
				{Name: "binding", Kind: schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, Verbs: []string{"create"}},
				statusOf(pod)}},
		{Version: "v1", Resource: "namespaces", Kind: "Namespace", Verbs: allVerbs, DeleteReturnsObject: true,
			Subresources: []Subresource{{Name: "finalize", Kind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Verbs: []string{"update"}}}},
		{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true, Verbs: allVerbs,
			Subresources: []Subresource{
				{Name: "scale", Kind: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: []string{"get", "patch", "update"}},
				statusOf(deploy)}},
		{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests", Kind: "CertificateSigningRequest", Verbs: allVerbs,
			Subresources: []Subresource{{Name: "approval", Kind: csr, Verbs: []string{"get", "patch", "update"}}, statusOf(csr)}},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Kind: "ClusterRole", Verbs: allVerbs},
		{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews", Kind: "SelfSubjectAccessReview", Verbs: []string{"create"}},
	}
}

func get(t *testing.T, h http.Handler, url string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// handlerOf serves what Serve serves and 404s the rest, as the API
// server does.
func handlerOf(s *Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Serve(w, r) {
			http.NotFound(w, r)
		}
	})
}

// TestNewBuildsNothing holds the server's start-up to recording the group
// versions: the documents are built by the first request that needs them,
// and all v3 documents share one build of the definitions.
func TestNewBuildsNothing(t *testing.T) {
	before := definitionBuilds.Load()
	start := time.Now()
	s := New(Config{Resources: testResources(), Version: "v1.36.3"})
	took := time.Since(start)
	if n := definitionBuilds.Load() - before; n != 0 {
		t.Fatalf("New built the definitions %d times, want none", n)
	}
	// Microseconds in practice; building the definitions takes far longer
	// (the counter above is the real check), and the bound leaves room for
	// a busy machine's scheduling and GC pauses.
	if took > time.Second {
		t.Errorf("New took %v", took)
	}
	t.Logf("New: %v", took)

	h := handlerOf(s)
	start = time.Now()
	if resp := get(t, h, "/openapi/v3"); resp.StatusCode != http.StatusOK {
		t.Fatalf("index: %s", resp.Status)
	}
	t.Logf("first /openapi/v3 (builds every v3 document): %v", time.Since(start))
	for _, p := range s.V3Paths() {
		get(t, h, "/openapi/v3/"+p)
	}
	if n := definitionBuilds.Load() - before; n != 1 {
		t.Errorf("serving every v3 document built the definitions %d times, want 1", n)
	}
}

func TestV2(t *testing.T) {
	h := handlerOf(New(Config{Resources: testResources(), Version: "v1.36.3"}))

	resp := get(t, h, "/openapi/v2")
	raw := body(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi/v2: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	if want := fmt.Sprintf("%q", fmt.Sprintf("%X", sha512.Sum512(raw))); resp.Header.Get("Etag") != want {
		t.Errorf("ETag %s, want the SHA-512 of the body %s", resp.Header.Get("Etag"), want)
	}
	var doc spec.Swagger
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("v2 does not parse: %v", err)
	}
	if doc.Swagger != "2.0" || doc.Info.Title != "Kubernetes" || doc.Info.Version != "v1.36.3" {
		t.Errorf("swagger %q, info %+v", doc.Swagger, doc.Info.InfoProps)
	}
	dep, ok := doc.Definitions["io.k8s.api.apps.v1.Deployment"]
	if !ok {
		t.Fatal("no definition io.k8s.api.apps.v1.Deployment")
	}
	if gvks := gvksOf(t, dep.Extensions); !slices.Contains(gvks, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) {
		t.Errorf("Deployment's x-kubernetes-group-version-kind = %v", gvks)
	}
	item := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
	if item.Patch == nil || item.Patch.ID != "patchAppsV1NamespacedDeployment" {
		t.Fatalf("no patchAppsV1NamespacedDeployment at the deployment item path: %+v", item.Patch)
	}
	if item.Patch.Extensions["x-kubernetes-action"] != "patch" {
		t.Errorf("x-kubernetes-action = %v", item.Patch.Extensions["x-kubernetes-action"])
	}
	if !hasParam(doc, item.Patch.Parameters, "fieldValidation") || !hasParam(doc, item.Patch.Parameters, "force") {
		t.Errorf("patch parameters lack fieldValidation or force: %+v", item.Patch.Parameters)
	}
	// Upstream prunes defaults from v2 (they are only in v3).
	if d := doc.Definitions["io.k8s.api.apps.v1.DeploymentSpec"].Properties["template"].Default; d != nil {
		t.Errorf("v2 keeps default %v", d)
	}

	t.Run("304 for the same ETag", func(t *testing.T) {
		resp := get(t, h, "/openapi/v2", "If-None-Match", resp.Header.Get("Etag"))
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("status %s, want 304", resp.Status)
		}
	})
	t.Run("protobuf", func(t *testing.T) {
		resp := get(t, h, "/openapi/v2", "Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
		pb := body(t, resp)
		if ct := resp.Header.Get("Content-Type"); ct != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
			t.Fatalf("Content-Type %q", ct)
		}
		var d openapi_v2.Document
		if err := proto.Unmarshal(pb, &d); err != nil {
			t.Fatalf("protobuf does not parse: %v", err)
		}
		// What kubectl builds from it for client-side validation.
		models, err := openapiproto.NewOpenAPIData(&d)
		if err != nil {
			t.Fatal(err)
		}
		if models.LookupModel("io.k8s.api.apps.v1.Deployment") == nil {
			t.Error("the protobuf models have no Deployment")
		}
	})
	t.Run("gzip", func(t *testing.T) {
		resp := get(t, h, "/openapi/v2", "Accept-Encoding", "gzip")
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body(t, resp)))
		if err != nil {
			t.Fatal(err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(unzipped, raw) {
			t.Errorf("gzipped body differs from the plain one (err %v)", err)
		}
	})
	t.Run("not acceptable", func(t *testing.T) {
		if resp := get(t, h, "/openapi/v2", "Accept", "text/html"); resp.StatusCode != http.StatusNotAcceptable {
			t.Errorf("status %s, want 406", resp.Status)
		}
	})
}

func hasParam(doc spec.Swagger, params []spec.Parameter, name string) bool {
	for _, p := range params {
		if p.Ref.String() != "" {
			// Shared parameters are hoisted to #/parameters/<key>.
			key := strings.TrimPrefix(p.Ref.String(), "#/parameters/")
			p = doc.Parameters[key]
		}
		if p.Name == name {
			return true
		}
	}
	return false
}

func gvksOf(t *testing.T, ext spec.Extensions) []schema.GroupVersionKind {
	t.Helper()
	raw, err := json.Marshal(ext[extensionGVK])
	if err != nil {
		t.Fatal(err)
	}
	var list []schema.GroupVersionKind
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("x-kubernetes-group-version-kind %s: %v", raw, err)
	}
	return list
}

func TestV3(t *testing.T) {
	s := New(Config{Resources: testResources(), Version: "v1.36.3"})
	h := handlerOf(s)

	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	resp := get(t, h, "/openapi/v3")
	if err := json.Unmarshal(body(t, resp), &index); err != nil {
		t.Fatalf("index does not parse: %v", err)
	}
	var keys []string
	for k := range index.Paths {
		keys = append(keys, k)
	}
	want := "api api/v1 apis apis/apps apis/apps/v1 apis/authorization.k8s.io apis/authorization.k8s.io/v1 apis/certificates.k8s.io apis/certificates.k8s.io/v1 apis/rbac.authorization.k8s.io apis/rbac.authorization.k8s.io/v1 version"
	if got := strings.Join(sortedStrings(keys), " "); got != want {
		t.Errorf("index paths:\n got %s\nwant %s", got, want)
	}

	for _, p := range keys {
		url := index.Paths[p].URL
		t.Run(p, func(t *testing.T) {
			hash := strings.TrimPrefix(url, "/openapi/v3/"+p+"?hash=")
			if hash == url || len(hash) != 128 {
				t.Fatalf("serverRelativeURL %q does not carry a SHA-512 hash", url)
			}
			resp := get(t, h, url)
			raw := body(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s", url, resp.Status)
			}
			if got := fmt.Sprintf("%X", sha512.Sum512(raw)); got != hash {
				t.Errorf("the hash in the index is not the document's")
			}
			if resp.Header.Get("Etag") != `"`+hash+`"` {
				t.Errorf("ETag %s, want the hash", resp.Header.Get("Etag"))
			}
			if resp.Header.Get("Cache-Control") != "public, immutable" || resp.Header.Get("Expires") == "" {
				t.Errorf("a hash-addressed document is not cached immutable: Cache-Control %q Expires %q",
					resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"))
			}
			var doc spec3.OpenAPI
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatalf("document does not parse: %v", err)
			}
			if doc.Version != "3.0.0" || len(doc.Paths.Paths) == 0 {
				t.Errorf("openapi %q with %d paths", doc.Version, len(doc.Paths.Paths))
			}

			if r := get(t, h, "/openapi/v3/"+p, "If-None-Match", `"`+hash+`"`); r.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match with the ETag: %s, want 304", r.Status)
			}
			if r := get(t, h, "/openapi/v3/"+p); r.Header.Get("Cache-Control") != "" {
				t.Errorf("without a hash the answer must not be immutable: Cache-Control %q", r.Header.Get("Cache-Control"))
			}
			r := get(t, h, "/openapi/v3/"+p+"?hash=0000")
			if r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != url {
				t.Errorf("stale hash: %s to %q, want 301 to %q", r.Status, r.Header.Get("Location"), url)
			}
			r = get(t, h, url, "Accept", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf")
			if ct := r.Header.Get("Content-Type"); r.StatusCode != http.StatusOK || ct != "application/com.github.proto-openapi.spec.v3.v1.0+protobuf" {
				t.Errorf("protobuf: %s %q", r.Status, ct)
			}
		})
	}

	t.Run("no such document", func(t *testing.T) {
		for _, p := range []string{"/openapi/v3/apis/batch/v1", "/openapi/v3/apis", "/openapi/v4", "/openapi/v3/api/v1/pods"} {
			rec := httptest.NewRecorder()
			if s.Serve(rec, httptest.NewRequest(http.MethodGet, p, nil)) != (p == "/openapi/v3/apis") {
				t.Errorf("Serve(%s) claims the wrong answer", p)
			}
		}
	})
	t.Run("gzip", func(t *testing.T) {
		resp := get(t, h, "/openapi/v3/apis/apps/v1", "Accept-Encoding", "gzip")
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
	})
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestOperations checks the routes against what upstream's API installer
// makes of the same resources: operation IDs, actions, the kind of each
// operation, the descriptions and what they read and answer.
func TestOperations(t *testing.T) {
	s := New(Config{Resources: testResources(), Version: "v1.36.3"})
	tests := []struct {
		doc, path, method string
		id, action        string
		gvk               string // group/version/kind of the operation
		description       string
		answer            string // the schema of the 200 answer
	}{
		{"api/v1", "/api/v1/namespaces/{namespace}/pods", "get", "listCoreV1NamespacedPod", "list", "/v1/Pod", "list or watch objects of kind Pod", "io.k8s.api.core.v1.PodList"},
		{"api/v1", "/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", "list", "/v1/Pod", "list or watch objects of kind Pod", "io.k8s.api.core.v1.PodList"},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods", "post", "createCoreV1NamespacedPod", "post", "/v1/Pod", "create a Pod", "io.k8s.api.core.v1.Pod"},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods", "delete", "deleteCoreV1CollectionNamespacedPod", "deletecollection", "/v1/Pod", "delete collection of Pod", "io.k8s.apimachinery.pkg.apis.meta.v1.Status"},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods/{name}", "delete", "deleteCoreV1NamespacedPod", "delete", "/v1/Pod", "delete a Pod", "io.k8s.api.core.v1.Pod"},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/status", "patch", "patchCoreV1NamespacedPodStatus", "patch", "/v1/Pod", "partially update status of the specified Pod", "io.k8s.api.core.v1.Pod"},
		{"api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/binding", "post", "createCoreV1NamespacedPodBinding", "post", "/v1/Binding", "create binding of a Pod", "io.k8s.api.core.v1.Binding"},
		{"api/v1", "/api/v1/watch/namespaces/{namespace}/pods/{name}", "get", "watchCoreV1NamespacedPod", "watch", "/v1/Pod",
			"watch changes to an object of kind Pod. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.", "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"},
		{"api/v1", "/api/v1/watch/pods", "get", "watchCoreV1PodListForAllNamespaces", "watchlist", "/v1/Pod",
			"watch individual changes to a list of Pod. deprecated: use the 'watch' parameter with a list operation instead.", "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"},
		{"api/v1", "/api/v1/namespaces/{name}/finalize", "put", "replaceCoreV1NamespaceFinalize", "put", "/v1/Namespace", "replace finalize of the specified Namespace", "io.k8s.api.core.v1.Namespace"},
		{"api/v1", "/api/v1/", "get", "getCoreV1APIResources", "", "", "get available resources", "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList"},
		{"api", "/api/", "get", "getCoreAPIVersions", "", "", "get available API versions", "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions"},
		{"apis", "/apis/", "get", "getAPIVersions", "", "", "get available API versions", "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList"},
		{"apis/apps", "/apis/apps/", "get", "getAppsAPIGroup", "", "", "get information of a group", "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup"},
		{"version", "/version/", "get", "getCodeVersion", "", "", "get the code version", "io.k8s.apimachinery.pkg.version.Info"},
		{"apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "put", "replaceAppsV1NamespacedDeploymentScale", "put", "autoscaling/v1/Scale", "replace scale of the specified Deployment", "io.k8s.api.autoscaling.v1.Scale"},
		{"apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "delete", "deleteAppsV1NamespacedDeployment", "delete", "apps/v1/Deployment", "delete a Deployment", "io.k8s.apimachinery.pkg.apis.meta.v1.Status"},
		{"apis/apps/v1", "/apis/apps/v1/watch/namespaces/{namespace}/deployments", "get", "watchAppsV1NamespacedDeploymentList", "watchlist", "apps/v1/Deployment",
			"watch individual changes to a list of Deployment. deprecated: use the 'watch' parameter with a list operation instead.", "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"},
		{"apis/certificates.k8s.io/v1", "/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval", "put", "replaceCertificatesV1CertificateSigningRequestApproval", "put", "certificates.k8s.io/v1/CertificateSigningRequest",
			"replace approval of the specified CertificateSigningRequest", "io.k8s.api.certificates.v1.CertificateSigningRequest"},
		{"apis/rbac.authorization.k8s.io/v1", "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}", "patch", "patchRbacAuthorizationV1ClusterRole", "patch", "rbac.authorization.k8s.io/v1/ClusterRole",
			"partially update the specified ClusterRole", "io.k8s.api.rbac.v1.ClusterRole"},
		{"apis/authorization.k8s.io/v1", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "post", "createAuthorizationV1SelfSubjectAccessReview", "post", "authorization.k8s.io/v1/SelfSubjectAccessReview",
			"create a SelfSubjectAccessReview", "io.k8s.api.authorization.v1.SelfSubjectAccessReview"},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			doc, err := s.BuildV3(tc.doc)
			if err != nil || doc == nil {
				t.Fatalf("document %s: %v", tc.doc, err)
			}
			item, ok := doc.Paths.Paths[tc.path]
			if !ok {
				t.Fatalf("no path %s", tc.path)
			}
			op := map[string]*spec3.Operation{"get": item.Get, "post": item.Post, "put": item.Put, "patch": item.Patch, "delete": item.Delete}[tc.method]
			if op == nil {
				t.Fatalf("no %s at %s", tc.method, tc.path)
			}
			if op.OperationId != tc.id || op.Description != tc.description {
				t.Errorf("operation %q %q\nwant      %q %q", op.OperationId, op.Description, tc.id, tc.description)
			}
			if got, _ := op.Extensions["x-kubernetes-action"].(string); got != tc.action {
				t.Errorf("x-kubernetes-action %q, want %q", got, tc.action)
			}
			gotGVK := ""
			if raw, ok := op.Extensions[extensionGVK]; ok {
				b, _ := json.Marshal(raw)
				var g schema.GroupVersionKind
				json.Unmarshal(b, &g)
				gotGVK = g.Group + "/" + g.Version + "/" + g.Kind
			}
			if gotGVK != tc.gvk {
				t.Errorf("x-kubernetes-group-version-kind %q, want %q", gotGVK, tc.gvk)
			}
			ok200 := op.Responses.StatusCodeResponses[http.StatusOK]
			if ok200 == nil || ok200.Content["application/json"] == nil {
				t.Fatalf("no JSON 200 answer")
			}
			if ref := ok200.Content["application/json"].Schema.Ref.String(); ref != refPrefixV3+tc.answer {
				t.Errorf("answers %s, want %s", ref, tc.answer)
			}
			if op.Responses.StatusCodeResponses[http.StatusUnauthorized] == nil {
				t.Errorf("no 401 answer")
			}
		})
	}
}

// TestWriteParameters pins what kubectl looks for before it asks the
// server to validate: every write of a kind carries fieldValidation.
func TestWriteParameters(t *testing.T) {
	s := New(Config{Resources: testResources(), Version: "v1.36.3"})
	doc, err := s.BuildV3("apis/apps/v1")
	if err != nil {
		t.Fatal(err)
	}
	names := func(ps []*spec3.Parameter) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return strings.Join(out, " ")
	}
	item := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]
	collection := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments"]
	tests := []struct {
		name string
		op   *spec3.Operation
		want string
	}{
		{"patch", item.Patch, "dryRun fieldManager fieldValidation force"},
		{"put", item.Put, "dryRun fieldManager fieldValidation"},
		{"post", collection.Post, "dryRun fieldManager fieldValidation"},
		{"delete", item.Delete, "dryRun gracePeriodSeconds ignoreStoreReadErrorWithClusterBreakingPotential orphanDependents propagationPolicy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(tc.op.Parameters); got != tc.want {
				t.Errorf("parameters %q, want %q", got, tc.want)
			}
		})
	}
	if got := names(item.Parameters); got != "name namespace pretty" {
		t.Errorf("path parameters %q", got)
	}
	if item.Patch.RequestBody == nil || item.Patch.RequestBody.Content["application/strategic-merge-patch+json"] == nil {
		t.Errorf("patch does not take strategic merge patches")
	}
	if item.Delete.RequestBody == nil || item.Delete.RequestBody.Required {
		t.Errorf("delete's DeleteOptions body must be optional: %+v", item.Delete.RequestBody)
	}
}
