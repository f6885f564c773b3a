package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// A pod bound to a node gets the node's topology.k8s.io zone and region
// labels (PodTopologyLabels, on by default), and admission sees a binding
// as a create of pods/binding whose object is the Binding.
func TestPodTopologyLabelsAndBindingAdmission(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	cs := c.Client
	for _, n := range []string{"zoned", "forbidden"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{
			"topology.k8s.io/zone": "z1", "topology.k8s.io/region": "r1", "topology.kubernetes.io/zone": "other"}}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, nodeName string, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		out, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	get := func(name string) *corev1.Pod {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	bindOpts := func(name, node string, labels map[string]string, opts metav1.CreateOptions) error {
		return cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Target: corev1.ObjectReference{Kind: "Node", Name: node}}, opts)
	}
	bind := func(name, node string, labels map[string]string) error {
		return bindOpts(name, node, labels, metav1.CreateOptions{})
	}

	t.Run("created on a node", func(t *testing.T) {
		p := pod("direct", "zoned", map[string]string{"topology.k8s.io/region": "mine"})
		if p.Labels["topology.k8s.io/zone"] != "z1" || p.Labels["topology.k8s.io/region"] != "mine" {
			t.Errorf("labels %v: want the node's zone, the pod's own region kept", p.Labels)
		}
		if _, ok := p.Labels["topology.kubernetes.io/zone"]; ok {
			t.Errorf("labels %v: only topology.k8s.io/{zone,region} are copied", p.Labels)
		}
	})
	t.Run("bound", func(t *testing.T) {
		pod("bound", "", nil)
		if err := bind("bound", "zoned", map[string]string{"team": "a"}); err != nil {
			t.Fatal(err)
		}
		p := get("bound")
		if p.Spec.NodeName != "zoned" || p.Labels["topology.k8s.io/zone"] != "z1" || p.Labels["topology.k8s.io/region"] != "r1" || p.Labels["team"] != "a" {
			t.Errorf("bound pod: node %q labels %v", p.Spec.NodeName, p.Labels)
		}
	})
	t.Run("bound to a node that does not exist", func(t *testing.T) {
		pod("nowhere", "", nil)
		if err := bind("nowhere", "ghost", nil); err != nil {
			t.Fatal(err)
		}
		if p := get("nowhere"); p.Spec.NodeName != "ghost" || len(p.Labels) != 0 {
			t.Errorf("pod bound to a missing node: node %q labels %v", p.Spec.NodeName, p.Labels)
		}
	})
	t.Run("a policy on pods/binding sees the Binding", func(t *testing.T) {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}}}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.kind == 'Binding' && object.target.name != 'forbidden'", Message: "not on that node"}},
			}}
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pb := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-forbidden",
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, pb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod("refused", "", nil)
		// Policies take effect once the server has seen them: wait with
		// dry runs, which change nothing.
		deadline := time.Now().Add(10 * time.Second)
		for bindOpts("refused", "forbidden", nil, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if p := get("refused"); p.Spec.NodeName != "" {
			t.Fatalf("a dry-run binding set nodeName %q", p.Spec.NodeName)
		}
		err := bind("refused", "forbidden", nil)
		if err == nil || !strings.Contains(err.Error(), "not on that node") {
			t.Fatalf("binding to the forbidden node: %v", err)
		}
		if p := get("refused"); p.Spec.NodeName != "" {
			t.Errorf("refused binding still set nodeName %q", p.Spec.NodeName)
		}
		if err := bind("refused", "zoned", nil); err != nil {
			t.Errorf("binding elsewhere: %v", err)
		}
	})
}
