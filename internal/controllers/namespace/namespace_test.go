package namespace_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/namespace"
)

func TestNamespaceDeletion(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 1})
	ctx := context.Background()
	cs := c.Client
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v", err)
	}
	node := nodes.Items[0].Name
	controllertest.Run(t, c.Config, namespace.NewDescriptor(namespace.Config{DeletionDelay: 50 * time.Millisecond}))

	t.Run("content removed, finalizers honoured", func(t *testing.T) {
		const ns = "doomed"
		fill(t, cs, ns, node)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps("bystander").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "safe"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		podList, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podWatch, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: podList.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer podWatch.Stop()

		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		const (
			wantContent    = "Some resources are remaining: configmaps. has 1 resource instances"
			wantFinalizers = "Some finalizers are remaining: example.com/hold in 1 resource instances"
		)
		var last *corev1.Namespace
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			last, err = cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			content, fins := condition(last, corev1.NamespaceContentRemaining), condition(last, corev1.NamespaceFinalizersRemaining)
			return content.Message == wantContent && fins.Message == wantFinalizers,
				fmt.Sprintf("conditions %+v", last.Status.Conditions)
		})
		if last.Status.Phase != corev1.NamespaceTerminating {
			t.Errorf("phase %s, want Terminating", last.Status.Phase)
		}
		for _, typ := range []corev1.NamespaceConditionType{corev1.NamespaceContentRemaining, corev1.NamespaceFinalizersRemaining} {
			if c := condition(last, typ); c.Status != corev1.ConditionTrue {
				t.Errorf("%s status %s", typ, c.Status)
			}
		}
		for _, typ := range []corev1.NamespaceConditionType{corev1.NamespaceDeletionDiscoveryFailure, corev1.NamespaceDeletionGVParsingFailure, corev1.NamespaceDeletionContentFailure} {
			if c := condition(last, typ); c.Status != corev1.ConditionFalse {
				t.Errorf("%s = %+v, want False", typ, c)
			}
		}
		cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cms.Items) != 1 || cms.Items[0].Name != "held" || cms.Items[0].DeletionTimestamp == nil {
			t.Errorf("configmaps left: %v", names(cms.Items))
		}
		if s, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err != nil || len(s.Items) != 0 {
			t.Errorf("secrets left: %v %v", s, err)
		}
		if p, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(p.Items) != 0 {
			t.Errorf("pods left: %v %v", p, err)
		}

		// The pods went gracefully: marked first, removed by their node.
		marked := map[string]bool{}
		removed := map[string]bool{}
		for len(removed) < 2 {
			select {
			case ev := <-podWatch.ResultChan():
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					t.Fatalf("watch: %v", ev.Object)
				}
				if ev.Type == watch.Modified && p.DeletionTimestamp != nil {
					marked[p.Name] = true
				}
				if ev.Type == watch.Deleted {
					if !marked[p.Name] {
						t.Errorf("pod %s removed without a graceful deletion first", p.Name)
					}
					removed[p.Name] = true
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("pod events: marked %v removed %v", marked, removed)
			}
		}

		// Release the held configmap: the namespace goes.
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, cs, ns, 15*time.Second)

		if _, err := cs.CoreV1().ConfigMaps("bystander").Get(ctx, "safe", metav1.GetOptions{}); err != nil {
			t.Errorf("a namespace not being deleted lost content: %v", err)
		}
	})

	t.Run("pods go first, the rest once they are gone", func(t *testing.T) {
		const ns = "ordered"
		fill(t, cs, ns, node)
		// A finalizer keeps one pod after its node has stopped it.
		patch := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "web-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		const wantContent = "Some resources are remaining: pods. has 1 resource instances"
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := condition(got, corev1.NamespaceContentRemaining)
			return c.Message == wantContent, fmt.Sprintf("conditions %+v", got.Status.Conditions)
		})
		// The pass that found the pod left everything else untouched.
		cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range cms.Items {
			if cm.DeletionTimestamp != nil {
				t.Errorf("configmap %s deleted while a pod remains", cm.Name)
			}
		}
		if len(cms.Items) != 2 {
			t.Errorf("configmaps %v deleted while a pod remains", names(cms.Items))
		}
		if s, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err != nil || len(s.Items) != 1 {
			t.Errorf("secrets %v (%v), want the one untouched while a pod remains", s, err)
		}

		// Released, the pod goes, then everything else, then the namespace.
		release := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "web-0", types.MergePatchType, release, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, cs, ns, 30*time.Second)
	})

	t.Run("kubectl delete namespace returns once it is gone", func(t *testing.T) {
		kubectl := "/usr/bin/kubectl"
		if _, err := os.Stat(kubectl); err != nil {
			t.Skip("no kubectl")
		}
		const ns = "kubectl-x"
		fill(t, cs, ns, node)
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		start := time.Now()
		out, err := exec.CommandContext(tctx, kubectl, "--kubeconfig", c.Server.Kubeconfig, "delete", "namespace", ns).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl: %v\n%s", err, out)
		}
		t.Logf("kubectl returned after %v: %s", time.Since(start).Round(time.Millisecond), out)
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after kubectl returned: err = %v, want NotFound", err)
		}
	})
}

// fill creates ns with two configmaps, a secret and two running pods on
// node whose grace period is 1 s.
func fill(t *testing.T, cs kubernetes.Interface, ns, node string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two"} {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-0", "web-1"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, fmt.Sprintf("%s is %s", p.Name, p.Status.Phase)
			}
		}
		return true, ""
	})
}

func waitGone(t *testing.T, cs kubernetes.Interface, ns string, timeout time.Duration) {
	t.Helper()
	controllertest.Eventually(t, timeout, func() (bool, string) {
		got, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("still there: finalizers %v, conditions %+v", got.Spec.Finalizers, got.Status.Conditions)
	})
}

func condition(ns *corev1.Namespace, typ corev1.NamespaceConditionType) corev1.NamespaceCondition {
	for _, c := range ns.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return corev1.NamespaceCondition{}
}

func names(cms []corev1.ConfigMap) []string {
	var out []string
	for _, c := range cms {
		out = append(out, c.Name)
	}
	return out
}
