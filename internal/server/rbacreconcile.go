package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/auth"
)

// reconcileBootstrapRBAC brings the bootstrap cluster roles and bindings
// that already exist up to date on every start, as upstream's API server
// does (its rbac/bootstrap-roles hook): a role gains the bootstrap rules it
// lacks, a binding the bootstrap subjects it lacks, both the bootstrap
// labels and annotations; nothing a user added is removed. An object
// annotated rbac.authorization.kubernetes.io/autoupdate: "false" is left
// exactly as it is. Missing objects were created by EnsureObjects before.
// The aggregated roles' rules are the aggregation's business, not this:
// only their aggregationRule is restored.
func reconcileBootstrapRBAC(ctx context.Context, client kubernetes.Interface) error {
	roles := client.RbacV1().ClusterRoles()
	for _, want := range auth.BootstrapClusterRoles() {
		cur, err := roles.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("clusterrole %s: %w", want.Name, err)
		}
		if !autoUpdate(cur.ObjectMeta) {
			continue
		}
		next := cur.DeepCopy()
		next.Labels = mergeMaps(want.Labels, cur.Labels)
		next.Annotations = mergeMaps(want.Annotations, cur.Annotations)
		if want.AggregationRule != nil {
			next.AggregationRule = want.AggregationRule
		} else {
			for _, rule := range want.Rules {
				if !containsRule(next.Rules, rule) {
					next.Rules = append(next.Rules, rule)
				}
			}
		}
		if equality.Semantic.DeepEqual(next, cur) {
			continue
		}
		slog.Info("reconciling bootstrap RBAC", "clusterrole", want.Name)
		if _, err := roles.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("clusterrole %s: %w", want.Name, err)
		}
	}

	bindings := client.RbacV1().ClusterRoleBindings()
	for _, want := range auth.BootstrapClusterRoleBindings() {
		cur, err := bindings.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
		}
		if !autoUpdate(cur.ObjectMeta) {
			continue
		}
		if cur.RoleRef != want.RoleRef {
			// roleRef is immutable: upstream deletes and re-creates.
			slog.Info("reconciling bootstrap RBAC: re-creating for its roleRef", "clusterrolebinding", want.Name)
			if err := bindings.Delete(ctx, want.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
			}
			next := want.DeepCopy()
			next.Labels = mergeMaps(want.Labels, cur.Labels)
			next.Annotations = mergeMaps(want.Annotations, cur.Annotations)
			next.Subjects = mergeSubjects(want.Subjects, cur.Subjects)
			if _, err := bindings.Create(ctx, next, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
			}
			continue
		}
		next := cur.DeepCopy()
		next.Labels = mergeMaps(want.Labels, cur.Labels)
		next.Annotations = mergeMaps(want.Annotations, cur.Annotations)
		next.Subjects = mergeSubjects(cur.Subjects, want.Subjects)
		if equality.Semantic.DeepEqual(next, cur) {
			continue
		}
		slog.Info("reconciling bootstrap RBAC", "clusterrolebinding", want.Name)
		if _, err := bindings.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
		}
	}
	return nil
}

// autoUpdate reports whether the server may update a bootstrap object:
// unless an administrator annotated it autoupdate "false".
func autoUpdate(m metav1.ObjectMeta) bool {
	return m.Annotations[auth.AutoUpdateAnnotation] != "false"
}

// mergeMaps is base with over's entries on top (upstream keeps the
// existing object's values over the bootstrap ones).
func mergeMaps(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return over
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

// containsRule reports whether rules grant everything rule does: each of
// its verb/group/resource(/name) or verb/URL pairs is allowed by some rule,
// wildcards included, as upstream's coverage check decides what a
// bootstrap role lacks.
func containsRule(rules []rbacv1.PolicyRule, rule rbacv1.PolicyRule) bool {
	for _, verb := range rule.Verbs {
		for _, url := range rule.NonResourceURLs {
			if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
				return has(r.Verbs, verb) && (has(r.NonResourceURLs, url) ||
					slices.ContainsFunc(r.NonResourceURLs, func(p string) bool {
						return strings.HasSuffix(p, "*") && strings.HasPrefix(url, strings.TrimSuffix(p, "*"))
					}))
			}) {
				return false
			}
		}
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				names := rule.ResourceNames
				if len(names) == 0 {
					names = []string{""}
				}
				for _, name := range names {
					if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
						return has(r.Verbs, verb) && has(r.APIGroups, group) && coversResource(r.Resources, res) &&
							(len(r.ResourceNames) == 0 || name != "" && slices.Contains(r.ResourceNames, name))
					}) {
						return false
					}
				}
			}
		}
	}
	return true
}

// has is membership with the "*" wildcard.
func has(list []string, s string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, s)
}

// coversResource matches a resource or subresource ("pods/log") against
// rule resources, with "*" and "*/sub" wildcards.
func coversResource(list []string, res string) bool {
	if has(list, res) {
		return true
	}
	if _, sub, ok := strings.Cut(res, "/"); ok {
		return slices.Contains(list, "*/"+sub)
	}
	return false
}

// mergeSubjects is first followed by the subjects of second it lacks.
func mergeSubjects(first, second []rbacv1.Subject) []rbacv1.Subject {
	out := append([]rbacv1.Subject(nil), first...)
	for _, s := range second {
		found := false
		for _, have := range out {
			if have == s {
				found = true
				break
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out
}
