package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// vapRequest is one write being judged by every binding: what it reads
// once (the namespace, the CEL conversion of its objects) is kept here.
type vapRequest struct {
	p   *ValidatingPolicy
	ctx context.Context
	a   *Attributes

	nsDone bool
	ns     *corev1.Namespace
	nsErr  error
	act    *CELActivation
	eqDone bool
	eq     []schema.GroupVersionResource
}

func (r *vapRequest) name() string {
	if r.a.Name != "" {
		return r.a.Name
	}
	if r.a.Object != nil {
		if m, err := meta.Accessor(r.a.Object); err == nil {
			return m.GetName()
		}
	}
	return ""
}

// equivalents returns the write's resource under its other served
// versions.
func (r *vapRequest) equivalents() []schema.GroupVersionResource {
	if !r.eqDone {
		r.eqDone = true
		for _, rk := range r.p.cfg.Resources {
			if rk.Resource.GroupResource() == r.a.Resource.GroupResource() && rk.Resource.Version != r.a.Resource.Version {
				r.eq = append(r.eq, rk.Resource)
			}
		}
	}
	return r.eq
}

func (r *vapRequest) namespace() (*corev1.Namespace, error) {
	if !r.nsDone {
		r.nsDone = true
		if r.a.Namespace != "" {
			r.ns, r.nsErr = r.p.cfg.Namespaces.GetNamespace(r.ctx, r.a.Namespace)
		}
	}
	return r.ns, r.nsErr
}

func (r *vapRequest) nsLabels() (labels.Set, error) {
	ns, err := r.namespace()
	if err != nil || ns == nil {
		return nil, err
	}
	return ns.Labels, nil
}

func (r *vapRequest) activation() *CELActivation {
	if r.act == nil {
		cfg := CELActivationConfig{Authorizer: r.p.cfg.Authorizer}
		if ns, _ := r.namespace(); ns != nil {
			cfg.Namespace = ns
		}
		r.act = NewCELActivation(r.ctx, r.a, cfg)
	}
	return r.act
}

// evaluate judges the write by one binding of policy c and returns what
// failed; errors the failurePolicy turns into denials are failures too.
func (r *vapRequest) evaluate(c *vapCompiled, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) []vapFailure {
	pol := c.policy
	failOrIgnore := func(err error) []vapFailure {
		if fp := pol.Spec.FailurePolicy; fp != nil && *fp == admissionregistrationv1.Ignore {
			return nil
		}
		return []vapFailure{{policy: pol.Name, binding: b.Name, message: err.Error()}}
	}
	if pol.Spec.MatchConstraints == nil {
		return nil
	}
	ok, err := vapMatchResources(pol.Spec.MatchConstraints, r.a, r.nsLabels, r.equivalents())
	if err == nil && ok && len(pol.Spec.MatchConstraints.ResourceRules) == 0 {
		ok = false
	}
	if err == nil && ok {
		ok, err = vapMatchResources(b.Spec.MatchResources, r.a, r.nsLabels, r.equivalents())
	}
	if err != nil {
		return failOrIgnore(fmt.Errorf("failed to configure binding: %w", err))
	}
	if !ok {
		return nil
	}
	if c.err != nil {
		return failOrIgnore(fmt.Errorf("failed to configure policy: %w", c.err))
	}
	params, err := r.params(pol, b)
	if err != nil {
		return failOrIgnore(fmt.Errorf("failed to configure binding: %w", err))
	}
	var out []vapFailure
	for _, param := range params {
		act := r.activation().WithParams(param).WithVariables(c.varNames, c.variables)
		fs, err := r.validate(c, act)
		if err != nil {
			out = append(out, failOrIgnore(err)...)
			continue
		}
		for _, f := range fs {
			f.policy, f.binding = pol.Name, b.Name
			out = append(out, f)
		}
	}
	return out
}

// vapBudgetError is upstream's message when a policy's expressions spend
// more than the runtime budget on one write.
var vapBudgetError = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// validate runs matchConditions and validations for one parameter.
func (r *vapRequest) validate(c *vapCompiled, act *CELActivation) ([]vapFailure, error) {
	var spent int64
	over := func(cost int64) bool {
		spent += cost
		return spent+act.VariablesCost() > celRuntimeBudget
	}
	var condSpent int64
	for i, prog := range c.matchConditions {
		ok, cost, err := prog.EvalBool(r.ctx, act)
		condSpent += cost
		if condSpent > celMatchConditionsBudget || over(cost) {
			return nil, vapBudgetError
		}
		if err != nil {
			return nil, fmt.Errorf("failed to evaluate matchCondition %q: %w", c.matchNames[i], err)
		}
		if !ok {
			return nil, nil
		}
	}
	var out []vapFailure
	for _, v := range c.validations {
		ok, cost, err := v.prog.EvalBool(r.ctx, act)
		if over(cost) {
			return nil, vapBudgetError
		}
		if err != nil {
			return nil, err
		}
		if ok {
			continue
		}
		f := vapFailure{message: vapDefaultMessage(v.v)}
		if v.v.Reason != nil {
			f.reason = *v.v.Reason
		}
		if v.message != nil {
			msg, isString, cost, err := v.message.EvalString(r.ctx, act)
			if over(cost) {
				return nil, vapBudgetError
			}
			// An empty, multi-line or failing messageExpression falls
			// back to the static message, as upstream.
			if msg = strings.TrimSpace(msg); err == nil && isString && msg != "" && !strings.ContainsAny(msg, "\r\n") {
				f.message = msg
			}
		}
		out = append(out, f)
	}
	return out, nil
}

func vapDefaultMessage(v admissionregistrationv1.Validation) string {
	if m := strings.TrimSpace(v.Message); m != "" {
		return m
	}
	return "failed expression: " + strings.TrimSpace(v.Expression)
}

// params returns the parameter objects a binding selects; [nil] for a
// policy without paramKind, none when the binding is skipped.
func (r *vapRequest) params(pol *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) ([]runtime.Object, error) {
	pk := pol.Spec.ParamKind
	if pk == nil {
		return []runtime.Object{nil}, nil
	}
	ref := b.Spec.ParamRef
	if ref == nil {
		return nil, fmt.Errorf("policy %s has paramKind %s %s but binding %s has no paramRef", pol.Name, pk.APIVersion, pk.Kind, b.Name)
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil, err
	}
	rk, ok := r.p.resourceFor(gv.WithKind(pk.Kind))
	if !ok {
		return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%s'", gv.WithKind(pk.Kind))
	}
	ns := ""
	if rk.Namespaced {
		ns = ref.Namespace
		if ns == "" {
			ns = r.a.Namespace
		}
		if ns == "" {
			return nil, errors.New("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	}
	var params []runtime.Object
	if ref.Name != "" {
		obj, err := r.p.cfg.Objects.GetObject(r.ctx, rk.Resource, ns, ref.Name)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			params = append(params, obj)
		}
	} else {
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		objs, err := r.p.cfg.Objects.ListObjects(r.ctx, rk.Resource, ns, false)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if sel.Matches(vapLabelsOf(o)) {
				params = append(params, o)
			}
		}
	}
	if len(params) == 0 {
		if a := ref.ParameterNotFoundAction; a != nil && *a == admissionregistrationv1.AllowAction {
			return nil, nil
		}
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return params, nil
}

func (p *ValidatingPolicy) resourceFor(gvk schema.GroupVersionKind) (ResourceKind, bool) {
	for _, rk := range p.cfg.Resources {
		if rk.Kind == gvk.Kind && rk.Resource.Group == gvk.Group && rk.Resource.Version == gvk.Version {
			return rk, true
		}
	}
	return ResourceKind{}, false
}
