package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
	celcommon "k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/library"
	celopenapi "k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/rudder-dev/rudder/internal/apiserver/openapi"
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
			params = vapDeclType(gv.WithKind(pol.Spec.ParamKind.Kind))
		}
	}
	var varNames []string
	for _, v := range pol.Spec.Variables {
		varNames = append(varNames, v.Name)
	}
	type checkEnv struct {
		gvk schema.GroupVersionKind
		env *cel.Env
	}
	var envs []checkEnv
	for _, gvk := range gvks {
		obj := vapDeclType(gvk)
		if obj == nil {
			continue
		}
		env, err := vapTypedEnv(obj, params, hasParams)
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

// vapTypedEnv is the admission environment with object, oldObject and
// (when known) params declared by schema instead of dyn.
func vapTypedEnv(object, params *apiservercel.DeclType, hasParams bool) (*cel.Env, error) {
	base, err := cel.NewEnv(celLibraries()...)
	if err != nil {
		return nil, err
	}
	roots := []*apiservercel.DeclType{object}
	if params != nil {
		roots = append(roots, params)
	}
	rt := apiservercel.NewDeclTypeProvider(roots...)
	opts, err := rt.EnvOptions(base.CELTypeProvider())
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		cel.Variable("object", object.CelType()),
		cel.Variable("oldObject", object.CelType()),
		cel.Variable("request", cel.DynType),
		cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("authorizer", library.AuthorizerType),
		cel.Variable("authorizer.requestResource", library.ResourceCheckType))
	if hasParams {
		pt := cel.DynType
		if params != nil {
			pt = params.CelType()
		}
		opts = append(opts, cel.Variable("params", pt))
	}
	return base.Extend(opts...)
}

// vapDeclTypes caches each kind's CEL type: building one walks the whole
// schema.
var vapDeclTypes sync.Map // schema.GroupVersionKind -> *apiservercel.DeclType (nil: none)

// vapDeclType returns the CEL type of a built-in kind, from the server's
// OpenAPI schemas; nil for kinds without one (custom resources).
func vapDeclType(gvk schema.GroupVersionKind) *apiservercel.DeclType {
	if t, ok := vapDeclTypes.Load(gvk); ok {
		return t.(*apiservercel.DeclType)
	}
	var dt *apiservercel.DeclType
	if s := vapSchemaOf(gvk); s != nil {
		if dt = celcommon.SchemaDeclType(&celopenapi.Schema{Schema: s}, true); dt != nil {
			dt = dt.MaybeAssignTypeName(fmt.Sprintf("rudder.typecheck.%s.%s.%s", strings.ReplaceAll(gvk.Group, ".", "_"), gvk.Version, gvk.Kind))
		}
	}
	vapDeclTypes.Store(gvk, dt)
	return dt
}

// vapSchemaIndex maps each kind to its model name in openapi.Schemas.
var vapSchemaIndex = sync.OnceValues(func() (map[schema.GroupVersionKind]string, error) {
	schemas, err := openapi.Schemas()
	if err != nil {
		return nil, err
	}
	idx := map[schema.GroupVersionKind]string{}
	for name, s := range schemas {
		list, _ := s.Extensions["x-kubernetes-group-version-kind"].([]interface{})
		for _, item := range list {
			m, _ := item.(map[string]interface{})
			g, _ := m["group"].(string)
			v, _ := m["version"].(string)
			k, _ := m["kind"].(string)
			if k != "" {
				idx[schema.GroupVersionKind{Group: g, Version: v, Kind: k}] = name
			}
		}
	}
	return idx, nil
})

// vapSchemaOf returns a kind's schema with every reference inlined.
func vapSchemaOf(gvk schema.GroupVersionKind) *spec.Schema {
	idx, err := vapSchemaIndex()
	if err != nil {
		return nil
	}
	name, ok := idx[gvk]
	if !ok {
		return nil
	}
	schemas, _ := openapi.Schemas()
	return vapInline(schemas, schemas[name], map[string]bool{name: true})
}

const vapRefPrefix = "#/components/schemas/"

// vapInline copies s with references replaced by the schemas they name.
// A reference back into a schema being inlined becomes an open object, so
// recursive types end.
func vapInline(schemas map[string]*spec.Schema, s *spec.Schema, visiting map[string]bool) *spec.Schema {
	if s == nil {
		return nil
	}
	ref := s.Ref.String()
	if ref == "" && len(s.AllOf) == 1 {
		// A field with its own description or default refers through allOf.
		ref = s.AllOf[0].Ref.String()
	}
	if ref != "" {
		name := strings.TrimPrefix(ref, vapRefPrefix)
		target, ok := schemas[name]
		if !ok || visiting[name] {
			open := &spec.Schema{}
			open.Type = spec.StringOrArray{"object"}
			open.Extensions = spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}
			return open
		}
		visiting[name] = true
		out := vapInline(schemas, target, visiting)
		delete(visiting, name)
		return out
	}
	out := *s
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]spec.Schema, len(s.Properties))
		for k, v := range s.Properties {
			out.Properties[k] = *vapInline(schemas, &v, visiting)
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		out.Items = &spec.SchemaOrArray{Schema: vapInline(schemas, s.Items.Schema, visiting)}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: vapInline(schemas, s.AdditionalProperties.Schema, visiting)}
	}
	return &out
}
