package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/disruption"
)

// TestEviction evicts pods of simulated nodes through pods/eviction with
// the disruption controller keeping the budgets' status, as in a cluster:
// refused with 429 while the budget allows nothing, allowed (and spent)
// when it allows one, and `kubectl drain` of a whole node.
func TestEviction(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 2})
	cs := c.Client
	controllertest.Run(t, c.Config, disruption.Descriptor)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("budget", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "evict-budget")
		for i := range 2 {
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, fmt.Sprintf("web-%d", i), "sim-0", 0, subShortGrace))
		}
		pdb := subCreateBudget(ctx, t, cs, ns, "web", intstr.FromInt32(2))
		subWaitAllowed(ctx, t, cs, ns, pdb, 0)

		err := subEvict(ctx, cs, ns, "web-0", nil)
		if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "Cannot evict pod as it would violate the pod's disruption budget.") {
			t.Fatalf("eviction against a spent budget: %v", err)
		}
		causes := err.(apierrors.APIStatus).Status().Details.Causes
		if len(causes) != 1 || causes[0].Type != policyv1.DisruptionBudgetCause || causes[0].Message != "The disruption budget web needs 2 healthy pods and has 2 currently" {
			t.Errorf("causes = %+v", causes)
		}

		subSetMinAvailable(ctx, t, cs, ns, "web", intstr.FromInt32(1))
		subWaitAllowed(ctx, t, cs, ns, "web", 1)

		// A dry run spends nothing and deletes nothing.
		if err := subEvict(ctx, cs, ns, "web-0", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry-run eviction: %v", err)
		}
		if p := subGetPod(ctx, t, cs, ns, "web-0"); p.DeletionTimestamp != nil {
			t.Fatal("dry run deleted the pod")
		}
		// A precondition on another UID refuses before anything changes.
		other := metav1.NewUIDPreconditions("not-the-uid")
		if err := subEvict(ctx, cs, ns, "web-0", &metav1.DeleteOptions{Preconditions: other}); !apierrors.IsConflict(err) {
			t.Errorf("eviction with a wrong UID precondition: %v, want 409", err)
		}

		if err := subEvict(ctx, cs, ns, "web-0", nil); err != nil {
			t.Fatalf("eviction the budget allows: %v", err)
		}
		got, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The eviction spent the one disruption: the budget records the
		// pod until the disruption controller sees it gone.
		if _, ok := got.Status.DisruptedPods["web-0"]; !ok && got.Status.DisruptionsAllowed != 0 {
			t.Errorf("status after the eviction: %+v, want web-0 in disruptedPods", got.Status)
		}
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, "web-0", metav1.GetOptions{})
		if err == nil {
			if pod.DeletionTimestamp == nil || !subHasCondition(pod, corev1.DisruptionTarget, "EvictionByEvictionAPI") {
				t.Errorf("evicted pod: deletionTimestamp %v, conditions %+v", pod.DeletionTimestamp, pod.Status.Conditions)
			}
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		// The second pod must stay: the one allowed disruption is spent.
		err = subEvict(ctx, cs, ns, "web-1", nil)
		if !apierrors.IsTooManyRequests(err) {
			t.Errorf("second eviction: %v, want 429", err)
		}
	})

	t.Run("pending pod goes without asking", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "evict-pending")
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "waiting", "", 0))
		subCreateBudget(ctx, t, cs, ns, "web", intstr.FromInt32(5))
		if err := subEvict(ctx, cs, ns, "waiting", nil); err != nil {
			t.Fatalf("eviction of a pending pod: %v", err)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(ctx, "waiting", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pending pod after eviction: %v, want gone", err)
		}
	})

	t.Run("unhealthy pod eviction policy", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "evict-unhealthy")
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "ready", "sim-0", 0, subShortGrace))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "stuck", "sim-0", 0, subShortGrace, controllertest.NeverReady))
		subCreateBudget(ctx, t, cs, ns, "web", intstr.FromInt32(2))
		subWaitBudget(ctx, t, cs, ns, "web", 0, 1, 2)
		// IfHealthyBudget (the default): the budget is short, so even the
		// unready pod must stay.
		if err := subEvict(ctx, cs, ns, "stuck", nil); !apierrors.IsTooManyRequests(err) {
			t.Errorf("evicting the unready pod under IfHealthyBudget: %v, want 429", err)
		}
		pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		always := policyv1.AlwaysAllow
		pdb.Spec.UnhealthyPodEvictionPolicy = &always
		if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		subWaitBudget(ctx, t, cs, ns, "web", 0, 1, 2)
		if err := subEvict(ctx, cs, ns, "stuck", nil); err != nil {
			t.Errorf("evicting the unready pod under AlwaysAllow: %v", err)
		}
		if err := subEvict(ctx, cs, ns, "ready", nil); !apierrors.IsTooManyRequests(err) {
			t.Errorf("evicting the ready pod: %v, want 429", err)
		}
	})

	t.Run("two budgets", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "evict-two")
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "web-0", "sim-1", 0))
		subWaitPodReady(ctx, t, cs, ns, "web-0")
		subCreateBudget(ctx, t, cs, ns, "a", intstr.FromInt32(0))
		subCreateBudget(ctx, t, cs, ns, "b", intstr.FromInt32(0))
		err := subEvict(ctx, cs, ns, "web-0", nil)
		if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != 500 ||
			se.Status().Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
			t.Errorf("eviction under two budgets: %v", err)
		}
	})

	t.Run("missing pod and bad bodies", func(t *testing.T) {
		if err := subEvict(ctx, cs, "default", "nobody", nil); !apierrors.IsNotFound(err) {
			t.Errorf("eviction of a missing pod: %v", err)
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default"}}
		err := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("nobody").SubResource("eviction").
			Body(subJSON(t, ev)).SetHeader("Content-Type", "application/json").Do(ctx).Error()
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "name in URL does not match name in Eviction object") {
			t.Errorf("eviction naming another pod: %v", err)
		}
		// policy/v1beta1 bodies are still accepted, as upstream.
		controllertest.CreatePod(t, cs, controllertest.WebPod("default", "old-client", "", 0))
		body := `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"old-client","namespace":"default"}}`
		res := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("old-client").SubResource("eviction").
			Body([]byte(body)).SetHeader("Content-Type", "application/json").Do(ctx)
		var code int
		if res.StatusCode(&code); res.Error() != nil || code != 201 {
			t.Errorf("v1beta1 eviction: %d %v, want 201", code, res.Error())
		}
	})

	t.Run("kubectl drain", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "drain")
		for i := range 3 {
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, fmt.Sprintf("web-%d", i), "sim-1", 0, subShortGrace, subDrainLabel))
		}
		for i := range 3 {
			subWaitPodReady(ctx, t, cs, ns, fmt.Sprintf("web-%d", i))
		}
		// The budget allows all three to go, one at a time as the
		// disruption controller sees each one gone.
		subCreateBudget(ctx, t, cs, ns, "web", intstr.FromInt32(0))
		subWaitAllowed(ctx, t, cs, ns, "web", 3)
		res := controllertest.Kubectl(t, c.Server.Kubeconfig, "drain", "sim-1", "--force", "--ignore-daemonsets", "--pod-selector=test=drain", "--timeout=40s")
		out := res.Stdout + res.Stderr
		if res.Code != 0 || !strings.Contains(out, "node/sim-1 cordoned") || !strings.Contains(out, "evicting pod "+ns+"/web-0") ||
			!strings.Contains(out, "node/sim-1 drained") {
			t.Fatalf("kubectl drain: exit %d\n%s", res.Code, out)
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, "sim-1", metav1.GetOptions{})
		if err != nil || !node.Spec.Unschedulable {
			t.Errorf("node after drain: unschedulable %v (%v)", node.Spec.Unschedulable, err)
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 0 {
			t.Errorf("pods left after drain: %d (%v)", len(pods.Items), err)
		}
	})

	t.Run("kubectl drain blocked by a budget", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "drain-blocked")
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "web-0", "sim-0", 0, subShortGrace, subDrainLabel))
		subWaitPodReady(ctx, t, cs, ns, "web-0")
		subCreateBudget(ctx, t, cs, ns, "web", intstr.FromInt32(1))
		subWaitAllowed(ctx, t, cs, ns, "web", 0)
		res := controllertest.Kubectl(t, c.Server.Kubeconfig, "drain", "sim-0", "--force", "--pod-selector=test=drain", "--timeout=3s")
		out := res.Stdout + res.Stderr
		if res.Code == 0 || !strings.Contains(out, "Cannot evict pod as it would violate the pod's disruption budget.") {
			t.Errorf("kubectl drain against a budget: exit %d\n%s", res.Code, out)
		}
		if p := subGetPod(ctx, t, cs, ns, "web-0"); p.DeletionTimestamp != nil {
			t.Error("the guarded pod was deleted")
		}
	})
}

func subJSON(t *testing.T, v interface{}) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// subDrainLabel marks the pods a drain test drains, so that it leaves
// the other tests' pods on the node alone.
func subDrainLabel(p *corev1.Pod) { p.Labels["test"] = "drain" }

func subShortGrace(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = new(int64(1)) }

func subEvict(ctx context.Context, cs kubernetes.Interface, ns, name string, opts *metav1.DeleteOptions) error {
	return cs.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, DeleteOptions: opts})
}

func subCreateBudget(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, minAvailable intstr.IntOrString) string {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func subSetMinAvailable(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, v intstr.IntOrString) {
	t.Helper()
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MinAvailable = &v
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// subWaitBudget waits until the disruption controller reports the
// budget's spec observed with these counts.
func subWaitBudget(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, allowed, healthy, expected int32) {
	t.Helper()
	var pdb *policyv1.PodDisruptionBudget
	for ctx.Err() == nil {
		var err error
		if pdb, err = cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		st := pdb.Status
		if st.ObservedGeneration == pdb.Generation && st.DisruptionsAllowed == allowed && st.CurrentHealthy == healthy && st.ExpectedPods == expected {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("budget %s/%s never reached allowed %d healthy %d expected %d: %+v", ns, name, allowed, healthy, expected, pdb.Status)
}

// subWaitAllowed waits until the disruption controller has seen the budget's
// spec and all its pods ready, and allows want disruptions.
func subWaitAllowed(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, want int32) {
	t.Helper()
	var pdb *policyv1.PodDisruptionBudget
	for ctx.Err() == nil {
		var err error
		if pdb, err = cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.DisruptionsAllowed == want && pdb.Status.CurrentHealthy == pdb.Status.ExpectedPods {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("budget %s/%s never allowed %d: %+v", ns, name, want, pdb.Status)
}

func subWaitPodReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	for ctx.Err() == nil {
		if p := subGetPod(ctx, t, cs, ns, name); subHasCondition(p, corev1.PodReady, "") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s never ready", ns, name)
}

func subGetPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hasCondition reports a True condition of the type (and reason, if given).
func subHasCondition(p *corev1.Pod, typ corev1.PodConditionType, reason string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue && (reason == "" || c.Reason == reason) {
			return true
		}
	}
	return false
}
