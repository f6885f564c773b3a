package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/auth"
)

// Admission webhooks: cluster operators' own admission plugins, run out
// of process. MutatingAdmissionWebhook calls the webhooks of every
// MutatingWebhookConfiguration, one after another, and applies the JSON
// patches they answer with; ValidatingAdmissionWebhook calls those of
// every ValidatingWebhookConfiguration, all at once, on the final object.
//
// For each write, each hook is matched (webhook_match.go: selectors,
// rules, matchConditions), called (webhook_call.go: AdmissionReview v1
// over HTTPS, bounded by timeoutSeconds) and its answer applied:
//
//	allowed        → continue (mutating: apply the patch)
//	refused        → the write fails: admission webhook "x" denied the request: ...
//	not reachable, → failurePolicy Fail: 500 failed calling webhook "x": ...
//	timed out,       failurePolicy Ignore: skipped, logged
//	bad answer
//
// A dry run is sent only to webhooks that declare sideEffects None or
// NoneOnDryRun; any other refuses the dry run with a 400. Warnings in an
// answer reach the client as Warning headers.
//
// Reinvocation: when a mutating webhook changes the object, the whole
// mutating chain runs once more (see Chain.Admit); in that round only
// webhooks with reinvocationPolicy IfNeeded that ran before the change
// are called again — upstream's rule, so that a webhook which depends
// on another's output gets to see it.
//
// Configurations are read from the watch cache on every write and
// compiled (selectors, CEL matchConditions) only when their
// resourceVersions change (webhook_config.go). Webhooks never see writes
// of webhook configurations or admission policies, so a broken webhook
// cannot lock out its own repair.
//
// Versions: with matchPolicy Equivalent a rule naming another version
// of the written resource (one served from the same storage, such as
// autoscaling/v1 for a v2 HorizontalPodAutoscaler) matches; the webhook
// is sent the object converted to the version it asked for, and its
// patch is converted back.

// WebhookConfig is what both webhook plugins read.
type WebhookConfig struct {
	// Objects lists the configurations (watch-cache backed) and resolves
	// service references through Services and EndpointSlices.
	Objects ObjectSource
	// Namespaces backs namespaceSelector.
	Namespaces NamespaceGetter
	// Served backs matchPolicy Equivalent and re-defaulting; nil means
	// exact matching only.
	Served []ServedResource
	// Authorizer backs the authorizer variable of matchConditions.
	Authorizer auth.Authorizer
}

// whBase is what the two plugins share.
type whBase struct {
	cfg    WebhookConfig
	source *whSource
	caller *whCaller
	byID   map[schema.GroupResource][]ServedResource // by storage identity
	byGVR  map[schema.GroupVersionResource]ServedResource
}

func newWHBase(cfg WebhookConfig, gvr schema.GroupVersionResource, mutating bool) whBase {
	b := whBase{cfg: cfg, source: &whSource{objects: cfg.Objects, gvr: gvr, mutating: mutating},
		caller: &whCaller{objects: cfg.Objects}, byID: map[schema.GroupResource][]ServedResource{},
		byGVR: map[schema.GroupVersionResource]ServedResource{}}
	for _, s := range cfg.Served {
		b.byID[s.StorageIdentity()] = append(b.byID[s.StorageIdentity()], s)
		b.byGVR[s.Resource] = s
	}
	return b
}

// equivalents returns the resources served from the same storage as gvr.
func (b *whBase) equivalents(gvr schema.GroupVersionResource) []ServedResource {
	s, ok := b.byGVR[gvr]
	if !ok {
		return nil
	}
	return b.byID[s.StorageIdentity()]
}

// convert translates obj from resource from to resource to, through
// their common storage.
func (b *whBase) convert(obj runtime.Object, from, to schema.GroupVersionResource) (runtime.Object, error) {
	if obj == nil || from == to {
		return obj, nil
	}
	f, t := b.byGVR[from], b.byGVR[to]
	if f.ToStorage == nil && t.FromStorage == nil {
		return nil, fmt.Errorf("no conversion from %s to %s", from, to)
	}
	if f.ToStorage != nil {
		obj = f.ToStorage(obj)
	}
	if t.FromStorage != nil {
		obj = t.FromStorage(obj)
	}
	return obj, nil
}

// prepare fills the invocation's objects, converted to the version the
// hook matched.
func (b *whBase) prepare(inv *whInvocation, a *Attributes) error {
	var err error
	if inv.object, err = b.convert(a.Object, a.Resource, inv.resource); err != nil {
		return &whCallError{webhook: inv.hook.name, reason: err}
	}
	if inv.oldObject, err = b.convert(a.OldObject, a.Resource, inv.resource); err != nil {
		return &whCallError{webhook: inv.hook.name, reason: err}
	}
	return nil
}

// whMatcher matches the hooks of one request; it reads the namespace
// at most once (a Namespace's own labels, which a mutating hook may
// change, are read each time).
type whMatcher struct {
	b  *whBase
	a  *Attributes
	ns struct {
		done bool
		set  labels.Set
		ok   bool
		err  error
	}
}

func (m *whMatcher) nsLabels(ctx context.Context) whNamespaceLabels {
	return func() (labels.Set, bool, error) {
		if !m.ns.done {
			m.ns.set, m.ns.ok, m.ns.err = m.b.namespaceLabels(ctx, m.a)
			m.ns.done = m.a.Resource != whNamespacesResource
		}
		return m.ns.set, m.ns.ok, m.ns.err
	}
}

// match returns the hook's invocation for the write as it is now, nil
// when the hook does not apply; matchConditions are evaluated here.
func (m *whMatcher) match(ctx context.Context, h *whHook) (*whInvocation, error) {
	inv, err := whMatch(h, m.a, m.nsLabels(ctx), m.b.equivalents)
	if err != nil || inv == nil {
		return nil, err
	}
	// A fresh activation per hook: a mutating hook before this one may
	// have changed the object.
	act := func() *CELActivation {
		return NewCELActivation(ctx, m.a, CELActivationConfig{Authorizer: m.b.cfg.Authorizer})
	}
	var cached *CELActivation
	ok, err := whConditionsMatch(ctx, h, m.a, func() *CELActivation {
		if cached == nil {
			cached = act()
		}
		return cached
	})
	if err != nil || !ok {
		return nil, err
	}
	return inv, nil
}

// hooks returns the hooks in force for the write, nil for the resources
// no webhook may see.
func (b *whBase) hooks(ctx context.Context, a *Attributes) ([]*whHook, error) {
	if whExempt[a.Resource.GroupResource()] || b.cfg.Objects == nil {
		return nil, nil
	}
	return b.source.hooks(ctx)
}

// matching returns the invocations of the hooks that match the write,
// matchConditions included, in order.
func (b *whBase) matching(ctx context.Context, a *Attributes) ([]*whInvocation, error) {
	hooks, err := b.hooks(ctx, a)
	if err != nil || len(hooks) == 0 {
		return nil, err
	}
	m := &whMatcher{b: b, a: a}
	var out []*whInvocation
	for _, h := range hooks {
		inv, err := m.match(ctx, h)
		if err != nil {
			return nil, err
		}
		if inv != nil {
			out = append(out, inv)
		}
	}
	return out, nil
}

var whNamespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// namespaceLabels: a Namespace is judged by its own labels (those being
// written, or, for a delete, the stored ones); a namespaced object by
// its namespace's.
func (b *whBase) namespaceLabels(ctx context.Context, a *Attributes) (labels.Set, bool, error) {
	if a.Resource.Group == "" && a.Resource.Resource == "namespaces" {
		obj := a.Object
		if a.Operation == Delete || obj == nil {
			obj = a.OldObject
		}
		if m, err := meta.Accessor(obj); err == nil {
			return labels.Set(m.GetLabels()), true, nil
		}
		return nil, true, nil
	}
	if a.Namespace == "" {
		return nil, false, nil
	}
	if b.cfg.Namespaces == nil {
		return nil, true, errors.New("no namespace source")
	}
	ns, err := b.cfg.Namespaces.GetNamespace(ctx, a.Namespace)
	if err != nil {
		return nil, true, err
	}
	if ns == nil {
		return nil, true, apierrors.NewNotFound(corev1.Resource("namespaces"), a.Namespace)
	}
	return labels.Set(ns.Labels), true, nil
}

// whCheckDryRun refuses a dry run to a hook that may have side effects,
// whatever its failurePolicy; a hook that does not say is a failure to
// call it.
func whCheckDryRun(h *whHook, a *Attributes) error {
	if !a.DryRun {
		return nil
	}
	if h.sideEffects == nil {
		return &whCallError{webhook: h.name, reason: errors.New("Webhook SideEffects is nil")}
	}
	if *h.sideEffects != admissionregistrationv1.SideEffectClassNone && *h.sideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		return whDryRunUnsupported(h.name)
	}
	return nil
}

// whFailure applies the failurePolicy to err: nil means "skip the hook".
func whFailure(ctx context.Context, h *whHook, kind string, err error) error {
	var callErr *whCallError
	if !errors.As(err, &callErr) {
		return err
	}
	if h.failurePolicy == admissionregistrationv1.Ignore {
		slog.Warn("admission webhook failed, failing open", "kind", kind, "webhook", h.name, "err", callErr)
		if ctx.Err() != nil {
			return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
		}
		return nil
	}
	slog.Warn("admission webhook failed, failing closed", "kind", kind, "webhook", h.name, "err", callErr)
	return apierrors.NewInternalError(callErr)
}

// MutatingWebhook is the MutatingAdmissionWebhook plugin.
type MutatingWebhook struct{ whBase }

// NewMutatingWebhook returns the plugin.
func NewMutatingWebhook(cfg WebhookConfig) *MutatingWebhook {
	return &MutatingWebhook{newWHBase(cfg, mutatingWebhookConfigurationsGVR, true)}
}

func (*MutatingWebhook) Name() string { return "MutatingAdmissionWebhook" }

// whReinvokeState is the plugin's memory across the rounds of one
// request (see Chain.Admit).
type whReinvokeState struct {
	lastOutput runtime.Object
	// invoked are IfNeeded hooks called since the object last changed;
	// reinvoke are those owed a second call.
	invoked, reinvoke map[string]bool
}

func (s *whReinvokeState) requireReinvoke() {
	for uid := range s.invoked {
		s.reinvoke[uid] = true
	}
	clear(s.invoked)
}

// Admit calls the matching mutating webhooks in order.
func (p *MutatingWebhook) Admit(ctx context.Context, a *Attributes) error {
	rc := reinvocationFrom(ctx)
	st, _ := rc.state(p.Name()).(*whReinvokeState)
	if st == nil {
		st = &whReinvokeState{invoked: map[string]bool{}, reinvoke: map[string]bool{}}
		rc.setState(p.Name(), st)
	}
	hooks, err := p.hooks(ctx, a)
	if err != nil || len(hooks) == 0 {
		return err
	}
	if rc.isReinvoke() && st.lastOutput != nil && !apiequality.Semantic.DeepEqual(st.lastOutput, a.Object) {
		// The plugins after this one changed the object in the first
		// round: every IfNeeded hook that ran is owed another look.
		st.requireReinvoke()
	}
	defer func() {
		// The second round compares against this output to see whether
		// the in-tree plugins changed the object; it matters only when an
		// IfNeeded hook ran, so only then is the object copied.
		if !rc.isReinvoke() && len(st.invoked) > 0 && a.Object != nil {
			st.lastOutput = a.Object.DeepCopyObject()
		}
	}()
	m := &whMatcher{b: &p.whBase, a: a}
	for _, h := range hooks {
		// Matched one by one against the object as the hooks before
		// left it: a label one adds can select the next.
		inv, err := m.match(ctx, h)
		if err != nil {
			return err
		}
		if inv == nil {
			continue
		}
		// A hook is never called for the first time in the second
		// round, even if it matches only now.
		if rc.isReinvoke() && !st.reinvoke[h.uid] {
			continue
		}
		changed, err := p.callOne(ctx, inv, a)
		if changed {
			st.requireReinvoke()
			rc.requestReinvoke()
		}
		if h.reinvoke {
			st.invoked[h.uid] = true
		}
		if err != nil {
			if err = whFailure(ctx, h, "mutating", err); err != nil {
				return err
			}
		}
	}
	return nil
}

// Validate runs the mutating webhooks of a delete: the API server's
// delete path admits through validation only, and upstream calls
// mutating webhooks on deletes too (with no object, so they can only
// allow or refuse).
func (p *MutatingWebhook) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Delete {
		return nil
	}
	invs, err := p.matching(ctx, a)
	if err != nil {
		return err
	}
	for _, inv := range invs {
		if _, err := p.callOne(ctx, inv, a); err != nil {
			if err = whFailure(ctx, inv.hook, "mutating", err); err != nil {
				return err
			}
		}
	}
	return nil
}

// callOne calls one mutating hook and applies its patch; changed says
// whether the object is different afterwards.
func (p *MutatingWebhook) callOne(ctx context.Context, inv *whInvocation, a *Attributes) (bool, error) {
	h := inv.hook
	if err := whCheckDryRun(h, a); err != nil {
		return false, err
	}
	if h.broken != nil {
		return false, &whCallError{webhook: h.name, reason: h.broken}
	}
	if err := p.prepare(inv, a); err != nil {
		return false, err
	}
	res, err := p.caller.call(ctx, inv, a, true)
	if err != nil {
		return false, err
	}
	for _, w := range res.warnings {
		admit.AddWarning(ctx, w)
	}
	if !res.allowed {
		return false, whDenied(h.name, res.status)
	}
	if len(res.patch) == 0 {
		return false, nil
	}
	patch, err := jsonpatch.DecodePatch(res.patch)
	if err != nil {
		return false, &whCallError{webhook: h.name, reason: fmt.Errorf("received undecodable patch in webhook response: %w", err)}
	}
	if len(patch) == 0 {
		return false, nil
	}
	if inv.object == nil || a.Operation == Delete {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.name))
	}
	return p.applyPatch(patch, inv, a)
}

// applyPatch patches the object as the webhook saw it (in the version
// it matched), converts the result back to the request's version and
// puts it in place: the API server holds on to the pointer it passed in.
func (p *MutatingWebhook) applyPatch(patch jsonpatch.Patch, inv *whInvocation, a *Attributes) (bool, error) {
	orig, err := whEncode(inv.object, inv.kind)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	patched, err := patch.Apply(orig)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	fresh, err := whDecodeLike(inv.object, patched)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if s, ok := p.byGVR[inv.resource]; ok && s.Default != nil && a.Subresource == "" {
		s.Default(fresh)
	}
	if fresh, err = p.convert(fresh, inv.resource, a.Resource); err != nil {
		return false, apierrors.NewInternalError(err)
	}
	rv := reflect.ValueOf(a.Object)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || reflect.TypeOf(fresh) != rv.Type() {
		return false, apierrors.NewInternalError(fmt.Errorf("cannot patch an object of type %T with one of %T", a.Object, fresh))
	}
	if _, ok := fresh.(*unstructured.Unstructured); !ok {
		// Keep the type information the API server gave the object.
		fresh.GetObjectKind().SetGroupVersionKind(a.Object.GetObjectKind().GroupVersionKind())
	}
	changed := !apiequality.Semantic.DeepEqual(a.Object, fresh)
	rv.Elem().Set(reflect.ValueOf(fresh).Elem())
	return changed, nil
}

// whDecodeLike decodes JSON into a new object of like's Go type, case
// sensitively as the API server decodes.
func whDecodeLike(like runtime.Object, data []byte) (runtime.Object, error) {
	rv := reflect.ValueOf(like)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("cannot patch an object of type %T", like)
	}
	fresh := reflect.New(rv.Elem().Type()).Interface().(runtime.Object)
	var err error
	if u, ok := fresh.(*unstructured.Unstructured); ok {
		err = u.UnmarshalJSON(data)
	} else {
		err = sigsjson.UnmarshalCaseSensitivePreserveInts(data, fresh)
	}
	return fresh, err
}

// ValidatingWebhook is the ValidatingAdmissionWebhook plugin.
type ValidatingWebhook struct{ whBase }

// NewValidatingWebhook returns the plugin.
func NewValidatingWebhook(cfg WebhookConfig) *ValidatingWebhook {
	return &ValidatingWebhook{newWHBase(cfg, validatingWebhookConfigurationsGVR, false)}
}

func (*ValidatingWebhook) Name() string { return "ValidatingAdmissionWebhook" }

// Validate calls every matching validating webhook at once and fails
// with the first refusal, in hook order.
func (p *ValidatingWebhook) Validate(ctx context.Context, a *Attributes) error {
	invs, err := p.matching(ctx, a)
	if err != nil || len(invs) == 0 {
		return err
	}
	errs := make([]error, len(invs))
	var wg sync.WaitGroup
	for i, inv := range invs {
		wg.Go(func() {
			errs[i] = p.callOne(ctx, inv, a)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		if err = whFailure(ctx, invs[i].hook, "validating", err); err != nil {
			return err
		}
	}
	return nil
}

func (p *ValidatingWebhook) callOne(ctx context.Context, inv *whInvocation, a *Attributes) error {
	h := inv.hook
	if err := whCheckDryRun(h, a); err != nil {
		return err
	}
	if h.broken != nil {
		return &whCallError{webhook: h.name, reason: h.broken}
	}
	if err := p.prepare(inv, a); err != nil {
		return err
	}
	res, err := p.caller.call(ctx, inv, a, false)
	if err != nil {
		return err
	}
	for _, w := range res.warnings {
		admit.AddWarning(ctx, w)
	}
	if !res.allowed {
		return whDenied(h.name, res.status)
	}
	return nil
}
