package kubelet

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A container's environment, as upstream's kubelet makes it:
//
//  1. envFrom, in order: every key of the ConfigMap or Secret, under
//     its prefix (keys that are not valid names are skipped);
//  2. env, in order: a value (with $(VAR) references expanded against
//     what is defined so far and the service variables), or valueFrom a
//     field of the pod, a resource of the container, a ConfigMap key or
//     a Secret key (optional ones may be missing);
//  3. service variables (FOO_SERVICE_HOST, FOO_PORT_80_TCP, ...) of the
//     services of the pod's namespace when enableServiceLinks, and of
//     the "kubernetes" service of default always — unless a variable of
//     that name is already defined.
//
// A missing ConfigMap, Secret or key that is not optional fails the
// container's creation: CreateContainerConfigError.

// configError is a container config the kubelet cannot make
// (CreateContainerConfigError).
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func configErrorf(format string, a ...any) error { return &configError{fmt.Sprintf(format, a...)} }

// envSources reads what env refers to. The kubelet's reads the API
// through its client; tests give maps.
type envSources interface {
	configMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	services(namespace string) []*corev1.Service
}

// envVar is one variable, in order.
type envVar struct{ name, value string }

// envInput is what a container's environment is made of besides the
// sources.
type envInput struct {
	pod         *corev1.Pod
	container   *corev1.Container
	podIPs      []string
	hostIPs     []string
	allocatable corev1.ResourceList // limits of containers that set none
}

// makeEnv is the container's environment.
func makeEnv(ctx context.Context, src envSources, in envInput) ([]envVar, error) {
	pod, c := in.pod, in.container
	serviceEnv := serviceEnvVars(src, pod)
	var out []envVar
	defined := map[string]int{} // name → index in out
	set := func(name, value string) {
		if i, ok := defined[name]; ok {
			out[i].value = value
			return
		}
		defined[name] = len(out)
		out = append(out, envVar{name, value})
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			ref := from.ConfigMapRef
			cm, err := src.configMap(ctx, pod.Namespace, ref.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ref.Optional != nil && *ref.Optional {
					continue
				}
				return nil, sourceError("configmap", ref.Name, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			ref := from.SecretRef
			s, err := src.secret(ctx, pod.Namespace, ref.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ref.Optional != nil && *ref.Optional {
					continue
				}
				return nil, sourceError("secret", ref.Name, err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := from.Prefix + k
			if !validEnvName(name) {
				continue // upstream skips them with an event
			}
			set(name, data[k])
		}
	}
	lookup := func(name string) (string, bool) {
		if i, ok := defined[name]; ok {
			return out[i].value, true
		}
		v, ok := serviceEnv[name]
		return v, ok
	}
	for _, e := range c.Env {
		v := e.Value
		switch {
		case v != "":
			v = expand(v, lookup)
		case e.ValueFrom != nil:
			var err error
			var skip bool
			v, skip, err = envValueFrom(ctx, src, in, e.ValueFrom)
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
		}
		set(e.Name, v)
	}
	names := make([]string, 0, len(serviceEnv))
	for n := range serviceEnv {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := defined[n]; !ok {
			out = append(out, envVar{n, serviceEnv[n]})
		}
	}
	return out, nil
}

func sourceError(kind, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return configErrorf("%s %q not found", kind, name)
	}
	return configErrorf("couldn't get %s %s: %v", kind, name, err)
}

// envValueFrom resolves one valueFrom; skip is an optional key missing.
func envValueFrom(ctx context.Context, src envSources, in envInput, from *corev1.EnvVarSource) (string, bool, error) {
	pod := in.pod
	switch {
	case from.FieldRef != nil:
		v, err := podFieldValue(pod, from.FieldRef.FieldPath, in.podIPs, in.hostIPs)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := resourceFieldValue(pod, in.container, from.ResourceFieldRef, in.allocatable)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := src.configMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, sourceError("configmap", ref.Name, err)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, false, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), false, nil
		}
		if optional {
			return "", true, nil
		}
		return "", false, configErrorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := src.secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, sourceError("secret", ref.Name, err)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), false, nil
		}
		if optional {
			return "", true, nil
		}
		return "", false, configErrorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
	}
	return "", false, nil
}

// podFieldValue is a downward-API field of the pod (env and volumes).
func podFieldValue(pod *corev1.Pod, field string, podIPs, hostIPs []string) (string, error) {
	if k, ok := strings.CutPrefix(field, "metadata.labels['"); ok && strings.HasSuffix(k, "']") {
		return pod.Labels[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(field, "metadata.annotations['"); ok && strings.HasSuffix(k, "']") {
		return pod.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	first := func(l []string) string {
		if len(l) > 0 {
			return l[0]
		}
		return ""
	}
	switch field {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return first(hostIPs), nil
	case "status.hostIPs":
		return strings.Join(hostIPs, ","), nil
	case "status.podIP":
		return first(podIPs), nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return "", configErrorf("unsupported fieldPath: %s", field)
}

// formatMap is the downward API's rendering of labels and annotations:
// key="value" lines, sorted by key.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%s", k, strconv.Quote(m[k]))
	}
	return b.String()
}

// resourceFieldValue is a container's request or limit divided by the
// divisor and rounded up; a limit not set is the node's allocatable.
func resourceFieldValue(pod *corev1.Pod, self *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	c := self
	if ref.ContainerName != "" {
		c = nil
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == ref.ContainerName {
					c = &list[i]
				}
			}
		}
		if c == nil {
			return "", configErrorf("container %q not found for resourceFieldRef", ref.ContainerName)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", configErrorf("unsupported container resource: %s", ref.Resource)
	}
	var q resource.Quantity
	var set bool
	switch kind {
	case "limits":
		q, set = c.Resources.Limits[corev1.ResourceName(name)]
		if !set {
			q, set = allocatable[corev1.ResourceName(name)]
		}
	case "requests":
		q, set = c.Resources.Requests[corev1.ResourceName(name)]
	default:
		return "", configErrorf("unsupported container resource: %s", ref.Resource)
	}
	if !set {
		return "0", nil
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// validEnvName: a C identifier-ish name; upstream allows any printable
// ASCII but '='.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < ' ' || r > '~' || r == '=' {
			return false
		}
	}
	return true
}

// serviceEnvVars are the Docker-link style variables of the services a
// pod sees.
func serviceEnvVars(src envSources, pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	if src == nil {
		return out
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	var svcs []*corev1.Service
	if links {
		svcs = src.services(pod.Namespace)
	}
	if pod.Namespace != metav1.NamespaceDefault || !links {
		for _, s := range src.services(metav1.NamespaceDefault) {
			if s.Name == "kubernetes" {
				svcs = append(svcs, s)
			}
		}
	}
	slices.SortFunc(svcs, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range svcs {
		ip := s.Spec.ClusterIP
		if ip == "" || ip == corev1.ClusterIPNone {
			continue
		}
		prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		out[prefix+"_SERVICE_HOST"] = ip
		if len(s.Spec.Ports) == 0 {
			continue
		}
		out[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				out[prefix+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))] = strconv.Itoa(int(p.Port))
			}
		}
		hostPort := func(p corev1.ServicePort) string { return net.JoinHostPort(ip, strconv.Itoa(int(p.Port))) }
		proto := func(p corev1.ServicePort) string {
			if p.Protocol == "" {
				return "tcp"
			}
			return strings.ToLower(string(p.Protocol))
		}
		first := s.Spec.Ports[0]
		out[prefix+"_PORT"] = proto(first) + "://" + hostPort(first)
		for _, p := range s.Spec.Ports {
			base := prefix + "_PORT_" + strconv.Itoa(int(p.Port)) + "_" + strings.ToUpper(proto(p))
			out[base] = proto(p) + "://" + hostPort(p)
			out[base+"_PROTO"] = proto(p)
			out[base+"_PORT"] = strconv.Itoa(int(p.Port))
			out[base+"_ADDR"] = ip
		}
	}
	return out
}

// expand replaces $(VAR) in s with lookup's value; $$ is a literal $ and
// a reference that does not resolve stays as written, as upstream's
// expansion.Expand.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// apiEnvSources reads ConfigMaps and Secrets from the API and services
// from the kubelet's informer.
type apiEnvSources struct{ k *Kubelet }

func (k *Kubelet) envSources() envSources { return apiEnvSources{k} }

func (s apiEnvSources) configMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return s.k.client().CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s apiEnvSources) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return s.k.client().CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s apiEnvSources) services(namespace string) []*corev1.Service { return s.k.services(namespace) }
