package job_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
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

// podWatch follows a namespace's pods and remembers the most that were
// active (not terminating, not finished) at once: the proof that a job
// never ran more than its parallelism.
type podWatch struct {
	mu     sync.Mutex
	active map[types.UID]bool
	max    int
}

func watchPods(t *testing.T, client kubernetes.Interface, ns string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{active: map[types.UID]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	update := func(obj interface{}) {
		p, ok := obj.(*corev1.Pod)
		// The namespace check guards against a server whose namespaced
		// watch leaks other namespaces' events.
		if !ok || p.Namespace != ns {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.active[p.UID] = p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
		n := 0
		for _, a := range w.active {
			if a {
				n++
			}
		}
		w.max = max(w.max, n)
	}
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, n interface{}) { update(n) },
		DeleteFunc: func(obj interface{}) {
			if p, ok := obj.(*corev1.Pod); ok {
				w.mu.Lock()
				w.active[p.UID] = false
				w.mu.Unlock()
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	return w
}

func (w *podWatch) maxActive() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

func createNamespace(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// newJob returns a job whose pods run for runFor on a simulated node and
// exit with exitCode.
func newJob(name string, completions, parallelism int32, runFor string, exitCode int) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions: ptr.To(completions),
			Parallelism: ptr.To(parallelism),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					"simnode.rudder.dev/run-duration": runFor,
					"simnode.rudder.dev/exit-code":    fmt.Sprint(exitCode),
				}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					Containers:                    []corev1.Container{{Name: "work", Image: "registry.example/work:1"}},
					TerminationGracePeriodSeconds: ptr.To(int64(1)),
				},
			},
		},
	}
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

// waitJob waits until the job satisfies cond and returns it.
func waitJob(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, cond func(*batchv1.Job) bool) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	eventually(t, timeout, func() (bool, string) {
		var err error
		job, err = client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(job), fmt.Sprintf("status %+v", job.Status)
	})
	return job
}

// hasCondition: the job has a True condition of type t (and reason, when
// not empty).
func hasCondition(t batchv1.JobConditionType, reason string) func(*batchv1.Job) bool {
	return func(j *batchv1.Job) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue && (reason == "" || c.Reason == reason) {
				return true
			}
		}
		return false
	}
}

// conditionTypes lists the job's True conditions in order.
func conditionTypes(j *batchv1.Job) []string {
	var out []string
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, string(c.Type))
		}
	}
	return out
}

// jobPods lists the pods in ns controlled by uid.
func jobPods(t *testing.T, client kubernetes.Interface, ns string, uid types.UID) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

// eventMessages returns the messages of the events on the object named
// name with reason.
func eventMessages(t *testing.T, client kubernetes.Interface, ns, name, reason string) []string {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

type kubectlResult struct {
	stdout, stderr string
	code           int
}

func kubectl(t *testing.T, c *clustertest.Cluster, args ...string) kubectlResult {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"KUBECONFIG=" + c.Server.Kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	res := kubectlResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return res
}
