package disruption_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/disruption"
)

// TestBudgets runs the controller against a real API server and
// simulated nodes, which run the pods bound to them (Ready after ~1 s).
// No workload controller runs: the tests create ReplicaSets and
// Deployments as plain objects and set the pods' owner references.
func TestBudgets(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	waitServed(t, cs)
	controllertest.Run(t, c.Config, disruption.Descriptor)

	t.Run("minAvailable 2 over 3 ready pods allows 1, then 0", func(t *testing.T) {
		ns := createNS(t, cs, "min-avail")
		for i := range 3 {
			createPod(t, cs, ns, fmt.Sprintf("web-%d", i), "web", nil)
		}
		createPDB(t, cs, ns, "web", "web", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntStr("2")})
		pdb := waitBudget(t, cs, ns, "web", want{healthy: 3, desired: 2, expected: 3, allowed: 1, reason: policyv1.SufficientPodsReason})
		if pdb.Status.ObservedGeneration != pdb.Generation {
			t.Errorf("observedGeneration = %d, generation %d", pdb.Status.ObservedGeneration, pdb.Generation)
		}
		if got := row(controllertest.KubectlOutput(t, c.Server.Kubeconfig, "get", "pdb", "-n", ns), "web"); got != "web 2 N/A 1" {
			t.Errorf("kubectl get pdb: %q, want name, MIN AVAILABLE 2, MAX UNAVAILABLE N/A, ALLOWED DISRUPTIONS 1", got)
		}

		controllertest.SetPodReady(t, cs, ns, "web-1", false)
		waitBudget(t, cs, ns, "web", want{healthy: 2, desired: 2, expected: 3, allowed: 0, reason: policyv1.InsufficientPodsReason})
		if got := row(controllertest.KubectlOutput(t, c.Server.Kubeconfig, "get", "pdb", "-n", ns), "web"); got != "web 2 N/A 0" {
			t.Errorf("kubectl get pdb: %q, want ALLOWED DISRUPTIONS 0", got)
		}

		controllertest.SetPodReady(t, cs, ns, "web-1", true)
		waitBudget(t, cs, ns, "web", want{healthy: 3, desired: 2, expected: 3, allowed: 1, reason: policyv1.SufficientPodsReason})
		if err := cs.CoreV1().Pods(ns).Delete(context.Background(), "web-2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Being deleted stops a pod counting at once; its removal keeps
		// expectedPods at 2.
		waitBudget(t, cs, ns, "web", want{healthy: 2, desired: 2, expected: 2, allowed: 0, reason: policyv1.InsufficientPodsReason})
	})

	t.Run("maxUnavailable 50% of a ReplicaSet of 4 follows its scale", func(t *testing.T) {
		ns := createNS(t, cs, "max-unavail")
		rs := createReplicaSet(t, cs, ns, "web", 4, nil)
		for i := range 4 {
			createPod(t, cs, ns, fmt.Sprintf("web-%d", i), "web", controllerRef("apps/v1", "ReplicaSet", rs.Name, string(rs.UID)))
		}
		createPDB(t, cs, ns, "web", "web", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrIntStr("50%")})
		waitBudget(t, cs, ns, "web", want{healthy: 4, desired: 2, expected: 4, allowed: 2, reason: policyv1.SufficientPodsReason})

		// Scaled to 7 with no new pod yet: 50% of 7 rounds up to 4
		// unavailable, so 3 must stay healthy.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := cs.AppsV1().ReplicaSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Replicas = new(int32(7))
			_, err = cs.AppsV1().ReplicaSets(ns).Update(context.Background(), cur, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		waitBudget(t, cs, ns, "web", want{healthy: 4, desired: 3, expected: 7, allowed: 1, reason: policyv1.SufficientPodsReason})
	})

	t.Run("percent minAvailable counts the Deployment above the ReplicaSet", func(t *testing.T) {
		ns := createNS(t, cs, "deploy")
		d, err := cs.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "api"},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(5)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
				Template: podTemplate("api"),
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rs := createReplicaSet(t, cs, ns, "api-1", 2, controllerRef("apps/v1", "Deployment", d.Name, string(d.UID)))
		for i := range 2 {
			createPod(t, cs, ns, fmt.Sprintf("api-%d", i), "api", controllerRef("apps/v1", "ReplicaSet", rs.Name, string(rs.UID)))
		}
		createPDB(t, cs, ns, "api", "api", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntStr("30%")})
		// 30% of 5 rounds up to 2.
		waitBudget(t, cs, ns, "api", want{healthy: 2, desired: 2, expected: 5, allowed: 0, reason: policyv1.InsufficientPodsReason})
	})

	t.Run("a kind found only through its scale subresource", func(t *testing.T) {
		// A pod controlled by a Deployment directly matches none of the
		// built-in lookups; the generic /scale path finds it.
		ns := createNS(t, cs, "generic")
		d, err := cs.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "odd"},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(3)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "odd"}},
				Template: podTemplate("odd"),
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		createPod(t, cs, ns, "odd-0", "odd", controllerRef("apps/v1", "Deployment", d.Name, string(d.UID)))
		createPDB(t, cs, ns, "odd", "odd", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrIntStr("1")})
		waitBudget(t, cs, ns, "odd", want{healthy: 1, desired: 2, expected: 3, allowed: 0, reason: policyv1.InsufficientPodsReason})
	})

	t.Run("a missing controller fails safe", func(t *testing.T) {
		ns := createNS(t, cs, "failsafe")
		createPod(t, cs, ns, "lost-0", "lost", controllerRef("apps/v1", "ReplicaSet", "nowhere", "0c7e1f6c-0000-4000-8000-000000000000"))
		createPDB(t, cs, ns, "lost", "lost", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrIntStr("1")})
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), "lost", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1.SyncFailedReason ||
				c.Message != `found no controllers for pod "lost-0"` || pdb.Status.DisruptionsAllowed != 0 {
				return false, fmt.Sprintf("condition %+v", c)
			}
			return true, ""
		})
	})

	t.Run("evictions in flight are not healthy until they expire", func(t *testing.T) {
		ns := createNS(t, cs, "evicting")
		for i := range 3 {
			createPod(t, cs, ns, fmt.Sprintf("db-%d", i), "db", nil)
		}
		createPDB(t, cs, ns, "db", "db", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntStr("1")})
		waitBudget(t, cs, ns, "db", want{healthy: 3, desired: 1, expected: 3, allowed: 2, reason: policyv1.SufficientPodsReason})

		// What the eviction subresource records: one eviction a moment
		// ago, one that never led to a deletion, one of a pod long gone.
		now := time.Now()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), "db", metav1.GetOptions{})
			if err != nil {
				return err
			}
			pdb.Status.DisruptedPods = map[string]metav1.Time{
				"db-0":   metav1.NewTime(now),
				"db-1":   metav1.NewTime(now.Add(-3 * time.Minute)),
				"db-old": metav1.NewTime(now),
			}
			_, err = cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(context.Background(), pdb, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		pdb := waitBudget(t, cs, ns, "db", want{healthy: 2, desired: 1, expected: 3, allowed: 1, reason: policyv1.SufficientPodsReason})
		if len(pdb.Status.DisruptedPods) != 1 || pdb.Status.DisruptedPods["db-0"].Time.IsZero() {
			t.Errorf("disruptedPods = %v, want only db-0", pdb.Status.DisruptedPods)
		}
		// The eviction that never led to a deletion is reported on its pod.
		controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
			evs, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.Reason == "NotDeleted" && e.InvolvedObject.Name == "db-1" && e.Type == corev1.EventTypeWarning &&
					e.Message == "Pod was expected by PDB "+ns+"/db to be deleted but it wasn't" {
					return true, ""
				}
			}
			return false, fmt.Sprintf("no NotDeleted event for db-1 among %d events", len(evs.Items))
		})
	})

	t.Run("a stale DisruptionTarget condition is reset", func(t *testing.T) {
		ns := createNS(t, cs, "stale")
		createPod(t, cs, ns, "evicted", "x", nil)
		createPod(t, cs, ns, "kubelet", "x", nil)
		createPod(t, cs, ns, "recent", "x", nil)
		waitReady(t, cs, ns, "evicted")
		waitReady(t, cs, ns, "kubelet")
		waitReady(t, cs, ns, "recent")
		old := metav1.NewTime(time.Now().Add(-3 * time.Minute))
		controllertest.SetPodCondition(t, cs, ns, "recent", corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", LastTransitionTime: metav1.Now()})
		controllertest.SetPodCondition(t, cs, ns, "kubelet", corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: corev1.PodReasonTerminationByKubelet, LastTransitionTime: old})
		controllertest.SetPodCondition(t, cs, ns, "evicted", corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", LastTransitionTime: old})
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			st := podCondition(t, cs, ns, "evicted", corev1.DisruptionTarget)
			return st == corev1.ConditionFalse, fmt.Sprintf("evicted: DisruptionTarget %q, want False", st)
		})
		// The others were written before "evicted" was reset, and the
		// queue is a single worker: had they been reset, they would be by
		// now. Watch a moment more anyway.
		controllertest.Consistently(t, 200*time.Millisecond, func() (bool, string) {
			for _, name := range []string{"kubelet", "recent"} {
				if st := podCondition(t, cs, ns, name, corev1.DisruptionTarget); st != corev1.ConditionTrue {
					return false, fmt.Sprintf("%s: DisruptionTarget %q, want it kept True", name, st)
				}
			}
			return true, ""
		})
	})
}

type want struct {
	healthy, desired, expected, allowed int32
	reason                              string
}

// waitBudget waits until the budget's status shows w and returns it.
func waitBudget(t *testing.T, cs kubernetes.Interface, ns, name string, w want) *policyv1.PodDisruptionBudget {
	t.Helper()
	var got *policyv1.PodDisruptionBudget
	controllertest.Eventually(t, 15*time.Second, func() (bool, string) {
		pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := pdb.Status
		c := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
		reason := ""
		if c != nil {
			reason = c.Reason
		}
		msg := fmt.Sprintf("status healthy=%d desired=%d expected=%d allowed=%d reason=%s; want %+v",
			st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods, st.DisruptionsAllowed, reason, w)
		if st.CurrentHealthy != w.healthy || st.DesiredHealthy != w.desired || st.ExpectedPods != w.expected ||
			st.DisruptionsAllowed != w.allowed || reason != w.reason {
			return false, msg
		}
		got = pdb
		return true, ""
	})
	return got
}

// waitServed waits for the API server to serve policy/v1
// poddisruptionbudgets.
func waitServed(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		_, err := cs.PolicyV1().PodDisruptionBudgets("default").List(context.Background(), metav1.ListOptions{})
		return err == nil, fmt.Sprintf("list poddisruptionbudgets: %v", err)
	})
}

var nsCounter int

func createNS(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	nsCounter++
	return controllertest.CreateNamespace(t, cs, fmt.Sprintf("%s-%d", name, nsCounter))
}

func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}},
	}
}

var podCounter int

// createPod creates a pod labeled app=app bound to a simulated node
// (they take turns), which runs it.
func createPod(t *testing.T, cs kubernetes.Interface, ns, name, app string, owner *metav1.OwnerReference) {
	t.Helper()
	tmpl := podTemplate(app)
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name = name
	pod.Spec.NodeName = fmt.Sprintf("sim-%d", podCounter%3)
	podCounter++
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createReplicaSet(t *testing.T, cs kubernetes.Interface, ns, name string, replicas int32, owner *metav1.OwnerReference) *appsv1.ReplicaSet {
	t.Helper()
	app, _, _ := strings.Cut(name, "-")
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Template: podTemplate(app),
		},
	}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(context.Background(), rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func controllerRef(apiVersion, kind, name, uid string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: new(true)}
}

func createPDB(t *testing.T, cs kubernetes.Interface, ns, name, app string, spec policyv1.PodDisruptionBudgetSpec) {
	t.Helper()
	spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(),
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func ptrIntStr(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

func waitReady(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		st := podCondition(t, cs, ns, name, corev1.PodReady)
		return st == corev1.ConditionTrue, fmt.Sprintf("%s Ready=%q", name, st)
	})
}

func podCondition(t *testing.T, cs kubernetes.Interface, ns, name string, typ corev1.PodConditionType) corev1.ConditionStatus {
	t.Helper()
	pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// row is the line of a kubectl table that starts with name, its columns
// joined by one space, without the last one (AGE).
func row(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == name {
			return strings.Join(f[:len(f)-1], " ")
		}
	}
	return ""
}
