package deployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/deployment"
)

// TestDeploymentController runs the controller against a real API
// server, with a stand-in ReplicaSet controller, through the life of
// deployments as kubectl users drive them.
func TestDeploymentController(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := clustertest.Start(t, clustertest.Options{})
	client := c.Client
	controllertest.Run(t, c.Config, deployment.Descriptor)
	runFakeReplicaSets(t, client, 100*time.Millisecond)
	ctx := context.Background()

	t.Run("create and rolling update", func(t *testing.T) {
		d := newTestDeployment("web", 3)
		d.Annotations = map[string]string{"kubernetes.io/change-cause": "initial"}
		d = createDeployment(t, client, d)
		d = waitComplete(t, client, "web")

		rss := ownedReplicaSets(t, client, d)
		if len(rss) != 1 {
			t.Fatalf("want 1 replica set, got %d", len(rss))
		}
		first := rss[0]
		hash := first.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if hash == "" || first.Name != "web-"+hash || first.Spec.Selector.MatchLabels["pod-template-hash"] != hash ||
			first.Spec.Template.Labels["pod-template-hash"] != hash || first.Labels["app"] != "web" {
			t.Errorf("replica set %s: labels %v selector %v template labels %v", first.Name, first.Labels,
				first.Spec.Selector.MatchLabels, first.Spec.Template.Labels)
		}
		for k, v := range map[string]string{deployment.RevisionAnnotation: "1", deployment.DesiredReplicasAnnotation: "3", deployment.MaxReplicasAnnotation: "4", "kubernetes.io/change-cause": "initial"} {
			if first.Annotations[k] != v {
				t.Errorf("replica set annotation %s = %q, want %q", k, first.Annotations[k], v)
			}
		}
		if d.Annotations[deployment.RevisionAnnotation] != "1" {
			t.Errorf("deployment revision = %q", d.Annotations[deployment.RevisionAnnotation])
		}
		if st := d.Status; st.Replicas != 3 || st.UpdatedReplicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 ||
			st.UnavailableReplicas != 0 || st.ObservedGeneration != d.Generation || st.TerminatingReplicas == nil || *st.TerminatingReplicas != 0 {
			t.Errorf("status = %+v", st)
		}
		if c := getCondition(&d.Status, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue || c.Reason != deployment.ReasonMinimumAvailable {
			t.Errorf("Available = %+v", c)
		}
		if c := getCondition(&d.Status, appsv1.DeploymentProgressing); c.Message != fmt.Sprintf("ReplicaSet %q has successfully progressed.", first.Name) {
			t.Errorf("Progressing message = %q", c.Message)
		}
		waitEvent(t, client, "web", fmt.Sprintf("Scaled up replica set %s from 0 to 3", first.Name))

		res := controllertest.Kubectl(t, c.Server.Kubeconfig, "rollout", "status", "deploy/web", "--timeout=20s")
		if res.Code != 0 || !strings.Contains(res.Stdout, `deployment "web" successfully rolled out`) {
			t.Fatalf("kubectl rollout status: code %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
		}

		// Roll out a new image; surge 1, unavailable 0 bound every step.
		rec := recordReplicaSets(t, client, "web", 4, 3)
		updateDeployment(t, client, "web", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
		})
		res = controllertest.Kubectl(t, c.Server.Kubeconfig, "rollout", "status", "deploy/web", "--timeout=20s")
		if res.Code != 0 || !strings.Contains(res.Stdout, `deployment "web" successfully rolled out`) {
			t.Fatalf("kubectl rollout status during rollout: code %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
		}
		d = waitComplete(t, client, "web")
		rec.check(t)

		rss = ownedReplicaSets(t, client, d)
		if len(rss) != 2 {
			t.Fatalf("want 2 replica sets, got %d", len(rss))
		}
		var newRS, oldRS *appsv1.ReplicaSet
		for _, rs := range rss {
			if rs.Name == first.Name {
				oldRS = rs
			} else {
				newRS = rs
			}
		}
		if oldRS == nil || replicasOf(oldRS) != 0 || oldRS.Annotations[deployment.RevisionAnnotation] != "1" {
			t.Errorf("old replica set: %+v", oldRS)
		}
		if replicasOf(newRS) != 3 || newRS.Status.AvailableReplicas != 3 || newRS.Annotations[deployment.RevisionAnnotation] != "2" {
			t.Errorf("new replica set %s: replicas %d available %d revision %q", newRS.Name, replicasOf(newRS),
				newRS.Status.AvailableReplicas, newRS.Annotations[deployment.RevisionAnnotation])
		}
		if d.Annotations[deployment.RevisionAnnotation] != "2" {
			t.Errorf("deployment revision = %q", d.Annotations[deployment.RevisionAnnotation])
		}
		if c := getCondition(&d.Status, appsv1.DeploymentProgressing); c.Reason != deployment.ReasonNewReplicaSetAvailable ||
			c.Message != fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name) {
			t.Errorf("Progressing = %+v", c)
		}
		waitEvent(t, client, "web", fmt.Sprintf("Scaled up replica set %s from 0 to 1", newRS.Name))
		waitEvent(t, client, "web", fmt.Sprintf("Scaled down replica set %s from 3 to 2", oldRS.Name))
		if d.Status.CollisionCount != nil {
			t.Errorf("collisionCount = %d: the controller did not recognise its own replica set", *d.Status.CollisionCount)
		}

		// kubectl rollout restart changes a template annotation: a new replica set.
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "rollout", "restart", "deploy/web")
		d = waitComplete(t, client, "web")
		if n := len(ownedReplicaSets(t, client, d)); n != 3 || d.Annotations[deployment.RevisionAnnotation] != "3" {
			t.Errorf("after restart: %d replica sets, revision %q", n, d.Annotations[deployment.RevisionAnnotation])
		}
	})

	t.Run("pause stops progress but not scaling", func(t *testing.T) {
		createDeployment(t, client, newTestDeployment("paused", 2))
		d := waitComplete(t, client, "paused")
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "rollout", "pause", "deploy/paused")
		updateDeployment(t, client, "paused", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
		})
		waitFor(t, "Progressing DeploymentPaused", 10*time.Second, func() (bool, error) {
			d, err := client.AppsV1().Deployments("default").Get(ctx, "paused", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := getCondition(&d.Status, appsv1.DeploymentProgressing)
			return c != nil && c.Reason == deployment.ReasonPaused && c.Status == corev1.ConditionUnknown && d.Status.ObservedGeneration == d.Generation, nil
		})
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "scale", "deploy/paused", "--replicas=4")
		waitFor(t, "paused deployment scaled", 10*time.Second, func() (bool, error) {
			rss := ownedReplicaSets(t, client, d)
			return len(rss) == 1 && replicasOf(rss[0]) == 4 && rss[0].Status.AvailableReplicas == 4, nil
		})
		controllertest.Consistently(t, 300*time.Millisecond, func() (bool, string) {
			rss := ownedReplicaSets(t, client, d)
			return len(rss) == 1, fmt.Sprintf("paused deployment created a replica set (%d)", len(rss))
		})
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "rollout", "resume", "deploy/paused")
		d = waitComplete(t, client, "paused")
		rss := ownedReplicaSets(t, client, d)
		if len(rss) != 2 || d.Status.UpdatedReplicas != 4 {
			t.Fatalf("after resume: %d replica sets, status %+v", len(rss), d.Status)
		}
	})

	t.Run("revision history limit and rollback", func(t *testing.T) {
		d := newTestDeployment("hist", 1)
		d.Spec.RevisionHistoryLimit = new(int32(1))
		createDeployment(t, client, d)
		d = waitComplete(t, client, "hist")
		for _, v := range []string{"v2", "v3", "v4"} {
			updateDeployment(t, client, "hist", func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Image = "example.com/app:" + v
			})
			d = waitComplete(t, client, "hist")
		}
		images := func() []string {
			var out []string
			for _, rs := range ownedReplicaSets(t, client, d) {
				out = append(out, rs.Spec.Template.Spec.Containers[0].Image+"@"+rs.Annotations[deployment.RevisionAnnotation])
			}
			slices.Sort(out)
			return out
		}
		want := []string{"example.com/app:v3@3", "example.com/app:v4@4"}
		waitFor(t, "history trimmed to one old replica set", 10*time.Second, func() (bool, error) {
			return slices.Equal(images(), want), nil
		})
		// kubectl rollout undo patches the template back to revision 3's:
		// that replica set becomes the new one, revision 5.
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "rollout", "undo", "deploy/hist")
		d = waitComplete(t, client, "hist")
		want = []string{"example.com/app:v3@5", "example.com/app:v4@4"}
		waitFor(t, "rolled back", 10*time.Second, func() (bool, error) { return slices.Equal(images(), want), nil })
		if d.Annotations[deployment.RevisionAnnotation] != "5" {
			t.Errorf("deployment revision = %q", d.Annotations[deployment.RevisionAnnotation])
		}
		res := controllertest.Kubectl(t, c.Server.Kubeconfig, "rollout", "history", "deploy/hist")
		if res.Code != 0 || !strings.Contains(res.Stdout, "4 ") || !strings.Contains(res.Stdout, "5 ") {
			t.Errorf("kubectl rollout history: code %d\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
	})

	t.Run("progress deadline exceeded", func(t *testing.T) {
		d := newTestDeployment("stuck", 2)
		d.Spec.ProgressDeadlineSeconds = new(int32(1))
		d.Spec.Template.Annotations = map[string]string{neverReady: "true"}
		d = createDeployment(t, client, d)
		var cond *appsv1.DeploymentCondition
		waitFor(t, "ProgressDeadlineExceeded", 10*time.Second, func() (bool, error) {
			d, err := client.AppsV1().Deployments("default").Get(ctx, "stuck", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cond = getCondition(&d.Status, appsv1.DeploymentProgressing)
			return cond != nil && cond.Reason == deployment.ReasonProgressDeadline, nil
		})
		rss := ownedReplicaSets(t, client, d)
		if len(rss) != 1 || cond.Status != corev1.ConditionFalse || cond.Message != fmt.Sprintf("ReplicaSet %q has timed out progressing.", rss[0].Name) {
			t.Errorf("Progressing = %+v", cond)
		}
		res := controllertest.Kubectl(t, c.Server.Kubeconfig, "rollout", "status", "deploy/stuck", "--timeout=10s")
		if res.Code == 0 || !strings.Contains(res.Stderr, `deployment "stuck" exceeded its progress deadline`) {
			t.Errorf("kubectl rollout status: code %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
		}
	})

	t.Run("recreate", func(t *testing.T) {
		d := newTestDeployment("rec", 2)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		createDeployment(t, client, d)
		d = waitComplete(t, client, "rec")
		first := ownedReplicaSets(t, client, d)[0].Name
		rec := recordReplicaSets(t, client, "rec", 2, 0)
		updateDeployment(t, client, "rec", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
		})
		d = waitComplete(t, client, "rec")
		rec.check(t)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, snap := range rec.history {
			old := snap[first]
			for name, rs := range snap {
				if name != first && replicasOf(rs) > 0 && old != nil && old.Status.Replicas > 0 {
					t.Fatalf("new replica set %s scaled up while %s still had %d pods", name, first, old.Status.Replicas)
				}
			}
		}
	})

	t.Run("adopts an orphan replica set", func(t *testing.T) {
		d := newTestDeployment("orphan", 2)
		orphan := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "orphan-manual", Namespace: "default", Labels: map[string]string{"app": "orphan"}},
			Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(2)), Selector: d.Spec.Selector.DeepCopy(),
				Template: *d.Spec.Template.DeepCopy()},
		}
		if _, err := client.AppsV1().ReplicaSets("default").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d = createDeployment(t, client, d)
		d = waitComplete(t, client, "orphan")
		rss := ownedReplicaSets(t, client, d)
		if len(rss) != 1 || rss[0].Name != "orphan-manual" || rss[0].Annotations[deployment.RevisionAnnotation] != "1" {
			t.Fatalf("owned replica sets: %d (%v)", len(rss), rss)
		}
	})
}

// TestReleaseAndCollision relabels a deployment's replica set so its
// selector no longer matches: the deployment releases it, and since the
// released replica set keeps the name the template hashes to, the new
// one needs a bumped collisionCount to get another name.
func TestReleaseAndCollision(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := clustertest.Start(t, clustertest.Options{})
	client := c.Client
	controllertest.Run(t, c.Config, deployment.Descriptor)
	runFakeReplicaSets(t, client, 50*time.Millisecond)
	ctx := context.Background()

	d := createDeployment(t, client, newTestDeployment("rel", 2))
	waitComplete(t, client, "rel")
	first := ownedReplicaSets(t, client, d)[0]
	patch := []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)
	if _, err := client.AppsV1().ReplicaSets("default").Patch(ctx, first.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "replica set released", 10*time.Second, func() (bool, error) {
		rs, err := client.AppsV1().ReplicaSets("default").Get(ctx, first.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return metav1.GetControllerOf(rs) == nil, nil
	})
	// The deployment's status may still read complete from before the
	// release: wait for the replacement, then for it to be rolled out.
	waitFor(t, "a new replica set", 10*time.Second, func() (bool, error) {
		rss := ownedReplicaSets(t, client, d)
		return len(rss) == 1 && rss[0].Name != first.Name, nil
	})
	d = waitComplete(t, client, "rel")
	rss := ownedReplicaSets(t, client, d)
	if len(rss) != 1 || rss[0].Name == first.Name {
		t.Fatalf("owned replica sets after release: %d", len(rss))
	}
	if d.Status.CollisionCount == nil || *d.Status.CollisionCount != 1 {
		t.Errorf("collisionCount = %v, want 1", d.Status.CollisionCount)
	}
	if want := "rel-" + deployment.PodTemplateHash(&d.Spec.Template, new(int32(1))); rss[0].Name != want {
		t.Errorf("new replica set %s, want %s", rss[0].Name, want)
	}
}

// TestRestartMidRollout stops the controller in the middle of a rollout
// and starts a fresh one (new informers, nothing remembered): it must
// finish the rollout without a second new replica set and without
// breaking the surge and availability bounds.
func TestRestartMidRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := clustertest.Start(t, clustertest.Options{})
	client := c.Client
	stop := controllertest.Run(t, c.Config, deployment.Descriptor)
	runFakeReplicaSets(t, client, 250*time.Millisecond)

	createDeployment(t, client, newTestDeployment("web", 4))
	d := waitComplete(t, client, "web")
	rec := recordReplicaSets(t, client, "web", 5, 4)
	updateDeployment(t, client, "web", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	})
	waitFor(t, "rollout under way", 10*time.Second, func() (bool, error) {
		for _, rs := range ownedReplicaSets(t, client, d) {
			if rs.Spec.Template.Spec.Containers[0].Image == "example.com/app:v2" && replicasOf(rs) >= 2 {
				return true, nil
			}
		}
		return false, nil
	})
	stop()
	time.Sleep(400 * time.Millisecond)
	controllertest.Run(t, c.Config, deployment.Descriptor)
	d = waitComplete(t, client, "web")
	rec.check(t)
	rss := ownedReplicaSets(t, client, d)
	if len(rss) != 2 {
		t.Fatalf("want 2 replica sets after the restart, got %d", len(rss))
	}
	for _, rs := range rss {
		want := int32(0)
		if rs.Spec.Template.Spec.Containers[0].Image == "example.com/app:v2" {
			want = 4
		}
		if replicasOf(rs) != want {
			t.Errorf("%s: %d replicas, want %d", rs.Name, replicasOf(rs), want)
		}
	}
}
