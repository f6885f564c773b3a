package daemonset_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller"
)

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

// startBinder stands in for the scheduler: a pod whose required node
// affinity names a node (every daemon pod) is bound there, any other
// to the simulated nodes in turn.
func startBinder(t *testing.T, client kubernetes.Interface, nodes int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	next := 0
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName="
	}))
	inf := f.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			pod := obj.(*corev1.Pod)
			if pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" {
				return
			}
			node := affinityNode(pod)
			if node == "" {
				mu.Lock()
				node = fmt.Sprintf("sim-%d", next%nodes)
				next++
				mu.Unlock()
			}
			_ = client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
		},
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
}

// affinityNode is the node a pod's matchFields metadata.name names.
func affinityNode(pod *corev1.Pod) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// podLog records, in watch order, "<node> <image> <what>" for a
// namespace's pods: created, ready, terminating, gone.
type podLog struct {
	mu      sync.Mutex
	entries []string
}

func watchPods(t *testing.T, client kubernetes.Interface, ns string) *podLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &podLog{}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	describe := func(p *corev1.Pod, what string) string {
		node := p.Spec.NodeName
		if node == "" {
			node = affinityNode(p)
		}
		return node + " " + p.Spec.Containers[0].Image + " " + what
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { l.add(describe(obj.(*corev1.Pod), "created")) },
		UpdateFunc: func(o, n interface{}) {
			op, np := o.(*corev1.Pod), n.(*corev1.Pod)
			if !ready(op) && ready(np) {
				l.add(describe(np, "ready"))
			}
			if op.DeletionTimestamp == nil && np.DeletionTimestamp != nil {
				l.add(describe(np, "terminating"))
			}
		},
		DeleteFunc: func(obj interface{}) {
			if p, ok := obj.(*corev1.Pod); ok {
				l.add(describe(p, "gone"))
			}
		},
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	return l
}

func (l *podLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

func (l *podLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

func ready(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func createNamespace(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
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

func waitDS(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, cond func(*appsv1.DaemonSet) bool) *appsv1.DaemonSet {
	t.Helper()
	var ds *appsv1.DaemonSet
	eventually(t, timeout, func() (bool, string) {
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

func kubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
