package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/cel"
)

// ValidatingPolicy is the ValidatingAdmissionPolicy plugin: cluster
// operators' own validation, written as CEL expressions in
// ValidatingAdmissionPolicy objects and put in force by
// ValidatingAdmissionPolicyBindings.
//
// # How one write is judged
//
// For every binding whose policy exists, in binding-name order:
//
//  1. the policy's matchConstraints and the binding's matchResources must
//     both match the write (rules, excludeResourceRules, namespace and
//     object selectors);
//  2. the binding's paramRef picks the parameter objects (none: the
//     binding is skipped or fails, as parameterNotFoundAction says); each
//     parameter is judged on its own;
//  3. matchConditions must all be true;
//  4. every validation that is false fails, with its message,
//     messageExpression or "failed expression: ...";
//  5. each failure does what the binding's validationActions say: Deny
//     (the request fails: 422, or the validation's reason), Warn (a
//     Warning header) and Audit (a log line).
//
// An expression that errors, a parameter that cannot be read or a policy
// that does not compile is the policy's failurePolicy's to decide: Fail
// denies, Ignore skips the binding.
//
// # Cost
//
// Policies and bindings are read from the API server's watch cache on
// every write: a b-tree range of the few objects under a read lock, no
// storage read. The compiled snapshot is rebuilt only when that list
// changed (its count or highest resourceVersion), and a policy compiles
// once per uid and generation, so a status write does not recompile it.
// With no bindings a write costs one such range and nothing more. The
// request's objects are converted for CEL once, on first use, and shared
// by every policy; an expression may spend cel.PerCallLimit, a binding's
// expressions together celRuntimeBudget.
//
// Policies, bindings and their own writes are never judged, as upstream:
// a broken policy must not lock out its fix.
type ValidatingPolicy struct {
	cfg ValidatingPolicyConfig

	mu       sync.Mutex
	compiled map[types.UID]*vapCompiled
	snap     *vapSnapshot
}

// ValidatingPolicyConfig configures ValidatingPolicy.
type ValidatingPolicyConfig struct {
	// Objects lists policies and bindings and reads parameters (required).
	Objects ObjectSource
	// Namespaces supplies namespaceObject and namespace labels (required).
	Namespaces NamespaceGetter
	// Authorizer backs the authorizer variable; nil allows nothing.
	Authorizer auth.Authorizer
	// Resources resolves a policy's paramKind to the resource to read.
	Resources []ResourceKind
	// Status, when set, lets RunTypeChecking write policies' status.
	Status StatusWriter
	// Types gives the kinds a policy names their CEL types, for
	// RunTypeChecking (the server builds it from its OpenAPI schemas);
	// nil checks nothing.
	Types *cel.Types
	// Logger receives Audit failures (slog.Default()).
	Logger *slog.Logger
}

var (
	vapPoliciesGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	vapBindingsGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
)

// NewValidatingPolicy returns the plugin with cfg's defaults filled.
func NewValidatingPolicy(cfg ValidatingPolicyConfig) *ValidatingPolicy {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &ValidatingPolicy{cfg: cfg, compiled: map[types.UID]*vapCompiled{}}
}

// Name implements Plugin.
func (p *ValidatingPolicy) Name() string { return "ValidatingAdmissionPolicy" }

// vapSnapshot is the policies and bindings as of one state of the cache.
type vapSnapshot struct {
	policyKey, bindingKey vapListKey
	policies              map[string]*vapCompiled
	bindings              []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// vapListKey identifies the state of a listed resource: any create or
// update raises the highest resourceVersion (an etcd revision), and a
// delete alone lowers the count, so an unchanged key means an unchanged
// list.
type vapListKey struct {
	n     int
	maxRV int64
}

func vapKeyOf(objs []runtime.Object) vapListKey {
	k := vapListKey{n: len(objs)}
	for _, o := range objs {
		if m, err := meta.Accessor(o); err == nil {
			if rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64); err == nil && rv > k.maxRV {
				k.maxRV = rv
			}
		}
	}
	return k
}

// snapshot returns the current policies and bindings, rebuilt only when
// the cache changed.
func (p *ValidatingPolicy) snapshot(ctx context.Context) (*vapSnapshot, error) {
	bindings, err := p.cfg.Objects.ListObjects(ctx, vapBindingsGVR, "", false)
	if err != nil {
		return nil, err
	}
	bkey := vapKeyOf(bindings)
	p.mu.Lock()
	snap := p.snap
	p.mu.Unlock()
	if len(bindings) == 0 {
		// Nothing is in force, whatever policies exist.
		return &vapSnapshot{}, nil
	}
	policies, err := p.cfg.Objects.ListObjects(ctx, vapPoliciesGVR, "", false)
	if err != nil {
		return nil, err
	}
	pkey := vapKeyOf(policies)
	if snap != nil && snap.policyKey == pkey && snap.bindingKey == bkey {
		return snap, nil
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	next := &vapSnapshot{policyKey: pkey, bindingKey: bkey, policies: map[string]*vapCompiled{}}
	live := map[types.UID]bool{}
	for _, o := range policies {
		pol, ok := o.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if !ok {
			continue
		}
		live[pol.UID] = true
		c := p.compiled[pol.UID]
		if c == nil || c.generation != pol.Generation {
			c = vapCompile(pol)
			p.compiled[pol.UID] = c
		}
		// The object may be newer (a status write) than the one compiled.
		c = c.withPolicy(pol)
		next.policies[pol.Name] = c
	}
	for uid := range p.compiled {
		if !live[uid] {
			delete(p.compiled, uid)
		}
	}
	for _, o := range bindings {
		if b, ok := o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); ok {
			next.bindings = append(next.bindings, b)
		}
	}
	slices.SortFunc(next.bindings, func(a, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) int {
		return strings.Compare(a.Name, b.Name)
	})
	p.snap = next
	return next, nil
}

// vapCompiled is one policy generation, compiled.
type vapCompiled struct {
	policy     *admissionregistrationv1.ValidatingAdmissionPolicy
	generation int64
	// err is why the policy cannot be evaluated (an expression that does
	// not compile): its failurePolicy decides every write it matches.
	err             error
	matchConditions []*cel.Program
	matchNames      []string
	varNames        []string
	variables       []*cel.Program
	validations     []vapValidation
}

type vapValidation struct {
	v       admissionregistrationv1.Validation
	prog    *cel.Program
	message *cel.Program // nil without messageExpression, or if it did not compile
}

func (c *vapCompiled) withPolicy(pol *admissionregistrationv1.ValidatingAdmissionPolicy) *vapCompiled {
	if c.policy == pol {
		return c
	}
	cc := *c
	cc.policy = pol
	return &cc
}

// vapCompile compiles every expression of a policy. Audit annotations
// are compiled to find errors but not kept: nothing stores them.
func vapCompile(pol *admissionregistrationv1.ValidatingAdmissionPolicy) *vapCompiled {
	c := &vapCompiled{policy: pol, generation: pol.Generation}
	spec := &pol.Spec
	decls := cel.Decls{Params: spec.ParamKind != nil, Authorizer: true}
	var errs []string
	fail := func(path string, err error) {
		errs = append(errs, fmt.Sprintf("%s: %v", path, err))
	}
	for i, m := range spec.MatchConditions {
		prog, err := cel.Compile(m.Expression, cel.Bool, decls)
		if err != nil {
			fail(fmt.Sprintf("spec.matchConditions[%d].expression", i), err)
			continue
		}
		c.matchConditions = append(c.matchConditions, prog)
		c.matchNames = append(c.matchNames, m.Name)
	}
	for i, v := range spec.Variables {
		prog, err := cel.Compile(v.Expression, cel.Any, decls)
		if err != nil {
			fail(fmt.Sprintf("spec.variables[%d].expression", i), err)
		}
		c.varNames = append(c.varNames, v.Name)
		c.variables = append(c.variables, prog)
		decls.Variables = append(decls.Variables, v.Name)
	}
	for i, v := range spec.Validations {
		prog, err := cel.Compile(v.Expression, cel.Bool, decls)
		if err != nil {
			fail(fmt.Sprintf("spec.validations[%d].expression", i), err)
			continue
		}
		val := vapValidation{v: v, prog: prog}
		if v.MessageExpression != "" {
			md := decls
			md.Authorizer = false
			// A broken messageExpression falls back to the message, as
			// upstream, rather than breaking the policy.
			val.message, _ = cel.Compile(v.MessageExpression, cel.String, md)
		}
		c.validations = append(c.validations, val)
	}
	for i, a := range spec.AuditAnnotations {
		if _, err := cel.Compile(a.ValueExpression, cel.StringOrNull, decls); err != nil {
			fail(fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), err)
		}
	}
	if spec.MatchConstraints == nil {
		errs = append(errs, "spec.matchConstraints: Required value")
	}
	if len(errs) > 0 {
		c.err = errors.New(strings.Join(errs, "; "))
	}
	return c
}

// vapIgnored: writes the plugin never judges.
func vapIgnored(a *Attributes) bool {
	if a.Resource.Group != "admissionregistration.k8s.io" {
		return false
	}
	switch a.Resource.Resource {
	case "validatingadmissionpolicies", "validatingadmissionpolicybindings",
		"mutatingadmissionpolicies", "mutatingadmissionpolicybindings":
		return true
	}
	return false
}

// Validate implements Validator.
func (p *ValidatingPolicy) Validate(ctx context.Context, a *Attributes) error {
	if vapIgnored(a) {
		return nil
	}
	snap, err := p.snapshot(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("ValidatingAdmissionPolicy: %w", err))
	}
	if len(snap.bindings) == 0 {
		return nil
	}
	req := &vapRequest{p: p, ctx: ctx, a: a}
	var denied *vapFailure
	for _, b := range snap.bindings {
		c := snap.policies[b.Spec.PolicyName]
		if c == nil {
			continue
		}
		failures := req.evaluate(c, b)
		for _, f := range failures {
			for _, action := range b.Spec.ValidationActions {
				switch action {
				case admissionregistrationv1.Deny:
					if denied == nil {
						denied = &f
					}
				case admissionregistrationv1.Warn:
					admit.AddWarning(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s",
						f.policy, f.binding, f.message))
				case admissionregistrationv1.Audit:
					p.cfg.Logger.Info("ValidatingAdmissionPolicy audit",
						"policy", f.policy, "binding", f.binding, "message", f.message, "reason", string(f.reason),
						"operation", string(a.Operation), "resource", a.Resource.String(), "namespace", a.Namespace, "name", req.name())
				}
			}
		}
	}
	if denied == nil {
		return nil
	}
	return vapDenial(a, denied)
}

// vapFailure is one validation that did not pass, or one error its
// failurePolicy turned into a denial.
type vapFailure struct {
	policy, binding string
	message         string
	reason          metav1.StatusReason
}

// vapDenial is upstream's error: a Forbidden on the request's resource
// whose reason and code are the validation's (Invalid, 422, when it has
// none), with the message repeated as a cause.
func vapDenial(a *Attributes, f *vapFailure) error {
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", f.policy, f.binding, f.message)
	var se *apierrors.StatusError
	if !errors.As(forbiddenFor(a, errors.New(msg)), &se) {
		return apierrors.NewInvalid(a.Kind.GroupKind(), a.Name, nil)
	}
	reason := f.reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	se.ErrStatus.Reason = reason
	se.ErrStatus.Code = vapReasonCode(reason)
	se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return se
}

func vapReasonCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return 403
	case metav1.StatusReasonUnauthorized:
		return 401
	case metav1.StatusReasonRequestEntityTooLarge:
		return 413
	}
	return 422
}
