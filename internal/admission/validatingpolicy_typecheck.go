package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	celgo "github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/rudder-dev/rudder/internal/cel"
)

// Type checking: expressions are evaluated against untyped maps, so a
// misspelt field (object.spec.replica) only fails when a write reaches
// it. Like upstream, the plugin therefore also compiles each validation
// against the OpenAPI schema of every kind the policy's resourceRules
// name without wildcards (and of its paramKind), and writes what the
// compiler finds to the policy's status.typeChecking.expressionWarnings,
// with status.observedGeneration, once per generation. The warnings are
// advice: the policy is enforced as written.
//
// The loop reads policies from the watch cache once a second (the cache
// offers no watch to admission) and writes only policies whose
// observedGeneration is behind.

// vapTypeCheckInterval is how often the loop looks for unchecked policies.
const vapTypeCheckInterval = time.Second

// RunTypeChecking writes type-checking warnings into the status of every
// policy until ctx ends. It needs ValidatingPolicyConfig.Status.
func (p *ValidatingPolicy) RunTypeChecking(ctx context.Context) {
	if p.cfg.Status == nil {
		return
	}
	t := time.NewTicker(vapTypeCheckInterval)
	defer t.Stop()
	for {
		p.typeCheckOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *ValidatingPolicy) typeCheckOnce(ctx context.Context) {
	objs, err := p.cfg.Objects.ListObjects(ctx, vapPoliciesGVR, "", false)
	if err != nil {
		return
	}
	for _, o := range objs {
		pol, ok := o.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if !ok || pol.Status.ObservedGeneration == pol.Generation {
			continue
		}
		next := pol.DeepCopy()
		next.Status.ObservedGeneration = pol.Generation
		next.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: p.typeCheck(pol)}
		if _, err := p.cfg.Status.UpdateObjectStatus(ctx, vapPoliciesGVR, next); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			p.cfg.Logger.Warn("ValidatingAdmissionPolicy: cannot write type-checking status", "policy", pol.Name, "err", err)
		}
	}
}

// typeCheck returns the warnings for a policy's validations.
func (p *ValidatingPolicy) typeCheck(pol *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
	gvks := p.typesToCheck(pol)
	if len(gvks) == 0 {
		return nil
	}
	var params *apiservercel.DeclType
	hasParams := pol.Spec.ParamKind != nil
	if hasParams {
		if gv, err := schema.ParseGroupVersion(pol.Spec.ParamKind.APIVersion); err == nil {
			params = p.cfg.Types.Of(gv.WithKind(pol.Spec.ParamKind.Kind))
		}
	}
	var varNames []string
	for _, v := range pol.Spec.Variables {
		varNames = append(varNames, v.Name)
	}
	type checkEnv struct {
		gvk schema.GroupVersionKind
		env *celgo.Env
	}
	var envs []checkEnv
	for _, gvk := range gvks {
		obj := p.cfg.Types.Of(gvk)
		if obj == nil {
			continue
		}
		env, err := cel.TypedEnv(obj, params, hasParams)
		if err != nil {
			p.cfg.Logger.Debug("ValidatingAdmissionPolicy: no typed environment", "kind", gvk, "err", err)
			continue
		}
		envs = append(envs, checkEnv{gvk, env})
	}
	check := func(expr string) string {
		var sb strings.Builder
		for _, e := range envs {
			if _, iss := e.env.Compile(expr); iss.Err() != nil {
				fmt.Fprintf(&sb, "%v: %s\n", e.gvk, iss)
			}
		}
		return strings.TrimSuffix(sb.String(), "\n")
	}
	var out []admissionregistrationv1.ExpressionWarning
	for i, v := range pol.Spec.Validations {
		if w := check(v.Expression); w != "" {
			out = append(out, admissionregistrationv1.ExpressionWarning{FieldRef: fmt.Sprintf("spec.validations[%d].expression", i), Warning: w})
		}
		if v.MessageExpression == "" {
			continue
		}
		if w := check(v.MessageExpression); w != "" {
			out = append(out, admissionregistrationv1.ExpressionWarning{FieldRef: fmt.Sprintf("spec.validations[%d].messageExpression", i), Warning: w})
		}
	}
	return out
}

// typesToCheck returns the kinds a policy's resourceRules name without
// wildcards or subresources, sorted.
func (p *ValidatingPolicy) typesToCheck(pol *admissionregistrationv1.ValidatingAdmissionPolicy) []schema.GroupVersionKind {
	mc := pol.Spec.MatchConstraints
	if mc == nil {
		return nil
	}
	var out []schema.GroupVersionKind
	for _, r := range mc.ResourceRules {
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					if g == "*" || v == "*" || strings.Contains(res, "*") || strings.Contains(res, "/") {
						continue
					}
					for _, rk := range p.cfg.Resources {
						if rk.Resource == (schema.GroupVersionResource{Group: g, Version: v, Resource: res}) {
							gvk := rk.Resource.GroupVersion().WithKind(rk.Kind)
							if !slices.Contains(out, gvk) {
								out = append(out, gvk)
							}
						}
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}
