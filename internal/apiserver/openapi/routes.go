package openapi

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/common"
)

// Resource is one REST resource the server serves, as the documents
// describe it.
type Resource struct {
	Group, Version string // Group is "" for the core group
	Resource       string // plural: "deployments"
	Kind           string // "Deployment"; the list is Kind+"List"
	Namespaced     bool
	// Verbs are the discovery verbs the resource serves: get list watch
	// create update patch delete deletecollection.
	Verbs []string
	// DeleteReturnsObject means a delete answers with the deleted object
	// rather than a Status (pods, services, namespaces, ...).
	DeleteReturnsObject bool
	Subresources        []Subresource
}

// Subresource is a path under a resource's item: /status, /scale, ...
type Subresource struct {
	Name string
	// Kind is what the subresource reads and answers: the parent's kind
	// for /status, autoscaling/v1 Scale for /scale, v1 Binding for a pod's
	// /binding.
	Kind schema.GroupVersionKind
	// Verbs are among get, update, patch and create.
	Verbs []string
}

// The media types the server reads and writes, in upstream's order.
var (
	mediaTypes       = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	streamMediaTypes = []string{"application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"}
	allMediaTypes    = append(append([]string{}, mediaTypes...), streamMediaTypes...)
	patchTypes       = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}
	anyMediaType     = []string{"*/*"}
)

// Descriptions of the parameters that are not fields of an options type.
const (
	prettyDoc    = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."
	namespaceDoc = "object name and auth scope, such as for teams and projects"
)

// containers turns the served resources into route containers, one per
// document of /openapi/v3 ("api", "api/v1", "apis", "apis/apps",
// "apis/apps/v1", "version"), in a stable order. The v2 document is all of
// them together.
func containers(resources []Resource) ([]common.RouteContainer, error) {
	var out []common.RouteContainer
	add := func(root string, routes ...*route) *container {
		c := &container{root: root, routes: routes}
		out = append(out, c)
		return c
	}
	add("/api", discoveryRoute("/api/", "getAPIVersions", "get available API versions", metav1.APIVersions{}))
	add("/apis", discoveryRoute("/apis/", "getAPIVersions", "get available API versions", metav1.APIGroupList{}))
	byGV := map[string]*container{}
	for _, res := range resources {
		root := gvRoot(res.Group, res.Version)
		c, ok := byGV[root]
		if !ok {
			if res.Group != "" && !hasRoot(out, "/apis/"+res.Group) {
				add("/apis/"+res.Group, discoveryRoute("/apis/"+res.Group+"/", "getAPIGroup", "get information of a group", metav1.APIGroup{}))
			}
			c = add(root, discoveryRoute(root+"/", "getAPIResources", "get available resources", metav1.APIResourceList{}))
			byGV[root] = c
		}
		routes, err := resourceRoutes(root, res)
		if err != nil {
			return nil, err
		}
		c.routes = append(c.routes, routes...)
	}
	v := discoveryRoute("/version/", "getCodeVersion", "get the code version", version.Info{})
	v.produces, v.consumes = []string{"application/json"}, []string{"application/json"}
	add("/version", v)
	return out, nil
}

// gvRoot is where a group version's resources live: /api/v1 or
// /apis/<group>/<version>.
func gvRoot(group, version string) string {
	if group == "" {
		return "/api/" + version
	}
	return "/apis/" + group + "/" + version
}

func hasRoot(cs []common.RouteContainer, root string) bool {
	for _, c := range cs {
		if c.RootPath() == root {
			return true
		}
	}
	return false
}

func discoveryRoute(path, op, doc string, answer interface{}) *route {
	return &route{method: http.MethodGet, path: path, operation: op, doc: doc,
		consumes: mediaTypes, produces: mediaTypes,
		responses: []statusResponse{{http.StatusOK, "OK", answer}}}
}

// action is one verb at one path, the way upstream's API installer lists
// them before turning each into a route.
type action struct {
	verb          string // GET LIST PUT PATCH POST DELETE DELETECOLLECTION WATCH WATCHLIST
	path          string
	params        []*parameter // path parameters
	allNamespaces bool         // a namespaced list or watch across all namespaces
}

// resourceRoutes returns the routes of one resource and its subresources.
func resourceRoutes(root string, res Resource) ([]*route, error) {
	obj, err := newObject(schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind})
	if err != nil {
		return nil, err
	}
	var list interface{}
	if slices.Contains(res.Verbs, "list") {
		if list, err = newObject(schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind + "List"}); err != nil {
			return nil, err
		}
	}
	kinds := resourceKinds{kind: res.Kind, object: obj, list: list, deleteAnswer: metav1.Status{}}
	if res.DeleteReturnsObject {
		kinds.deleteAnswer = obj
	}
	routes := routesFor(res, "", res.Verbs, root, kinds)
	for _, sub := range res.Subresources {
		subObj, err := newObject(sub.Kind)
		if err != nil {
			return nil, err
		}
		k := resourceKinds{kind: res.Kind, nameKind: sub.Kind.Kind, object: subObj, gvk: sub.Kind, deleteAnswer: metav1.Status{}}
		routes = append(routes, routesFor(res, sub.Name, sub.Verbs, root, k)...)
	}
	return routes, nil
}

// resourceKinds is what a resource's routes read and answer.
type resourceKinds struct {
	kind         string                  // the parent kind, named in docs and operation IDs
	nameKind     string                  // named by the {name} parameter; kind when empty
	gvk          schema.GroupVersionKind // of the operations; the resource's own when empty
	object, list interface{}
	deleteAnswer interface{}
}

// routesFor lays out the actions of a resource (sub == "") or of one of
// its subresources, in upstream's order, and turns them into routes.
func routesFor(res Resource, sub string, verbs []string, root string, k resourceKinds) []*route {
	if k.nameKind == "" {
		k.nameKind = k.kind
	}
	if k.gvk.Empty() {
		k.gvk = schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
	}
	has := func(v string) bool { return slices.Contains(verbs, v) }
	nameParam := pathParam("name", "name of the "+k.nameKind)

	prefix, watchPrefix := root+"/", root+"/watch/"
	var scope []*parameter
	if res.Namespaced {
		prefix += "namespaces/{namespace}/"
		watchPrefix += "namespaces/{namespace}/"
		scope = []*parameter{pathParam("namespace", namespaceDoc)}
	}
	itemParams := append(append([]*parameter{}, scope...), nameParam)
	collection, item := prefix+res.Resource, prefix+res.Resource+"/{name}"
	watchCollection, watchItem := watchPrefix+res.Resource, watchPrefix+res.Resource+"/{name}"
	collectionParams := scope
	if sub != "" {
		// A subresource has only item paths: its "collection" is the item.
		item += "/" + sub
		collection, collectionParams = item, itemParams
	}

	var actions []action
	addIf := func(ok bool, a action) {
		if ok {
			actions = append(actions, a)
		}
	}
	addIf(has("list"), action{verb: "LIST", path: collection, params: collectionParams})
	addIf(has("create"), action{verb: "POST", path: collection, params: collectionParams})
	addIf(has("deletecollection"), action{verb: "DELETECOLLECTION", path: collection, params: collectionParams})
	addIf(sub == "" && has("watch") && has("list"), action{verb: "WATCHLIST", path: watchCollection, params: collectionParams})
	addIf(has("get"), action{verb: "GET", path: item, params: itemParams})
	addIf(has("update"), action{verb: "PUT", path: item, params: itemParams})
	addIf(has("patch"), action{verb: "PATCH", path: item, params: itemParams})
	addIf(has("delete"), action{verb: "DELETE", path: item, params: itemParams})
	addIf(sub == "" && has("watch"), action{verb: "WATCH", path: watchItem, params: itemParams})
	if res.Namespaced && sub == "" {
		addIf(has("list"), action{verb: "LIST", path: root + "/" + res.Resource, allNamespaces: true})
		addIf(has("watch") && has("list"), action{verb: "WATCHLIST", path: root + "/watch/" + res.Resource, allNamespaces: true})
	}

	routes := make([]*route, 0, len(actions))
	for _, a := range actions {
		routes = append(routes, actionRoute(res, sub, has("watch"), a, k))
	}
	return routes
}

// actionRoute documents one action as upstream's installer does: the same
// operation name, description, parameters, body and answers.
func actionRoute(res Resource, sub string, watchable bool, a action, k resourceKinds) *route {
	namespaced, suffix := "", ""
	if res.Namespaced {
		namespaced = "Namespaced"
	}
	if a.allNamespaces {
		namespaced, suffix = "", "ForAllNamespaces"
	}
	name := func(verb string) string { return verb + namespaced + k.kind + title(sub) + suffix }
	// doc picks the description of the resource or of its subresource.
	doc := func(resource, subresource string) string {
		if sub == "" {
			return resource
		}
		return subresource
	}
	article := articleFor(k.kind)
	r := &route{
		path:     a.path,
		consumes: anyMediaType,
		produces: mediaTypes,
		metadata: map[string]interface{}{
			extensionGVK:          metav1.GroupVersionKind{Group: k.gvk.Group, Version: k.gvk.Version, Kind: k.gvk.Kind},
			"x-kubernetes-action": strings.ToLower(a.verb),
		},
	}
	r.params = append(r.params, queryParam("pretty", prettyDoc, "string"))
	switch a.verb {
	case "GET":
		r.method, r.operation = http.MethodGet, name("read")
		r.doc = doc("read the specified "+k.kind, "read "+sub+" of the specified "+k.kind)
		r.responses = []statusResponse{{http.StatusOK, "OK", k.object}}
	case "LIST":
		r.method, r.operation, r.produces = http.MethodGet, name("list"), allMediaTypes
		r.doc = doc("list objects of kind "+k.kind, "list "+sub+" of objects of kind "+k.kind)
		if watchable {
			r.doc = doc("list or watch objects of kind "+k.kind, "list or watch "+sub+" of objects of kind "+k.kind)
		}
		r.params = append(r.params, optionParams(metav1.ListOptions{})...)
		r.responses = []statusResponse{{http.StatusOK, "OK", k.list}}
	case "PUT":
		r.method, r.operation = http.MethodPut, name("replace")
		r.doc = doc("replace the specified "+k.kind, "replace "+sub+" of the specified "+k.kind)
		r.params = append(r.params, optionParams(metav1.UpdateOptions{})...)
		r.body, r.reads = bodyParam(true), k.object
		r.responses = []statusResponse{{http.StatusOK, "OK", k.object}, {http.StatusCreated, "Created", k.object}}
	case "PATCH":
		r.method, r.operation, r.consumes = http.MethodPatch, name("patch"), patchTypes
		r.doc = doc("partially update the specified "+k.kind, "partially update "+sub+" of the specified "+k.kind)
		r.params = append(r.params, optionParams(metav1.PatchOptions{})...)
		r.body, r.reads = bodyParam(true), metav1.Patch{}
		r.responses = []statusResponse{{http.StatusOK, "OK", k.object}, {http.StatusCreated, "Created", k.object}}
	case "POST":
		r.method, r.operation = http.MethodPost, name("create")
		r.doc = doc("create"+article+k.kind, "create "+sub+" of"+article+k.kind)
		r.params = append(r.params, optionParams(metav1.CreateOptions{})...)
		r.body, r.reads = bodyParam(true), k.object
		r.responses = []statusResponse{{http.StatusOK, "OK", k.object}, {http.StatusCreated, "Created", k.object}, {http.StatusAccepted, "Accepted", k.object}}
	case "DELETE":
		r.method, r.operation = http.MethodDelete, name("delete")
		r.doc = doc("delete"+article+k.kind, "delete "+sub+" of"+article+k.kind)
		r.params = append(r.params, optionParams(metav1.DeleteOptions{})...)
		r.body, r.reads = bodyParam(false), metav1.DeleteOptions{}
		r.responses = []statusResponse{{http.StatusOK, "OK", k.deleteAnswer}, {http.StatusAccepted, "Accepted", k.deleteAnswer}}
	case "DELETECOLLECTION":
		r.method, r.operation = http.MethodDelete, name("deletecollection")
		r.doc = doc("delete collection of "+k.kind, "delete collection of "+sub+" of a "+k.kind)
		r.params = append(r.params, optionParams(metav1.DeleteOptions{})...)
		r.params = append(r.params, optionParams(metav1.ListOptions{}, "watch", "allowWatchBookmarks")...)
		r.body, r.reads = bodyParam(false), metav1.DeleteOptions{}
		r.responses = []statusResponse{{http.StatusOK, "OK", metav1.Status{}}}
	case "WATCH":
		r.method, r.operation, r.produces = http.MethodGet, name("watch"), allMediaTypes
		r.doc = "watch changes to an object of kind " + k.kind + ". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."
		r.params = append(r.params, optionParams(metav1.ListOptions{})...)
		r.responses = []statusResponse{{http.StatusOK, "OK", metav1.WatchEvent{}}}
	case "WATCHLIST":
		r.method, r.produces = http.MethodGet, allMediaTypes
		r.operation = "watch" + namespaced + k.kind + title(sub) + "List" + suffix
		r.doc = "watch individual changes to a list of " + k.kind + ". deprecated: use the 'watch' parameter with a list operation instead."
		r.params = append(r.params, optionParams(metav1.ListOptions{})...)
		r.responses = []statusResponse{{http.StatusOK, "OK", metav1.WatchEvent{}}}
	}
	r.params = append(r.params, a.params...)
	if r.body != nil {
		r.params = append(r.params, r.body)
	}
	return r
}

// newObject returns a value (not a pointer) of the Go type of gvk: the
// builders name a definition after the type of the sample they are given.
func newObject(gvk schema.GroupVersionKind) (interface{}, error) {
	obj, err := kindScheme().New(gvk)
	if err != nil {
		return nil, fmt.Errorf("openapi: no Go type for %v: %w", gvk, err)
	}
	return reflect.ValueOf(obj).Elem().Interface(), nil
}

// title upper-cases the first letter: "status" → "Status".
func title(s string) string {
	if s == "" {
		return ""
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// articleFor returns " a ", " an " or, for a plural noun, " ", to go
// between a verb and a kind in a description.
func articleFor(noun string) string {
	if noun == "" {
		return " "
	}
	if !strings.HasSuffix(noun, "ss") && strings.HasSuffix(noun, "s") {
		return " "
	}
	if strings.ContainsRune("aeiouAEIOU", rune(noun[0])) {
		return " an "
	}
	return " a "
}

// optionParams turns the top-level scalar fields of an options struct
// (metav1.ListOptions, ...) into query parameters named by their JSON
// names and described by the type's SwaggerDoc, as upstream does.
func optionParams(opts interface{}, exclude ...string) []*parameter {
	var docs map[string]string
	if d, ok := opts.(interface{ SwaggerDoc() map[string]string }); ok {
		docs = d.SwaggerDoc()
	}
	t := reflect.TypeOf(opts)
	var out []*parameter
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || slices.Contains(exclude, name) {
			continue
		}
		typ := queryType(f.Type)
		if typ == "" {
			continue
		}
		out = append(out, queryParam(name, docs[name], typ))
	}
	return out
}

// queryType is the OpenAPI type of a query parameter of Go type t, or ""
// for a field that cannot be one (a struct, like Preconditions). Lists of
// strings are repeated parameters of type string.
func queryType(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "string"
		}
	}
	return ""
}

// operationVerbs are the verbs operation names start with. The shortest
// match wins, as in upstream: "deletecollectionNamespacedPod" is "delete"
// + "CollectionNamespacedPod", hence deleteCoreV1CollectionNamespacedPod.
var operationVerbs = []string{"get", "log", "read", "replace", "patch", "delete", "deletecollection", "watch", "connect", "proxy", "list", "create"}

// operationIDAndTags names an operation as upstream does, so generated
// clients and docs line up: the verb, then the group without .k8s.io and
// the version, then the rest ("listAppsV1NamespacedDeployment",
// "getCoreAPIVersions"); the tag is "<group>_<version>" ("apps_v1").
func operationIDAndTags(r common.Route) (string, []string, error) {
	op := r.OperationName()
	verb := ""
	for _, v := range operationVerbs {
		if strings.HasPrefix(op, v) && (verb == "" || len(v) < len(verb)) {
			verb = v
		}
	}
	if verb == "" {
		return op, nil, fmt.Errorf("openapi: operation %q does not start with a verb", op)
	}
	rest := op[len(verb):]
	parts := strings.Split(strings.Trim(r.Path(), "/"), "/")
	if parts[0] == "api" {
		parts = append([]string{"apis", "core"}, parts[1:]...)
	}
	var tags []string
	switch {
	case len(parts) >= 2 && parts[0] == "apis":
		group := strings.TrimSuffix(parts[1], ".k8s.io")
		verb += camel(group, true)
		tag := camel(group, false)
		if len(parts) > 2 {
			verb += camel(parts[2], true)
			tag += "_" + camel(parts[2], false)
		}
		tags = append(tags, tag)
	case parts[0] != "":
		tags = append(tags, camel(parts[0], false))
	}
	return verb + camel(rest, true), tags, nil
}

// camel drops what cannot be in an identifier and capitalizes the letter
// after each dropped character (and the first, if asked):
// "rbac.authorization" → "RbacAuthorization".
func camel(s string, capitalizeFirst bool) string {
	var b strings.Builder
	up := capitalizeFirst
	for i, r := range s {
		if unicode.IsLetter(r) || r == '_' || (i != 0 && unicode.IsDigit(r)) {
			if up {
				r = unicode.ToUpper(r)
				up = false
			}
			b.WriteRune(r)
			continue
		}
		up = true
	}
	return b.String()
}

// container is a common.RouteContainer: the routes of one document.
type container struct {
	root   string
	routes []*route
}

func (c *container) RootPath() string                   { return c.root }
func (c *container) PathParameters() []common.Parameter { return nil }
func (c *container) Routes() []common.Route {
	out := make([]common.Route, len(c.routes))
	for i, r := range c.routes {
		out[i] = r
	}
	return out
}

// route is a common.Route: one method at one path.
type route struct {
	method, path, operation, doc string
	params                       []*parameter
	body                         *parameter // also in params
	consumes, produces           []string
	metadata                     map[string]interface{}
	reads                        interface{}
	responses                    []statusResponse
}

func (r *route) Method() string                   { return r.method }
func (r *route) Path() string                     { return r.path }
func (r *route) OperationName() string            { return r.operation }
func (r *route) Description() string              { return r.doc }
func (r *route) Consumes() []string               { return r.consumes }
func (r *route) Produces() []string               { return r.produces }
func (r *route) Metadata() map[string]interface{} { return r.metadata }
func (r *route) RequestPayloadSample() interface{} {
	return r.reads
}
func (r *route) ResponsePayloadSample() interface{} {
	if len(r.responses) == 0 {
		return nil
	}
	return r.responses[0].model
}
func (r *route) Parameters() []common.Parameter {
	out := make([]common.Parameter, len(r.params))
	for i, p := range r.params {
		out[i] = p
	}
	return out
}
func (r *route) StatusCodeResponses() []common.StatusCodeResponse {
	out := make([]common.StatusCodeResponse, len(r.responses))
	for i, s := range r.responses {
		out[i] = s
	}
	return out
}

type statusResponse struct {
	code    int
	message string
	model   interface{}
}

func (s statusResponse) Code() int          { return s.code }
func (s statusResponse) Message() string    { return s.message }
func (s statusResponse) Model() interface{} { return s.model }

// parameter is a common.Parameter.
type parameter struct {
	name, doc, dataType string
	kind                common.ParameterKind
	required            bool
}

func pathParam(name, doc string) *parameter {
	return &parameter{name: name, doc: doc, dataType: "string", kind: common.PathParameterKind, required: true}
}

func queryParam(name, doc, dataType string) *parameter {
	return &parameter{name: name, doc: doc, dataType: dataType, kind: common.QueryParameterKind}
}

func bodyParam(required bool) *parameter {
	return &parameter{name: "body", kind: common.BodyParameterKind, required: required}
}

func (p *parameter) Name() string               { return p.name }
func (p *parameter) Description() string        { return p.doc }
func (p *parameter) Required() bool             { return p.required }
func (p *parameter) Kind() common.ParameterKind { return p.kind }
func (p *parameter) DataType() string           { return p.dataType }
func (p *parameter) AllowMultiple() bool        { return false }
