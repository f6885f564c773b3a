package replicaset_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/replicaset"
)

// One cluster and one manager for the cases that do not restart it; each
// case works in its own namespace.
func TestReplicaSet(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	bind := controllertest.StartBinder(t, cs)
	startManager(t, c.Config)
	ctx := context.Background()

	t.Run("scale up 0 to 5 to 50, never more", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "scale-up")
		w := controllertest.WatchPods(t, cs, ns, nil)
		rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, newRS("web", 0), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitRS(t, cs, ns, "web", 10*time.Second, settled(0))
		for _, n := range []int32{5, 50} {
			scaleRS(t, cs, ns, "web", n)
			waitRS(t, cs, ns, "web", 15*time.Second, settled(n))
			if got := len(ownedPods(t, cs, ns, rs.UID)); got != int(n) {
				t.Fatalf("%d pods, want %d", got, n)
			}
			if m := w.MaxActive(); m != int(n) {
				t.Fatalf("at most %d active pods were seen at once, want exactly %d", m, n)
			}
		}
		for _, p := range ownedPods(t, cs, ns, rs.UID) {
			ref := metav1.GetControllerOf(&p)
			if !strings.HasPrefix(p.Name, "web-") || ref.Kind != "ReplicaSet" || !ptr.Deref(ref.BlockOwnerDeletion, false) ||
				p.Labels["tier"] != "web" || p.Spec.Containers[0].Image != "registry.example/web:1" {
				t.Fatalf("pod not made from the template: name %s ref %+v labels %v", p.Name, ref, p.Labels)
			}
		}
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created := regexp.MustCompile(`^Created pod: web-[a-z0-9]{5}$`)
		found := false
		for _, e := range events.Items {
			if e.Reason == "SuccessfulCreate" && created.MatchString(e.Message) &&
				e.InvolvedObject.Kind == "ReplicaSet" && e.InvolvedObject.Name == "web" && e.Source.Component == "replicaset-controller" {
				found = true
			}
		}
		if !found {
			t.Fatalf("no SuccessfulCreate event \"Created pod: web-xxxxx\" among %d events", len(events.Items))
		}
	})

	t.Run("scale down deletes pending pods before running ones", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "scale-down")
		rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, newRS("web", 3), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitRS(t, cs, ns, "web", 10*time.Second, settled(3))
		var running []string
		for _, p := range ownedPods(t, cs, ns, rs.UID) {
			running = append(running, p.Name)
		}
		bind.Pause()
		defer bind.Resume()
		scaleRS(t, cs, ns, "web", 5)
		waitRS(t, cs, ns, "web", 10*time.Second, func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 5 })
		scaleRS(t, cs, ns, "web", 3)
		waitRS(t, cs, ns, "web", 10*time.Second, settled(3))
		var left []string
		for _, p := range ownedPods(t, cs, ns, rs.UID) {
			left = append(left, p.Name)
		}
		slices.Sort(running)
		slices.Sort(left)
		if !slices.Equal(running, left) {
			t.Fatalf("kept %v, want the running pods %v", left, running)
		}
		events, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=SuccessfulDelete"})
		if events == nil || len(events.Items) == 0 || !strings.HasPrefix(events.Items[0].Message, "Deleted pod: web-") {
			t.Fatalf("no SuccessfulDelete event: %+v", events)
		}
	})

	t.Run("a deleted pod is replaced at once", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "replace")
		rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, newRS("web", 3), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitRS(t, cs, ns, "web", 10*time.Second, settled(3))
		victim := ownedPods(t, cs, ns, rs.UID)[0]
		// A finalizer keeps the pod terminating: it must be replaced
		// anyway, and counted as terminating, not as a replica.
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, victim.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":["test.rudder.dev/hold"]}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRS(t, cs, ns, "web", 10*time.Second, func(rs *appsv1.ReplicaSet) bool {
			return settled(3)(rs) && ptr.Deref(rs.Status.TerminatingReplicas, -1) == 1
		})
		pods := ownedPods(t, cs, ns, rs.UID)
		for _, p := range pods {
			if p.Name == victim.Name {
				t.Fatalf("the deleted pod %s still counts", victim.Name)
			}
		}
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, victim.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// The node confirmed the stop while the finalizer held the pod;
		// finish the deletion as a force delete would.
		if err := cs.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); ignoreNotFound(err) != nil {
			t.Fatal(err)
		}
		waitRS(t, cs, ns, "web", 10*time.Second, func(rs *appsv1.ReplicaSet) bool {
			return settled(3)(rs) && ptr.Deref(rs.Status.TerminatingReplicas, -1) == 0
		})
	})

	t.Run("adopts a matching orphan instead of creating", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "adopt")
		tmpl := newRS("web", 1).Spec.Template
		orphan, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: tmpl.Labels},
			Spec:       tmpl.Spec,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, newRS("web", 1), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitRS(t, cs, ns, "web", 10*time.Second, settled(1))
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 || pods.Items[0].UID != orphan.UID {
			t.Fatalf("want only the adopted orphan, got %d pods", len(pods.Items))
		}
		ref := metav1.GetControllerOf(&pods.Items[0])
		if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Fatalf("orphan's controller ref = %+v", ref)
		}
	})

	t.Run("releases a pod whose labels no longer match", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "release")
		rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, newRS("web", 2), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitRS(t, cs, ns, "web", 10*time.Second, settled(2))
		pod := ownedPods(t, cs, ns, rs.UID)[0]
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"debug"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(p.OwnerReferences) == 0, fmt.Sprintf("owner refs %+v", p.OwnerReferences)
		})
		waitRS(t, cs, ns, "web", 10*time.Second, settled(2))
		for _, p := range ownedPods(t, cs, ns, rs.UID) {
			if p.Name == pod.Name {
				t.Fatal("released pod still owned")
			}
		}
	})

	t.Run("status counts available replicas after minReadySeconds", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "available")
		spec := newRS("web", 2)
		spec.Spec.MinReadySeconds = 3
		spec.Spec.Template.Labels["extra"] = "x" // pods carry it: fully labeled
		if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, spec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rs := waitRS(t, cs, ns, "web", 10*time.Second, settled(2))
		readyAt := time.Now()
		if rs.Status.AvailableReplicas != 0 {
			t.Fatalf("availableReplicas %d as soon as pods are ready, want 0 (minReadySeconds 3)", rs.Status.AvailableReplicas)
		}
		rs = waitRS(t, cs, ns, "web", 10*time.Second, func(rs *appsv1.ReplicaSet) bool { return rs.Status.AvailableReplicas == 2 })
		// Ready times are whole seconds, so availability may come up to a
		// second early, never much more.
		if d := time.Since(readyAt); d < 1500*time.Millisecond {
			t.Fatalf("available %v after ready, want about 3s", d)
		}
		if rs.Status.FullyLabeledReplicas != 2 || rs.Status.ObservedGeneration != rs.Generation {
			t.Fatalf("status %+v", rs.Status)
		}
	})

	t.Run("replication controller", func(t *testing.T) {
		if !served(t, cs, "v1", "replicationcontrollers") {
			t.Skip("the API server does not serve replicationcontrollers")
		}
		ns := controllertest.CreateNamespace(t, cs, "rc")
		rsSpec := newRS("legacy", 3)
		rc, err := cs.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{
			ObjectMeta: metav1.ObjectMeta{Name: "legacy"},
			Spec: corev1.ReplicationControllerSpec{
				Replicas: ptr.To(int32(3)),
				Selector: rsSpec.Spec.Selector.MatchLabels,
				Template: &rsSpec.Spec.Template,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitRC := func(n int32) {
			controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
				rc, err := cs.CoreV1().ReplicationControllers(ns).Get(ctx, "legacy", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				st := rc.Status
				return st.ObservedGeneration == rc.Generation && st.Replicas == n && st.ReadyReplicas == n && st.AvailableReplicas == n,
					fmt.Sprintf("status %+v", st)
			})
		}
		waitRC(3)
		pods := ownedPods(t, cs, ns, rc.UID)
		if len(pods) != 3 {
			t.Fatalf("%d pods, want 3", len(pods))
		}
		if ref := metav1.GetControllerOf(&pods[0]); ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || !strings.HasPrefix(pods[0].Name, "legacy-") {
			t.Fatalf("pod %s controller ref %+v", pods[0].Name, ref)
		}
		if _, err := cs.CoreV1().ReplicationControllers(ns).Patch(ctx, "legacy", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRC(1)
		events, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=ReplicationController"})
		if events == nil || len(events.Items) == 0 || events.Items[0].Source.Component != "replication-controller" {
			t.Fatalf("no events on the RC from replication-controller: %+v", events)
		}
	})
}

// A controller that may not create pods reports it (event and
// ReplicaFailure condition), and recovers once it may.
func TestReplicaSetCreateFailure(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	cs := c.Client
	ctx := context.Background()
	const user = "limited-controller"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
	}
	role, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	limited := rest.CopyConfig(c.Config)
	limited.Impersonate = rest.ImpersonationConfig{UserName: user}
	startManager(t, limited, replicaset.Descriptor)

	ns := controllertest.CreateNamespace(t, cs, "quota")
	if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, newRS("web", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := waitRS(t, cs, ns, "web", 10*time.Second, func(rs *appsv1.ReplicaSet) bool { return len(rs.Status.Conditions) > 0 })
	cond := rs.Status.Conditions[0]
	if cond.Type != appsv1.ReplicaSetReplicaFailure || cond.Status != corev1.ConditionTrue || cond.Reason != "FailedCreate" || !strings.Contains(cond.Message, "forbidden") {
		t.Fatalf("condition %+v", cond)
	}
	controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
		if err != nil || len(events.Items) == 0 {
			return false, fmt.Sprint("no FailedCreate event ", err)
		}
		e := events.Items[0]
		return e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.Message, "Error creating: "), e.Message
	})
	// Slow start: each failing sync tried one pod, never three.
	if pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Fatalf("%d pods exist", len(pods.Items))
	}

	role.Rules[2].Verbs = append(role.Rules[2].Verbs, "create")
	if _, err := cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRS(t, cs, ns, "web", 15*time.Second, func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.Replicas == 3 && len(rs.Status.Conditions) == 0
	})
}

// A controller stopped in the middle of a scale-up and started again (a
// new process: no expectations) ends with exactly the replicas asked
// for, never more.
func TestReplicaSetRestartMidScaleUp(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	cs := c.Client
	ctx := context.Background()
	ns := controllertest.CreateNamespace(t, cs, "restart")
	w := controllertest.WatchPods(t, cs, ns, nil)
	const n = 300
	stop := startManager(t, c.Config)
	reached := w.NotifyAt(20)
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, newRS("web", n), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the scale-up did not start")
	}
	stop()
	mid := len(ownedPods(t, cs, ns, rs.UID))
	startManager(t, c.Config)
	waitRS(t, cs, ns, "web", 15*time.Second, func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.Replicas == n && rs.Status.ObservedGeneration == rs.Generation
	})
	all, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != n {
		t.Fatalf("%d pods after the restart (%d when stopped), want exactly %d", len(all.Items), mid, n)
	}
	if m := w.MaxActive(); m != n {
		t.Fatalf("up to %d pods existed at once, want at most %d", m, n)
	}
	t.Logf("stopped at %d of %d pods", mid, n)
}

// Keep the compiler honest about the descriptors' names, which
// --controllers and the registry rely on.
func TestDescriptorNames(t *testing.T) {
	for _, tt := range []struct {
		d    controller.Descriptor
		name string
	}{{replicaset.Descriptor, "replicaset"}, {replicaset.RCDescriptor, "replicationcontroller"}} {
		if tt.d.Name != tt.name || tt.d.DisabledByDefault || tt.d.New == nil {
			t.Errorf("descriptor %+v, want name %q enabled by default", tt.d, tt.name)
		}
	}
}
