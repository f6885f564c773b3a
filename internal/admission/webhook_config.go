package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/cel"
)

// The webhooks in force: the configurations in the watch cache,
// compiled (selectors parsed, matchConditions compiled, an HTTP client
// chosen) once per set of resourceVersions. Every write reads the
// cached list, a few pointers, to see whether anything changed; nothing
// is parsed or compiled on the write path while nothing does.

var (
	mutatingWebhookConfigurationsGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	validatingWebhookConfigurationsGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// whHook is one compiled webhook, of either kind.
type whHook struct {
	// uid identifies the hook across rounds of one request:
	// configuration name and index.
	uid            string
	config, name   string
	clientConfig   admissionregistrationv1.WebhookClientConfig
	rules          []admissionregistrationv1.RuleWithOperations
	failurePolicy  admissionregistrationv1.FailurePolicyType
	matchPolicy    admissionregistrationv1.MatchPolicyType
	nsSelector     labels.Selector
	objSelector    labels.Selector
	sideEffects    *admissionregistrationv1.SideEffectClass
	timeout        time.Duration
	reviewVersions []string
	reinvoke       bool // reinvocationPolicy IfNeeded
	conditions     []whCondition
	// broken is why the hook cannot be called (a selector or condition
	// the server could not compile): the failurePolicy decides.
	broken error
}

type whCondition struct {
	name string
	prog *cel.Program
}

// whSnapshot is the compiled hooks of one set of configurations.
type whSnapshot struct {
	versions []string // "name/resourceVersion", in list order
	hooks    []*whHook
}

// whSource keeps the snapshot of one kind of configuration. Writes
// read the snapshot without a lock; a change is compiled once, under
// the lock, by whichever write sees it first.
type whSource struct {
	objects  ObjectSource
	gvr      schema.GroupVersionResource
	mutating bool

	mu   sync.Mutex // held while compiling
	snap atomic.Pointer[whSnapshot]
}

// hooks returns the hooks in force, ordered as upstream orders them: by
// configuration name, then as listed in the configuration.
func (s *whSource) hooks(ctx context.Context) ([]*whHook, error) {
	objs, err := s.objects.ListObjects(ctx, s.gvr, "", false)
	if err != nil {
		// Fail closed: without the list, no one can say which webhooks
		// a write owes a call.
		return nil, apierrors.NewInternalError(fmt.Errorf("listing %s: %w", s.gvr.Resource, err))
	}
	if snap := s.snap.Load(); snap != nil && whSameVersions(snap.versions, objs) {
		return snap.hooks, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap := s.snap.Load(); snap != nil && whSameVersions(snap.versions, objs) {
		return snap.hooks, nil
	}
	snap := whCompile(objs, s.mutating)
	s.snap.Store(snap)
	return snap.hooks, nil
}

func whSameVersions(versions []string, objs []runtime.Object) bool {
	if len(versions) != len(objs) {
		return false
	}
	for i, o := range objs {
		m, ok := o.(metav1.Object)
		if !ok {
			return false
		}
		v := versions[i]
		name, rv, _ := strings.Cut(v, "/")
		if name != m.GetName() || rv != m.GetResourceVersion() {
			return false
		}
	}
	return true
}

func whCompile(objs []runtime.Object, mutating bool) *whSnapshot {
	snap := &whSnapshot{}
	type named struct {
		name  string
		hooks []*whHook
	}
	var configs []named
	for _, o := range objs {
		m, ok := o.(metav1.Object)
		if !ok {
			continue
		}
		snap.versions = append(snap.versions, m.GetName()+"/"+m.GetResourceVersion())
		var hooks []*whHook
		switch c := o.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				h := whCompileHook(c.Name, i, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy,
					w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions)
				h.reinvoke = w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy
				hooks = append(hooks, h)
			}
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				hooks = append(hooks, whCompileHook(c.Name, i, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy,
					w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions))
			}
		}
		configs = append(configs, named{m.GetName(), hooks})
	}
	slices.SortStableFunc(configs, func(a, b named) int { return strings.Compare(a.name, b.name) })
	for _, c := range configs {
		snap.hooks = append(snap.hooks, c.hooks...)
	}
	return snap
}

func whCompileHook(config string, i int, name string, cc admissionregistrationv1.WebhookClientConfig,
	rules []admissionregistrationv1.RuleWithOperations, fp *admissionregistrationv1.FailurePolicyType,
	mp *admissionregistrationv1.MatchPolicyType, nsSel, objSel *metav1.LabelSelector,
	se *admissionregistrationv1.SideEffectClass, timeout *int32, versions []string,
	conds []admissionregistrationv1.MatchCondition) *whHook {
	h := &whHook{
		uid: fmt.Sprintf("%s/%d", config, i), config: config, name: name, clientConfig: cc, rules: rules,
		failurePolicy: admissionregistrationv1.Fail, matchPolicy: admissionregistrationv1.Equivalent,
		sideEffects: se, timeout: 10 * time.Second, reviewVersions: versions,
		nsSelector: labels.Everything(), objSelector: labels.Everything(),
	}
	if fp != nil {
		h.failurePolicy = *fp
	}
	if mp != nil {
		h.matchPolicy = *mp
	}
	if timeout != nil {
		h.timeout = time.Duration(*timeout) * time.Second
	}
	var err error
	if nsSel != nil {
		if h.nsSelector, err = metav1.LabelSelectorAsSelector(nsSel); err != nil {
			h.nsSelector, h.broken = labels.Nothing(), fmt.Errorf("invalid namespaceSelector: %w", err)
		}
	}
	if objSel != nil {
		if h.objSelector, err = metav1.LabelSelectorAsSelector(objSel); err != nil {
			h.objSelector, h.broken = labels.Nothing(), fmt.Errorf("invalid objectSelector: %w", err)
		}
	}
	for _, c := range conds {
		prog, err := cel.Compile(c.Expression, cel.Bool, cel.Decls{Authorizer: true})
		if err != nil {
			h.broken = fmt.Errorf("matchCondition %q: %w", c.Name, err)
			continue
		}
		h.conditions = append(h.conditions, whCondition{name: c.Name, prog: prog})
	}
	if h.broken != nil {
		// A hook that cannot be evaluated matches everything its rules
		// cover, so that the failurePolicy, not a silent skip, decides.
		h.nsSelector, h.objSelector, h.conditions = labels.Everything(), labels.Everything(), nil
	}
	return h
}
