package daemonset_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/daemonset"
)

// One cluster, one manager; the cases change node taints and labels, so
// they run one after another, each in its own namespace.
func TestDaemonSet(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	controllertest.StartBinder(t, cs)
	controllertest.RunManager(t, c.Config, daemonset.Descriptor)
	ctx := context.Background()
	kubeconfig := c.Server.Kubeconfig
	all := []string{"sim-0", "sim-1", "sim-2"}

	t.Run("one pod on every node", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "every")
		if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, newDS("x"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if out := controllertest.KubectlOutput(t, kubeconfig, "-n", ns, "rollout", "status", "ds/x", "--timeout=30s"); !strings.Contains(out, `daemon set "x" successfully rolled out`) {
			t.Fatalf("kubectl rollout status said %q", out)
		}
		waitDS(t, cs, ns, "x", 10*time.Second, settled(3))
		if got := podNodes(t, cs, ns); !slices.Equal(got, all) {
			t.Fatalf("pods on %v, want one on each of %v", got, all)
		}
		pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			tolerates := map[string]bool{}
			for _, tol := range p.Spec.Tolerations {
				tolerates[tol.Key] = true
			}
			if !tolerates[corev1.TaintNodeNotReady] || !tolerates[corev1.TaintNodeUnschedulable] ||
				p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == "" || p.Labels["pod-template-generation"] != "1" ||
				!strings.HasPrefix(p.Name, "x-") {
				t.Fatalf("pod %s: labels %v tolerations %+v", p.Name, p.Labels, p.Spec.Tolerations)
			}
		}
		revs, _ := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
		if len(revs.Items) != 1 || revs.Items[0].Revision != 1 || revs.Items[0].Name != "x-"+pods.Items[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey] {
			t.Fatalf("revisions %+v", revs.Items)
		}
	})

	t.Run("taints and labels decide which nodes run it", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "placement")
		patchNode(t, cs, "sim-2", `{"spec":{"taints":[{"key":"dedicated","value":"db","effect":"NoSchedule"}]}}`)
		t.Cleanup(func() { patchNode(t, cs, "sim-2", `{"spec":{"taints":null}}`) })
		if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, newDS("x"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDS(t, cs, ns, "x", 10*time.Second, settled(2))
		if got := podNodes(t, cs, ns); !slices.Equal(got, []string{"sim-0", "sim-1"}) {
			t.Fatalf("pods on %v, want none on the tainted sim-2", got)
		}
		// The taint goes: sim-2 gets its pod.
		patchNode(t, cs, "sim-2", `{"spec":{"taints":null}}`)
		waitDS(t, cs, ns, "x", 10*time.Second, settled(3))
		// A NoExecute taint evicts it.
		patchNode(t, cs, "sim-2", `{"spec":{"taints":[{"key":"dedicated","value":"db","effect":"NoExecute"}]}}`)
		waitDS(t, cs, ns, "x", 10*time.Second, settled(2))
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			got := podNodes(t, cs, ns)
			return slices.Equal(got, []string{"sim-0", "sim-1"}), strings.Join(got, ",")
		})
		patchNode(t, cs, "sim-2", `{"spec":{"taints":null}}`)

		// A node selector follows node labels.
		sel := newDS("edge")
		sel.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"}
		if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, sel, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDS(t, cs, ns, "edge", 10*time.Second, settled(0))
		patchNode(t, cs, "sim-1", `{"metadata":{"labels":{"role":"edge"}}}`)
		waitDS(t, cs, ns, "edge", 10*time.Second, settled(1))
		patchNode(t, cs, "sim-1", `{"metadata":{"labels":{"role":null}}}`)
		waitDS(t, cs, ns, "edge", 10*time.Second, settled(0))
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=edge"})
			return len(pods.Items) == 0, "edge pods remain"
		})
	})

	t.Run("rolling update replaces one node at a time", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "rolling")
		log := watchPods(t, cs, ns)
		if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, newDS("x"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDS(t, cs, ns, "x", 10*time.Second, settled(3))
		patch := `{"spec":{"template":{"spec":{"containers":[{"name":"agent","image":"registry.example/agent:2"}]}}}}`
		if _, err := cs.AppsV1().DaemonSets(ns).Patch(ctx, "x", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		controllertest.KubectlOutput(t, kubeconfig, "-n", ns, "rollout", "status", "ds/x", "--timeout=30s")
		ds := waitDS(t, cs, ns, "x", 10*time.Second, settled(3))
		pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && (p.Spec.Containers[0].Image != "registry.example/agent:2" || p.Labels["pod-template-generation"] != "2") {
				t.Fatalf("pod %s not updated: %s %v", p.Name, p.Spec.Containers[0].Image, p.Labels)
			}
		}
		// maxUnavailable 1: a node's old pod goes only once the previous
		// node's new pod is ready, and its new pod only once it is gone.
		entries := log.Log()
		var order []string
		down := ""
		for _, e := range entries {
			f := strings.Fields(e)
			node, image, what := f[0], f[1], f[2]
			switch {
			case image == "registry.example/agent:1" && what == "terminating":
				if down != "" {
					t.Fatalf("%s went down while %s was still without a ready pod:\n%s", node, down, strings.Join(entries, "\n"))
				}
				down = node
				order = append(order, node)
			case image == "registry.example/agent:2" && what == "created" && node != down:
				t.Fatalf("new pod on %s before its old one went:\n%s", node, strings.Join(entries, "\n"))
			case image == "registry.example/agent:2" && what == "ready" && node == down:
				down = ""
			}
		}
		if slices.Sort(order); !slices.Equal(order, all) {
			t.Fatalf("nodes updated %v, want each once", order)
		}
		revs, _ := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
		if len(revs.Items) != 2 || ds.Status.UpdatedNumberScheduled != 3 {
			t.Fatalf("%d revisions, status %+v", len(revs.Items), ds.Status)
		}
	})
}
