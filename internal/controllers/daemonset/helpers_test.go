package daemonset_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// watchPods logs "<node> <image> <what>" for ns's pods: which node a
// pod runs on (or is pinned to) and which version it is.
func watchPods(t *testing.T, client kubernetes.Interface, ns string) *controllertest.PodWatch {
	t.Helper()
	return controllertest.WatchPods(t, client, ns, func(p *corev1.Pod) string {
		node := p.Spec.NodeName
		if node == "" {
			node = controllertest.RequiredNodeName(p)
		}
		return node + " " + p.Spec.Containers[0].Image
	})
}

func newDS(name string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
				},
			},
		},
	}
}

func waitDS(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, cond func(*appsv1.DaemonSet) bool) *appsv1.DaemonSet {
	t.Helper()
	var ds *appsv1.DaemonSet
	controllertest.Eventually(t, timeout, func() (bool, string) {
		var err error
		ds, err = client.AppsV1().DaemonSets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(ds), fmt.Sprintf("generation %d status %+v", ds.Generation, ds.Status)
	})
	return ds
}

// settled: n nodes want the pod and each runs an updated, available one.
func settled(n int32) func(*appsv1.DaemonSet) bool {
	return func(ds *appsv1.DaemonSet) bool {
		st := ds.Status
		return st.ObservedGeneration == ds.Generation && st.DesiredNumberScheduled == n && st.CurrentNumberScheduled == n &&
			st.NumberReady == n && st.NumberAvailable == n && st.UpdatedNumberScheduled == n && st.NumberMisscheduled == 0 && st.NumberUnavailable == 0
	}
}

// podNodes maps the live pods of ns to their nodes, sorted.
func podNodes(t *testing.T, client kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Spec.NodeName)
		}
	}
	slices.Sort(out)
	return out
}

func patchNode(t *testing.T, client kubernetes.Interface, name, patch string) {
	t.Helper()
	if _, err := client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
