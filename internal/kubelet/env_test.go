package kubelet

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// mapSources serves env sources from maps.
type mapSources struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
	svcs    []*corev1.Service
}

func (m mapSources) configMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if c, ok := m.cms[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (m mapSources) secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if s, ok := m.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (m mapSources) services(ns string) []*corev1.Service {
	var out []*corev1.Service
	for _, s := range m.svcs {
		if s.Namespace == ns {
			out = append(out, s)
		}
	}
	return out
}

func envString(env []envVar) string {
	var b strings.Builder
	for _, e := range env {
		b.WriteString(e.name + "=" + e.value + ";")
	}
	return b.String()
}

func TestMakeEnv(t *testing.T) {
	src := mapSources{
		cms:     map[string]*corev1.ConfigMap{"ns/cfg": {Data: map[string]string{"color": "blue", "size": "L", "bad=key": "x"}}},
		secrets: map[string]*corev1.Secret{"ns/pw": {Data: map[string][]byte{"password": []byte("s3cret")}}},
		svcs: []*corev1.Service{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "redis-primary"}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.11",
				Ports: []corev1.ServicePort{{Name: "db", Port: 6379, Protocol: corev1.ProtocolTCP}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "headless"}, Spec: corev1.ServiceSpec{ClusterIP: "None"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1",
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere"}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.99"}},
		},
	}
	pod := func(c corev1.Container, links bool) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "web", "tier": "a"}},
			Spec:       corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa", EnableServiceLinks: ptr.To(links), Containers: []corev1.Container{c}},
		}
	}
	for _, tc := range []struct {
		name    string
		c       corev1.Container
		links   bool
		want    []string // substrings of the rendered env, in order
		absent  []string
		wantErr string
	}{
		{
			name: "values and expansion against earlier ones; $$ and unknown refs stay",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "A", Value: "x"}, {Name: "B", Value: "$(A)-y"}, {Name: "C", Value: "$$(A) $(NOPE) $(C)"},
			}},
			want: []string{"A=x;", "B=x-y;", "C=$(A) $(NOPE) $(C);"},
		},
		{
			name: "fieldRefs",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "N", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
				{Name: "L", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "SA", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
				{Name: "HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
				{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
				{Name: "ALL", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
			}},
			want: []string{"N=web;", "NS=ns;", "UID=u1;", "L=web;", "NODE=n1;", "SA=sa;", "HOST=192.168.0.2;", "IP=10.1.0.5;", "IPS=10.1.0.5,fd00::5;",
				"ALL=app=\"web\"\ntier=\"a\";"},
		},
		{
			name: "resourceFieldRef: a limit, rounded up by the divisor; no limit is allocatable",
			c: corev1.Container{
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				Env: []corev1.EnvVar{
					{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
					{Name: "CPUM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}},
					{Name: "MEMREQ", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}}},
					{Name: "MEMLIM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}}},
				}},
			want: []string{"CPU=2;", "CPUM=1500;", "MEMREQ=64;", "MEMLIM=8;"},
		},
		{
			name: "configMap and secret keys; optional missing ones skipped",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "color"}}},
				{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pw"}, Key: "password"}}},
				{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "nope", Optional: ptr.To(true)}}},
				{Name: "OPT2", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k", Optional: ptr.To(true)}}},
			}},
			want:   []string{"COLOR=blue;", "PW=s3cret;"},
			absent: []string{"OPT"},
		},
		{
			name:    "a missing configMap: CreateContainerConfigError's message",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k"}}}}},
			wantErr: `configmap "gone" not found`,
		},
		{
			name:    "a missing key",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pw"}, Key: "user"}}}}},
			wantErr: "couldn't find key user in Secret ns/pw",
		},
		{
			name: "envFrom with a prefix; invalid names skipped; env overrides envFrom",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Optional: ptr.To(true)}}},
				Env: []corev1.EnvVar{{Name: "CFG_size", Value: "XL $(CFG_color)"}},
			},
			want:   []string{"CFG_color=blue;", "CFG_size=XL blue;"},
			absent: []string{"bad=key"},
		},
		{
			name:  "service links: the namespace's services and kubernetes; a defined name wins",
			c:     corev1.Container{Env: []corev1.EnvVar{{Name: "REDIS_PRIMARY_SERVICE_HOST", Value: "mine"}, {Name: "R", Value: "$(REDIS_PRIMARY_SERVICE_PORT)"}}},
			links: true,
			want: []string{"REDIS_PRIMARY_SERVICE_HOST=mine;", "R=6379;", "KUBERNETES_PORT=tcp://10.0.0.1:443;", "KUBERNETES_SERVICE_HOST=10.0.0.1;",
				"REDIS_PRIMARY_PORT=tcp://10.0.0.11:6379;", "REDIS_PRIMARY_PORT_6379_TCP=tcp://10.0.0.11:6379;", "REDIS_PRIMARY_PORT_6379_TCP_ADDR=10.0.0.11;",
				"REDIS_PRIMARY_PORT_6379_TCP_PORT=6379;", "REDIS_PRIMARY_PORT_6379_TCP_PROTO=tcp;", "REDIS_PRIMARY_SERVICE_PORT=6379;", "REDIS_PRIMARY_SERVICE_PORT_DB=6379;"},
			absent: []string{"HEADLESS", "ELSEWHERE"},
		},
		{
			name:   "enableServiceLinks false: only kubernetes",
			links:  false,
			want:   []string{"KUBERNETES_SERVICE_HOST=10.0.0.1;"},
			absent: []string{"REDIS"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Name = "app"
			p := pod(tc.c, tc.links)
			env, err := makeEnv(context.Background(), src, envInput{pod: p, container: &p.Spec.Containers[0], podIPs: []string{"10.1.0.5", "fd00::5"},
				hostIPs: []string{"192.168.0.2"}, allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}})
			if tc.wantErr != "" {
				if _, ok := err.(*configError); !ok || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want config error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := envString(env)
			at := 0
			for _, w := range tc.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Errorf("missing %q (in order) in %q", w, got)
					continue
				}
				at += i + len(w)
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("%q should be absent from %q", a, got)
				}
			}
		})
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for in, want := range map[string]string{
		"plain":       "plain",
		"$(A)":        "1",
		"$(A)$(B)":    "1two",
		"$$(A)":       "$(A)",
		"$$$(A)":      "$1",
		"$(C)":        "$(C)",
		"$(A":         "$(A",
		"$A":          "$A",
		"trailing $":  "trailing $",
		"$()":         "$()",
		"x$(B)y$(A)z": "xtwoy1z",
	} {
		if got := expand(in, lookup); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}
