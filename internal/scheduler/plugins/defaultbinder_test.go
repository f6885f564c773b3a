package plugins_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/scheduler/framework"
	"github.com/rudder-dev/rudder/internal/scheduler/plugins"
)

// binderHandle gives the binder only what it uses: a client.
type binderHandle struct {
	framework.Handle
	client kubernetes.Interface
}

func (h binderHandle) ClientSet() kubernetes.Interface { return h.client }

func binderNew(t *testing.T, c kubernetes.Interface) framework.BindPlugin {
	t.Helper()
	pl, err := plugins.NewDefaultBinder(context.Background(), nil, binderHandle{client: c})
	if err != nil {
		t.Fatal(err)
	}
	return pl.(framework.BindPlugin)
}

func binderPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
}

// TestDefaultBinderAPIServer binds against a real API server and checks
// what a user sees on the pod.
func TestDefaultBinderAPIServer(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	pods := c.Client.CoreV1().Pods("default")
	binder := binderNew(t, c.Client)

	tests := []struct {
		name string
		// setup returns the pod as the scheduler saw it.
		setup    func(t *testing.T) *corev1.Pod
		node     string
		wantCode framework.Code
		wantNode string
	}{
		{name: "binds a pending pod", node: "node-a", wantNode: "node-a",
			setup: func(t *testing.T) *corev1.Pod {
				p, err := pods.Create(ctx, binderPod("pending"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}},
		{name: "refuses a pod recreated under the same name", node: "node-b", wantCode: framework.Error,
			setup: func(t *testing.T) *corev1.Pod {
				old, err := pods.Create(ctx, binderPod("recreated"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := pods.Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
					t.Fatal(err)
				}
				if _, err := pods.Create(ctx, binderPod("recreated"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				return old
			}},
		{name: "refuses an already bound pod", node: "node-c", wantCode: framework.Error, wantNode: "node-a",
			setup: func(t *testing.T) *corev1.Pod {
				p, err := pods.Get(ctx, "pending", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.setup(t)
			s := binder.Bind(ctx, framework.NewCycleState(), pod, tc.node)
			if s.Code() != tc.wantCode {
				t.Fatalf("Bind = %v, want %v", s, tc.wantCode)
			}
			if tc.wantCode == framework.Error && !apierrors.IsConflict(s.AsError()) {
				t.Errorf("error = %v, want a Conflict", s.AsError())
			}
			got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.NodeName != tc.wantNode {
				t.Errorf("spec.nodeName = %q, want %q", got.Spec.NodeName, tc.wantNode)
			}
		})
	}
}

// TestDefaultBinderRequest checks the Binding the plugin posts.
func TestDefaultBinderRequest(t *testing.T) {
	client := fake.NewSimpleClientset()
	var got *corev1.Binding
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		got = a.(k8stesting.CreateAction).GetObject().(*corev1.Binding)
		if got.Target.Name == "broken" {
			return true, nil, errors.New("boom")
		}
		return true, got, nil
	})
	pod := binderPod("p")
	pod.UID = "uid-1"
	binder := binderNew(t, client)

	if s := binder.Bind(context.Background(), framework.NewCycleState(), pod, "node-1"); !s.IsSuccess() {
		t.Fatalf("Bind = %v", s)
	}
	if got == nil || got.Namespace != "default" || got.Name != "p" || got.UID != "uid-1" ||
		got.Target.Kind != "Node" || got.Target.Name != "node-1" {
		t.Errorf("binding = %+v", got)
	}
	if s := binder.Bind(context.Background(), framework.NewCycleState(), pod, "broken"); s.Code() != framework.Error {
		t.Errorf("Bind with an API error = %v, want Error", s)
	}
}
