package endpoints_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller"
)

// startController builds d from the cluster's admin config, starts the
// informers and runs d's loops until the test ends or stop is called,
// which returns once every loop has. (Each controller package keeps its
// own copy of this helper.)
func startController(t *testing.T, c *clustertest.Cluster, d controller.Descriptor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop = func() {
		cancel()
		wg.Wait()
	}
	t.Cleanup(stop)
	cx, err := controller.NewContext(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	runnables, err := d.New(ctx, cx)
	if err != nil {
		t.Fatalf("build %s: %v", d.Name, err)
	}
	if err := cx.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range runnables {
		wg.Go(func() {
			if err := r.Run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", d.Name, err)
			}
		})
	}
	return stop
}

// eventually polls cond every 50 ms until it returns true or the timeout
// passes; the last message explains a failure.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func createNS(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// service is a ClusterIP Service "web" selecting app=web, port 80 to the
// pods' port named "http".
func service(ns string, mut ...func(*corev1.Service)) *corev1.Service {
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

func createService(t *testing.T, cs kubernetes.Interface, s *corev1.Service) *corev1.Service {
	t.Helper()
	got, err := cs.CoreV1().Services(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// pod is an app=web pod bound to node, serving "http" on port (no port
// when 0); the simulated node makes it Running and Ready with an IP.
func pod(ns, name, node string, port int32, mut ...func(*corev1.Pod)) *corev1.Pod {
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

func createPod(t *testing.T, cs kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	if _, err := cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// holdDeletion keeps a deleted pod terminating until releaseDeletion.
func holdDeletion(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, "test.rudder.dev/hold") }

func releaseDeletion(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := cs.CoreV1().Pods(ns).Patch(context.Background(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("release %s/%s: %v", ns, name, err)
	}
}

// gated makes the simulated node report the pod not Ready (a readiness
// gate nobody sets).
func gated(p *corev1.Pod) {
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "test.rudder.dev/never"}}
}

// setReady writes the pod's Ready condition, as a kubelet whose probe
// changed its mind would.
func setReady(t *testing.T, cs kubernetes.Interface, ns, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = status
			p.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
