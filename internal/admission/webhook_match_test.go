package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/cel"
)

var (
	whPodsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	whPodKind       = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	whNamespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	whNodesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

func whRule(ops []admissionregistrationv1.OperationType, groups, versions, resources []string, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{Operations: ops,
		Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources, Scope: &scope}}
}

func whPodAttrs(op Operation, ns string, lbls map[string]string) *Attributes {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: lbls}}
	return &Attributes{Operation: op, Kind: whPodKind, Resource: whPodsGVR, Namespace: ns, Name: "web", Object: pod}
}

func TestWebhookRulesMatch(t *testing.T) {
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	core, v1, star := []string{""}, []string{"v1"}, []string{"*"}
	ns := admissionregistrationv1.NamespacedScope
	cluster := admissionregistrationv1.ClusterScope
	anyScope := admissionregistrationv1.AllScopes
	podCreate := whPodAttrs(Create, "default", nil)
	podStatus := whPodAttrs(Update, "default", nil)
	podStatus.Subresource = "status"
	node := &Attributes{Operation: Create, Resource: whNodesGVR, Name: "n1"}
	namespace := &Attributes{Operation: Create, Resource: whNamespacesGVR, Name: "prod"}
	for _, tc := range []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		a    *Attributes
		want bool
	}{
		{"exact", whRule(create, core, v1, []string{"pods"}, anyScope), podCreate, true},
		{"other operation", whRule([]admissionregistrationv1.OperationType{admissionregistrationv1.Update}, core, v1, []string{"pods"}, anyScope), podCreate, false},
		{"operation wildcard", whRule(all, core, v1, []string{"pods"}, anyScope), podCreate, true},
		{"other group", whRule(create, []string{"apps"}, v1, []string{"pods"}, anyScope), podCreate, false},
		{"group and version wildcards", whRule(create, star, star, []string{"pods"}, anyScope), podCreate, true},
		{"other version", whRule(create, core, []string{"v2"}, []string{"pods"}, anyScope), podCreate, false},
		{"resource wildcard", whRule(create, core, v1, star, anyScope), podCreate, true},
		{"resource wildcard skips subresources", whRule(all, core, v1, star, anyScope), podStatus, false},
		{"main resource rule skips subresources", whRule(all, core, v1, []string{"pods"}, anyScope), podStatus, false},
		{"pods/* takes subresources", whRule(all, core, v1, []string{"pods/*"}, anyScope), podStatus, true},
		// As upstream's matcher has it, "*" as subresource includes none.
		{"pods/* takes the main resource too", whRule(all, core, v1, []string{"pods/*"}, anyScope), podCreate, true},
		{"pods/status", whRule(all, core, v1, []string{"pods/status"}, anyScope), podStatus, true},
		{"*/status", whRule(all, core, v1, []string{"*/status"}, anyScope), podStatus, true},
		{"*/* takes everything", whRule(all, core, v1, []string{"*/*"}, anyScope), podCreate, true},
		{"namespaced scope, namespaced object", whRule(create, core, v1, star, ns), podCreate, true},
		{"namespaced scope, cluster object", whRule(create, core, v1, star, ns), node, false},
		{"cluster scope, cluster object", whRule(create, core, v1, star, cluster), node, true},
		{"cluster scope, namespaced object", whRule(create, core, v1, star, cluster), podCreate, false},
		{"a namespace is cluster-scoped", whRule(create, core, v1, star, cluster), namespace, true},
		{"a namespace is not namespaced", whRule(create, core, v1, star, ns), namespace, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &whHook{name: "h.example.com", rules: []admissionregistrationv1.RuleWithOperations{tc.rule},
				nsSelector: labels.Everything(), objSelector: labels.Everything(), matchPolicy: admissionregistrationv1.Exact}
			inv, err := whMatch(h, tc.a, func() (labels.Set, bool, error) { return nil, false, nil }, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := inv != nil; got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWebhookSelectorsMatch(t *testing.T) {
	rules := []admissionregistrationv1.RuleWithOperations{whRule([]admissionregistrationv1.OperationType{"*"}, []string{"*"}, []string{"*"}, []string{"*"}, admissionregistrationv1.AllScopes)}
	prodOnly := labels.SelectorFromSet(labels.Set{"env": "prod"})
	appWeb := labels.SelectorFromSet(labels.Set{"app": "web"})
	nsProd := func() (labels.Set, bool, error) { return labels.Set{"env": "prod"}, true, nil }
	nsDev := func() (labels.Set, bool, error) { return labels.Set{"env": "dev"}, true, nil }
	clusterScoped := func() (labels.Set, bool, error) { return nil, false, nil }
	nsBroken := func() (labels.Set, bool, error) { return nil, true, errors.New("etcd is down") }

	update := whPodAttrs(Update, "default", map[string]string{"app": "db"})
	update.OldObject = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}}
	for _, tc := range []struct {
		name    string
		nsSel   labels.Selector
		objSel  labels.Selector
		a       *Attributes
		ns      whNamespaceLabels
		want    bool
		wantErr string
	}{
		{"namespace selected", prodOnly, labels.Everything(), whPodAttrs(Create, "p", nil), nsProd, true, ""},
		{"namespace not selected", prodOnly, labels.Everything(), whPodAttrs(Create, "d", nil), nsDev, false, ""},
		{"cluster-scoped objects ignore namespaceSelector", prodOnly, labels.Everything(),
			&Attributes{Operation: Create, Resource: whNodesGVR, Name: "n1"}, clusterScoped, true, ""},
		{"namespace unreadable", prodOnly, labels.Everything(), whPodAttrs(Create, "p", nil), nsBroken, false, "etcd is down"},
		{"empty namespaceSelector never reads the namespace", labels.Everything(), labels.Everything(), whPodAttrs(Create, "p", nil), nsBroken, true, ""},
		{"object selected", labels.Everything(), appWeb, whPodAttrs(Create, "p", map[string]string{"app": "web"}), nsProd, true, ""},
		{"object not selected", labels.Everything(), appWeb, whPodAttrs(Create, "p", map[string]string{"app": "db"}), nsProd, false, ""},
		{"old object selected", labels.Everything(), appWeb, update, nsProd, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &whHook{name: "h.example.com", rules: rules, nsSelector: tc.nsSel, objSelector: tc.objSel}
			inv, err := whMatch(h, tc.a, tc.ns, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := inv != nil; got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
		})
	}
}

// The labels a namespaceSelector judges: the namespace's, or a
// Namespace's own.
func TestWebhookNamespaceLabels(t *testing.T) {
	b := newWHBase(WebhookConfig{Namespaces: namespaces{
		"prod": {ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}},
	}}, validatingWebhookConfigurationsGVR, false)
	newNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"env": "new"}}}
	oldNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"env": "old"}}}
	for _, tc := range []struct {
		name   string
		a      *Attributes
		want   string
		wantOK bool
		err    bool
	}{
		{"pod in prod", whPodAttrs(Create, "prod", nil), "prod", true, false},
		{"pod in a missing namespace", whPodAttrs(Create, "gone", nil), "", true, true},
		{"namespace create", &Attributes{Operation: Create, Resource: whNamespacesGVR, Name: "x", Object: newNS}, "new", true, false},
		{"namespace delete", &Attributes{Operation: Delete, Resource: whNamespacesGVR, Name: "x", OldObject: oldNS}, "old", true, false},
		{"node", &Attributes{Operation: Create, Resource: whNodesGVR, Name: "n"}, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, ok, err := b.namespaceLabels(context.Background(), tc.a)
			if (err != nil) != tc.err || ok != tc.wantOK || set["env"] != tc.want {
				t.Errorf("got %v %v %v, want env=%q ok=%v err=%v", set, ok, err, tc.want, tc.wantOK, tc.err)
			}
		})
	}
}

// matchPolicy Equivalent: a rule for apps/v1beta1 deployments matches a
// write of apps/v1 deployments when both are served, and the webhook is
// told the version its rule names.
func TestWebhookEquivalentMatch(t *testing.T) {
	v1 := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	v1beta1 := schema.GroupVersionResource{Group: "apps", Version: "v1beta1", Resource: "deployments"}
	b := newWHBase(WebhookConfig{Served: []ServedResource{
		{Resource: v1, Kind: v1.GroupVersion().WithKind("Deployment")},
		{Resource: v1beta1, Kind: v1beta1.GroupVersion().WithKind("Deployment")},
	}}, validatingWebhookConfigurationsGVR, false)
	rules := []admissionregistrationv1.RuleWithOperations{whRule([]admissionregistrationv1.OperationType{"CREATE"}, []string{"apps"}, []string{"v1beta1"}, []string{"deployments"}, admissionregistrationv1.AllScopes)}
	a := &Attributes{Operation: Create, Resource: v1, Kind: v1.GroupVersion().WithKind("Deployment"), Namespace: "default", Object: &appsv1.Deployment{}}
	for _, tc := range []struct {
		policy admissionregistrationv1.MatchPolicyType
		want   *schema.GroupVersionResource
	}{
		{admissionregistrationv1.Exact, nil},
		{admissionregistrationv1.Equivalent, &v1beta1},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			h := &whHook{rules: rules, matchPolicy: tc.policy, nsSelector: labels.Everything(), objSelector: labels.Everything()}
			inv, err := whMatch(h, a, func() (labels.Set, bool, error) { return nil, true, nil }, b.equivalents)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && inv != nil:
				t.Errorf("matched %v", inv.resource)
			case tc.want != nil && (inv == nil || inv.resource != *tc.want || inv.kind.Version != "v1beta1"):
				t.Errorf("invocation = %+v, want %v", inv, *tc.want)
			}
		})
	}
}

func TestWebhookMatchConditions(t *testing.T) {
	compile := func(t *testing.T, exprs ...string) []whCondition {
		var out []whCondition
		for i, e := range exprs {
			p, err := cel.Compile(e, cel.Bool, cel.Decls{Authorizer: true})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, whCondition{name: string(rune('a' + i)), prog: p})
		}
		return out
	}
	a := whPodAttrs(Create, "default", map[string]string{"app": "web"})
	a.User = &auth.User{Name: "alice", Groups: []string{"devs"}}
	for _, tc := range []struct {
		name    string
		exprs   []string
		policy  admissionregistrationv1.FailurePolicyType
		want    bool
		wantErr string
	}{
		{"all true", []string{`object.metadata.labels.app == "web"`, `request.userInfo.username == "alice"`}, admissionregistrationv1.Fail, true, ""},
		{"one false", []string{`true`, `request.operation == "UPDATE"`}, admissionregistrationv1.Fail, false, ""},
		{"old object is null on create", []string{`oldObject == null`}, admissionregistrationv1.Fail, true, ""},
		{"error under Fail", []string{`object.spec.nodeName.size() > 0`}, admissionregistrationv1.Fail, false,
			`pods "web" is forbidden: webhook "h.example.com": failed to evaluate match condition "a"`},
		{"error under Ignore skips the hook", []string{`object.spec.nodeName.size() > 0`}, admissionregistrationv1.Ignore, false, ""},
		{"false wins over an error", []string{`object.spec.nodeName.size() > 0`, `false`}, admissionregistrationv1.Fail, false, ""},
		{"authorizer without rights", []string{`authorizer.group('').resource('pods').namespace('default').check('create').allowed()`}, admissionregistrationv1.Fail, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &whHook{name: "h.example.com", failurePolicy: tc.policy, conditions: compile(t, tc.exprs...)}
			act := NewCELActivation(context.Background(), a, CELActivationConfig{})
			got, err := whConditionsMatch(context.Background(), h, a, func() *CELActivation { return act })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("match = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// The snapshot is compiled once per set of resourceVersions, ordered by
// configuration name, and a configuration the server cannot compile
// leaves its hooks broken, for the failurePolicy to judge.
func TestWebhookSnapshot(t *testing.T) {
	cfg := func(name, rv string, hooks ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
		for _, h := range hooks {
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: h})
		}
		return c
	}
	objs := whListSource{cfg("zeta", "5", "z1.example.com"), cfg("alpha", "7", "a1.example.com", "a2.example.com")}
	s := &whSource{objects: &objs, gvr: validatingWebhookConfigurationsGVR}
	hooks, err := s.hooks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hooks {
		names = append(names, h.name)
	}
	if strings.Join(names, ",") != "a1.example.com,a2.example.com,z1.example.com" {
		t.Errorf("order = %v", names)
	}
	again, _ := s.hooks(context.Background())
	if &again[0] != &hooks[0] || again[0] != hooks[0] {
		t.Error("snapshot recompiled without a change")
	}
	broken := cfg("alpha", "8", "a1.example.com")
	broken.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "x", Expression: "nope("}}
	objs[1] = broken
	hooks, _ = s.hooks(context.Background())
	if len(hooks) != 2 || hooks[0].broken == nil || !strings.Contains(hooks[0].broken.Error(), "compilation failed") {
		t.Errorf("after update: %d hooks, first broken = %v", len(hooks), hooks[0].broken)
	}
}

// whListSource lists its objects for any resource.
type whListSource []runtime.Object

func (l *whListSource) GetObject(context.Context, schema.GroupVersionResource, string, string) (runtime.Object, error) {
	return nil, nil
}

func (l *whListSource) ListObjects(context.Context, schema.GroupVersionResource, string, bool) ([]runtime.Object, error) {
	return append([]runtime.Object(nil), *l...), nil
}
