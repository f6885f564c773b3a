package garbagecollector_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// fixture creates objects in one namespace of its own.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
}

func newFixture(t *testing.T, c *clustertest.Cluster, ns string) *fixture {
	t.Helper()
	controllertest.CreateNamespace(t, c.Client, ns)
	return &fixture{t: t, ctx: context.Background(), client: c.Client, ns: ns}
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
	controllertest.Eventually(f.t, timeout, func() (bool, string) {
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
