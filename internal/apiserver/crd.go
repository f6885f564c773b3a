package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"

	"github.com/rudder-dev/rudder/internal/apiserver/customresource"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// Custom resources. The built-in resources are fixed when the server is
// built (s.handlers never changes, so it is read without a lock); the
// resources CustomResourceDefinitions define come and go while it runs.
// They live in a second table, an immutable map behind an atomic pointer:
// a request reads it with one atomic load, and the CRD controller below
// replaces it whole (copy-on-write) when a definition changes.
//
// A custom resource is served by the same resourceHandler as a built-in
// one: its registry.Resource makes *unstructured.Unstructured objects,
// stored as JSON under /registry/<group>/<plural>/, with one watch cache
// per served version (every version reads the same keys: with conversion
// None only apiVersion differs, and decoding rewrites it). What differs is
// in the Resource's funcs (schema defaults and validation, printer
// columns, scale paths) and in crdVersion, which the write path consults
// to prune unknown fields.
//
// The controller (crdController.run) is level-triggered: on every change
// of the CRD watch cache it compares the definitions with what is served,
// starts or stops handlers, rebuilds discovery, and writes the CRDs'
// conditions (NamesAccepted, Established, Terminating). Deleting a CRD
// deletes its objects first (the customresourcecleanup finalizer), then
// the definition.

// crdVersion is what a custom resource handler knows of its definition.
type crdVersion struct {
	crdName string
	schema  *customresource.Schema
	// terminating refuses creates while the definition is being deleted.
	terminating atomic.Bool
	// conversionRefused, when set, answers every request for this
	// version: the definition converts versions with a webhook, which
	// this server does not call (crd_serve.go).
	conversionRefused error
	// scalePaths maps each version of the definition ("group/version")
	// to its scale subresource's spec replicas path, "" for a version
	// without one: apply on /scale maps managedFields of every version.
	scalePaths map[string]string
}

// customTable maps served custom resources to their handlers.
type customTable map[schema.GroupVersionResource]*resourceHandler

// crdController keeps the custom resource table in step with the
// CustomResourceDefinitions.
type crdController struct {
	s     *Server
	crds  *resourceHandler // the customresourcedefinitions handler
	table atomic.Pointer[customTable]
	// served is the controller's own record, touched only by run.
	served map[string]*crdServed
	// resources is the custom resources in discovery order, for discovery
	// and OpenAPI rebuilds.
	resources atomic.Pointer[[]*registry.Resource]
	// The custom resources' OpenAPI documents are built on the first
	// request after a change (openapiSeq counts changes, openapiBuilt the
	// one the documents reflect): building them costs far more than
	// serving a resource, and few clients read them.
	openapiMu    sync.Mutex
	openapiSeq   uint64
	openapiBuilt uint64
	openapiCRDs  []*apiextensionsv1.CustomResourceDefinition
	openapiDocs  *crdOpenAPI
}

// crdServed is one definition as served: its handlers and their caches.
type crdServed struct {
	crd         *apiextensionsv1.CustomResourceDefinition
	generation  int64
	uid         string
	terminating bool
	handlers    []*resourceHandler
	cancel      context.CancelFunc
}

var crdGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

func newCRDController(s *Server) *crdController {
	h := s.handlers[crdGVR]
	if h == nil {
		return nil
	}
	c := &crdController{s: s, crds: h, served: map[string]*crdServed{}}
	c.table.Store(&customTable{})
	c.resources.Store(&[]*registry.Resource{})
	return c
}

// customHandler returns the handler of a served custom resource.
func (s *Server) customHandler(gvr schema.GroupVersionResource) (*resourceHandler, bool) {
	if s.crd == nil {
		return nil, false
	}
	h, ok := (*s.crd.table.Load())[gvr]
	return h, ok
}

// handlerFor returns the handler of any served resource, built-in or
// custom.
func (s *Server) handlerFor(gvr schema.GroupVersionResource) (*resourceHandler, bool) {
	if h, ok := s.handlers[gvr]; ok {
		return h, true
	}
	return s.customHandler(gvr)
}

// run reconciles until ctx ends: at once, then on every change of the
// CRD cache, and every few seconds to retry what failed.
func (c *crdController) run(ctx context.Context) {
	defer c.stopAll()
	for {
		c.crds.cache.mu.RLock()
		notify := c.crds.cache.notify
		c.crds.cache.mu.RUnlock()
		c.reconcile(ctx, true)
		select {
		case <-ctx.Done():
			return
		case <-notify:
		case <-time.After(5 * time.Second):
		}
	}
}

func (c *crdController) stopAll() {
	for _, sv := range c.served {
		sv.cancel()
	}
}

// reconcile serves what the definitions say and, with writes, records it
// in their status. Start runs one pass without writes, so that the
// resources of existing definitions are served when the server is.
func (c *crdController) reconcile(ctx context.Context, writes bool) {
	items, _ := c.crds.cache.list("", nil)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(items))
	for _, o := range items {
		crds = append(crds, o.obj.(*apiextensionsv1.CustomResourceDefinition))
	}
	// The oldest definition keeps a contested name, as upstream.
	sort.SliceStable(crds, func(i, j int) bool {
		a, b := crds[i].CreationTimestamp, crds[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return crds[i].Name < crds[j].Name
	})
	conflicts := c.nameConflicts(crds)
	// Serving first, published at once: a client waiting for the new
	// resource should not also wait for the status writes below.
	changed := false
	seen := map[string]bool{}
	for _, crd := range crds {
		seen[crd.Name] = true
		switch sv := c.served[crd.Name]; {
		case crd.DeletionTimestamp != nil:
		case conflicts[crd.Name] == nil:
			changed = c.serve(ctx, crd) || changed
		case sv != nil && sv.uid != string(crd.UID):
			changed = c.unserve(crd.Name) || changed
		}
	}
	for name := range c.served {
		if !seen[name] {
			changed = c.unserve(name) || changed
		}
	}
	if changed {
		c.publish()
		changed = false
	}
	if !writes {
		return
	}
	for _, crd := range crds {
		conflict := conflicts[crd.Name]
		if crd.DeletionTimestamp != nil {
			changed = c.terminate(ctx, crd) || changed
			continue
		}
		if crdStatusCurrent(crd, conflict) {
			continue
		}
		c.updateStatus(ctx, crd, conflict)
		if conflict == nil && !slices.Contains(crd.Finalizers, registry.CRDCleanupFinalizer) {
			c.setFinalizer(ctx, crd, true)
		}
	}
	if changed {
		c.publish()
	}
}

// crdStatusCurrent reports whether a definition already shows what the
// controller would write, so a pass over many definitions writes nothing.
func crdStatusCurrent(crd *apiextensionsv1.CustomResourceDefinition, conflict *crdConflict) bool {
	accepted := crdCondition(&crd.Status, apiextensionsv1.NamesAccepted)
	if conflict != nil {
		return accepted != nil && accepted.Status == apiextensionsv1.ConditionFalse && accepted.Reason == conflict.reason
	}
	est := crdCondition(&crd.Status, apiextensionsv1.Established)
	return accepted != nil && accepted.Status == apiextensionsv1.ConditionTrue && est != nil && est.Status == apiextensionsv1.ConditionTrue &&
		slices.Contains(crd.Finalizers, registry.CRDCleanupFinalizer) && apiequality.Semantic.DeepEqual(crd.Status.AcceptedNames, crd.Spec.Names)
}

// crdConflict is why a definition's names are not accepted.
type crdConflict struct{ reason, message string }

// nameConflicts finds, for each definition, a name already taken in its
// group by an older definition or a built-in resource.
func (c *crdController) nameConflicts(crds []*apiextensionsv1.CustomResourceDefinition) map[string]*crdConflict {
	out := map[string]*crdConflict{}
	type taken struct{ resources, kinds map[string]bool }
	byGroup := map[string]*taken{}
	group := func(g string) *taken {
		t := byGroup[g]
		if t == nil {
			t = &taken{resources: map[string]bool{}, kinds: map[string]bool{}}
			for _, res := range c.s.cfg.Resources {
				if res.Group == g {
					t.resources[res.Resource], t.resources[res.Singular] = true, true
					for _, sn := range res.ShortNames {
						t.resources[sn] = true
					}
					t.kinds[res.Kind], t.kinds[res.Kind+"List"] = true, true
				}
			}
			byGroup[g] = t
		}
		return t
	}
	for _, crd := range crds {
		if crd.DeletionTimestamp != nil && c.served[crd.Name] == nil {
			continue
		}
		n := crd.Spec.Names
		t := group(crd.Spec.Group)
		var cf *crdConflict
		switch {
		case t.resources[n.Plural]:
			cf = &crdConflict{"PluralConflict", fmt.Sprintf("%q is already in use", n.Plural)}
		case t.resources[n.Singular]:
			cf = &crdConflict{"SingularConflict", fmt.Sprintf("%q is already in use", n.Singular)}
		case t.kinds[n.Kind]:
			cf = &crdConflict{"KindConflict", fmt.Sprintf("%q is already in use", n.Kind)}
		case t.kinds[n.ListKind]:
			cf = &crdConflict{"ListKindConflict", fmt.Sprintf("%q is already in use", n.ListKind)}
		}
		for _, sn := range n.ShortNames {
			if cf == nil && t.resources[sn] {
				cf = &crdConflict{"ShortNamesConflict", fmt.Sprintf("%q is already in use", sn)}
			}
		}
		if cf != nil {
			out[crd.Name] = cf
			continue
		}
		t.resources[n.Plural], t.resources[n.Singular] = true, true
		for _, sn := range n.ShortNames {
			t.resources[sn] = true
		}
		t.kinds[n.Kind], t.kinds[n.ListKind] = true, true
	}
	return out
}

// serve starts (or restarts, after a spec change) the handlers of a
// definition. It reports whether the table changed.
func (c *crdController) serve(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) bool {
	if sv := c.served[crd.Name]; sv != nil && sv.uid == string(crd.UID) && sv.generation == crd.Generation && !sv.terminating {
		return false
	}
	handlers, err := c.buildHandlers(crd)
	if err != nil {
		slog.Error("cannot serve custom resource definition", "crd", crd.Name, "err", err)
		return false
	}
	cctx, cancel := context.WithCancel(ctx)
	for _, h := range handlers {
		go h.cache.run(cctx)
	}
	// Publish only caches that have their initial list, so the first
	// request after Established is answered.
	deadline := time.After(10 * time.Second)
	for _, h := range handlers {
		select {
		case <-h.cache.ready:
		case <-deadline:
		case <-ctx.Done():
			cancel()
			return false
		}
	}
	c.unserve(crd.Name)
	c.served[crd.Name] = &crdServed{crd: crd, generation: crd.Generation, uid: string(crd.UID), handlers: handlers, cancel: cancel}
	return true
}

// unserve stops a definition's handlers; their watchers end and clients
// re-watch against whatever is served next.
func (c *crdController) unserve(name string) bool {
	sv := c.served[name]
	if sv == nil {
		return false
	}
	delete(c.served, name)
	sv.cancel()
	for _, h := range sv.handlers {
		h.cache.invalidate()
	}
	return true
}

// publish swaps in a new table and rebuilds discovery.
func (c *crdController) publish() {
	table := customTable{}
	var resources []*registry.Resource
	names := make([]string, 0, len(c.served))
	for name := range c.served {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, h := range c.served[name].handlers {
			table[h.res.GroupVersionResource()] = h
			resources = append(resources, h.res)
		}
	}
	c.table.Store(&table)
	c.resources.Store(&resources)
	c.s.rebuildDiscovery()

	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		crds = append(crds, c.served[name].crd)
	}
	c.openapiMu.Lock()
	c.openapiSeq++
	c.openapiCRDs = crds
	c.openapiMu.Unlock()
}

// customGroups lists the custom resources' groups and versions, versions
// in Kubernetes' priority order (v2 > v1 > v1beta2 > v1beta1 > v1alpha1),
// which makes the first one the preferred version, as upstream.
func customGroups(resources []*registry.Resource, builtin []groupVersions) []groupVersions {
	known := map[string]bool{}
	for _, g := range builtin {
		known[g.group] = true
	}
	idx := map[string]int{}
	var out []groupVersions
	for _, res := range resources {
		if known[res.Group] {
			continue
		}
		i, ok := idx[res.Group]
		if !ok {
			i = len(out)
			idx[res.Group] = i
			out = append(out, groupVersions{group: res.Group})
		}
		if !slices.Contains(out[i].versions, res.Version) {
			out[i].versions = append(out[i].versions, res.Version)
		}
	}
	for _, g := range out {
		sort.Slice(g.versions, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(g.versions[i], g.versions[j]) > 0 })
	}
	sort.Slice(out, func(i, j int) bool { return out[i].group < out[j].group })
	return out
}

// buildHandlers makes one handler per served version of a definition.
func (c *crdController) buildHandlers(crd *apiextensionsv1.CustomResourceDefinition) ([]*resourceHandler, error) {
	var out []*resourceHandler
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		res, cv, err := crdResource(crd, v)
		if err != nil {
			return nil, err
		}
		h := &resourceHandler{s: c.s, res: res, gvk: res.GroupVersionKind(), gr: res.GroupVersionResource().GroupResource(), custom: cv}
		if v.Deprecated {
			h.deprecation = fmt.Sprintf("%s %s is deprecated", res.GroupVersion(), res.Kind)
			if v.DeprecationWarning != nil {
				h.deprecation = *v.DeprecationWarning
			}
		}
		h.cache = newWatchCache(res, c.s.store, c.s.codec, c.s.codecs, c.s.cfg.WatchCacheCapacity)
		out = append(out, h)
	}
	return out, nil
}

// crdResource is the registry.Resource of one version of a definition:
// the strategy of its custom resources.
func crdResource(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) (*registry.Resource, *crdVersion, error) {
	var props *apiextensionsv1.JSONSchemaProps
	if v.Schema != nil {
		props = v.Schema.OpenAPIV3Schema
	}
	if crd.Spec.PreserveUnknownFields && props != nil {
		props = props.DeepCopy()
		props.XPreserveUnknownFields = new(true)
	}
	sch, err := customresource.NewSchema(props)
	if err != nil {
		return nil, nil, err
	}
	cv := &crdVersion{crdName: crd.Name, schema: sch, conversionRefused: crdWebhookConversion(crd, v), scalePaths: map[string]string{}}
	for _, ov := range crd.Spec.Versions {
		path := ""
		if ov.Subresources != nil && ov.Subresources.Scale != nil {
			path = ov.Subresources.Scale.SpecReplicasPath
		}
		cv.scalePaths[crd.Spec.Group+"/"+ov.Name] = path
	}
	names := crd.Spec.Names
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	cols := customresource.NewColumns(v.AdditionalPrinterColumns)
	res := &registry.Resource{
		Group: crd.Spec.Group, Version: v.Name, Resource: names.Plural, Kind: names.Kind, Singular: names.Singular,
		Namespaced: namespaced, ShortNames: names.ShortNames, Categories: names.Categories,
		HasGeneration:  true,
		HasStatus:      v.Subresources != nil && v.Subresources.Status != nil,
		CustomResource: true,
		TypeConverter:  crdTypeConverter(crd, v),
		New:            func() runtime.Object { return &unstructured.Unstructured{Object: map[string]interface{}{}} },
		Default:        func(obj runtime.Object) { sch.Default(obj.(*unstructured.Unstructured).Object) },
		Validate: func(obj runtime.Object) field.ErrorList {
			u := obj.(*unstructured.Unstructured)
			errs := registry.ValidateMeta(unstructuredMeta(u), namespaced, apivalidation.NameIsDNSSubdomain)
			return append(errs, sch.Validate(u.Object, nil)...)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
			errs := registry.ValidateMetaUpdate(unstructuredMeta(u), unstructuredMeta(o))
			return append(errs, sch.Validate(u.Object, o.Object)...)
		},
		ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
			return sch.Validate(obj.(*unstructured.Unstructured).Object, old.(*unstructured.Unstructured).Object)
		},
		Table: &registry.Table{Columns: cols.Defs, Row: func(obj runtime.Object) []interface{} {
			u := obj.(*unstructured.Unstructured)
			return cols.Row(u.Object, u.GetName())
		}},
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		res.Scale = crdScale(v.Subresources.Scale)
	}
	// Reads go through the schema as well, as upstream: an object stored
	// before the schema gained a default or dropped a field is served as
	// the schema says now. The view is the resource's own keys; the
	// decoded object is fresh and private, so it is pruned and defaulted
	// in place.
	res.Storage = &registry.StorageView{Group: crd.Spec.Group, Version: v.Name, Resource: names.Plural, Kind: names.Kind,
		New:       res.New,
		ToStorage: func(obj runtime.Object) runtime.Object { return obj }, // encoded, never changed
		FromStorage: func(obj runtime.Object) runtime.Object {
			u := obj.(*unstructured.Unstructured)
			sch.Prune(u.Object)
			sch.Default(u.Object)
			return u
		},
	}
	return res, cv, nil
}

// crdScale reads and writes replicas at the paths the definition names.
func crdScale(sc *apiextensionsv1.CustomResourceSubresourceScale) *registry.ScaleAccess {
	toInt := func(v interface{}, ok bool) int32 {
		switch t := v.(type) {
		case int64:
			return int32(t)
		case float64:
			return int32(t)
		}
		return 0
	}
	return &registry.ScaleAccess{
		Get: func(obj runtime.Object) (int32, int32, string) {
			u := obj.(*unstructured.Unstructured).Object
			spec := toInt(customresource.Path(u, sc.SpecReplicasPath))
			status := toInt(customresource.Path(u, sc.StatusReplicasPath))
			sel := ""
			if sc.LabelSelectorPath != nil {
				if v, ok := customresource.Path(u, *sc.LabelSelectorPath); ok {
					sel, _ = v.(string)
				}
			}
			return spec, status, sel
		},
		Set: func(obj runtime.Object, replicas int32) {
			customresource.SetPath(obj.(*unstructured.Unstructured).Object, sc.SpecReplicasPath, int64(replicas))
		},
		SpecReplicasPath: sc.SpecReplicasPath,
	}
}

// unstructuredMeta converts an unstructured object's metadata to the
// typed ObjectMeta that validation reads. A malformed metadata yields
// what could be read; validation then reports the missing parts.
func unstructuredMeta(u *unstructured.Unstructured) *metav1.ObjectMeta {
	om := &metav1.ObjectMeta{}
	if m, ok := u.Object["metadata"].(map[string]interface{}); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, om); err != nil {
			om = &metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace()}
		}
	}
	return om
}
