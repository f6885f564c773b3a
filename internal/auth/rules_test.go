package auth

import (
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func TestSubjectRules(t *testing.T) {
	jane := &User{Name: "jane", Groups: []string{AllAuthenticated}}
	src := newFakeRBAC().
		addClusterRole("reader",
			rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
			rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}).
		addRole("team", "cm",
			rbacv1.PolicyRule{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}}).
		bind("", "read", "ClusterRole", "reader", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "jane"}).
		bind("team", "cm", "Role", "cm", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: AllAuthenticated}).
		bind("team", "dangling", "Role", "missing", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "jane"})
	podRule := authorizationv1.ResourceRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	healthRule := authorizationv1.NonResourceRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}
	cases := []struct {
		name      string
		rr        RuleResolver
		user      *User
		namespace string
		want      authorizationv1.SubjectRulesReviewStatus
	}{
		{"cluster rules only elsewhere", NewRBACAuthorizer(src), jane, "other", authorizationv1.SubjectRulesReviewStatus{
			ResourceRules: []authorizationv1.ResourceRule{podRule}, NonResourceRules: []authorizationv1.NonResourceRule{healthRule}}},
		{"namespace rules follow cluster rules; dangling binding is an evaluation error, not incomplete", NewRBACAuthorizer(src), jane, "team",
			authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: []authorizationv1.ResourceRule{podRule,
					{Verbs: []string{"update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}}},
				NonResourceRules: []authorizationv1.NonResourceRule{healthRule},
				EvaluationError:  `role.rbac.authorization.k8s.io "missing" not found`,
			}},
		{"nobody gets empty lists", NewRBACAuthorizer(src), &User{Name: "bob"}, "other", authorizationv1.SubjectRulesReviewStatus{
			ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}},
		{"allow-all", AllowAllRules, &User{Name: "bob"}, "x", authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}}},
		{"resolver error", RuleResolverFunc(func(*User, string) ([]rbacv1.PolicyRule, error) { return nil, errors.New("boom") }),
			jane, "x", authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{},
				NonResourceRules: []authorizationv1.NonResourceRule{}, EvaluationError: "boom"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := SubjectRules(c.rr, c.user, c.namespace)
			if !equality.Semantic.DeepEqual(got, c.want) || got.ResourceRules == nil || got.NonResourceRules == nil {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}
