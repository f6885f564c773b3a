package clusterroleaggregation_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/clusterroleaggregation"
)

// TestAggregation runs the controller against a real API server: roles
// labelled for an aggregated role add their rules to it, in name order,
// and take them away when they go or lose the label; the built-in view
// role grows with a CRD operator's aggregate-to-view role, which kubectl
// auth can-i then confirms.
func TestAggregation(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	roles := c.Client.RbacV1().ClusterRoles()
	builtin := map[string]string{}
	for _, name := range []string{"admin", "edit", "view"} {
		r, err := roles.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		builtin[name] = r.ResourceVersion
	}
	controllertest.Run(t, c.Config, clusterroleaggregation.Descriptor)

	rule := func(verb, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{"example.com"}, Resources: []string{resource}}
	}
	create := func(t *testing.T, name string, lbls map[string]string, rules ...rbacv1.PolicyRule) {
		t.Helper()
		r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
		if _, err := roles.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitRules := func(t *testing.T, name string, want []rbacv1.PolicyRule) {
		t.Helper()
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			r, err := roles.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return equality.Semantic.DeepEqual(r.Rules, want), fmt.Sprintf("rules %v, want %v", r.Rules, want)
		})
	}

	const label = "example.com/aggregate-to-monitoring"
	t.Run("rules of matching roles, in name order", func(t *testing.T) {
		if _, err := roles.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		create(t, "mon-b", map[string]string{label: "true"}, rule("get", "gauges"), rule("list", "gauges"))
		create(t, "mon-a", map[string]string{label: "true"}, rule("get", "counters"), rule("get", "gauges"))
		create(t, "unrelated", nil, rule("delete", "gauges"))
		waitRules(t, "monitoring", []rbacv1.PolicyRule{rule("get", "counters"), rule("get", "gauges"), rule("list", "gauges")})
		// The server's bootstrap roles come aggregated the same way: the
		// controller, which has been through them all by now, left them.
		for name, rv := range builtin {
			if r, err := roles.Get(ctx, name, metav1.GetOptions{}); err != nil || r.ResourceVersion != rv {
				t.Errorf("bootstrap role %s rewritten by the controller (%v)", name, err)
			}
		}
	})
	t.Run("a role that loses the label takes its rules away", func(t *testing.T) {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, label)
		if _, err := roles.Patch(ctx, "mon-a", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRules(t, "monitoring", []rbacv1.PolicyRule{rule("get", "gauges"), rule("list", "gauges")})
	})
	t.Run("a deleted role takes its rules away", func(t *testing.T) {
		if err := roles.Delete(ctx, "mon-b", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRules(t, "monitoring", nil)
	})

	t.Run("an operator's aggregate-to-view role extends view", func(t *testing.T) {
		create(t, "widgets-view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"},
			rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}},
			rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"secrets"}})
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			r, err := roles.Get(ctx, "view", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return slices.ContainsFunc(r.Rules, func(p rbacv1.PolicyRule) bool { return slices.Contains(p.Resources, "widgets") }),
				fmt.Sprintf("view has %d rules, none for widgets", len(r.Rules))
		})
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("no kubectl")
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "jane-view", Namespace: "default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "jane"}}}
		if _, err := c.Client.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The operator's role also grants reading secrets, which view
		// itself never does: jane may once view has aggregated it. The
		// authorizer sees the new binding within moments.
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			out, err := exec.Command(kubectl, "--kubeconfig", c.Server.Kubeconfig, "auth", "can-i", "list", "secrets",
				"--as=jane", "-n", "default").Output()
			return err == nil && strings.TrimSpace(string(out)) == "yes", fmt.Sprintf("kubectl auth can-i list secrets --as=jane: %v %q", err, out)
		})
	})
}
