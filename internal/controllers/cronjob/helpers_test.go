package cronjob_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/controller"
)

// startManager runs descriptors as the controller manager does, as an
// API client with cfg's credentials, until the test ends.
func startManager(t *testing.T, cfg *rest.Config, descriptors ...controller.Descriptor) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.RunManager(ctx, controller.ManagerConfig{RestConfig: cfg, Descriptors: descriptors})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunManager: %v", err)
		}
	})
}

// startBinder stands in for the scheduler: it binds every unscheduled pod
// to the simulated nodes in turn, which then run it.
func startBinder(t *testing.T, client kubernetes.Interface, nodes int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	next := 0
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName="
	}))
	inf := f.Core().V1().Pods().Informer()
	bind := func(obj interface{}) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" {
			return
		}
		mu.Lock()
		node := fmt.Sprintf("sim-%d", next%nodes)
		next++
		mu.Unlock()
		_ = client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: bind}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
}

func createNamespace(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// eventually polls cond every 50 ms until it holds or timeout passes;
// cond's message says what it saw last.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("condition not met in %v: %s", timeout, last)
	}
}
