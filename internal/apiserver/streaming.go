package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// The node-backed subresources: pods/log, exec, attach, portforward and
// proxy, services/proxy and nodes/proxy. The API server checks what it
// can answer alone, as upstream does (the pod exists, the container is
// one of the pod's, the options are in range, the pod is on a node), and
// then hands the request to the node's kubelet through a NodeConnector.
// Until the node agent serves these, the connector answers with upstream's
// shape for an unreachable kubelet: a 500 whose message is the request
// the server would have made and why it could not.

// NodeConnector forwards a checked request to a node. Implementations
// must be safe for concurrent use; they write the whole answer to w,
// including errors (use WriteStatus for API errors).
type NodeConnector interface {
	// Kubelet serves a request to the kubelet of node at path (e.g.
	// /containerLogs/{ns}/{pod}/{container}) with the given query.
	Kubelet(w http.ResponseWriter, r *http.Request, node *corev1.Node, path string, query url.Values)
	// Pod serves a request to a pod (or a service endpoint) at target,
	// scheme://ip[:port]/path?query: the pod and service proxies. node is
	// the node the pod runs on, nil when unknown.
	Pod(w http.ResponseWriter, r *http.Request, node *corev1.Node, target *url.URL)
}

// streamKubeletPort is where a kubelet serves when its node reports no port.
const streamKubeletPort = 10250

// streamNoNode is the connector until the node agent serves streams.
type streamNoNode struct{ s *Server }

func (c streamNoNode) Kubelet(w http.ResponseWriter, r *http.Request, node *corev1.Node, path string, query url.Values) {
	u := url.URL{Scheme: "https", Host: streamKubeletHost(node), Path: path, RawQuery: query.Encode()}
	c.s.writeError(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Message: fmt.Sprintf("%s %q: the kubelet of node %q does not serve this request (logs, exec, attach, port-forward and proxy need the node agent)",
			streamMethod(r), u.String(), node.Name)}})
}

func (c streamNoNode) Pod(w http.ResponseWriter, r *http.Request, _ *corev1.Node, target *url.URL) {
	c.s.writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach %s: the API server has no route to the pod network", target)))
}

// streamMethod names the request the server would make, as the Go HTTP
// client's errors do ("Get", "Post").
func streamMethod(r *http.Request) string {
	m := strings.ToLower(r.Method)
	return strings.ToUpper(m[:1]) + m[1:]
}

// streamKubeletHost is host:port of a node's kubelet, from its addresses in
// the order upstream's --kubelet-preferred-address-types defaults to.
func streamKubeletHost(node *corev1.Node) string {
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port == 0 {
		port = streamKubeletPort
	}
	host := node.Name
	for _, t := range []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP} {
		if a := streamNodeAddress(node, t); a != "" {
			host = a
			break
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func streamNodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}

// SetNodeConnector installs what forwards node-backed requests (the node
// agent's kubelet dialer). It must be called before the server serves.
func (s *Server) SetNodeConnector(c NodeConnector) { s.nodes = c }

func (s *Server) nodeConnector() NodeConnector {
	if s.nodes != nil {
		return s.nodes
	}
	return streamNoNode{s: s}
}

// isProxyPath reports a proxy request, whose path goes on past the
// subresource: /api/v1/namespaces/{ns}/pods/{name}/proxy/{path...}.
func isProxyPath(info *requestInfo) bool {
	return len(info.Parts) > 3 && info.Parts[2] == "proxy" && info.APIGroup == "" &&
		(info.Resource == "pods" || info.Resource == "services" || info.Resource == "nodes")
}

// routePodSubresource serves the subresources that live in this file and
// in eviction.go and ephemeral.go; false means none matched.
func (h *resourceHandler) routePodSubresource(w http.ResponseWriter, r *http.Request, info *requestInfo, namespace string) bool {
	if h.res.Group != "" {
		return false
	}
	sub, resource := info.Subresource, h.res.Resource
	var allowed []string
	switch {
	case resource == "pods" && sub == "eviction":
		allowed = []string{http.MethodPost}
	case resource == "pods" && sub == "ephemeralcontainers":
		allowed = []string{http.MethodGet, http.MethodPut, http.MethodPatch}
	case resource == "pods" && sub == "log":
		allowed = []string{http.MethodGet}
	case resource == "pods" && (sub == "exec" || sub == "attach" || sub == "portforward"):
		allowed = []string{http.MethodGet, http.MethodPost}
	case sub == "proxy" && (resource == "pods" || resource == "services" || resource == "nodes"):
		allowed = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}
	default:
		return false
	}
	info.served = true
	if !slices.Contains(allowed, r.Method) {
		h.s.writeError(w, r, methodNotAllowed(r, info))
		return true
	}
	switch sub {
	case "eviction":
		h.evict(w, r, namespace, info.Name)
	case "ephemeralcontainers":
		h.ephemeralContainers(w, r, namespace, info.Name)
	case "log":
		h.streamLog(w, r, namespace, info.Name)
	case "exec", "attach", "portforward":
		h.streamExec(w, r, info, namespace)
	case "proxy":
		h.streamProxy(w, r, info, namespace)
	}
	return true
}

// streamContainer resolves the container a request names: the only one when
// it names none, an error listing the choices when there are several.
func streamContainer(pod *corev1.Pod, container string) (string, error) {
	if container == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		}
		var names []string
		for _, c := range pod.Spec.InitContainers {
			names = append(names, c.Name)
		}
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		for _, c := range pod.Spec.EphemeralContainers {
			names = append(names, c.Name)
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
	}
	if !streamHasContainer(pod, container) {
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
	}
	return container, nil
}

func streamHasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// streamLogOptions reads PodLogOptions from the query and checks them as
// upstream does.
func streamLogOptions(q url.Values, name string) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{Container: q.Get("container")}
	var errs field.ErrorList
	boolParam := func(key string, into *bool) {
		if v := q.Get(key); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, field.Invalid(field.NewPath(key), v, err.Error()))
			}
			*into = b
		}
	}
	intParam := func(key string) *int64 {
		v := q.Get(key)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(key), v, err.Error()))
			return nil
		}
		return &n
	}
	boolParam("follow", &opts.Follow)
	boolParam("previous", &opts.Previous)
	boolParam("timestamps", &opts.Timestamps)
	boolParam("insecureSkipTLSVerifyBackend", &opts.InsecureSkipTLSVerifyBackend)
	opts.SinceSeconds, opts.TailLines, opts.LimitBytes = intParam("sinceSeconds"), intParam("tailLines"), intParam("limitBytes")
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath("sinceTime"), v, err.Error()))
		} else {
			mt := metav1.NewTime(t)
			opts.SinceTime = &mt
		}
	}
	if v := q.Get("stream"); v != "" {
		opts.Stream = &v
	}
	if len(errs) > 0 {
		return nil, apierrors.NewBadRequest(errs.ToAggregate().Error())
	}
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
	}
	if s := opts.Stream; s != nil {
		switch *s {
		case corev1.LogStreamStdout, corev1.LogStreamStderr, corev1.LogStreamAll:
			if *s != corev1.LogStreamAll && opts.TailLines != nil {
				errs = append(errs, field.Forbidden(field.NewPath(""), "`tailLines` and specific `stream` are mutually exclusive for now"))
			}
		default:
			errs = append(errs, field.NotSupported(field.NewPath("stream"), *s, []string{corev1.LogStreamStdout, corev1.LogStreamStderr, corev1.LogStreamAll}))
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	return opts, nil
}

// streamLog serves GET pods/{name}/log. A pod on no node has no logs yet:
// the answer is empty, as upstream's.
func (h *resourceHandler) streamLog(w http.ResponseWriter, r *http.Request, namespace, name string) {
	opts, err := streamLogOptions(r.URL.Query(), name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	pod, err := h.streamPod(r.Context(), namespace, name)
	if err == nil {
		opts.Container, err = streamContainer(pod, opts.Container)
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if pod.Spec.NodeName == "" {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		return
	}
	node, err := h.s.streamNode(r.Context(), pod.Spec.NodeName)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	q := url.Values{}
	for _, k := range []string{"follow", "previous", "timestamps", "sinceSeconds", "sinceTime", "tailLines", "limitBytes", "stream"} {
		if v := r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	h.s.nodeConnector().Kubelet(w, r, node, fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, opts.Container), q)
}

// streamExec serves exec, attach and portforward: both the SPDY form
// (POST) and the WebSocket form (GET). A WebSocket upgrade arrives as a
// GET, but it writes to the pod as much as a POST does, so it also needs
// the create verb, as upstream checks.
func (h *resourceHandler) streamExec(w http.ResponseWriter, r *http.Request, info *requestInfo, namespace string) {
	if r.Method == http.MethodGet {
		create := *info
		create.Verb = "create"
		if err := h.s.authorize(r, requestUser(r), &create); err != nil {
			h.s.writeError(w, r, err)
			return
		}
	}
	name, sub := info.Name, info.Subresource
	q := r.URL.Query()
	pod, err := h.streamPod(r.Context(), namespace, name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	path := "/portForward/" + pod.Namespace + "/" + pod.Name
	if sub != "portforward" {
		container, err := streamContainer(pod, q.Get("container"))
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		path = "/" + sub + "/" + pod.Namespace + "/" + pod.Name + "/" + container
	} else {
		for _, p := range q["ports"] {
			for _, s := range strings.Split(p, ",") {
				if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16); err != nil || n == 0 {
					h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid port %q: must be between 1 and 65535, inclusive", s)))
					return
				}
			}
		}
	}
	if pod.Spec.NodeName == "" {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", name)))
		return
	}
	node, err := h.s.streamNode(r.Context(), pod.Spec.NodeName)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	q.Del("container")
	h.s.nodeConnector().Kubelet(w, r, node, path, q)
}

// proxy serves pods/{name}[:port]/proxy/{path}, services/{name}[:port]/proxy
// and nodes/{name}[:port]/proxy.
func (h *resourceHandler) streamProxy(w http.ResponseWriter, r *http.Request, info *requestInfo, namespace string) {
	name, port, _ := strings.Cut(info.Name, ":")
	// A scheme may prefix the name: https:web:443.
	scheme := "http"
	if s, rest, ok := strings.Cut(info.Name, ":"); ok && (s == "http" || s == "https") {
		scheme = s
		name, port, _ = strings.Cut(rest, ":")
	}
	path := "/" + strings.Join(info.Parts[min(3, len(info.Parts)):], "/")
	target := func(addr string) *url.URL {
		return &url.URL{Scheme: scheme, Host: addr, Path: path, RawQuery: r.URL.RawQuery}
	}
	ctx := r.Context()
	switch h.res.Resource {
	case "nodes":
		node, err := h.s.streamNode(ctx, name)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		h.s.nodeConnector().Kubelet(w, r, node, path, r.URL.Query())
	case "pods":
		pod, err := h.streamPod(ctx, namespace, name)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		if pod.Status.PodIP == "" {
			h.s.writeError(w, r, apierrors.NewBadRequest("address not allowed"))
			return
		}
		addr := pod.Status.PodIP
		if port != "" {
			addr = net.JoinHostPort(addr, port)
		}
		h.s.nodeConnector().Pod(w, r, h.s.podNode(ctx, pod.Spec.NodeName), target(addr))
	case "services":
		addr, nodeName, err := h.streamServiceEndpoint(ctx, namespace, name, port)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		h.s.nodeConnector().Pod(w, r, h.s.podNode(ctx, nodeName), target(addr))
	}
}

// streamServiceEndpoint picks a ready endpoint of a service (port by name or
// number, or the service's only port), or says there is none, with
// upstream's 503.
func (h *resourceHandler) streamServiceEndpoint(ctx context.Context, namespace, name, port string) (addr, nodeName string, err error) {
	obj, _, err := h.getStored(ctx, namespace, name)
	if err != nil {
		return "", "", err
	}
	svc := obj.(*corev1.Service)
	// The port names a service port, by name or number; its endpoints
	// carry that port's name (the target port may be another number).
	portName, found := "", port == ""
	for _, sp := range svc.Spec.Ports {
		if port == "" && len(svc.Spec.Ports) == 1 || sp.Name == port || strconv.Itoa(int(sp.Port)) == port {
			portName, found = sp.Name, true
			break
		}
	}
	if !found {
		return "", "", apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	sh := h.s.handlers[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	if sh != nil {
		if _, err := sh.cache.freshRevision(ctx); err != nil {
			return "", "", toStatusError(err, sh.gr, "")
		}
		items, _ := sh.cache.list(sh.prefix(namespace), nil)
		for _, o := range items {
			slice := o.obj.(*discoveryv1.EndpointSlice)
			if slice.Labels[discoveryv1.LabelServiceName] != svc.Name {
				continue
			}
			for _, ep := range slice.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
					continue
				}
				for _, p := range slice.Ports {
					if port == "" || ptrString(p.Name) == portName {
						if p.Port != nil {
							return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port))), ptrString(ep.NodeName), nil
						}
					}
				}
			}
		}
	}
	return "", "", apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// podNode is the node a proxied pod runs on, nil when unknown.
func (s *Server) podNode(ctx context.Context, name string) *corev1.Node {
	if name == "" {
		return nil
	}
	n, err := s.streamNode(ctx, name)
	if err != nil {
		return nil
	}
	return n
}

func (h *resourceHandler) streamPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, _, err := h.getStored(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// streamNode reads a node from the nodes cache.
func (s *Server) streamNode(ctx context.Context, name string) (*corev1.Node, error) {
	nh := s.handlers[corev1.SchemeGroupVersion.WithResource("nodes")]
	if nh == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
	}
	obj, _, err := nh.getStored(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

// streamSubresources are the discovery entries of the subresources served
// by this file, eviction.go and ephemeral.go, as upstream lists them.
func streamSubresources(res *registry.Resource) []subresource {
	if res.Group != "" {
		return nil
	}
	proxyVerbs := []string{"create", "delete", "get", "patch", "update"}
	core := func(kind string) metav1.GroupVersionKind { return metav1.GroupVersionKind{Version: "v1", Kind: kind} }
	switch res.Resource {
	case "pods":
		return []subresource{
			{"attach", core("PodAttachOptions"), []string{"create", "get"}},
			{"ephemeralcontainers", core("Pod"), []string{"get", "patch", "update"}},
			{"eviction", metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, []string{"create"}},
			{"exec", core("PodExecOptions"), []string{"create", "get"}},
			{"log", core("Pod"), []string{"get"}},
			{"portforward", core("PodPortForwardOptions"), []string{"create", "get"}},
			{"proxy", core("PodProxyOptions"), proxyVerbs},
		}
	case "services":
		return []subresource{{"proxy", core("ServiceProxyOptions"), proxyVerbs}}
	case "nodes":
		return []subresource{{"proxy", core("NodeProxyOptions"), proxyVerbs}}
	}
	return nil
}
