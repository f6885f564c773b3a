package garbagecollector_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers/garbagecollector"
)

// startGC runs a garbage collector against the cluster, built the way
// the manager builds it (controller.NewContext: protobuf clientset,
// dynamic and metadata clients, informer factories, event recorder). The
// returned stop ends it and waits until it has stopped; the test's
// cleanup stops it too.
func startGC(t *testing.T, c *clustertest.Cluster, cfg garbagecollector.Config) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	cx, err := controller.NewContext(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	d := garbagecollector.NewDescriptor(cfg)
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

// holds checks cond every 50 ms for the whole duration: something that
// must not happen (a deletion) has had time to happen and did not.
func holds(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, msg := cond(); !ok {
			t.Fatal(msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fixture creates objects in one namespace of its own.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
}

func newFixture(t *testing.T, c *clustertest.Cluster, ns string) *fixture {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, client: c.Client, ns: ns}
}

// configMap creates a ConfigMap with the given owners and finalizers.
func (f *fixture) configMap(name string, owners []metav1.OwnerReference, finalizers ...string) *corev1.ConfigMap {
	f.t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners, Finalizers: finalizers},
		Data:       map[string]string{"k": name},
	}
	out, err := f.client.CoreV1().ConfigMaps(f.ns).Create(f.ctx, cm, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("create configmap %s: %v", name, err)
	}
	return out
}

// getCM returns the ConfigMap, or nil if it does not exist.
func (f *fixture) getCM(name string) *corev1.ConfigMap {
	f.t.Helper()
	cm, err := f.client.CoreV1().ConfigMaps(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return cm
}

func (f *fixture) deleteCM(name string, policy metav1.DeletionPropagation) {
	f.t.Helper()
	if err := f.client.CoreV1().ConfigMaps(f.ns).Delete(f.ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		f.t.Fatalf("delete configmap %s: %v", name, err)
	}
}

// cmGone waits for a ConfigMap to disappear.
func (f *fixture) cmGone(name string, timeout time.Duration) {
	f.t.Helper()
	eventually(f.t, timeout, func() (bool, string) {
		cm := f.getCM(name)
		if cm == nil {
			return true, ""
		}
		return false, "configmap " + name + " still exists: " + describe(cm.ObjectMeta)
	})
}

func describe(m metav1.ObjectMeta) string {
	s := "finalizers=" + strings.Join(m.Finalizers, ",") + " owners=["
	for _, r := range m.OwnerReferences {
		s += r.Kind + "/" + r.Name + " "
	}
	s += "]"
	if m.DeletionTimestamp != nil {
		s += " deleting"
	}
	return s
}

// ref builds an ownerReference to an object.
func ref(apiVersion, kind string, o metav1.Object, blocking bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(), BlockOwnerDeletion: &blocking}
}

func cmRef(cm *corev1.ConfigMap, blocking bool) metav1.OwnerReference {
	return ref("v1", "ConfigMap", cm, blocking)
}

func ownerUIDs(refs []metav1.OwnerReference) []types.UID {
	var out []types.UID
	for _, r := range refs {
		out = append(out, r.UID)
	}
	return out
}
