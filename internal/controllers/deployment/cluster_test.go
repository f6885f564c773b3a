package deployment_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/deployment"
)

// neverReady marks a template whose pods the test's stand-in ReplicaSet
// controller never reports ready.
const neverReady = "test.rudder.dev/never-ready"

// runFakeReplicaSets stands in for the ReplicaSet controller: delay
// after a replica set's spec changes, it reports every replica created,
// ready and available (none ready for never-ready templates).
func runFakeReplicaSets(t *testing.T, client kubernetes.Interface, delay time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		pending := map[string]time.Time{} // name/generation/replicas → first seen
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			list, err := client.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for i := range list.Items {
				rs := &list.Items[i]
				n := replicasOf(rs)
				ready := n
				if rs.Spec.Template.Annotations[neverReady] == "true" {
					ready = 0
				}
				want := appsv1.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: ready, AvailableReplicas: ready,
					ObservedGeneration: rs.Generation, TerminatingReplicas: new(int32(0))}
				if apiequality.Semantic.DeepEqual(rs.Status, want) {
					continue
				}
				key := fmt.Sprintf("%s/%s/%d/%d", rs.Namespace, rs.Name, rs.Generation, n)
				since, ok := pending[key]
				if !ok {
					pending[key] = time.Now()
					continue
				}
				if time.Since(since) < delay {
					continue
				}
				rs.Status = want
				_, _ = client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
			}
		}
	}()
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func getCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// complete is kubectl rollout status's test: every replica updated and
// available, the latest generation observed.
func complete(d *appsv1.Deployment) bool {
	r, s := *d.Spec.Replicas, d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == r && s.Replicas == r && s.AvailableReplicas == r
}

func newTestDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:v1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: new(intstr.FromInt32(1)), MaxUnavailable: new(intstr.FromInt32(0)),
			}},
		},
	}
}

// waitFor polls cond until it holds or the timeout passes; what names
// the wait in a failure, with cond's last error.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	controllertest.Eventually(t, timeout, func() (bool, string) {
		ok, err := cond()
		return ok, fmt.Sprintf("waiting for %s (last error: %v)", what, err)
	})
}

// waitComplete waits until the deployment's latest spec is rolled out.
func waitComplete(t *testing.T, client kubernetes.Interface, name string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitFor(t, "deployment "+name+" complete", 15*time.Second, func() (bool, error) {
		var err error
		d, err = client.AppsV1().Deployments("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := getCondition(&d.Status, appsv1.DeploymentProgressing)
		return complete(d) && c != nil && c.Reason == deployment.ReasonNewReplicaSetAvailable, nil
	})
	return d
}

func ownedReplicaSets(t *testing.T, client kubernetes.Interface, d *appsv1.Deployment) []*appsv1.ReplicaSet {
	t.Helper()
	list, err := client.AppsV1().ReplicaSets(d.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*appsv1.ReplicaSet
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == d.UID {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

func updateDeployment(t *testing.T, client kubernetes.Interface, name string, mutate func(*appsv1.Deployment)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(d)
		_, err = client.AppsV1().Deployments("default").Update(context.Background(), d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rsRecorder watches a deployment's replica sets and checks, after every
// change, that the total asked for never exceeds maxPods and the total
// available never drops below minAvailable.
type rsRecorder struct {
	mu       sync.Mutex
	state    map[string]*appsv1.ReplicaSet
	failures []string
	history  []map[string]*appsv1.ReplicaSet
}

func recordReplicaSets(t *testing.T, client kubernetes.Interface, app string, maxPods, minAvailable int32) *rsRecorder {
	t.Helper()
	r := &rsRecorder{state: map[string]*appsv1.ReplicaSet{}}
	list, err := client.AppsV1().ReplicaSets("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		r.state[list.Items[i].Name] = &list.Items[i]
	}
	w, err := client.AppsV1().ReplicaSets("default").Watch(context.Background(), metav1.ListOptions{
		LabelSelector: "app=" + app, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok {
				continue
			}
			r.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(r.state, rs.Name)
			} else {
				r.state[rs.Name] = rs
			}
			var spec, avail int32
			snap := map[string]*appsv1.ReplicaSet{}
			for n, s := range r.state {
				spec += replicasOf(s)
				avail += s.Status.AvailableReplicas
				snap[n] = s
			}
			r.history = append(r.history, snap)
			if spec > maxPods {
				r.failures = append(r.failures, fmt.Sprintf("%d replicas asked for, more than %d", spec, maxPods))
			}
			if avail < minAvailable {
				r.failures = append(r.failures, fmt.Sprintf("%d available, fewer than %d", avail, minAvailable))
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *rsRecorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.failures {
		t.Error(f)
	}
}

// scalingEvents returns the messages of the ScalingReplicaSet events on
// the deployment.
func scalingEvents(t *testing.T, client kubernetes.Interface, name string) []string {
	t.Helper()
	list, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == name && e.Reason == "ScalingReplicaSet" {
			out = append(out, e.Message)
		}
	}
	return out
}

func waitEvent(t *testing.T, client kubernetes.Interface, name, msg string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("event %q", msg), 10*time.Second, func() (bool, error) {
		for _, m := range scalingEvents(t, client, name) {
			if m == msg {
				return true, nil
			}
		}
		return false, nil
	})
}

func createDeployment(t *testing.T, client kubernetes.Interface, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	out, err := client.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
