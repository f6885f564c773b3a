package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"
	"sort"
	"strings"

	"github.com/munnerz/goautoneg"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// Version is what /version reports: the Kubernetes API rudder serves.
var Version = version.Info{
	Major:      "1",
	Minor:      "36",
	GitVersion: "v1.36.3+rudder",
	GitCommit:  "",
	BuildDate:  "",
	GoVersion:  runtime.Version(),
	Compiler:   runtime.Compiler,
	Platform:   runtime.GOOS + "/" + runtime.GOARCH,
}

var defaultVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// discoveryCache holds the discovery documents, which do not change while
// the server runs: built once, served as bytes.
type discoveryCache struct {
	api, apis         []byte            // /api, /apis (legacy)
	groups            map[string][]byte // /apis/<group>
	resources         map[string][]byte // /api/v1, /apis/<group>/<version>
	aggregatedAPI     *apidiscoveryv2.APIGroupDiscoveryList
	aggregatedAPIs    *apidiscoveryv2.APIGroupDiscoveryList
	aggregatedEncoded map[string][]byte // by "api|apis" + version
}

func verbsOf(res *registry.Resource) []string {
	if len(res.Verbs) > 0 {
		return res.Verbs
	}
	return defaultVerbs
}

type subresource struct {
	name  string
	kind  metav1.GroupVersionKind
	verbs []string
}

func subresourcesOf(res *registry.Resource) []subresource {
	self := metav1.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
	var out []subresource
	if res.Resource == "pods" && res.Group == "" {
		out = append(out, subresource{"binding", metav1.GroupVersionKind{Version: "v1", Kind: "Binding"}, []string{"create"}})
	}
	out = append(out, streamSubresources(res)...)
	if res.Resource == "serviceaccounts" {
		out = append(out, subresource{"token", metav1.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}, []string{"create"}})
	}
	if res.Resource == "namespaces" {
		out = append(out, subresource{"finalize", self, []string{"update"}})
	}
	if res.Approval != nil {
		out = append(out, subresource{"approval", self, []string{"get", "patch", "update"}})
	}
	if res.Scale != nil {
		out = append(out, subresource{"scale", metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, []string{"get", "patch", "update"}})
	}
	if res.HasStatus {
		out = append(out, subresource{"status", self, []string{"get", "patch", "update"}})
	}
	return out
}

func newDiscoveryCache(all []*registry.Resource, groups []groupVersions) *discoveryCache {
	d := &discoveryCache{groups: map[string][]byte{}, resources: map[string][]byte{}, aggregatedEncoded: map[string][]byte{}}
	all, groups = rmDiscovery(all, groups)
	byGV := map[string][]*registry.Resource{}
	for _, res := range all {
		gv := res.GroupVersion().String()
		byGV[gv] = append(byGV[gv], res)
	}
	d.api = mustJSON(&metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: ""}}})
	groupList := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	d.aggregatedAPI = &apidiscoveryv2.APIGroupDiscoveryList{}
	d.aggregatedAPIs = &apidiscoveryv2.APIGroupDiscoveryList{}
	for _, g := range groups {
		group := metav1.APIGroup{Name: g.group}
		agg := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.group}}
		for _, v := range g.versions {
			gvd := metav1.GroupVersionForDiscovery{GroupVersion: groupVersionString(g.group, v), Version: v}
			group.Versions = append(group.Versions, gvd)
			list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gvd.GroupVersion}
			vd := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			resources := byGV[gvd.GroupVersion]
			sort.SliceStable(resources, func(i, j int) bool { return resources[i].Resource < resources[j].Resource })
			for _, res := range resources {
				list.APIResources = append(list.APIResources, metav1.APIResource{
					Name: res.Resource, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.Kind,
					Verbs: verbsOf(res), ShortNames: res.ShortNames, Categories: res.Categories,
				})
				scope := apidiscoveryv2.ScopeCluster
				if res.Namespaced {
					scope = apidiscoveryv2.ScopeNamespace
				}
				rd := apidiscoveryv2.APIResourceDiscovery{
					Resource: res.Resource, ResponseKind: &metav1.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind},
					Scope: scope, SingularResource: res.Singular, Verbs: verbsOf(res), ShortNames: res.ShortNames, Categories: res.Categories,
				}
				for _, sub := range subresourcesOf(res) {
					list.APIResources = append(list.APIResources, metav1.APIResource{
						Name: res.Resource + "/" + sub.name, Namespaced: res.Namespaced, Kind: sub.kind.Kind,
						Group: groupIfOther(sub.kind.Group, res.Group), Version: versionIfOther(sub.kind, res), Verbs: sub.verbs,
					})
					kind := sub.kind
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: sub.name, ResponseKind: &kind, Verbs: sub.verbs})
				}
				vd.Resources = append(vd.Resources, rd)
			}
			d.resources[gvd.GroupVersion] = mustJSON(list)
			agg.Versions = append(agg.Versions, vd)
		}
		group.PreferredVersion = group.Versions[0]
		if g.group == "" {
			d.aggregatedAPI.Items = append(d.aggregatedAPI.Items, agg)
			continue
		}
		d.groups[g.group] = mustJSON(&struct {
			metav1.TypeMeta `json:",inline"`
			metav1.APIGroup `json:",inline"`
		}{metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, group})
		groupList.Groups = append(groupList.Groups, group)
		d.aggregatedAPIs.Items = append(d.aggregatedAPIs.Items, agg)
	}
	d.apis = mustJSON(groupList)
	for _, v := range []string{"v2", "v2beta1"} {
		for name, list := range map[string]*apidiscoveryv2.APIGroupDiscoveryList{"api": d.aggregatedAPI, "apis": d.aggregatedAPIs} {
			l := *list
			l.TypeMeta = metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/" + v}
			d.aggregatedEncoded[name+"|"+v] = mustJSON(&l)
		}
	}
	return d
}

func groupVersionString(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

func groupIfOther(sub, parent string) string {
	if sub == parent {
		return ""
	}
	return sub
}

func versionIfOther(sub metav1.GroupVersionKind, res *registry.Resource) string {
	if sub.Group == res.Group && sub.Version == res.Version {
		return ""
	}
	return sub.Version
}

func mustJSON(v interface{}) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // static documents of API types always encode
	}
	return data
}

// aggregatedVersion returns which aggregated discovery version the Accept
// header asks for first, or "" for the legacy documents.
func aggregatedVersion(r *http.Request) string {
	for _, a := range goautoneg.ParseAccept(r.Header.Get("Accept")) {
		if a.Type+"/"+a.SubType != mediaJSON {
			continue
		}
		if a.Params["as"] == "APIGroupDiscoveryList" && a.Params["g"] == "apidiscovery.k8s.io" && (a.Params["v"] == "v2" || a.Params["v"] == "v2beta1") {
			return a.Params["v"]
		}
		if a.Params["as"] == "" {
			return ""
		}
	}
	return ""
}

func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	d := s.discovery.Load()
	p := strings.TrimSuffix(r.URL.Path, "/")
	parts := splitPath(p)
	switch {
	case p == "/api" || p == "/apis":
		if v := aggregatedVersion(r); v != "" {
			w.Header().Set("Vary", "Accept")
			writeBytes(w, http.StatusOK, "application/json;g=apidiscovery.k8s.io;v="+v+";as=APIGroupDiscoveryList", d.aggregatedEncoded[parts[0]+"|"+v])
			return
		}
		w.Header().Set("Vary", "Accept")
		if p == "/api" {
			writeBytes(w, http.StatusOK, mediaJSON, d.api)
		} else {
			writeBytes(w, http.StatusOK, mediaJSON, d.apis)
		}
	case len(parts) == 2 && parts[0] == "api":
		s.writeDiscoveryDoc(w, r, d.resources[parts[1]])
	case len(parts) == 2 && parts[0] == "apis":
		s.writeDiscoveryDoc(w, r, d.groups[parts[1]])
	case len(parts) == 3 && parts[0] == "apis":
		s.writeDiscoveryDoc(w, r, d.resources[parts[1]+"/"+parts[2]])
	default:
		s.writeError(w, r, notFound())
	}
}

func (s *Server) writeDiscoveryDoc(w http.ResponseWriter, r *http.Request, doc []byte) {
	if doc == nil {
		s.writeError(w, r, notFound())
		return
	}
	writeBytes(w, http.StatusOK, mediaJSON, doc)
}

func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	writeBytes(w, http.StatusOK, mediaJSON, mustJSON(Version))
}

// serveRootPaths lists the paths the server answers, as upstream's "/" does.
func (s *Server) serveRootPaths(w http.ResponseWriter, r *http.Request) {
	paths := []string{"/api", "/api/v1", "/apis", "/healthz", "/livez", "/metrics", "/readyz", "/version"}
	for _, g := range s.groups {
		if g.group == "" {
			continue
		}
		paths = append(paths, "/apis/"+g.group)
		for _, v := range g.versions {
			paths = append(paths, "/apis/"+g.group+"/"+v)
		}
	}
	for _, c := range s.checks {
		paths = append(paths, "/healthz/"+c.name, "/livez/"+c.name, "/readyz/"+c.name)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(map[string][]string{"paths": paths})
	writeBytes(w, http.StatusOK, mediaJSON, buf.Bytes())
}
