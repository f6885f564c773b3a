package admission_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/admission"
	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/auth"
)

var (
	mwcGVR    = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	vwcGVR    = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	podGVR    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	svcGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	slicesGVR = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
)

// whObjects is an ObjectSource over objects filed by resource; writes
// bump a resourceVersion, as the API server's would.
type whObjects struct {
	mu    sync.Mutex
	byGVR map[schema.GroupVersionResource][]runtime.Object
	rv    int
}

func (o *whObjects) put(gvr schema.GroupVersionResource, obj runtime.Object) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byGVR == nil {
		o.byGVR = map[schema.GroupVersionResource][]runtime.Object{}
	}
	o.rv++
	m := obj.(metav1.Object)
	m.SetResourceVersion(strings.Repeat("1", o.rv))
	for i, x := range o.byGVR[gvr] {
		if x.(metav1.Object).GetName() == m.GetName() && x.(metav1.Object).GetNamespace() == m.GetNamespace() {
			o.byGVR[gvr][i] = obj
			return
		}
	}
	o.byGVR[gvr] = append(o.byGVR[gvr], obj)
}

func (o *whObjects) GetObject(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.byGVR[gvr] {
		if m := x.(metav1.Object); m.GetNamespace() == namespace && m.GetName() == name {
			return x, nil
		}
	}
	return nil, nil
}

func (o *whObjects) ListObjects(_ context.Context, gvr schema.GroupVersionResource, namespace string, _ bool) ([]runtime.Object, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []runtime.Object
	for _, x := range o.byGVR[gvr] {
		if namespace == "" || x.(metav1.Object).GetNamespace() == namespace {
			out = append(out, x)
		}
	}
	return out, nil
}

type whNamespaces map[string]*corev1.Namespace

func (n whNamespaces) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	return n[name], nil
}

// hookSpec is the test's shorthand for one webhook on pods.
type hookSpec struct {
	name        string
	url         string
	caBundle    []byte
	failure     admissionregistrationv1.FailurePolicyType
	timeout     int32
	sideEffects admissionregistrationv1.SideEffectClass
	reinvoke    admissionregistrationv1.ReinvocationPolicyType
	ops         []admissionregistrationv1.OperationType
	// namespaces selects namespaces by labels (nil: all).
	namespaces map[string]string
}

func (h hookSpec) nsSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: h.namespaces}
}

func (h hookSpec) clientConfig() admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: new(h.url), CABundle: h.caBundle}
}

func (h hookSpec) rules() []admissionregistrationv1.RuleWithOperations {
	ops := h.ops
	if ops == nil {
		ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	}
	return []admissionregistrationv1.RuleWithOperations{{Operations: ops,
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
}

func (h hookSpec) defaults() hookSpec {
	if h.failure == "" {
		h.failure = admissionregistrationv1.Fail
	}
	if h.timeout == 0 {
		h.timeout = 10
	}
	if h.sideEffects == "" {
		h.sideEffects = admissionregistrationv1.SideEffectClassNone
	}
	if h.reinvoke == "" {
		h.reinvoke = admissionregistrationv1.NeverReinvocationPolicy
	}
	return h
}

func mutatingConfig(name string, hooks ...hookSpec) *admissionregistrationv1.MutatingWebhookConfiguration {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, h := range hooks {
		h = h.defaults()
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: h.name, ClientConfig: h.clientConfig(),
			Rules: h.rules(), FailurePolicy: new(h.failure), TimeoutSeconds: new(h.timeout), SideEffects: new(h.sideEffects),
			ReinvocationPolicy: new(h.reinvoke), AdmissionReviewVersions: []string{"v1"}, MatchPolicy: new(admissionregistrationv1.Equivalent),
			NamespaceSelector: h.nsSelector()})
	}
	return c
}

func validatingConfig(name string, hooks ...hookSpec) *admissionregistrationv1.ValidatingWebhookConfiguration {
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, h := range hooks {
		h = h.defaults()
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: h.name, ClientConfig: h.clientConfig(),
			Rules: h.rules(), FailurePolicy: new(h.failure), TimeoutSeconds: new(h.timeout), SideEffects: new(h.sideEffects),
			AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: h.nsSelector()})
	}
	return c
}

func newPodAttrs() *admission.Attributes {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	return &admission.Attributes{Operation: admission.Create, Kind: podGVK, Resource: podGVR, Namespace: "default",
		Name: "web", Object: pod, User: &auth.User{Name: "alice", Groups: []string{"devs", "system:authenticated"}}}
}

// webhookChain is the two plugins over objs, as the server wires them.
func webhookChain(objs *whObjects, extra ...admission.Plugin) *admission.Chain {
	cfg := admission.WebhookConfig{Objects: objs, Namespaces: whNamespaces{"default": {ObjectMeta: metav1.ObjectMeta{Name: "default"}}}}
	plugins := append(extra, admission.NewMutatingWebhook(cfg), admission.NewValidatingWebhook(cfg))
	return admission.NewChain(plugins...)
}

func admitAndValidate(ctx context.Context, c *admission.Chain, a *admission.Attributes) error {
	if err := c.Admit(ctx, a); err != nil {
		return err
	}
	return c.Validate(ctx, a)
}

func TestMutatingWebhookPatchesAndWarns(t *testing.T) {
	srv := startHookServer(t)
	srv.Handle("/mutate", func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		r := addLabel("injected", "yes")(ctx, req)
		r.Warnings = []string{"pods here get a label"}
		return r
	})
	objs := &whObjects{}
	objs.put(mwcGVR, mutatingConfig("inject", hookSpec{name: "inject.example.com", url: srv.URL + "/mutate", caBundle: srv.CABundle}))
	var warnings []string
	ctx := admit.WithWarnings(context.Background(), func(m string) { warnings = append(warnings, m) })
	a := newPodAttrs()
	pod := a.Object.(*corev1.Pod)
	if err := admitAndValidate(ctx, webhookChain(objs), a); err != nil {
		t.Fatal(err)
	}
	if pod.Labels["injected"] != "yes" || pod.Spec.Containers[0].Image != "nginx" {
		t.Errorf("pod after admission: labels %v, containers %v", pod.Labels, pod.Spec.Containers)
	}
	if len(warnings) != 1 || warnings[0] != "pods here get a label" {
		t.Errorf("warnings = %q", warnings)
	}
	reviews := srv.Reviews("/mutate")
	if len(reviews) != 1 {
		t.Fatalf("%d reviews", len(reviews))
	}
	r := reviews[0]
	var sent map[string]any
	json.Unmarshal(r.Object.Raw, &sent)
	var opts map[string]any
	json.Unmarshal(r.Options.Raw, &opts)
	if r.Kind.Kind != "Pod" || r.Resource.Resource != "pods" || r.Namespace != "default" || r.Name != "web" ||
		r.Operation != admissionv1.Create || r.UserInfo.Username != "alice" || r.DryRun == nil || *r.DryRun ||
		sent["apiVersion"] != "v1" || sent["kind"] != "Pod" || opts["kind"] != "CreateOptions" || r.OldObject.Raw != nil {
		t.Errorf("review: %+v\nobject %s\noptions %s", r, r.Object.Raw, r.Options.Raw)
	}
}

func TestWebhookRefusals(t *testing.T) {
	srv := startHookServer(t)
	deny := func(st *metav1.Status) hookHandler {
		return func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: st}
		}
	}
	srv.Handle("/message", deny(&metav1.Status{Message: "no pods on Sundays"}))
	srv.Handle("/coded", deny(&metav1.Status{Code: 403, Reason: "Sunday"}))
	srv.Handle("/bare", deny(nil))
	for _, tc := range []struct {
		name, path string
		mutating   bool
		code       int32
		want       string
	}{
		{"validating with a message", "/message", false, 400, `admission webhook "deny.example.com" denied the request: no pods on Sundays`},
		{"mutating with a message", "/message", true, 400, `admission webhook "deny.example.com" denied the request: no pods on Sundays`},
		{"code and reason", "/coded", false, 403, `admission webhook "deny.example.com" denied the request: Sunday`},
		{"no explanation", "/bare", false, 400, `admission webhook "deny.example.com" denied the request without explanation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := &whObjects{}
			h := hookSpec{name: "deny.example.com", url: srv.URL + tc.path, caBundle: srv.CABundle}
			if tc.mutating {
				objs.put(mwcGVR, mutatingConfig("deny", h))
			} else {
				objs.put(vwcGVR, validatingConfig("deny", h))
			}
			err := admitAndValidate(context.Background(), webhookChain(objs), newPodAttrs())
			status, ok := err.(apierrors.APIStatus)
			if !ok || status.Status().Message != tc.want || status.Status().Code != tc.code {
				t.Fatalf("err = %v (%T), want %d %q", err, err, tc.code, tc.want)
			}
		})
	}
}

// A webhook that is down, slow or talks nonsense fails the write under
// Fail, with a 500 naming it, and is skipped under Ignore; the request
// never waits past timeoutSeconds.
func TestWebhookFailurePolicy(t *testing.T) {
	srv := startHookServer(t)
	srv.Handle("/slow", sleepFor(10*time.Second))
	srv.Handle("/wronguid", func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{UID: "someone-else", Allowed: true}
	})
	otherCA := startHookServer(t)
	down := downURL(t)
	for _, tc := range []struct {
		name     string
		url      string
		ca       []byte
		timeout  int32
		mutating bool
		want     string
	}{
		{"down", down, srv.CABundle, 0, false, `failed calling webhook "hook.example.com": failed to call webhook: Post "` + down + `?timeout=10s": dial tcp`},
		{"down, mutating", down, srv.CABundle, 0, true, `connect: connection refused`},
		{"slow", srv.URL + "/slow", srv.CABundle, 1, false, `failed calling webhook "hook.example.com": failed to call webhook: Post "` + srv.URL + `/slow?timeout=1s": context deadline exceeded`},
		{"slow, mutating", srv.URL + "/slow", srv.CABundle, 1, true, `context deadline exceeded`},
		{"untrusted certificate", srv.URL + "/slow", otherCA.CABundle, 0, false, `tls: failed to verify certificate`},
		{"response for another request", srv.URL + "/wronguid", srv.CABundle, 0, false,
			`failed calling webhook "hook.example.com": received invalid webhook response: expected response.uid=`},
		{"no such path", srv.URL + "/nothing", srv.CABundle, 0, false, `the server responded with the status code 404`},
	} {
		for _, policy := range []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore} {
			t.Run(tc.name+"/"+string(policy), func(t *testing.T) {
				objs := &whObjects{}
				h := hookSpec{name: "hook.example.com", url: tc.url, caBundle: tc.ca, failure: policy, timeout: tc.timeout}
				if tc.mutating {
					objs.put(mwcGVR, mutatingConfig("c", h))
				} else {
					objs.put(vwcGVR, validatingConfig("c", h))
				}
				start := time.Now()
				err := admitAndValidate(context.Background(), webhookChain(objs), newPodAttrs())
				if took := time.Since(start); took > 3*time.Second {
					t.Errorf("took %v", took)
				}
				if policy == admissionregistrationv1.Ignore {
					if err != nil {
						t.Fatalf("Ignore: %v", err)
					}
					return
				}
				if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), tc.want) ||
					!strings.HasPrefix(err.Error(), `Internal error occurred: failed calling webhook "hook.example.com": `) {
					t.Fatalf("err = %v, want a 500 with %q", err, tc.want)
				}
			})
		}
	}
}

// A dry run reaches only webhooks that promise no side effects on it.
func TestWebhookDryRun(t *testing.T) {
	srv := startHookServer(t)
	srv.Handle("/hook", allow)
	for _, tc := range []struct {
		se       admissionregistrationv1.SideEffectClass
		mutating bool
		refused  bool
	}{
		{admissionregistrationv1.SideEffectClassNone, false, false},
		{admissionregistrationv1.SideEffectClassNoneOnDryRun, true, false},
		{admissionregistrationv1.SideEffectClassSome, false, true},
		{admissionregistrationv1.SideEffectClassUnknown, true, true},
	} {
		t.Run(string(tc.se), func(t *testing.T) {
			objs := &whObjects{}
			h := hookSpec{name: "dry.example.com", url: srv.URL + "/hook", caBundle: srv.CABundle, sideEffects: tc.se,
				failure: admissionregistrationv1.Ignore}
			if tc.mutating {
				objs.put(mwcGVR, mutatingConfig("c", h))
			} else {
				objs.put(vwcGVR, validatingConfig("c", h))
			}
			before := len(srv.Reviews("/hook"))
			a := newPodAttrs()
			a.DryRun = true
			err := admitAndValidate(context.Background(), webhookChain(objs), a)
			calls := srv.Reviews("/hook")[before:]
			if tc.refused {
				// Not even Ignore lets a dry run through: the webhook
				// would act on a write that never happens.
				if !apierrors.IsBadRequest(err) || err.Error() != `admission webhook "dry.example.com" does not support dry run` || len(calls) != 0 {
					t.Fatalf("err = %v, %d calls", err, len(calls))
				}
				return
			}
			if err != nil || len(calls) != 1 || calls[0].DryRun == nil || !*calls[0].DryRun {
				t.Fatalf("err = %v, calls %v", err, calls)
			}
		})
	}
}

// countingMutator is an in-tree mutator that counts its runs.
type countingMutator struct{ runs int }

func (*countingMutator) Name() string { return "Counting" }
func (c *countingMutator) Admit(context.Context, *admission.Attributes) error {
	c.runs++
	return nil
}

// reinvocationPolicy IfNeeded: a webhook that ran before another changed
// the object is called once more; the in-tree mutators run again too.
func TestMutatingWebhookReinvocation(t *testing.T) {
	srv := startHookServer(t)
	srv.Handle("/watch", allow)
	srv.Handle("/label", addLabel("team", "blue"))
	for _, tc := range []struct {
		name         string
		policy       admissionregistrationv1.ReinvocationPolicyType
		labeler      bool
		watcherCalls int
		inTreeRuns   int
	}{
		{"IfNeeded after a change", admissionregistrationv1.IfNeededReinvocationPolicy, true, 2, 2},
		{"Never after a change", admissionregistrationv1.NeverReinvocationPolicy, true, 1, 2},
		{"IfNeeded without a change", admissionregistrationv1.IfNeededReinvocationPolicy, false, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := &whObjects{}
			path := "/watch"
			// "a-watch" sorts before "b-label", so the watcher runs first.
			objs.put(mwcGVR, mutatingConfig("a-watch", hookSpec{name: "watch.example.com", url: srv.URL + path, caBundle: srv.CABundle, reinvoke: tc.policy}))
			if tc.labeler {
				objs.put(mwcGVR, mutatingConfig("b-label", hookSpec{name: "label.example.com", url: srv.URL + "/label", caBundle: srv.CABundle}))
			}
			before, beforeLabel := len(srv.Reviews(path)), len(srv.Reviews("/label"))
			inTree := &countingMutator{}
			a := newPodAttrs()
			if err := webhookChain(objs, inTree).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			calls := srv.Reviews(path)[before:]
			if len(calls) != tc.watcherCalls || inTree.runs != tc.inTreeRuns {
				t.Fatalf("watcher called %d times, in-tree plugin ran %d times; want %d, %d", len(calls), inTree.runs, tc.watcherCalls, tc.inTreeRuns)
			}
			if tc.labeler {
				if n := len(srv.Reviews("/label")) - beforeLabel; n != 1 {
					t.Errorf("labeler called %d times, want 1", n)
				}
				if tc.watcherCalls == 2 && !strings.Contains(string(calls[1].Object.Raw), `"team":"blue"`) {
					t.Errorf("the second call did not see the label: %s", calls[1].Object.Raw)
				}
			}
		})
	}
}

func TestValidatingWebhooksRunInParallel(t *testing.T) {
	srv := startHookServer(t)
	srv.Handle("/slowish", sleepFor(1500*time.Millisecond))
	objs := &whObjects{}
	objs.put(vwcGVR, validatingConfig("c",
		hookSpec{name: "one.example.com", url: srv.URL + "/slowish", caBundle: srv.CABundle},
		hookSpec{name: "two.example.com", url: srv.URL + "/slowish", caBundle: srv.CABundle},
		hookSpec{name: "three.example.com", url: srv.URL + "/slowish", caBundle: srv.CABundle}))
	start := time.Now()
	if err := admitAndValidate(context.Background(), webhookChain(objs), newPodAttrs()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("three 1.5 s webhooks took %v: not run in parallel", took)
	}
	if n := len(srv.Reviews("/slowish")); n != 3 {
		t.Errorf("%d calls", n)
	}
}

// A service reference reaches a ready endpoint of the service's port,
// with the TLS name <service>.<namespace>.svc.
func TestWebhookServiceReference(t *testing.T) {
	srv := startHookServer(t, "hook.webhooks.svc")
	srv.Handle("/validate", allow)
	objs := &whObjects{}
	objs.put(svcGVR, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "webhooks"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}})
	objs.put(slicesGVR, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hook-x1", Namespace: "webhooks", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: new("https"), Port: new(int32(srv.Addr.Port))}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"127.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: new(false)}},
			{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}},
		},
	})
	cfg := validatingConfig("svc", hookSpec{name: "svc.example.com"})
	cfg.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{CABundle: srv.CABundle,
		Service: &admissionregistrationv1.ServiceReference{Namespace: "webhooks", Name: "hook", Path: new("/validate"), Port: new(int32(443))}}
	objs.put(vwcGVR, cfg)
	if err := admitAndValidate(context.Background(), webhookChain(objs), newPodAttrs()); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Reviews("/validate")); n != 1 {
		t.Fatalf("%d calls", n)
	}

	// Without a ready endpoint the call fails, under the failurePolicy.
	objs.put(slicesGVR, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "hook-x1", Namespace: "webhooks", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
		Ports:      []discoveryv1.EndpointPort{{Name: new("https"), Port: new(int32(srv.Addr.Port))}},
	})
	err := admitAndValidate(context.Background(), webhookChain(objs), newPodAttrs())
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `service "hook" does not have ready endpoints`) {
		t.Fatalf("err = %v", err)
	}
}

// Mutating webhooks see deletes too (through the chain's validating
// pass, the only one a delete runs), with the old object and no new one.
func TestMutatingWebhookOnDelete(t *testing.T) {
	srv := startHookServer(t)
	srv.Handle("/hook", func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Message: "keep it"}}
	})
	objs := &whObjects{}
	objs.put(mwcGVR, mutatingConfig("c", hookSpec{name: "keep.example.com", url: srv.URL + "/hook", caBundle: srv.CABundle,
		ops: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}}))
	a := newPodAttrs()
	a.Operation, a.OldObject, a.Object = admission.Delete, a.Object, nil
	err := webhookChain(objs).Validate(context.Background(), a)
	if err == nil || err.Error() != `admission webhook "keep.example.com" denied the request: keep it` {
		t.Fatalf("err = %v", err)
	}
	r := srv.Reviews("/hook")[0]
	if r.Operation != admissionv1.Delete || r.Object.Raw != nil || !strings.Contains(string(r.OldObject.Raw), `"name":"web"`) {
		t.Errorf("review: op %v object %s old %s", r.Operation, r.Object.Raw, r.OldObject.Raw)
	}
}

// changingMutator is an in-tree mutator that sets an annotation from
// its second run on, as LimitRanger does when a webhook added a
// container.
type changingMutator struct{ runs int }

func (*changingMutator) Name() string { return "Changing" }
func (c *changingMutator) Admit(_ context.Context, a *admission.Attributes) error {
	c.runs++
	if c.runs > 1 {
		pod := a.Object.(*corev1.Pod)
		pod.Annotations = map[string]string{"in-tree": "second-run"}
	}
	return nil
}

// An IfNeeded webhook that ran after the last webhook change is called
// again only if the in-tree plugins changed the object in the second
// round.
func TestMutatingWebhookReinvokedAfterInTreeChange(t *testing.T) {
	srv := startHookServer(t)
	srv.Handle("/label", addLabel("team", "blue"))
	srv.Handle("/watch", allow)
	for _, tc := range []struct {
		name   string
		inTree admission.Plugin
		calls  int
	}{
		{"in-tree plugin changes the object", &changingMutator{}, 2},
		{"in-tree plugin leaves it", &countingMutator{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := &whObjects{}
			objs.put(mwcGVR, mutatingConfig("a-label", hookSpec{name: "label.example.com", url: srv.URL + "/label", caBundle: srv.CABundle}))
			objs.put(mwcGVR, mutatingConfig("b-watch", hookSpec{name: "watch.example.com", url: srv.URL + "/watch", caBundle: srv.CABundle,
				reinvoke: admissionregistrationv1.IfNeededReinvocationPolicy}))
			before := len(srv.Reviews("/watch"))
			if err := webhookChain(objs, tc.inTree).Admit(context.Background(), newPodAttrs()); err != nil {
				t.Fatal(err)
			}
			calls := srv.Reviews("/watch")[before:]
			if len(calls) != tc.calls {
				t.Fatalf("watcher called %d times, want %d", len(calls), tc.calls)
			}
			if tc.calls == 2 && !strings.Contains(string(calls[1].Object.Raw), `"in-tree":"second-run"`) {
				t.Errorf("second call did not see the in-tree change: %s", calls[1].Object.Raw)
			}
		})
	}
}

// BenchmarkWebhookAdmission measures what the webhook plugins add to
// one write: with no configuration, with configurations that do not
// match, and with one mutating webhook on loopback (a real HTTPS
// round trip with a JSON patch).
func BenchmarkWebhookAdmission(b *testing.B) {
	srv := startHookServer(b)
	srv.Handle("/label", addLabel("team", "blue"))
	other := hookSpec{name: "other.example.com", url: srv.URL + "/label", caBundle: srv.CABundle, namespaces: map[string]string{"never": "matches"}}
	for _, bc := range []struct {
		name  string
		setup func(*whObjects)
	}{
		{"none", func(*whObjects) {}},
		{"no-match", func(o *whObjects) {
			o.put(mwcGVR, mutatingConfig("m", other, other, other))
			o.put(vwcGVR, validatingConfig("v", other, other, other))
		}},
		{"one-mutating", func(o *whObjects) {
			o.put(mwcGVR, mutatingConfig("m", hookSpec{name: "label.example.com", url: srv.URL + "/label", caBundle: srv.CABundle}))
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			objs := &whObjects{}
			bc.setup(objs)
			chain := webhookChain(objs)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := admitAndValidate(ctx, chain, newPodAttrs()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// matchPolicy Equivalent: a webhook registered for autoscaling/v1
// HorizontalPodAutoscalers sees a write of autoscaling/v2 ones, as a v1
// object, and its patch lands on the v2 object; with Exact it is not
// called.
func TestWebhookEquivalentVersionConverts(t *testing.T) {
	srv := startHookServer(t)
	srv.Handle("/hpa", addLabel("seen-as", "v1"))
	hpaV2 := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	for _, policy := range []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Equivalent, admissionregistrationv1.Exact} {
		t.Run(string(policy), func(t *testing.T) {
			objs := &whObjects{}
			cfg := mutatingConfig("hpa", hookSpec{name: "hpa.example.com", url: srv.URL + "/hpa", caBundle: srv.CABundle})
			cfg.Webhooks[0].MatchPolicy = new(policy)
			cfg.Webhooks[0].Rules[0].APIGroups = []string{"autoscaling"}
			cfg.Webhooks[0].Rules[0].Resources = []string{"horizontalpodautoscalers"}
			objs.put(mwcGVR, cfg)
			chain := admission.NewChain(admission.NewMutatingWebhook(admission.WebhookConfig{Objects: objs,
				Namespaces: whNamespaces{"default": {}}, Served: registry.WebhookServedResources()}))
			hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: new(int32(2)), MaxReplicas: 5,
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
			before := len(srv.Reviews("/hpa"))
			a := &admission.Attributes{Operation: admission.Create, Resource: hpaV2, Kind: hpaV2.GroupVersion().WithKind("HorizontalPodAutoscaler"),
				Namespace: "default", Name: "web", Object: hpa}
			if err := chain.Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			calls := srv.Reviews("/hpa")[before:]
			if policy == admissionregistrationv1.Exact {
				if len(calls) != 0 || hpa.Labels != nil {
					t.Fatalf("Exact: %d calls, labels %v", len(calls), hpa.Labels)
				}
				return
			}
			if len(calls) != 1 {
				t.Fatalf("%d calls", len(calls))
			}
			r := calls[0]
			if r.Kind.Version != "v1" || r.Resource.Version != "v1" || r.RequestKind.Version != "v2" || r.RequestResource.Version != "v2" ||
				!strings.Contains(string(r.Object.Raw), `"apiVersion":"autoscaling/v1"`) {
				t.Errorf("review: kind %v resource %v requestKind %v\n%s", r.Kind, r.Resource, r.RequestKind, r.Object.Raw)
			}
			if hpa.Labels["seen-as"] != "v1" || hpa.Spec.MaxReplicas != 5 || hpa.Spec.ScaleTargetRef.Name != "web" {
				t.Errorf("v2 object after the patch: %+v", hpa)
			}
		})
	}
}
