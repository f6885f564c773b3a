package admission_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// Quota admission through a real API server, with the quota controller
// (and, for the deployment case, the deployment and replicaset
// controllers) running in-process.

func rqResources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// rqSetup makes a namespace with one quota and waits until the controller
// has measured it, as a user would before relying on it.
func rqSetup(t *testing.T, cs kubernetes.Interface, ns string, spec corev1.ResourceQuotaSpec) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rqWait(t, 10*time.Second, func() (bool, string) {
		q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "quota", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for n := range spec.Hard {
			if _, ok := q.Status.Used[n]; !ok {
				return false, fmt.Sprintf("status not synced: %v", q.Status)
			}
		}
		return true, ""
	})
}

func rqWait(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
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

func rqPodSpec(name string, requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "x", Resources: corev1.ResourceRequirements{Requests: requests},
	}}}}
}

// rqUsed is the quota's status.used of name, as the API reports it.
func rqUsed(t *testing.T, cs kubernetes.Interface, ns string, name corev1.ResourceName) string {
	t.Helper()
	q, err := cs.CoreV1().ResourceQuotas(ns).Get(context.Background(), "quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := q.Status.Used[name]
	return v.String()
}

// rqExpectForbidden checks a 403 whose message ends with want.
func rqExpectForbidden(t *testing.T, err error, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("got %v\nwant 403 ending %q", err, want)
	}
}

func TestResourceQuotaThroughTheAPI(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Controllers: []string{"resourcequota", "replicaset", "deployment"}})
	ctx := context.Background()

	t.Run("100 concurrent creates against pods=10 create exactly 10", func(t *testing.T) {
		ns := "burst"
		rqSetup(t, c.Client, ns, corev1.ResourceQuotaSpec{Hard: rqResources("pods", "10")})
		const n = 100
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = c.Client.CoreV1().Pods(ns).Create(ctx, rqPodSpec(fmt.Sprintf("p%03d", i), nil), metav1.CreateOptions{})
			})
		}
		began := time.Now()
		close(start)
		wg.Wait()
		took := time.Since(began)
		created := 0
		for i, err := range errs {
			switch {
			case err == nil:
				created++
			default:
				rqExpectForbidden(t, err, fmt.Sprintf(`pods "p%03d" is forbidden: exceeded quota: quota, requested: pods=1, used: pods=10, limited: pods=10`, i))
			}
		}
		if created != 10 {
			t.Fatalf("%d creates succeeded, want exactly 10", created)
		}
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 10 {
			t.Fatalf("%d pods stored, want 10", len(pods.Items))
		}
		// The quota controller may count a moment behind (pods admitted
		// but not yet in its informer) and write less; it converges.
		rqWait(t, 10*time.Second, func() (bool, string) {
			got := rqUsed(t, c.Client, ns, corev1.ResourcePods)
			return got == "10", "used pods " + got
		})
		t.Logf("100 concurrent creates answered in %v", took)
	})

	t.Run("a deployment of 50 under pods=5 gets 5 pods and a ReplicaFailure", func(t *testing.T) {
		ns := "deploy"
		rqSetup(t, c.Client, ns, corev1.ResourceQuotaSpec{Hard: rqResources("pods", "5")})
		rqKubectl(t, c.Server.Kubeconfig, "create", "deployment", "big", "--image=x", "--replicas=50", "-n", ns)
		var rs *appsv1.ReplicaSet
		rqWait(t, 15*time.Second, func() (bool, string) {
			list, err := c.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 {
				return false, fmt.Sprintf("replicasets: %v %v", list, err)
			}
			rs = &list.Items[0]
			for _, cond := range rs.Status.Conditions {
				if cond.Type == appsv1.ReplicaSetReplicaFailure && cond.Status == corev1.ConditionTrue {
					return rs.Status.Replicas == 5, fmt.Sprintf("replicas %d", rs.Status.Replicas)
				}
			}
			return false, fmt.Sprintf("conditions %v", rs.Status.Conditions)
		})
		for _, cond := range rs.Status.Conditions {
			if cond.Type == appsv1.ReplicaSetReplicaFailure &&
				(cond.Reason != "FailedCreate" || !strings.Contains(cond.Message, "exceeded quota: quota, requested: pods=1, used: pods=5, limited: pods=5")) {
				t.Fatalf("ReplicaFailure %s: %s", cond.Reason, cond.Message)
			}
		}
		// The controller keeps trying; quota keeps holding.
		controllertest.Consistently(t, time.Second, func() (bool, string) {
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(pods.Items) == 5, fmt.Sprintf("%d pods, want 5", len(pods.Items))
		})
	})

	t.Run("requests.cpu is charged and containers must state it", func(t *testing.T) {
		ns := "cpu"
		rqSetup(t, c.Client, ns, corev1.ResourceQuotaSpec{Hard: rqResources("requests.cpu", "1")})
		pods := c.Client.CoreV1().Pods(ns)
		_, err := pods.Create(ctx, rqPodSpec("unstated", nil), metav1.CreateOptions{})
		rqExpectForbidden(t, err, `pods "unstated" is forbidden: failed quota: quota: must specify requests.cpu for: app`)
		for _, name := range []string{"a", "b"} {
			if _, err := pods.Create(ctx, rqPodSpec(name, rqResources("cpu", "400m")), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		_, err = pods.Create(ctx, rqPodSpec("c", rqResources("cpu", "400m")), metav1.CreateOptions{})
		rqExpectForbidden(t, err, "exceeded quota: quota, requested: requests.cpu=400m, used: requests.cpu=800m, limited: requests.cpu=1")
		if _, err := pods.Create(ctx, rqPodSpec("small", rqResources("cpu", "200m")), metav1.CreateOptions{}); err != nil {
			t.Fatalf("200m fits in what is left: %v", err)
		}
		if got := rqUsed(t, c.Client, ns, corev1.ResourceRequestsCPU); got != "1" {
			t.Fatalf("used requests.cpu = %s, want 1", got)
		}
		// Deleting gives it back once the controller recalculates.
		if err := pods.Delete(ctx, "a", *metav1.NewDeleteOptions(0)); err != nil {
			t.Fatal(err)
		}
		rqWait(t, 10*time.Second, func() (bool, string) {
			got := rqUsed(t, c.Client, ns, corev1.ResourceRequestsCPU)
			return got == "600m", "used " + got
		})
		if _, err := pods.Create(ctx, rqPodSpec("c", rqResources("cpu", "400m")), metav1.CreateOptions{}); err != nil {
			t.Fatalf("after a delete: %v", err)
		}
	})

	t.Run("a BestEffort quota limits only best-effort pods", func(t *testing.T) {
		ns := "besteffort"
		rqSetup(t, c.Client, ns, corev1.ResourceQuotaSpec{Hard: rqResources("pods", "1"), Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}})
		pods := c.Client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, rqPodSpec("be-1", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := pods.Create(ctx, rqPodSpec("be-2", nil), metav1.CreateOptions{})
		rqExpectForbidden(t, err, "exceeded quota: quota, requested: pods=1, used: pods=1, limited: pods=1")
		for _, name := range []string{"burstable-1", "burstable-2"} {
			if _, err := pods.Create(ctx, rqPodSpec(name, rqResources("memory", "64Mi")), metav1.CreateOptions{}); err != nil {
				t.Fatalf("a burstable pod is out of the quota's scope: %v", err)
			}
		}
	})

	t.Run("a dry run is judged but not charged", func(t *testing.T) {
		ns := "dryrun"
		rqSetup(t, c.Client, ns, corev1.ResourceQuotaSpec{Hard: rqResources("pods", "1")})
		pods := c.Client.CoreV1().Pods(ns)
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		for range 3 {
			if _, err := pods.Create(ctx, rqPodSpec("p", nil), dry); err != nil {
				t.Fatal(err)
			}
		}
		if got := rqUsed(t, c.Client, ns, corev1.ResourcePods); got != "0" {
			t.Fatalf("used pods = %s after dry runs, want 0", got)
		}
		if _, err := pods.Create(ctx, rqPodSpec("p", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := pods.Create(ctx, rqPodSpec("q", nil), dry)
		rqExpectForbidden(t, err, "exceeded quota: quota, requested: pods=1, used: pods=1, limited: pods=1")
	})

	t.Run("a service turning NodePort is charged its node ports", func(t *testing.T) {
		ns := "services"
		rqSetup(t, c.Client, ns, corev1.ResourceQuotaSpec{Hard: rqResources("services", "2", "services.nodeports", "0")})
		svcs := c.Client.CoreV1().Services(ns)
		svc, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Spec.Type = corev1.ServiceTypeNodePort
		_, err = svcs.Update(ctx, svc, metav1.UpdateOptions{})
		rqExpectForbidden(t, err, `services "web" is forbidden: exceeded quota: quota, requested: services.nodeports=1, used: services.nodeports=0, limited: services.nodeports=0`)
	})
}

// rqKubectl runs kubectl against kubeconfig and fails the test if it
// fails.
func rqKubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}
