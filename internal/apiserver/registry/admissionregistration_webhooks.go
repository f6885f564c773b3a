package registry

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/cel"
)

// Webhook configurations: each names one or more webhooks, HTTPS
// endpoints the API server calls with an AdmissionReview for the writes
// their rules match. A mutating webhook may patch the object; a
// validating one may only say yes or no.
//
// The defaults are v1's: a webhook fails closed (failurePolicy Fail),
// matches a resource under any of its served versions (matchPolicy
// Equivalent), waits 10 s, is not re-invoked, selects every namespace and
// object, and a rule covers both scopes. sideEffects has no default: v1
// makes the author promise None or NoneOnDryRun, because the API server
// calls webhooks on dry-run requests too.
//
// Update validation relaxes the rules an older object may already break
// (duplicate webhook names, unknown review versions, side effects), so a
// configuration stored under looser rules can still be edited; as
// upstream, a match condition already stored is not recompiled. Match
// conditions are compiled in internal/cel's environment, the
// one the webhook plugins evaluate them in.

func webhookConfigurationResources() []*Resource {
	return []*Resource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations",
			Kind: "MutatingWebhookConfiguration", Singular: "mutatingwebhookconfiguration",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			Default:    defaultMutatingWebhookConfiguration,
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateMutatingWebhookConfiguration(obj.(*admissionregistrationv1.MutatingWebhookConfiguration), nil)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateMutatingWebhookConfiguration(obj.(*admissionregistrationv1.MutatingWebhookConfiguration),
					old.(*admissionregistrationv1.MutatingWebhookConfiguration))
			},
			Table: webhookConfigurationTable(func(obj runtime.Object) (metav1.ObjectMeta, int) {
				c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
				return c.ObjectMeta, len(c.Webhooks)
			})},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations",
			Kind: "ValidatingWebhookConfiguration", Singular: "validatingwebhookconfiguration",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			Default:    defaultValidatingWebhookConfiguration,
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateValidatingWebhookConfiguration(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration), nil)
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateValidatingWebhookConfiguration(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration),
					old.(*admissionregistrationv1.ValidatingWebhookConfiguration))
			},
			Table: webhookConfigurationTable(func(obj runtime.Object) (metav1.ObjectMeta, int) {
				c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
				return c.ObjectMeta, len(c.Webhooks)
			})},
	}
}

// WebhookServedResources describes every served resource as the webhook
// admission plugins need it: matchPolicy Equivalent matches a write
// under the resources served from the same storage and converts objects
// between them; a patched object gets its resource's defaults again.
func WebhookServedResources() []admit.ServedResource {
	var out []admit.ServedResource
	for _, r := range All() {
		s := admit.ServedResource{Resource: r.GroupVersionResource(), Kind: r.GroupVersionKind(), Default: r.Default}
		if v := r.Storage; v != nil {
			s.Storage = schema.GroupVersionResource{Group: v.Group, Version: v.Version, Resource: v.Resource}
			s.ToStorage, s.FromStorage = v.ToStorage, v.FromStorage
		}
		out = append(out, s)
	}
	return out
}

func webhookConfigurationTable(get func(runtime.Object) (metav1.ObjectMeta, int)) *Table {
	return &Table{
		Columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
			ageColumn,
		},
		Row: func(obj runtime.Object) []interface{} {
			m, n := get(obj)
			return []interface{}{m.Name, int64(n), Age(m.CreationTimestamp)}
		},
	}
}

// webhookCommon is the part of a webhook both kinds share: validation and
// defaulting are written once against it.
type webhookCommon struct {
	Name                    string
	ClientConfig            *admissionregistrationv1.WebhookClientConfig
	Rules                   []admissionregistrationv1.RuleWithOperations
	FailurePolicy           **admissionregistrationv1.FailurePolicyType
	MatchPolicy             **admissionregistrationv1.MatchPolicyType
	NamespaceSelector       **metav1.LabelSelector
	ObjectSelector          **metav1.LabelSelector
	SideEffects             *admissionregistrationv1.SideEffectClass
	TimeoutSeconds          **int32
	AdmissionReviewVersions []string
	MatchConditions         []admissionregistrationv1.MatchCondition
}

func mutatingCommon(w *admissionregistrationv1.MutatingWebhook) webhookCommon {
	return webhookCommon{Name: w.Name, ClientConfig: &w.ClientConfig, Rules: w.Rules, FailurePolicy: &w.FailurePolicy,
		MatchPolicy: &w.MatchPolicy, NamespaceSelector: &w.NamespaceSelector, ObjectSelector: &w.ObjectSelector,
		SideEffects: w.SideEffects, TimeoutSeconds: &w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
		MatchConditions: w.MatchConditions}
}

func validatingCommon(w *admissionregistrationv1.ValidatingWebhook) webhookCommon {
	return webhookCommon{Name: w.Name, ClientConfig: &w.ClientConfig, Rules: w.Rules, FailurePolicy: &w.FailurePolicy,
		MatchPolicy: &w.MatchPolicy, NamespaceSelector: &w.NamespaceSelector, ObjectSelector: &w.ObjectSelector,
		SideEffects: w.SideEffects, TimeoutSeconds: &w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
		MatchConditions: w.MatchConditions}
}

func defaultMutatingWebhookConfiguration(obj runtime.Object) {
	c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		whDefault(mutatingCommon(w))
		if w.ReinvocationPolicy == nil {
			w.ReinvocationPolicy = new(admissionregistrationv1.NeverReinvocationPolicy)
		}
	}
}

func defaultValidatingWebhookConfiguration(obj runtime.Object) {
	c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	for i := range c.Webhooks {
		whDefault(validatingCommon(&c.Webhooks[i]))
	}
}

func whDefault(w webhookCommon) {
	if *w.FailurePolicy == nil {
		*w.FailurePolicy = new(admissionregistrationv1.Fail)
	}
	if *w.MatchPolicy == nil {
		*w.MatchPolicy = new(admissionregistrationv1.Equivalent)
	}
	if *w.NamespaceSelector == nil {
		*w.NamespaceSelector = &metav1.LabelSelector{}
	}
	if *w.ObjectSelector == nil {
		*w.ObjectSelector = &metav1.LabelSelector{}
	}
	if *w.TimeoutSeconds == nil {
		*w.TimeoutSeconds = new(int32(10))
	}
	for i := range w.Rules {
		if w.Rules[i].Scope == nil {
			w.Rules[i].Scope = new(admissionregistrationv1.AllScopes)
		}
	}
	if s := w.ClientConfig.Service; s != nil && s.Port == nil {
		s.Port = new(int32(443))
	}
}

// whOptions are the checks an update may skip because the stored object
// already failed them.
type whOptions struct {
	uniqueNames, knownReviewVersions, noSideEffects bool
	// skipConditions: the match conditions are those stored, unchanged,
	// so not checked again; storedConditions are expressions stored
	// before, not recompiled.
	skipConditions   bool
	storedConditions map[string]bool
}

// whOptionsFor derives the options of an update from the stored hooks
// (nil for a create).
func whOptionsFor(hooks, old []webhookCommon) whOptions {
	o := whOptions{uniqueNames: true, knownReviewVersions: true, noSideEffects: true, storedConditions: map[string]bool{}}
	if old == nil {
		return o
	}
	names := map[string]bool{}
	for _, w := range old {
		if names[w.Name] {
			o.uniqueNames = false
		}
		names[w.Name] = true
		if len(w.AdmissionReviewVersions) > 0 && !slices.ContainsFunc(w.AdmissionReviewVersions, func(v string) bool { return slices.Contains(whReviewVersions, v) }) {
			o.knownReviewVersions = false
		}
		if w.SideEffects == nil || !slices.Contains(whNoSideEffects, *w.SideEffects) {
			o.noSideEffects = false
		}
		for _, c := range w.MatchConditions {
			o.storedConditions[c.Expression] = true
		}
	}
	o.skipConditions = len(hooks) == len(old)
	for i := 0; o.skipConditions && i < len(old); i++ {
		o.skipConditions = reflect.DeepEqual(hooks[i].MatchConditions, old[i].MatchConditions)
	}
	return o
}

var (
	whReviewVersions = []string{"v1", "v1beta1"}
	// v1 accepts only webhooks without side effects on dry runs; an
	// object stored with Some or Unknown (under v1beta1) keeps them.
	whNoSideEffects  = []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun}
	whAllSideEffects = []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun,
		admissionregistrationv1.SideEffectClassSome, admissionregistrationv1.SideEffectClassUnknown}
)

func validateMutatingWebhookConfiguration(c, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	var oldHooks []webhookCommon
	if old != nil {
		oldMeta, oldHooks = &old.ObjectMeta, whCommons(old.Webhooks, mutatingCommon)
	}
	// Only mutating webhooks are re-invoked.
	reinvocation := func(i int, p *field.Path) field.ErrorList {
		rp := c.Webhooks[i].ReinvocationPolicy
		if rp == nil || *rp == admissionregistrationv1.NeverReinvocationPolicy || *rp == admissionregistrationv1.IfNeededReinvocationPolicy {
			return nil
		}
		return field.ErrorList{field.NotSupported(p.Child("reinvocationPolicy"), *rp,
			[]admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy})}
	}
	return whValidateConfiguration(&c.ObjectMeta, oldMeta, whCommons(c.Webhooks, mutatingCommon), oldHooks, reinvocation)
}

func validateValidatingWebhookConfiguration(c, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	var oldHooks []webhookCommon
	if old != nil {
		oldMeta, oldHooks = &old.ObjectMeta, whCommons(old.Webhooks, validatingCommon)
	}
	return whValidateConfiguration(&c.ObjectMeta, oldMeta, whCommons(c.Webhooks, validatingCommon), oldHooks, nil)
}

// whValidateConfiguration checks what both configuration kinds share: the
// metadata (with the update rules when oldMeta is set) and each webhook,
// then extra, when set, for the kind's own fields of webhook i. oldHooks
// is nil on create: the rules an update relaxes depend on it.
func whValidateConfiguration(meta, oldMeta *metav1.ObjectMeta, hooks, oldHooks []webhookCommon, extra func(i int, p *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	if oldMeta != nil {
		errs = validateCoreMetaUpdate(meta, oldMeta)
	} else {
		errs = validateCoreMeta(meta, false, apivalidation.NameIsDNSSubdomain)
	}
	opts := whOptionsFor(hooks, oldHooks)
	seen := map[string]bool{}
	for i, w := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, whValidate(w, opts, seen, p)...)
		if extra != nil {
			errs = append(errs, extra(i, p)...)
		}
	}
	return errs
}

// whCommons views each webhook of a configuration as the fields both kinds
// share; the result is never nil.
func whCommons[W any](ws []W, common func(*W) webhookCommon) []webhookCommon {
	out := make([]webhookCommon, 0, len(ws))
	for i := range ws {
		out = append(out, common(&ws[i]))
	}
	return out
}

func whValidate(w webhookCommon, opts whOptions, seen map[string]bool, p *field.Path) field.ErrorList {
	// A webhook's name is a fully qualified domain name, so that names
	// chosen by different authors do not collide.
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), w.Name)
	if opts.uniqueNames && w.Name != "" {
		if seen[w.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), w.Name))
		}
		seen[w.Name] = true
	}

	for i, r := range w.Rules {
		errs = append(errs, whValidateRule(r, p.Child("rules").Index(i))...)
	}
	if fp := *w.FailurePolicy; fp != nil && *fp != admissionregistrationv1.Ignore && *fp != admissionregistrationv1.Fail {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *fp, []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore}))
	}
	if mp := *w.MatchPolicy; mp != nil && *mp != admissionregistrationv1.Exact && *mp != admissionregistrationv1.Equivalent {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Equivalent, admissionregistrationv1.Exact}))
	}
	allowed := whAllSideEffects
	if opts.noSideEffects {
		allowed = whNoSideEffects
	}
	if w.SideEffects == nil {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(names, ", ")))
	} else if !slices.Contains(allowed, *w.SideEffects) {
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *w.SideEffects, allowed))
	}
	if ts := *w.TimeoutSeconds; ts != nil && (*ts < 1 || *ts > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *ts, "the timeout value must be between 1 and 30 seconds"))
	}
	errs = append(errs, whValidateReviewVersions(w.AdmissionReviewVersions, opts.knownReviewVersions, p.Child("admissionReviewVersions"))...)
	errs = append(errs, whValidateClientConfig(w.ClientConfig, p.Child("clientConfig"))...)
	for _, sel := range []struct {
		s    *metav1.LabelSelector
		name string
	}{{*w.NamespaceSelector, "namespaceSelector"}, {*w.ObjectSelector, "objectSelector"}} {
		if sel.s != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(sel.s, metav1validation.LabelSelectorValidationOptions{}, p.Child(sel.name))...)
		}
	}
	if opts.skipConditions {
		return errs
	}
	return append(errs, whValidateMatchConditions(w.MatchConditions, opts.storedConditions, p.Child("matchConditions"))...)
}

var whOperations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Connect,
	admissionregistrationv1.Create, admissionregistrationv1.Delete, admissionregistrationv1.Update}

func whValidateRule(r admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !slices.Contains(whOperations, op) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, whOperations))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), ""))
	}
	errs = append(errs, whValidateResources(r.Resources, p.Child("resources"))...)
	if s := r.Scope; s != nil && !slices.Contains([]admissionregistrationv1.ScopeType{admissionregistrationv1.AllScopes, admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope}, *s) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *s,
			[]admissionregistrationv1.ScopeType{admissionregistrationv1.AllScopes, admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope}))
	}
	return errs
}

// whValidateResources refuses lists where a wildcard already covers
// another entry: "*/*" with anything, "*" with other resources, "x/*"
// followed by "x/y", "*/y" followed by "x/y". As upstream's check, the
// last two look only at entries after the wildcard, and "*" with a
// plain resource is refused only when that resource comes last.
func whValidateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	withSub := map[string]bool{} // "res/*" seen
	subWith := map[string]bool{} // "*/sub" seen
	hasAllAll, hasAll, plainLast := false, false, false
	for i, r := range resources {
		if r == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		hasAllAll = hasAllAll || r == "*/*"
		hasAll = hasAll || r == "*"
		res, sub, ok := strings.Cut(r, "/")
		if !ok {
			plainLast = r != "*"
			continue
		}
		if withSub[res] {
			errs = append(errs, field.Invalid(p.Index(i), r, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, r)))
		}
		if subWith[sub] {
			errs = append(errs, field.Invalid(p.Index(i), r, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, r)))
		}
		if sub == "*" {
			withSub[res] = true
		}
		if res == "*" {
			subWith[sub] = true
		}
	}
	if len(resources) > 1 && hasAllAll {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if hasAll && plainLast {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

func whValidateReviewVersions(versions []string, requireKnown bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of v1, v1beta1")}
	}
	seen := map[string]bool{}
	known := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		known = known || slices.Contains(whReviewVersions, v)
	}
	if requireKnown && !known {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of v1, v1beta1"))
	}
	return errs
}

func whValidateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(p, "exactly one of url or service is required")}
	case cc.URL != nil:
		return whValidateURL(*cc.URL, p.Child("url"))
	}
	s, sp := cc.Service, p.Child("service")
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(sp.Child("name"), "service name is required"))
	}
	if s.Namespace == "" {
		errs = append(errs, field.Required(sp.Child("namespace"), "service namespace is required"))
	}
	if s.Port != nil {
		if msgs := utilvalidation.IsValidPortNum(int(*s.Port)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(sp.Child("port"), *s.Port, "port is not valid: "+strings.Join(msgs, ", ")))
		}
	}
	if s.Path == nil || *s.Path == "" || *s.Path == "/" {
		return errs
	}
	path := *s.Path
	if path == "//" {
		return append(errs, field.Invalid(sp.Child("path"), path, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(path, "/") {
		errs = append(errs, field.Invalid(sp.Child("path"), path, "must start with a '/'"))
	}
	// Each segment is a DNS subdomain, so a path cannot smuggle a query,
	// a fragment or "..".
	for i, seg := range strings.Split(strings.TrimSuffix(path[1:], "/"), "/") {
		if seg == "" {
			errs = append(errs, field.Invalid(sp.Child("path"), path, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range utilvalidation.IsDNS1123Subdomain(seg) {
			errs = append(errs, field.Invalid(sp.Child("path"), path, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}

// whValidateURL: the API server sends objects and user identities to the
// URL, so only HTTPS, and nothing in it that could carry credentials or
// be lost (user info, query, fragment).
func whValidateURL(raw string, p *field.Path) field.ErrorList {
	const form = "; desired format: https://host[/path]"
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(p, "url must be a valid URL: "+err.Error()+form)}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(p, u.Scheme, "'https' is the only allowed URL scheme"+form))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(p, u.Host, "host must be provided"+form))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(p, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(p, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(p, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

const whMaxMatchConditions = 64

func whValidateMatchConditions(conds []admissionregistrationv1.MatchCondition, stored map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > whMaxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conds), whMaxMatchConditions))
	}
	names := map[string]bool{}
	for i, c := range conds {
		cp := p.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
			}
			if names[c.Name] {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
			names[c.Name] = true
		}
		if c.Expression == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
			continue
		}
		if stored[c.Expression] {
			continue
		}
		// Compiled as the webhook plugins compile it: object, oldObject,
		// request and authorizer, yielding a bool.
		if _, err := cel.Compile(c.Expression, cel.Bool, cel.Decls{Authorizer: true}); err != nil {
			errs = append(errs, field.Invalid(cp.Child("expression"), c.Expression, err.Error()))
		}
	}
	return errs
}
