package statefulset_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/garbagecollector"
	"github.com/rudder-dev/rudder/internal/controllers/history"
	"github.com/rudder-dev/rudder/internal/controllers/statefulset"
)

// One cluster and one manager (the StatefulSet controller, and the
// garbage collector that deletes claims whose pod is gone); each case
// works in its own namespace, in parallel.
func TestStatefulSet(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	controllertest.StartBinder(t, cs)
	controllertest.RunManager(t, c.Config, statefulset.Descriptor, garbagecollector.Descriptor)
	ctx := context.Background()
	kubeconfig := c.Server.Kubeconfig

	t.Run("group", func(t *testing.T) {
		t.Run("ordered creation and scale down", func(t *testing.T) {
			t.Parallel()
			ns := controllertest.CreateNamespace(t, cs, "ordered")
			log := controllertest.WatchPods(t, cs, ns, nil)
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, newSet(3), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitSet(t, cs, ns, 20*time.Second, rolledOut(3))
			// web-1 is created only once web-0 is ready, web-2 once web-1 is.
			log.AssertOrder(t, "web-0 created", "web-0 ready", "web-1 created", "web-1 ready", "web-2 created", "web-2 ready")

			pods := podsByName(t, cs, ns)
			for i := range 3 {
				name := fmt.Sprintf("web-%d", i)
				p, ok := pods[name]
				if !ok {
					t.Fatalf("no pod %s among %v", name, pods)
				}
				if p.Spec.Hostname != name || p.Spec.Subdomain != "nginx" ||
					p.Labels[appsv1.StatefulSetPodNameLabel] != name || p.Labels[appsv1.PodIndexLabel] != fmt.Sprint(i) ||
					p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-"+name {
					t.Fatalf("pod %s lacks its identity: labels %v hostname %q subdomain %q volumes %+v", name, p.Labels, p.Spec.Hostname, p.Spec.Subdomain, p.Spec.Volumes)
				}
			}
			if got := claimNames(t, cs, ns); !slices.Equal(got, []string{"data-web-0", "data-web-1", "data-web-2"}) {
				t.Fatalf("claims %v", got)
			}
			if out := controllertest.KubectlOutput(t, kubeconfig, "-n", ns, "rollout", "status", "statefulset/web", "--timeout=30s"); !strings.Contains(out, "3 new pods have been updated") && !strings.Contains(out, "rolling update complete 3 pods") {
				t.Fatalf("kubectl rollout status said %q", out)
			}

			events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, e := range events.Items {
				if e.Source.Component != statefulset.Component || e.InvolvedObject.Kind != "StatefulSet" {
					continue
				}
				if e.Type != "Normal" {
					t.Errorf("warning event %s: %s", e.Reason, e.Message)
				}
				msgs = append(msgs, e.Reason+": "+e.Message)
			}
			for _, want := range []string{
				"SuccessfulCreate: create Claim data-web-0 Pod web-0 in StatefulSet web success",
				"SuccessfulCreate: create Pod web-0 in StatefulSet web successful",
				"SuccessfulCreate: create Pod web-2 in StatefulSet web successful",
			} {
				if !slices.Contains(msgs, want) {
					t.Errorf("no event %q among %q", want, msgs)
				}
			}

			log.ResetLog()
			patchSet(t, cs, ns, `{"spec":{"replicas":1}}`)
			waitSet(t, cs, ns, 20*time.Second, rolledOut(1))
			// In reverse, each after the one above it is gone.
			log.AssertOrder(t, "web-2 terminating", "web-2 gone", "web-1 terminating", "web-1 gone")
			if got := slices.Sorted(mapsKeys(podsByName(t, cs, ns))); !slices.Equal(got, []string{"web-0"}) {
				t.Fatalf("pods left %v", got)
			}
			// Retain (the default) keeps the claims of removed pods.
			if got := claimNames(t, cs, ns); len(got) != 3 {
				t.Fatalf("claims %v, want all three retained", got)
			}
		})

		t.Run("rolling update in reverse ordinal order", func(t *testing.T) {
			t.Parallel()
			ns := controllertest.CreateNamespace(t, cs, "rolling")
			log := controllertest.WatchPods(t, cs, ns, nil)
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, newSet(3), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			first := waitSet(t, cs, ns, 20*time.Second, rolledOut(3))
			log.ResetLog()
			patchSet(t, cs, ns, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example/web:2"}]}}}}`)
			// kubectl waits for the rollout itself.
			controllertest.KubectlOutput(t, kubeconfig, "-n", ns, "rollout", "status", "statefulset/web", "--timeout=30s")
			done := waitSet(t, cs, ns, 20*time.Second, rolledOut(3))
			if done.Status.UpdateRevision == first.Status.UpdateRevision {
				t.Fatalf("update revision did not change: %s", done.Status.UpdateRevision)
			}
			log.AssertOrder(t, "web-2 terminating", "web-2 gone", "web-2 created", "web-2 ready",
				"web-1 terminating", "web-1 gone", "web-1 created", "web-1 ready",
				"web-0 terminating", "web-0 gone", "web-0 created", "web-0 ready")
			for name, p := range podsByName(t, cs, ns) {
				if p.Labels[appsv1.StatefulSetRevisionLabel] != done.Status.UpdateRevision || p.Spec.Containers[0].Image != "registry.example/web:2" {
					t.Fatalf("pod %s at revision %s image %s", name, p.Labels[appsv1.StatefulSetRevisionLabel], p.Spec.Containers[0].Image)
				}
			}
			revs, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]appsv1.ControllerRevision{}
			for _, r := range revs.Items {
				byName[r.Name] = r
			}
			old, cur := byName[first.Status.UpdateRevision], byName[done.Status.UpdateRevision]
			if len(revs.Items) != 2 || old.Revision != 1 || cur.Revision != 2 ||
				cur.Name != "web-"+cur.Labels[history.HashLabel] || metav1.GetControllerOf(&cur) == nil {
				t.Fatalf("revisions %v: old %d %v, new %d %v", len(revs.Items), old.Revision, old.Labels, cur.Revision, cur.Labels)
			}

			// Rolling back to the first template reuses its revision, renumbered 3.
			patchSet(t, cs, ns, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.example/web:1"}]}}}}`)
			back := waitSet(t, cs, ns, 20*time.Second, rolledOut(3))
			if back.Status.UpdateRevision != first.Status.UpdateRevision {
				t.Fatalf("rollback made revision %s, want %s again", back.Status.UpdateRevision, first.Status.UpdateRevision)
			}
			r, err := cs.AppsV1().ControllerRevisions(ns).Get(ctx, back.Status.UpdateRevision, metav1.GetOptions{})
			if err != nil || r.Revision != 3 {
				t.Fatalf("rolled-back revision: %v %+v", err, r)
			}
		})

		t.Run("partition updates only the pods at or above it", func(t *testing.T) {
			t.Parallel()
			ns := controllertest.CreateNamespace(t, cs, "partition")
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, newSet(3), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			first := waitSet(t, cs, ns, 20*time.Second, rolledOut(3))
			patchSet(t, cs, ns, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}},"template":{"spec":{"containers":[{"name":"web","image":"registry.example/web:2"}]}}}}`)
			set := waitSet(t, cs, ns, 20*time.Second, func(s *appsv1.StatefulSet) bool {
				return s.Status.ObservedGeneration == s.Generation && s.Status.UpdatedReplicas == 1 && s.Status.ReadyReplicas == 3
			})
			if out := controllertest.KubectlOutput(t, kubeconfig, "-n", ns, "rollout", "status", "statefulset/web", "--timeout=30s"); !strings.Contains(out, "partitioned roll out complete") {
				t.Fatalf("kubectl rollout status said %q", out)
			}
			// Give a wrong controller time to go on.
			controllertest.Consistently(t, 2*time.Second, func() (bool, string) {
				pods := podsByName(t, cs, ns)
				for name, want := range map[string]string{"web-0": first.Status.CurrentRevision, "web-1": first.Status.CurrentRevision, "web-2": set.Status.UpdateRevision} {
					if got := pods[name].Labels[appsv1.StatefulSetRevisionLabel]; got != want {
						return false, fmt.Sprintf("%s at revision %q, want %q", name, got, want)
					}
				}
				return true, ""
			})
			if set, _ = cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{}); set.Status.CurrentRevision != first.Status.CurrentRevision || set.Status.CurrentReplicas != 2 {
				t.Fatalf("status %+v", set.Status)
			}
		})

		t.Run("a new set adopts the pods and revisions an orphaning delete left", func(t *testing.T) {
			t.Parallel()
			ns := controllertest.CreateNamespace(t, cs, "adopt")
			set := newSet(2)
			set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitSet(t, cs, ns, 20*time.Second, rolledOut(2))
			before := podsByName(t, cs, ns)
			orphan := metav1.DeletePropagationOrphan
			if err := cs.AppsV1().StatefulSets(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
				t.Fatal(err)
			}
			controllertest.Eventually(t, 20*time.Second, func() (bool, string) {
				_, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
				for _, p := range podsByName(t, cs, ns) {
					if len(p.OwnerReferences) > 0 {
						return false, "pod " + p.Name + " still owned"
					}
				}
				return err != nil, fmt.Sprintf("set still there: %v", err)
			})
			again, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			waitSet(t, cs, ns, 20*time.Second, rolledOut(2))
			controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
				after := podsByName(t, cs, ns)
				for name, p := range after {
					ref := metav1.GetControllerOf(&p)
					if p.UID != before[name].UID || ref == nil || ref.UID != again.UID {
						return false, fmt.Sprintf("pod %s uid %s (was %s) owner %+v", name, p.UID, before[name].UID, ref)
					}
				}
				revs, _ := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
				for _, r := range revs.Items {
					if ref := metav1.GetControllerOf(&r); ref == nil || ref.UID != again.UID {
						return false, "revision " + r.Name + " not adopted"
					}
				}
				return len(after) == 2 && len(revs.Items) == 1, fmt.Sprintf("%d pods, %d revisions", len(after), len(revs.Items))
			})
		})

		t.Run("whenScaled Delete removes the claims of removed ordinals", func(t *testing.T) {
			t.Parallel()
			ns := controllertest.CreateNamespace(t, cs, "retention")
			set := newSet(3)
			set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitSet(t, cs, ns, 20*time.Second, rolledOut(3))
			patchSet(t, cs, ns, `{"spec":{"replicas":1}}`)
			waitSet(t, cs, ns, 20*time.Second, rolledOut(1))
			controllertest.Eventually(t, 20*time.Second, func() (bool, string) {
				got := claimNames(t, cs, ns)
				return slices.Equal(got, []string{"data-web-0"}), fmt.Sprintf("claims %v", got)
			})
			// Scaling up again makes fresh claims.
			patchSet(t, cs, ns, `{"spec":{"replicas":2}}`)
			waitSet(t, cs, ns, 20*time.Second, rolledOut(2))
			if got := claimNames(t, cs, ns); !slices.Equal(got, []string{"data-web-0", "data-web-1"}) {
				t.Fatalf("claims %v", got)
			}
		})
	})
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
