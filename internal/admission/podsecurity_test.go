package admission

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/auth"
)

// psCluster is the cluster state PodSecurity reads: namespaces and pods.
type psCluster struct {
	namespaces map[string]*corev1.Namespace
	pods       []*corev1.Pod
}

func (c *psCluster) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	return c.namespaces[name], nil
}

func (c *psCluster) GetObject(context.Context, schema.GroupVersionResource, string, string) (runtime.Object, error) {
	return nil, nil
}

func (c *psCluster) ListObjects(_ context.Context, gvr schema.GroupVersionResource, namespace string, _ bool) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, p := range c.pods {
		if gvr.Resource == "pods" && p.Namespace == namespace {
			out = append(out, p)
		}
	}
	return out, nil
}

func psNamespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// psAdmit runs the plugin as the API server does and returns the error
// and the warnings the client would see.
func psAdmit(p *PodSecurity, a *Attributes) ([]string, error) {
	var warnings []string
	ctx := admit.WithWarnings(context.Background(), func(m string) { warnings = append(warnings, m) })
	err := p.Validate(ctx, a)
	return warnings, err
}

var (
	psPodsRes        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	psNamespacesRes  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	psDeploymentsRes = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	psNamespaceGVK   = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
)

func psBarePod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "nginx"}}}}
}

const psRootDetail = `allowPrivilegeEscalation != false (container "root" must set securityContext.allowPrivilegeEscalation=false), ` +
	`unrestricted capabilities (container "root" must set securityContext.capabilities.drop=["ALL"]), ` +
	`runAsNonRoot != true (pod or container "root" must set securityContext.runAsNonRoot=true), ` +
	`seccompProfile (pod or container "root" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`

func TestPodSecurityPods(t *testing.T) {
	cluster := &psCluster{namespaces: map[string]*corev1.Namespace{
		"open":     psNamespace("open", nil),
		"prod":     psNamespace("prod", map[string]string{PodSecurityEnforceLabel: "restricted"}),
		"pinned":   psNamespace("pinned", map[string]string{PodSecurityEnforceLabel: "restricted", PodSecurityEnforceVersionLabel: "v1.99"}),
		"warned":   psNamespace("warned", map[string]string{PodSecurityWarnLabel: "restricted"}),
		"mixed":    psNamespace("mixed", map[string]string{PodSecurityEnforceLabel: "baseline", PodSecurityWarnLabel: "restricted", PodSecurityWarnVersionLabel: "v1.30"}),
		"broken":   psNamespace("broken", map[string]string{PodSecurityEnforceLabel: "bogus"}),
		"kube-sys": psNamespace("kube-sys", map[string]string{PodSecurityEnforceLabel: "restricted"}),
	}}
	plugin := NewPodSecurity(PodSecurityConfig{Namespaces: cluster, Objects: cluster, Exemptions: PodSecurityExemptions{
		Usernames: []string{"system:admin-tool"}, Namespaces: []string{"kube-sys"}, RuntimeClasses: []string{"kata"},
	}})
	user := &auth.User{Name: "alice"}
	hostNet := func(p *corev1.Pod) *corev1.Pod { p.Spec.HostNetwork = true; return p }
	cases := []struct {
		name      string
		attrs     Attributes
		err       string // "" = admitted
		forbidden bool
		warnings  []string
	}{
		{"unlabelled namespace admits anything", Attributes{Namespace: "open", Name: "root", Object: hostNet(psBarePod("open", "root"))}, "", false, nil},
		{"enforce refuses with upstream's message", Attributes{Namespace: "prod", Name: "root", Object: psBarePod("prod", "root")},
			`pods "root" is forbidden: violates PodSecurity "restricted:latest": ` + psRootDetail, true, nil},
		{"the message names the label's version", Attributes{Namespace: "pinned", Name: "root", Object: psBarePod("pinned", "root")},
			`pods "root" is forbidden: violates PodSecurity "restricted:v1.99": ` + psRootDetail, true, nil},
		{"enforce admits a compliant pod", Attributes{Namespace: "prod", Name: "p", Object: psCompliant()}, "", false, nil},
		{"warn admits with a warning", Attributes{Namespace: "warned", Name: "root", Object: psBarePod("warned", "root")},
			"", false, []string{`would violate PodSecurity "restricted:latest": ` + psRootDetail}},
		{"baseline enforced, restricted warned", Attributes{Namespace: "mixed", Name: "root", Object: psBarePod("mixed", "root")},
			"", false, []string{`would violate PodSecurity "restricted:v1.30": ` + psRootDetail}},
		{"a refused pod gets no warning", Attributes{Namespace: "mixed", Name: "root", Object: hostNet(psBarePod("mixed", "root"))},
			`pods "root" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork)`, true, nil},
		{"a bad enforce label fails closed", Attributes{Namespace: "broken", Name: "root", Object: psBarePod("broken", "root")},
			`pods "root" is forbidden: violates PodSecurity "restricted:latest": ` + psRootDetail, true, nil},
		{"exempt namespace", Attributes{Namespace: "kube-sys", Name: "root", Object: psBarePod("kube-sys", "root")}, "", false, nil},
		{"exempt user", Attributes{Namespace: "prod", Name: "root", Object: psBarePod("prod", "root"), User: &auth.User{Name: "system:admin-tool"}}, "", false, nil},
		{"exempt runtime class", Attributes{Namespace: "prod", Name: "root", Object: func() *corev1.Pod {
			p := psBarePod("prod", "root")
			p.Spec.RuntimeClassName = ptr.To("kata")
			return p
		}()}, "", false, nil},
		{"status updates are not checked", Attributes{Operation: Update, Subresource: "status", Namespace: "prod", Name: "root",
			Object: psBarePod("prod", "root"), OldObject: psBarePod("prod", "root")}, "", false, nil},
		{"a label change is not re-checked", Attributes{Operation: Update, Namespace: "prod", Name: "root",
			Object:    func() *corev1.Pod { p := psBarePod("prod", "root"); p.Labels = map[string]string{"a": "b"}; return p }(),
			OldObject: psBarePod("prod", "root")}, "", false, nil},
		{"an image change is re-checked", Attributes{Operation: Update, Namespace: "prod", Name: "root",
			Object:    func() *corev1.Pod { p := psBarePod("prod", "root"); p.Spec.Containers[0].Image = "nginx:2"; return p }(),
			OldObject: psBarePod("prod", "root")},
			`pods "root" is forbidden: violates PodSecurity "restricted:latest": ` + psRootDetail, true, nil},
		{"an added ephemeral container is re-checked", Attributes{Operation: Update, Subresource: "ephemeralcontainers", Namespace: "prod", Name: "p",
			Object: func() *corev1.Pod {
				p := psCompliant()
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, Privileged: ptr.To(true)}}}}
				return p
			}(), OldObject: psCompliant()},
			`pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged (container "debug" must not set securityContext.privileged=true)`, true, nil},
		{"deletes are not checked", Attributes{Operation: Delete, Namespace: "prod", Name: "root", OldObject: psBarePod("prod", "root")}, "", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.attrs
			if a.Operation == "" {
				a.Operation = Create
			}
			a.Resource = psPodsRes
			if a.User == nil {
				a.User = user
			}
			warnings, err := psAdmit(plugin, &a)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Fatalf("error\n got %v\nwant %s", err, tc.err)
			case tc.forbidden && !apierrors.IsForbidden(err):
				t.Fatalf("want a 403, got %#v", err)
			}
			if strings.Join(warnings, "\n") != strings.Join(tc.warnings, "\n") {
				t.Fatalf("warnings\n got %q\nwant %q", warnings, tc.warnings)
			}
		})
	}
}

func TestPodSecurityWorkloads(t *testing.T) {
	cluster := &psCluster{namespaces: map[string]*corev1.Namespace{
		"prod":  psNamespace("prod", map[string]string{PodSecurityEnforceLabel: "restricted"}),
		"quiet": psNamespace("quiet", map[string]string{PodSecurityEnforceLabel: "restricted", PodSecurityWarnLabel: "privileged"}),
	}}
	plugin := NewPodSecurity(PodSecurityConfig{Namespaces: cluster, Objects: cluster})
	deployment := func(ns string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: psBarePod(ns, "root").Spec}}}
	}
	warnings, err := psAdmit(plugin, &Attributes{Operation: Create, Resource: psDeploymentsRes, Namespace: "prod", Name: "web", Object: deployment("prod")})
	if err != nil {
		t.Fatalf("a workload must never be refused: %v", err)
	}
	if want := `would violate PodSecurity "restricted:latest": ` + psRootDetail; len(warnings) != 1 || warnings[0] != want {
		t.Fatalf("warnings %q, want %q", warnings, want)
	}
	if warnings, err := psAdmit(plugin, &Attributes{Operation: Create, Resource: psDeploymentsRes, Namespace: "quiet", Name: "web", Object: deployment("quiet")}); err != nil || len(warnings) > 0 {
		t.Fatalf("warn=privileged: %v %q", err, warnings)
	}
	if warnings, err := psAdmit(plugin, &Attributes{Operation: Update, Resource: psDeploymentsRes, Subresource: "scale", Namespace: "prod", Name: "web",
		Object: deployment("prod")}); err != nil || len(warnings) > 0 {
		t.Fatalf("scale: %v %q", err, warnings)
	}
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "rc"}}
	if warnings, err := psAdmit(plugin, &Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"},
		Namespace: "prod", Name: "rc", Object: rc}); err != nil || len(warnings) > 0 {
		t.Fatalf("template-less controller: %v %q", err, warnings)
	}
}

func TestPodSecurityNamespaceLabels(t *testing.T) {
	owned := func(name, uid string) *corev1.Pod {
		p := psBarePod("prod", name)
		p.OwnerReferences = []metav1.OwnerReference{{UID: apitypes.UID(uid), Controller: ptr.To(true), Kind: "ReplicaSet", Name: "rs"}}
		return p
	}
	hostNet := psBarePod("prod", "net")
	hostNet.Spec.HostNetwork = true
	good := psCompliant()
	good.Namespace = "prod"
	cluster := &psCluster{pods: []*corev1.Pod{owned("web-2", "rs1"), owned("web-1", "rs1"), owned("web-3", "rs1"), psBarePod("prod", "solo"), hostNet, good, psBarePod("other", "x")}}
	plugin := NewPodSecurity(PodSecurityConfig{Namespaces: cluster, Objects: cluster, Exemptions: PodSecurityExemptions{Namespaces: []string{"kube-sys"}}})
	update := func(name string, old, next map[string]string) ([]string, error) {
		return psAdmit(plugin, &Attributes{Operation: Update, Kind: psNamespaceGVK, Resource: psNamespacesRes, Name: name,
			Object: psNamespace(name, next), OldObject: psNamespace(name, old)})
	}
	restricted := map[string]string{PodSecurityEnforceLabel: "restricted"}

	t.Run("tightening warns about existing pods", func(t *testing.T) {
		warnings, err := update("prod", nil, restricted)
		if err != nil {
			t.Fatal(err)
		}
		reasons := "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
		want := []string{
			`existing pods in namespace "prod" violate the new PodSecurity enforce level "restricted:latest"`,
			"net: host namespaces, " + reasons,
			"solo (and 3 other pods): " + reasons,
		}
		if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
			t.Fatalf("warnings\n got %q\nwant %q", warnings, want)
		}
	})
	t.Run("the check stops at its cap and says so", func(t *testing.T) {
		capped := NewPodSecurity(PodSecurityConfig{Namespaces: cluster, Objects: cluster})
		capped.maxPodsToCheck = 2
		var warnings []string
		ctx := admit.WithWarnings(context.Background(), func(m string) { warnings = append(warnings, m) })
		err := capped.Validate(ctx, &Attributes{Operation: Update, Kind: psNamespaceGVK, Resource: psNamespacesRes, Name: "prod",
			Object: psNamespace("prod", restricted), OldObject: psNamespace("prod", nil)})
		// One pod per controller first: web-2 (first of rs1), then solo.
		if err != nil || len(warnings) < 1 || warnings[0] != "new PodSecurity enforce level only checked against the first 2 of 6 existing pods" {
			t.Fatalf("%v %q", err, warnings)
		}
		if last := warnings[len(warnings)-1]; last != "solo (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile" {
			t.Fatalf("last warning %q", last)
		}
	})
	t.Run("relaxing, or an exempt namespace, checks nothing", func(t *testing.T) {
		for _, c := range []struct{ name, old, next string }{{"prod", "restricted", "baseline"}, {"prod", "restricted", "privileged"}, {"kube-sys", "", "restricted"}} {
			old := map[string]string{}
			if c.old != "" {
				old[PodSecurityEnforceLabel] = c.old
			}
			if warnings, err := update(c.name, old, map[string]string{PodSecurityEnforceLabel: c.next}); err != nil || len(warnings) > 0 {
				t.Fatalf("%+v: %v %q", c, err, warnings)
			}
		}
	})
	t.Run("bad labels are a 422", func(t *testing.T) {
		_, err := update("prod", nil, map[string]string{PodSecurityEnforceLabel: "strict"})
		want := `Namespace "prod" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
		_, err = psAdmit(plugin, &Attributes{Operation: Create, Kind: psNamespaceGVK, Resource: psNamespacesRes, Name: "new",
			Object: psNamespace("new", map[string]string{PodSecurityWarnVersionLabel: "1.30"})})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `Invalid value: "1.30": must be "latest" or "v1.x"`) {
			t.Fatalf("create: %v", err)
		}
	})
	t.Run("an already-bad label does not block other updates", func(t *testing.T) {
		bad := map[string]string{PodSecurityAuditLabel: "x"}
		next := map[string]string{PodSecurityAuditLabel: "x", "team": "a"}
		if _, err := update("prod", bad, next); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPodSecurityConfiguration(t *testing.T) {
	cfg, err := ParsePodSecurityConfiguration([]byte(`
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
  enforce-version: v1.30
  warn: restricted
exemptions:
  usernames: [system:serviceaccount:ci:builder]
  runtimeClasses: [kata]
  namespaces: [kube-system]
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Defaults.Enforce != "baseline" || cfg.Defaults.EnforceVersion != "v1.30" || cfg.Exemptions.Namespaces[0] != "kube-system" || cfg.Exemptions.RuntimeClasses[0] != "kata" {
		t.Fatalf("parsed %+v", cfg)
	}
	p := NewPodSecurity(cfg)
	if want := (psPolicy{enforce: psLV(psBaseline, "v1.30"), audit: psLV(psPrivileged, "latest"), warn: psLV(psRestricted, "latest")}); p.defaults != want {
		t.Fatalf("defaults %+v, want %+v", p.defaults, want)
	}
	if _, err := ParsePodSecurityConfiguration([]byte("apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\ndefaults:\n  audit: loud\n")); err == nil ||
		!strings.Contains(err.Error(), `defaults.audit: Invalid value: "loud": must be one of privileged, baseline, restricted`) {
		t.Fatalf("bad default: %v", err)
	}
	if _, err := ParsePodSecurityConfiguration([]byte("apiVersion: v1\nkind: ConfigMap\n")); err == nil {
		t.Fatal("a ConfigMap is not a PodSecurityConfiguration")
	}
}
