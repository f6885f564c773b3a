package controllertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// CreateNamespace creates the namespace name and returns name, so a
// test can write ns := CreateNamespace(t, cs, "scale-up").
func CreateNamespace(t testing.TB, client kubernetes.Interface, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// CreatePod creates p in its namespace and returns it as stored.
func CreatePod(t testing.TB, client kubernetes.Interface, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CreateService creates s in its namespace and returns it as stored
// (with its cluster IP).
func CreateService(t testing.TB, client kubernetes.Interface, s *corev1.Service) *corev1.Service {
	t.Helper()
	out, err := client.CoreV1().Services(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// WebService is a ClusterIP Service "web" in ns, labelled team=a,
// selecting app=web pods, with port 80 ("http", TCP) sent to the pods'
// port named "http". mut adjusts it before it is returned.
func WebService(ns string, mut ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

// WebPod is an app=web pod for WebService, bound to node (no scheduler
// needed) and serving port "http" on port, or no port when port is 0.
// A simulated node makes it Running and Ready with an IP. mut adjusts
// it, e.g. with HoldDeletion or NeverReady.
func WebPod(ns, name, node string, port int32, mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
	if port != 0 {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}}
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

// holdFinalizer is a finalizer no controller removes.
const holdFinalizer = "test.rudder.dev/hold"

// HoldDeletion adds a finalizer that keeps p terminating once deleted,
// until ReleaseDeletion: how a test looks at a terminating pod for as
// long as it likes.
func HoldDeletion(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, holdFinalizer) }

// ReleaseDeletion removes the pod's finalizers, letting a held deletion
// finish. It reports a failure without stopping the test, as it is
// mostly called from t.Cleanup.
func ReleaseDeletion(t testing.TB, client kubernetes.Interface, ns, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("release %s/%s: %v", ns, name, err)
	}
}

// NeverReady gives p a readiness gate nobody sets, so its node reports
// it Running but not Ready.
func NeverReady(p *corev1.Pod) {
	p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: "test.rudder.dev/never"})
}

// SetPodReady makes the pod ready or not as a kubelet whose readiness
// probe changed its mind would: it sets the simulated node's readiness
// annotation (simnode.rudder.dev/ready) and waits until the node has
// written the pod's Ready condition accordingly. Writing the condition
// directly would not last: a node writes back the status it runs.
func SetPodReady(t testing.TB, client kubernetes.Interface, ns, name string, ready bool) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, simnodeReadyAnnotation, fmt.Sprint(ready)))
	if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("set readiness of %s/%s: %v", ns, name, err)
	}
	want := corev1.ConditionFalse
	if ready {
		want = corev1.ConditionTrue
	}
	Eventually(t, 10*time.Second, func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == want, fmt.Sprintf("pod %s/%s is %s, Ready=%s", ns, name, p.Status.Phase, c.Status)
			}
		}
		return false, fmt.Sprintf("pod %s/%s is %s, no Ready condition", ns, name, p.Status.Phase)
	})
}

// simnodeReadyAnnotation is simnode.AnnotationReady (not imported: the
// fixtures stay free of any component).
const simnodeReadyAnnotation = "simnode.rudder.dev/ready"

// SetPodCondition replaces the pod's condition of cond's type (or adds
// it) in its status, retrying on conflicts.
func SetPodCondition(t testing.TB, client kubernetes.Interface, ns, name string, cond corev1.PodCondition) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		found := false
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == cond.Type {
				p.Status.Conditions[i] = cond
				found = true
			}
		}
		if !found {
			p.Status.Conditions = append(p.Status.Conditions, cond)
		}
		_, err = client.CoreV1().Pods(ns).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
