package registry

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/cel"
)

// Validating admission policies: a policy holds CEL expressions and what
// they may match; a binding puts it in force, with its own narrower
// match, a parameter object and what a failed validation does (Deny,
// Warn, Audit). Expressions are compiled here, at write time, with the
// same environment the admission plugin evaluates them in, so that a
// policy that would never work is refused with the compiler's message
// (422, at the expression's field path) instead of failing every request
// it matches. The plugin compiles them again, once per resourceVersion.
//
// The status subresource carries the type-checking warnings the plugin
// writes; clients cannot change it through the main resource.

func admissionPolicyResources() []*Resource {
	return []*Resource{
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies",
			Kind: "ValidatingAdmissionPolicy", Singular: "validatingadmissionpolicy", Categories: []string{"api-extensions"},
			HasStatus: true, HasGeneration: true,
			New:      func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
			Default:  defaultValidatingAdmissionPolicy,
			Validate: validateValidatingAdmissionPolicy, ValidateUpdate: validateValidatingAdmissionPolicyUpdate,
			ValidateStatusUpdate: validateValidatingAdmissionPolicyStatus,
			Table:                validatingAdmissionPolicyTable},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings",
			Kind: "ValidatingAdmissionPolicyBinding", Singular: "validatingadmissionpolicybinding", Categories: []string{"api-extensions"},
			HasGeneration: true,
			New:           func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
			Default:       defaultValidatingAdmissionPolicyBinding,
			Validate:      validateValidatingAdmissionPolicyBinding, ValidateUpdate: validateValidatingAdmissionPolicyBindingUpdate,
			Table: validatingAdmissionPolicyBindingTable},
	}
}

func defaultValidatingAdmissionPolicy(obj runtime.Object) {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = new(admissionregistrationv1.Fail)
	}
	vapDefaultMatchResources(p.Spec.MatchConstraints)
}

func defaultValidatingAdmissionPolicyBinding(obj runtime.Object) {
	b := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	vapDefaultMatchResources(b.Spec.MatchResources)
}

func vapDefaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = new(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				rules[i].Scope = new(admissionregistrationv1.AllScopes)
			}
		}
	}
}

func validateValidatingAdmissionPolicy(obj runtime.Object) field.ErrorList {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	allErrs := ValidateMeta(&p.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, vapValidateSpec(p.Name, &p.Spec, field.NewPath("spec"))...)
}

func validateValidatingAdmissionPolicyUpdate(obj, old runtime.Object) field.ErrorList {
	p, o := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy), old.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	allErrs := ValidateMetaUpdate(&p.ObjectMeta, &o.ObjectMeta)
	return append(allErrs, vapValidateSpec(p.Name, &p.Spec, field.NewPath("spec"))...)
}

func validateValidatingAdmissionPolicyStatus(obj, _ runtime.Object) field.ErrorList {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	fld := field.NewPath("status")
	var allErrs field.ErrorList
	if tc := p.Status.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			wp := fld.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				allErrs = append(allErrs, field.Required(wp.Child("warning"), ""))
			}
			if strings.TrimSpace(w.FieldRef) == "" {
				allErrs = append(allErrs, field.Required(wp.Child("fieldRef"), ""))
			}
		}
	}
	return append(allErrs, metav1validation.ValidateConditions(p.Status.Conditions, fld.Child("conditions"))...)
}

var (
	vapFailurePolicies = []string{string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore)}
	vapMatchPolicies   = []string{string(admissionregistrationv1.Equivalent), string(admissionregistrationv1.Exact)}
	vapReasons         = []string{string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid),
		string(metav1.StatusReasonRequestEntityTooLarge), string(metav1.StatusReasonUnauthorized)}
	vapActions    = []string{string(admissionregistrationv1.Audit), string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn)}
	vapOperations = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}
	vapScopes     = []string{"*", "Cluster", "Namespaced"}
)

const (
	vapMaxAuditAnnotations   = 20
	vapMaxValueExpressionLen = 5 * 1024
	vapMaxMatchConditions    = 64
)

func vapValidateSpec(name string, spec *admissionregistrationv1.ValidatingAdmissionPolicySpec, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.FailurePolicy == nil {
		allErrs = append(allErrs, field.Required(fld.Child("failurePolicy"), ""))
	} else if !sets.New(vapFailurePolicies...).Has(string(*spec.FailurePolicy)) {
		allErrs = append(allErrs, field.NotSupported(fld.Child("failurePolicy"), *spec.FailurePolicy, vapFailurePolicies))
	}
	hasParams := spec.ParamKind != nil
	if hasParams {
		allErrs = append(allErrs, vapValidateParamKind(*spec.ParamKind, fld.Child("paramKind"))...)
	}
	if spec.MatchConstraints == nil {
		allErrs = append(allErrs, field.Required(fld.Child("matchConstraints"), ""))
	} else {
		allErrs = append(allErrs, vapValidateMatchResources(spec.MatchConstraints, fld.Child("matchConstraints"))...)
		// The rules are what gives expressions their object's type.
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			allErrs = append(allErrs, field.Required(fld.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	allErrs = append(allErrs, vapValidateMatchConditions(spec.MatchConditions, hasParams, fld.Child("matchConditions"))...)

	decls := cel.Decls{Params: hasParams, Authorizer: true}
	for i, v := range spec.Variables {
		vp := fld.Child("variables").Index(i)
		if strings.TrimSpace(v.Name) == "" {
			allErrs = append(allErrs, field.Required(vp.Child("name"), "name is not specified"))
		} else if !vapIsCELIdentifier(v.Name) {
			allErrs = append(allErrs, field.Invalid(vp.Child("name"), v.Name, "name is not a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			allErrs = append(allErrs, field.Required(vp.Child("expression"), "expression is not specified"))
		} else {
			allErrs = append(allErrs, vapCompile(v.Expression, cel.Any, decls, vp.Child("expression"))...)
		}
		decls.Variables = append(decls.Variables, v.Name)
	}

	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		return append(allErrs, field.Required(fld.Child("validations"), msg), field.Required(fld.Child("auditAnnotations"), msg))
	}
	for i := range spec.Validations {
		allErrs = append(allErrs, vapValidateValidation(&spec.Validations[i], decls, fld.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > vapMaxAuditAnnotations {
		allErrs = append(allErrs, field.Invalid(fld.Child("auditAnnotations"), spec.AuditAnnotations,
			fmt.Sprintf("must not have more than %d auditAnnotations", vapMaxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i, a := range spec.AuditAnnotations {
		ap := fld.Child("auditAnnotations").Index(i)
		if name == "" {
			allErrs = append(allErrs, field.Invalid(ap.Child("key"), a.Key, "requires metadata.name be non-empty"))
		} else {
			allErrs = append(allErrs, vapQualifiedName(name+"/"+a.Key, ap.Child("key"))...)
		}
		if keys.Has(a.Key) {
			allErrs = append(allErrs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
		expr := strings.TrimSpace(a.ValueExpression)
		switch {
		case expr == "":
			allErrs = append(allErrs, field.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
		case len(expr) > vapMaxValueExpressionLen:
			allErrs = append(allErrs, field.Required(ap.Child("valueExpression"),
				fmt.Sprintf("must not exceed %d bytes in length", vapMaxValueExpressionLen)))
		default:
			allErrs = append(allErrs, vapCompile(a.ValueExpression, cel.StringOrNull, decls, ap.Child("valueExpression"))...)
		}
	}
	return allErrs
}

var vapNewlines = regexp.MustCompile(`[\n\r]+`)

func vapValidateValidation(v *admissionregistrationv1.Validation, decls cel.Decls, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		allErrs = append(allErrs, field.Required(fld.Child("expression"), "expression is not specified"))
	} else {
		allErrs = append(allErrs, vapCompile(v.Expression, cel.Bool, decls, fld.Child("expression"))...)
	}
	if v.MessageExpression != "" && strings.TrimSpace(v.MessageExpression) == "" {
		allErrs = append(allErrs, field.Invalid(fld.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if v.MessageExpression != "" {
		// messageExpression may not call the authorizer, as upstream.
		md := decls
		md.Authorizer = false
		allErrs = append(allErrs, vapCompile(v.MessageExpression, cel.String, md, fld.Child("messageExpression"))...)
	}
	msg := strings.TrimSpace(v.Message)
	if v.Message != "" && msg == "" {
		allErrs = append(allErrs, field.Invalid(fld.Child("message"), v.Message, "message must be non-empty if specified"))
	} else if vapNewlines.MatchString(msg) {
		allErrs = append(allErrs, field.Invalid(fld.Child("message"), v.Message, "message must not contain line breaks"))
	}
	if v.Reason != nil && !sets.New(vapReasons...).Has(string(*v.Reason)) {
		allErrs = append(allErrs, field.NotSupported(fld.Child("reason"), *v.Reason, vapReasons))
	}
	return allErrs
}

// vapValidateMatchConditions checks matchConditions as upstream does for
// policies and webhooks alike: at most 64, unique qualified names, and
// expressions that compile to bool (params only for a policy with
// paramKind).
func vapValidateMatchConditions(conds []admissionregistrationv1.MatchCondition, params bool, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(conds) > vapMaxMatchConditions {
		allErrs = append(allErrs, field.TooMany(fld, len(conds), vapMaxMatchConditions))
	}
	names := sets.New[string]()
	for i, c := range conds {
		cp := fld.Index(i)
		if strings.TrimSpace(c.Expression) == "" {
			allErrs = append(allErrs, field.Required(cp.Child("expression"), ""))
		} else {
			allErrs = append(allErrs, vapCompile(strings.TrimSpace(c.Expression), cel.Bool,
				cel.Decls{Params: params, Authorizer: true}, cp.Child("expression"))...)
		}
		if c.Name == "" {
			allErrs = append(allErrs, field.Required(cp.Child("name"), ""))
		} else {
			allErrs = append(allErrs, vapQualifiedName(c.Name, cp.Child("name"))...)
			if names.Has(c.Name) {
				allErrs = append(allErrs, field.Duplicate(cp.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
	}
	return allErrs
}

// vapCompile reports a compile error as a 422 at the expression's path.
func vapCompile(expr string, want cel.Result, decls cel.Decls, fld *field.Path) field.ErrorList {
	_, err := cel.Compile(expr, want, decls)
	if err == nil {
		return nil
	}
	var ce *cel.CompileError
	if errors.As(err, &ce) {
		return field.ErrorList{field.Invalid(fld, expr, ce.Detail)}
	}
	return field.ErrorList{field.InternalError(fld, err)}
}

func vapQualifiedName(v string, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(v) {
		allErrs = append(allErrs, field.Invalid(fld, v, msg))
	}
	return allErrs
}

var (
	vapIdentRegex  = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	vapCELReserved = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)

func vapIsCELIdentifier(s string) bool {
	return vapIdentRegex.MatchString(s) && !vapCELReserved.Has(s)
}

func vapValidateParamKind(pk admissionregistrationv1.ParamKind, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case pk.APIVersion == "":
		allErrs = append(allErrs, field.Required(fld.Child("apiVersion"), ""))
	case strings.Count(pk.APIVersion, "/") > 1:
		allErrs = append(allErrs, field.Invalid(fld.Child("apiVersion"), pk.APIVersion, "unexpected GroupVersion string: "+pk.APIVersion))
	default:
		group, version := "", pk.APIVersion
		if i := strings.Index(pk.APIVersion, "/"); i >= 0 {
			group, version = pk.APIVersion[:i], pk.APIVersion[i+1:]
		}
		if group != "" {
			if errs := utilvalidation.IsDNS1123Subdomain(group); len(errs) > 0 {
				allErrs = append(allErrs, field.Invalid(fld.Child("apiVersion"), group, strings.Join(errs, ",")))
			}
		}
		if version == "" {
			allErrs = append(allErrs, field.Invalid(fld.Child("apiVersion"), pk.APIVersion, "version must be specified"))
		} else if errs := utilvalidation.IsDNS1035Label(version); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(fld.Child("apiVersion"), version, strings.Join(errs, ",")))
		}
	}
	if pk.Kind == "" {
		allErrs = append(allErrs, field.Required(fld.Child("kind"), ""))
	} else if errs := utilvalidation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(errs) > 0 {
		allErrs = append(allErrs, field.Invalid(fld.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(errs, ",")))
	}
	return allErrs
}

func vapValidateMatchResources(m *admissionregistrationv1.MatchResources, fld *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var allErrs field.ErrorList
	if m.MatchPolicy == nil {
		allErrs = append(allErrs, field.Required(fld.Child("matchPolicy"), ""))
	} else if !sets.New(vapMatchPolicies...).Has(string(*m.MatchPolicy)) {
		allErrs = append(allErrs, field.NotSupported(fld.Child("matchPolicy"), *m.MatchPolicy, vapMatchPolicies))
	}
	for _, s := range []struct {
		name string
		sel  *metav1.LabelSelector
	}{{"namespaceSelector", m.NamespaceSelector}, {"objectSelector", m.ObjectSelector}} {
		if s.sel == nil {
			allErrs = append(allErrs, field.Required(fld.Child(s.name), ""))
			continue
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(s.sel, metav1validation.LabelSelectorValidationOptions{}, fld.Child(s.name))...)
	}
	for i := range m.ResourceRules {
		allErrs = append(allErrs, vapValidateNamedRule(&m.ResourceRules[i], fld.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		allErrs = append(allErrs, vapValidateNamedRule(&m.ExcludeResourceRules[i], fld.Child("excludeResourceRules").Index(i))...)
	}
	return allErrs
}

func vapValidateNamedRule(r *admissionregistrationv1.NamedRuleWithOperations, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, n := range r.ResourceNames {
		for _, msg := range path.ValidatePathSegmentName(n, false) {
			allErrs = append(allErrs, field.Invalid(fld.Child("resourceNames").Index(i), n, msg))
		}
		if names.Has(n) {
			allErrs = append(allErrs, field.Duplicate(fld.Child("resourceNames").Index(i), n))
		}
		names.Insert(n)
	}
	if len(r.Operations) == 0 {
		allErrs = append(allErrs, field.Required(fld.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && vapHasWildcard(r.Operations) {
		allErrs = append(allErrs, field.Invalid(fld.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !sets.New(vapOperations...).Has(string(op)) {
			allErrs = append(allErrs, field.NotSupported(fld.Child("operations").Index(i), op, vapOperations))
		}
	}
	allErrs = append(allErrs, vapValidateList(r.APIGroups, false, "API groups", fld.Child("apiGroups"))...)
	allErrs = append(allErrs, vapValidateList(r.APIVersions, true, "API versions", fld.Child("apiVersions"))...)
	allErrs = append(allErrs, vapValidateResources(r.Resources, fld.Child("resources"))...)
	if r.Scope != nil && !sets.New(vapScopes...).Has(string(*r.Scope)) {
		allErrs = append(allErrs, field.NotSupported(fld.Child("scope"), *r.Scope, vapScopes))
	}
	return allErrs
}

func vapHasWildcard[T ~string](s []T) bool {
	for _, v := range s {
		if v == "*" {
			return true
		}
	}
	return false
}

// vapValidateList checks apiGroups or apiVersions: required, "*" alone,
// and (for versions) no empty entries.
func vapValidateList(items []string, noEmpty bool, what string, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(items) == 0 {
		return field.ErrorList{field.Required(fld, "")}
	}
	if len(items) > 1 && vapHasWildcard(items) {
		allErrs = append(allErrs, field.Invalid(fld, items, "if '*' is present, must not specify other "+what))
	}
	if noEmpty {
		for i, v := range items {
			if v == "" {
				allErrs = append(allErrs, field.Required(fld.Index(i), ""))
			}
		}
	}
	return allErrs
}

// vapValidateResources checks resources as upstream's rules do: "*" and
// "*/*" stand alone, and a subresource wildcard "x/*" or "*/y" may not be
// combined with a rule it already covers.
func vapValidateResources(resources []string, fld *field.Path) field.ErrorList {
	if len(resources) == 0 {
		return field.ErrorList{field.Required(fld, "")}
	}
	var allErrs field.ErrorList
	hasAll := false
	subWild := sets.New[string]()   // "x" of "x/*"
	resWild := sets.New[string]()   // "y" of "*/y"
	mainWithSub := map[string]int{} // index of the first x/... per x
	for i, r := range resources {
		if r == "" {
			allErrs = append(allErrs, field.Required(fld.Index(i), ""))
			continue
		}
		if r == "*/*" {
			hasAll = true
		}
		res, sub, hasSub := strings.Cut(r, "/")
		if hasSub && sub == "*" {
			subWild.Insert(res)
		}
		if hasSub && res == "*" {
			resWild.Insert(sub)
		}
		if _, ok := mainWithSub[res]; !ok {
			mainWithSub[res] = i
		}
	}
	if len(resources) > 1 && hasAll {
		allErrs = append(allErrs, field.Invalid(fld, resources, "if '*/*' is present, must not specify other resources"))
	}
	for i, r := range resources {
		res, sub, hasSub := strings.Cut(r, "/")
		if r == "*/*" || !hasSub {
			continue
		}
		if sub != "*" && subWild.Has(res) {
			allErrs = append(allErrs, field.Invalid(fld.Index(i), r, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, r)))
		}
		if res != "*" && resWild.Has(sub) {
			allErrs = append(allErrs, field.Invalid(fld.Index(i), r, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, r)))
		}
	}
	return allErrs
}

func validateValidatingAdmissionPolicyBinding(obj runtime.Object) field.ErrorList {
	b := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	allErrs := ValidateMeta(&b.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, vapValidateBindingSpec(&b.Spec, field.NewPath("spec"))...)
}

func validateValidatingAdmissionPolicyBindingUpdate(obj, old runtime.Object) field.ErrorList {
	b, o := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding), old.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	allErrs := ValidateMetaUpdate(&b.ObjectMeta, &o.ObjectMeta)
	return append(allErrs, vapValidateBindingSpec(&b.Spec, field.NewPath("spec"))...)
}

func vapValidateBindingSpec(spec *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec, fld *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.PolicyName == "" {
		allErrs = append(allErrs, field.Required(fld.Child("policyName"), ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.PolicyName, false) {
			allErrs = append(allErrs, field.Invalid(fld.Child("policyName"), spec.PolicyName, msg))
		}
	}
	allErrs = append(allErrs, vapValidateParamRef(spec.ParamRef, fld.Child("paramRef"))...)
	allErrs = append(allErrs, vapValidateMatchResources(spec.MatchResources, fld.Child("matchResources"))...)

	ap := fld.Child("validationActions")
	seen := sets.New[string]()
	for i, a := range spec.ValidationActions {
		if !sets.New(vapActions...).Has(string(a)) {
			allErrs = append(allErrs, field.NotSupported(ap.Index(i), a, vapActions))
		}
		if seen.Has(string(a)) {
			allErrs = append(allErrs, field.Duplicate(ap.Index(i), a))
		}
		seen.Insert(string(a))
	}
	if seen.Has(string(admissionregistrationv1.Deny)) && seen.Has(string(admissionregistrationv1.Warn)) {
		allErrs = append(allErrs, field.Invalid(ap, spec.ValidationActions,
			"must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if seen.Len() == 0 {
		allErrs = append(allErrs, field.Required(ap, "at least one validation action is required"))
	}
	return allErrs
}

func vapValidateParamRef(pr *admissionregistrationv1.ParamRef, fld *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	var allErrs field.ErrorList
	if pr.Name != "" {
		for _, msg := range path.ValidatePathSegmentName(pr.Name, false) {
			allErrs = append(allErrs, field.Invalid(fld.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			allErrs = append(allErrs, field.Forbidden(fld.Child("name"), "name and selector are mutually exclusive"))
		}
	}
	if pr.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
		if pr.Name != "" {
			allErrs = append(allErrs, field.Forbidden(fld.Child("selector"), "name and selector are mutually exclusive"))
		}
	}
	if pr.Name == "" && pr.Selector == nil {
		allErrs = append(allErrs, field.Required(fld, "one of name or selector must be specified"))
	}
	actions := []string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}
	if pr.ParameterNotFoundAction == nil || *pr.ParameterNotFoundAction == "" {
		allErrs = append(allErrs, field.Required(fld.Child("parameterNotFoundAction"), ""))
	} else if !sets.New(actions...).Has(string(*pr.ParameterNotFoundAction)) {
		allErrs = append(allErrs, field.NotSupported(fld.Child("parameterNotFoundAction"), *pr.ParameterNotFoundAction, actions))
	}
	return allErrs
}

var validatingAdmissionPolicyTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		paramKind := "<unset>"
		if pk := p.Spec.ParamKind; pk != nil {
			paramKind = pk.APIVersion + "/" + pk.Kind
		}
		return []interface{}{p.Name, int64(len(p.Spec.Validations)), paramKind, Age(p.CreationTimestamp)}
	},
}

var validatingAdmissionPolicyBindingTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
		{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configration param"},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		b := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		param := "<unset>"
		if pr := b.Spec.ParamRef; pr != nil {
			switch {
			case pr.Name != "" && pr.Namespace != "":
				param = pr.Namespace + "/" + pr.Name
			case pr.Name != "":
				// Whether the param kind is namespaced is not known here.
				param = "*/" + pr.Name
			case pr.Selector != nil:
				param = pr.Selector.String()
			}
		}
		return []interface{}{b.Name, b.Spec.PolicyName, param, Age(b.CreationTimestamp)}
	},
}

// AdmissionResources lists every served resource by kind, for the
// admission plugins that resolve a kind to a resource
// (ValidatingAdmissionPolicy's paramKind). Resources that serve another
// resource's objects (StorageView) are included under their own kind.
func AdmissionResources() []admit.ResourceKind {
	var out []admit.ResourceKind
	for _, r := range All() {
		if r.Virtual {
			continue
		}
		out = append(out, admit.ResourceKind{Resource: r.GroupVersionResource(), Kind: r.Kind, Namespaced: r.Namespaced, New: r.New})
	}
	return out
}
