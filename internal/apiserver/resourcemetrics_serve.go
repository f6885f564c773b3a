package apiserver

import (
	"encoding/json"
	"math"
	"net/http"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// rmGroup is the resource metrics API, served here as metrics-server
// serves it upstream: NodeMetrics and PodMetrics, get and list, by label
// (and metadata.name/namespace field) selectors. kubectl top reads it.
const rmGroup = "metrics.k8s.io"

// rmDiscovery adds metrics.k8s.io/v1beta1 to the discovery documents, so
// kubectl finds the group.
func rmDiscovery(all []*registry.Resource, groups []groupVersions) ([]*registry.Resource, []groupVersions) {
	groups = append(groups[:len(groups):len(groups)], groupVersions{group: rmGroup, versions: []string{"v1beta1"}})
	return rmAPIResources(all), groups
}

// rmAPIResources adds the resources of metrics.k8s.io/v1beta1 to all (a
// new slice), for discovery and the OpenAPI documents: NodeMetrics and
// PodMetrics, get and list, as metrics-server registers them.
func rmAPIResources(all []*registry.Resource) []*registry.Resource {
	verbs := []string{"get", "list"}
	return append(all[:len(all):len(all)],
		&registry.Resource{Group: rmGroup, Version: "v1beta1", Resource: "nodes", Kind: "NodeMetrics", Verbs: verbs},
		&registry.Resource{Group: rmGroup, Version: "v1beta1", Resource: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: verbs})
}

// serveResourceMetrics answers /apis/metrics.k8s.io/v1beta1/...
func (s *Server) serveResourceMetrics(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	if info.APIVersion != "v1beta1" || (info.Resource != "nodes" && info.Resource != "pods") ||
		info.Subresource != "" || len(info.Parts) > 2 || (info.Resource == "nodes" && info.Namespace != "") {
		s.writeError(w, r, notFound())
		return
	}
	info.served = true
	if info.Verb != "get" && info.Verb != "list" {
		s.writeError(w, r, methodNotAllowed(r, info))
		return
	}
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		s.writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	fsel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		s.writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	if info.Resource == "nodes" {
		s.serveNodeMetrics(w, r, info.Name, sel, fsel)
		return
	}
	s.servePodMetrics(w, r, info.Namespace, info.Name, sel, fsel)
}

func (s *Server) serveNodeMetrics(w http.ResponseWriter, r *http.Request, name string, sel labels.Selector, fsel fields.Selector) {
	ctx := r.Context()
	gr := schema.GroupResource{Group: rmGroup, Resource: "nodemetrics"}
	var nodes []*corev1.Node
	if name != "" {
		node, err := s.streamNode(ctx, name)
		if err != nil {
			s.writeError(w, r, apierrors.NewNotFound(gr, name))
			return
		}
		nodes = []*corev1.Node{node}
	} else {
		nh := s.handlers[corev1.SchemeGroupVersion.WithResource("nodes")]
		if _, err := nh.cache.freshRevision(ctx); err != nil {
			s.writeError(w, r, toStatusError(err, nh.gr, ""))
			return
		}
		items, _ := nh.cache.list(nh.prefix(""), nil)
		for _, o := range items {
			n := o.obj.(*corev1.Node)
			if sel.Matches(labels.Set(n.Labels)) && fsel.Matches(fields.Set{"metadata.name": n.Name}) {
				nodes = append(nodes, n)
			}
		}
	}
	usage := s.resourceMetrics.usageOf(ctx, nodes)
	now := metav1.NewTime(s.now())
	list := &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: rmGroup + "/v1beta1"}, Items: []metricsv1beta1.NodeMetrics{}}
	for _, n := range nodes {
		u := usage[n.Name]
		if u == nil || !u.nodeOK {
			continue
		}
		list.Items = append(list.Items, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: now},
			Timestamp:  metav1.NewTime(u.ts),
			Window:     metav1.Duration{Duration: u.window},
			Usage:      rmResources(u.cpu, u.memory),
		})
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	rmAnswer(s, w, r, gr, name, "NodeMetrics", list, list.Items)
}

func (s *Server) servePodMetrics(w http.ResponseWriter, r *http.Request, namespace, name string, sel labels.Selector, fsel fields.Selector) {
	ctx := r.Context()
	gr := schema.GroupResource{Group: rmGroup, Resource: "podmetrics"}
	ph := s.handlers[corev1.SchemeGroupVersion.WithResource("pods")]
	var pods []*corev1.Pod
	if name != "" {
		obj, _, err := ph.getStored(ctx, namespace, name)
		if err != nil {
			s.writeError(w, r, apierrors.NewNotFound(gr, name))
			return
		}
		pods = []*corev1.Pod{obj.(*corev1.Pod)}
	} else {
		if _, err := ph.cache.freshRevision(ctx); err != nil {
			s.writeError(w, r, toStatusError(err, ph.gr, ""))
			return
		}
		items, _ := ph.cache.list(ph.prefix(namespace), nil)
		for _, o := range items {
			p := o.obj.(*corev1.Pod)
			if sel.Matches(labels.Set(p.Labels)) && fsel.Matches(fields.Set{"metadata.name": p.Name, "metadata.namespace": p.Namespace}) {
				pods = append(pods, p)
			}
		}
	}
	// Scrape the nodes that run the pods, each once.
	var nodes []*corev1.Node
	seen := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || seen[p.Spec.NodeName] {
			continue
		}
		seen[p.Spec.NodeName] = true
		if n, err := s.streamNode(ctx, p.Spec.NodeName); err == nil {
			nodes = append(nodes, n)
		}
	}
	usage := s.resourceMetrics.usageOf(ctx, nodes)
	now := metav1.NewTime(s.now())
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: rmGroup + "/v1beta1"}, Items: []metricsv1beta1.PodMetrics{}}
	for _, p := range pods {
		u := usage[p.Spec.NodeName]
		if u == nil {
			continue
		}
		cs, ok := u.pods[p.Namespace+"/"+p.Name]
		if !ok {
			continue
		}
		pm := metricsv1beta1.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: now},
			Timestamp:  metav1.NewTime(u.ts),
			Window:     metav1.Duration{Duration: u.window},
			Containers: []metricsv1beta1.ContainerMetrics{},
		}
		for _, c := range cs {
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.name, Usage: rmResources(c.cpu, c.memory)})
		}
		list.Items = append(list.Items, pm)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	rmAnswer(s, w, r, gr, name, "PodMetrics", list, list.Items)
}

// rmAnswer writes the list, or for a get by name its one item (404 when
// there is none), typed as kind.
func rmAnswer[T any, P interface {
	*T
	runtime.Object
}](s *Server, w http.ResponseWriter, r *http.Request, gr schema.GroupResource, name, kind string, list runtime.Object, items []T) {
	if name == "" {
		rmWrite(w, list)
		return
	}
	if len(items) == 0 {
		s.writeError(w, r, apierrors.NewNotFound(gr, name))
		return
	}
	item := P(&items[0])
	item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: rmGroup, Version: "v1beta1", Kind: kind})
	rmWrite(w, item)
}

// rmResources is usage as metrics-server writes it: CPU in nanocores,
// memory in bytes.
func rmResources(cores, bytes float64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewScaledQuantity(int64(math.Round(cores*1e9)), resource.Nano),
		corev1.ResourceMemory: *resource.NewQuantity(int64(math.Round(bytes)), resource.BinarySI),
	}
}

func rmWrite(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeBytes(w, http.StatusOK, mediaJSON, data)
}
