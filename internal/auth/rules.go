package auth

import (
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// RuleResolver lists the rules that apply to a user in a namespace,
// cluster-wide rules included: what `kubectl auth can-i --list` shows.
// The error reports rules that could not be evaluated (a binding to a
// missing role); the rules it could evaluate are returned with it.
// *RBACAuthorizer is one.
type RuleResolver interface {
	RulesFor(u *User, namespace string) ([]rbacv1.PolicyRule, error)
}

// RuleResolverFunc adapts a function to RuleResolver.
type RuleResolverFunc func(u *User, namespace string) ([]rbacv1.PolicyRule, error)

func (f RuleResolverFunc) RulesFor(u *User, namespace string) ([]rbacv1.PolicyRule, error) {
	return f(u, namespace)
}

// AllowAllRules is the resolver of a server that authorizes everything
// (upstream's AlwaysAllow mode): every verb on every resource and path.
var AllowAllRules RuleResolver = RuleResolverFunc(func(*User, string) ([]rbacv1.PolicyRule, error) {
	return []rbacv1.PolicyRule{
		{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
		{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
	}, nil
})

// SubjectRules answers a SelfSubjectRulesReview from rr, as upstream's
// RBAC authorizer does: each rule naming resources becomes a resource
// rule and each naming URLs a non-resource rule (a rule naming both
// yields one of each), in evaluation order, unmerged. RBAC can always
// enumerate what it grants, so Incomplete is false even when a binding
// failed to evaluate; the failure goes to EvaluationError.
func SubjectRules(rr RuleResolver, u *User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	rules, err := rr.RulesFor(u, namespace)
	st := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{},
		NonResourceRules: []authorizationv1.NonResourceRule{},
	}
	for _, r := range rules {
		if len(r.Resources) > 0 {
			st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}
