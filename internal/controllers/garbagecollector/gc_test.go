package garbagecollector_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/garbagecollector"
)

// hold is a finalizer the tests put on objects to keep them from going
// while they are being deleted.
const hold = "test.rudder.dev/hold"

func TestCollector(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	controllertest.Run(t, c.Config, garbagecollector.Descriptor)

	t.Run("background: dependent deleted after its owner", func(t *testing.T) {
		f := newFixture(t, c, "background")
		owner := f.configMap("owner", nil)
		f.configMap("dep", []metav1.OwnerReference{cmRef(owner, false)})
		f.configMap("grandchild", []metav1.OwnerReference{cmRef(f.getCM("dep"), false)})
		f.configMap("bystander", nil)
		f.deleteCM("owner", metav1.DeletePropagationBackground)
		f.cmGone("dep", 10*time.Second)
		f.cmGone("grandchild", 10*time.Second)
		if f.getCM("bystander") == nil {
			t.Fatal("an object without owners was deleted")
		}
	})

	t.Run("foreground: owner stays until its blocking dependents are gone", func(t *testing.T) {
		f := newFixture(t, c, "foreground")
		owner := f.configMap("owner", nil)
		// The blocking dependent is held by a finalizer of ours, so the
		// owner must wait for us to let it go.
		f.configMap("blocker", []metav1.OwnerReference{cmRef(owner, true)}, hold)
		f.configMap("other", []metav1.OwnerReference{cmRef(owner, false)})
		f.deleteCM("owner", metav1.DeletePropagationForeground)

		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			b := f.getCM("blocker")
			return b != nil && b.DeletionTimestamp != nil && f.getCM("other") == nil,
				"the collector has not deleted the owner's dependents"
		})
		controllertest.Consistently(t, time.Second, func() (bool, string) {
			o := f.getCM("owner")
			if o == nil {
				return false, "the owner went while a blocking dependent remained"
			}
			return o.DeletionTimestamp != nil && slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents),
				"the owner lost its foregroundDeletion finalizer early: " + describe(o.ObjectMeta)
		})

		b := f.getCM("blocker")
		b.Finalizers = nil
		if _, err := f.client.CoreV1().ConfigMaps(f.ns).Update(f.ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.cmGone("blocker", 5*time.Second)
		f.cmGone("owner", 10*time.Second)
	})

	t.Run("foreground: owner without dependents goes", func(t *testing.T) {
		f := newFixture(t, c, "foreground-alone")
		f.configMap("owner", nil)
		f.deleteCM("owner", metav1.DeletePropagationForeground)
		f.cmGone("owner", 10*time.Second)
	})

	t.Run("orphan: dependents stay without the reference", func(t *testing.T) {
		f := newFixture(t, c, "orphan")
		owner := f.configMap("owner", nil)
		keep := f.configMap("keep", nil)
		f.configMap("a", []metav1.OwnerReference{cmRef(owner, true)})
		f.configMap("b", []metav1.OwnerReference{cmRef(owner, false), cmRef(keep, false)})
		f.deleteCM("owner", metav1.DeletePropagationOrphan)
		f.cmGone("owner", 10*time.Second)
		a, b := f.getCM("a"), f.getCM("b")
		if a == nil || b == nil {
			t.Fatalf("orphaned dependents were deleted: a=%v b=%v", a != nil, b != nil)
		}
		if len(a.OwnerReferences) != 0 || a.Data["k"] != "a" {
			t.Errorf("a after orphaning: %s data=%v", describe(a.ObjectMeta), a.Data)
		}
		if got := ownerUIDs(b.OwnerReferences); !slices.Equal(got, []types.UID{keep.UID}) {
			t.Errorf("b's owners after orphaning = %v, want only %s", got, keep.UID)
		}
		controllertest.Consistently(t, 500*time.Millisecond, func() (bool, string) {
			return f.getCM("a") != nil, "an orphaned dependent was deleted later"
		})
	})

	t.Run("two owners: deleting one drops its reference only", func(t *testing.T) {
		f := newFixture(t, c, "two-owners")
		o1, o2 := f.configMap("o1", nil), f.configMap("o2", nil)
		f.configMap("dep", []metav1.OwnerReference{cmRef(o1, true), cmRef(o2, false)})
		f.deleteCM("o1", metav1.DeletePropagationBackground)
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			d := f.getCM("dep")
			if d == nil {
				return false, "dep was deleted although o2 still owns it"
			}
			return slices.Equal(ownerUIDs(d.OwnerReferences), []types.UID{o2.UID}), "dep still refers to o1: " + describe(d.ObjectMeta)
		})
		controllertest.Consistently(t, 500*time.Millisecond, func() (bool, string) { return f.getCM("dep") != nil, "dep was deleted although o2 still owns it" })
		f.deleteCM("o2", metav1.DeletePropagationBackground)
		f.cmGone("dep", 10*time.Second)
	})

	t.Run("owner that never existed: dependent deleted", func(t *testing.T) {
		f := newFixture(t, c, "ghost")
		real := f.configMap("real", nil)
		ghost := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID()}
		// Same name as an existing object, another UID: not its owner.
		impostor := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "real", UID: uuid.NewUUID()}
		f.configMap("orphan-of-ghost", []metav1.OwnerReference{ghost})
		f.configMap("orphan-of-impostor", []metav1.OwnerReference{impostor})
		f.cmGone("orphan-of-ghost", 10*time.Second)
		f.cmGone("orphan-of-impostor", 10*time.Second)
		if got := f.getCM("real"); got == nil || got.UID != real.UID {
			t.Fatal("the object whose name the impostor reference used was deleted")
		}
	})

	t.Run("owner in another namespace: warning event, and it counts as absent", func(t *testing.T) {
		f := newFixture(t, c, "invalid-ns")
		other := newFixture(t, c, "invalid-ns-other")
		owner := other.configMap("owner", nil)
		f.configMap("dep", []metav1.OwnerReference{cmRef(owner, false)})
		f.cmGone("dep", 10*time.Second)
		if other.getCM("owner") == nil {
			t.Fatal("the owner in the other namespace was deleted")
		}
		waitForEvent(t, f, f.ns, "dep", fmt.Sprintf("ownerRef [v1/ConfigMap, namespace: %s, name: owner, uid: %s] does not exist in namespace %q", f.ns, owner.UID, f.ns))
	})

	t.Run("cluster-scoped dependent of a namespaced owner: warning, left alone", func(t *testing.T) {
		f := newFixture(t, c, "cluster-dep")
		owner := f.configMap("owner", nil)
		roles := f.client.RbacV1().ClusterRoles()
		if _, err := roles.Create(f.ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
			Name: "gc-test-dependent", OwnerReferences: []metav1.OwnerReference{cmRef(owner, false)}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForEvent(t, f, metav1.NamespaceDefault, "gc-test-dependent", fmt.Sprintf("ownerRef [v1/ConfigMap, namespace: , name: owner, uid: %s] does not exist in namespace \"\"", owner.UID))
		controllertest.Consistently(t, 500*time.Millisecond, func() (bool, string) {
			_, err := roles.Get(f.ctx, "gc-test-dependent", metav1.GetOptions{})
			return err == nil, fmt.Sprintf("cluster-scoped dependent: %v", err)
		})
	})
	t.Run("kubectl delete replicaset: its pods are deleted", func(t *testing.T) {
		f := newFixture(t, c, "kubectl-background")
		f.replicaSetWithPods("web", 3)
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "-n", f.ns, "delete", "replicaset", "web", "--timeout=15s")
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			pods := f.pods()
			return len(pods) == 0, fmt.Sprintf("%d pods left", len(pods))
		})
	})

	t.Run("kubectl delete --cascade=orphan: its pods stay", func(t *testing.T) {
		f := newFixture(t, c, "kubectl-orphan")
		f.replicaSetWithPods("web", 3)
		// kubectl waits until the ReplicaSet is gone, which takes the
		// collector removing the orphan finalizer.
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "-n", f.ns, "delete", "replicaset", "web", "--cascade=orphan", "--timeout=15s")
		if _, err := f.client.AppsV1().ReplicaSets(f.ns).Get(f.ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("replicaset after kubectl delete: %v", err)
		}
		pods := f.pods()
		if len(pods) != 3 {
			t.Fatalf("%d pods left, want 3", len(pods))
		}
		for _, p := range pods {
			if len(p.OwnerReferences) != 0 {
				t.Errorf("pod %s still refers to its owner: %s", p.Name, describe(p.ObjectMeta))
			}
		}
	})
}

// TestCollectorUnwatchedOwner checks that an owner the graph never
// observes (its resource is not watched) protects its dependents: only
// the API server's word that it is gone gets them deleted.
func TestCollectorUnwatchedOwner(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	controllertest.Run(t, c.Config, garbagecollector.NewDescriptor(garbagecollector.Config{IgnoredResources: []schema.GroupResource{{Resource: "secrets"}}}))
	f := newFixture(t, c, "unwatched")
	owner, err := f.client.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.configMap("dep", []metav1.OwnerReference{ref("v1", "Secret", owner, false)})
	controllertest.Consistently(t, 1500*time.Millisecond, func() (bool, string) {
		return f.getCM("dep") != nil, "dep was deleted while its (unwatched) owner exists"
	})
	if err := f.client.CoreV1().Secrets(f.ns).Delete(f.ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cmGone("dep", 10*time.Second)
}

// waitForEvent waits for the collector's OwnerRefInvalidNamespace
// warning about the named object, with the given message.
func waitForEvent(t *testing.T, f *fixture, ns, name, message string) {
	t.Helper()
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		evs, err := f.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "OwnerRefInvalidNamespace" && e.Type == corev1.EventTypeWarning &&
				e.Source.Component == garbagecollector.EventSource && e.Message == message {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Sprintf("no OwnerRefInvalidNamespace event for %s/%s with message %q; events: %q", ns, name, message, seen)
	})
}

// TestCollectorRestart stops the collector, changes the cluster behind
// its back (a background deletion, a foreground one, an orphaning, a
// dangling reference), and checks that a new collector converges.
func TestCollectorRestart(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	f := newFixture(t, c, "restart")
	stop := controllertest.Run(t, c.Config, garbagecollector.Descriptor)

	// The first collector works...
	warm := f.configMap("warm", nil)
	f.configMap("warm-dep", []metav1.OwnerReference{cmRef(warm, false)})
	bg := f.configMap("bg", nil)
	f.configMap("bg-dep", []metav1.OwnerReference{cmRef(bg, true)})
	fg := f.configMap("fg", nil)
	f.configMap("fg-dep", []metav1.OwnerReference{cmRef(fg, true)})
	orph := f.configMap("orph", nil)
	f.configMap("orph-dep", []metav1.OwnerReference{cmRef(orph, true)})
	f.deleteCM("warm", metav1.DeletePropagationBackground)
	f.cmGone("warm-dep", 10*time.Second)

	// ... and stops.
	stop()
	f.deleteCM("bg", metav1.DeletePropagationBackground)
	f.deleteCM("fg", metav1.DeletePropagationForeground)
	f.deleteCM("orph", metav1.DeletePropagationOrphan)
	f.configMap("ghost-dep", []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID()}})
	controllertest.Consistently(t, 500*time.Millisecond, func() (bool, string) {
		return f.getCM("bg-dep") != nil && f.getCM("fg") != nil && f.getCM("orph") != nil && f.getCM("ghost-dep") != nil,
			"something was collected while no collector ran"
	})

	controllertest.Run(t, c.Config, garbagecollector.Descriptor)
	f.cmGone("bg-dep", 10*time.Second)
	f.cmGone("fg-dep", 10*time.Second)
	f.cmGone("fg", 10*time.Second)
	f.cmGone("orph", 10*time.Second)
	f.cmGone("ghost-dep", 10*time.Second)
	d := f.getCM("orph-dep")
	if d == nil || len(d.OwnerReferences) != 0 {
		t.Fatalf("orphaned dependent after the restart: %v", d)
	}
}

// replicaSetWithPods creates a ReplicaSet and n pods it controls (no
// ReplicaSet controller runs, so these are all the pods it will have).
func (f *fixture) replicaSetWithPods(name string, n int) {
	f.t.Helper()
	labels := map[string]string{"app": name}
	rs, err := f.client.AppsV1().ReplicaSets(f.ns).Create(f.ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	for i := range n {
		_, err := f.client.CoreV1().Pods(f.ns).Create(f.ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) pods() []corev1.Pod {
	f.t.Helper()
	l, err := f.client.CoreV1().Pods(f.ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return l.Items
}
