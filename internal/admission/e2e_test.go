package admission_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/server"
)

// e2eKubectl runs kubectl against a kubeconfig, with nothing from the
// environment that could change what it prints.
type e2eKubectl struct {
	bin string
	env []string
}

func newE2EKubectl(t *testing.T, kubeconfig string) *e2eKubectl {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH")
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "TMPDIR" {
			env = append(env, kv)
		}
	}
	return &e2eKubectl{bin: bin, env: env}
}

// run returns stdout and stderr, and whether kubectl succeeded.
func (k *e2eKubectl) run(t *testing.T, stdin string, args ...string) (string, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env, cmd.Stdin = k.env, strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), strings.TrimSpace(errOut.String()), err == nil
}

func (k *e2eKubectl) ok(t *testing.T, stdin string, args ...string) {
	t.Helper()
	if out, errOut, ok := k.run(t, stdin, args...); !ok {
		t.Fatalf("kubectl %s failed\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, errOut)
	}
}

// startServer starts a control plane with no controllers and no
// scheduler, as clustertest does, but with cfg's admission settings.
func startServer(t *testing.T, cfg server.Config) (*server.Server, kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.DataDir, cfg.HTTPSPort = t.TempDir(), 0
	cfg.Controllers, cfg.DisableScheduler = []string{"-*"}, true
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Stop()
	})
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return srv, kubernetes.NewForConfigOrDie(rc)
}

var tokenVolume = regexp.MustCompile(`^kube-api-access-[a-z0-9]{5}$`)

// TestAdmissionThroughTheAPI drives the pod-shaping plugins through a real
// API server and kubectl, with the plugins that need a controller enabled
// by name (no controller runs: the test creates the service accounts).
func TestAdmissionThroughTheAPI(t *testing.T) {
	srv, cs := startServer(t, server.Config{
		EnableAdmissionPlugins: []string{"ServiceAccount", "TaintNodesByCondition", "DefaultTolerationSeconds"},
	})
	k := newE2EKubectl(t, srv.Kubeconfig)
	ctx := context.Background()
	for _, ns := range []string{"default", "limited"} {
		if ns != "default" {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	getPod := func(t *testing.T, ns, name string) *corev1.Pod {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("kubectl run gets an account, a token, a priority and tolerations", func(t *testing.T) {
		k.ok(t, "", "run", "p", "--image=nginx")
		p := getPod(t, "default", "p")
		if p.Spec.ServiceAccountName != "default" {
			t.Errorf("serviceAccountName %q", p.Spec.ServiceAccountName)
		}
		if len(p.Spec.Volumes) != 1 || !tokenVolume.MatchString(p.Spec.Volumes[0].Name) || p.Spec.Volumes[0].Projected == nil {
			t.Fatalf("volumes %+v", p.Spec.Volumes)
		}
		src := p.Spec.Volumes[0].Projected.Sources
		if len(src) != 3 || src[0].ServiceAccountToken == nil || *src[0].ServiceAccountToken.ExpirationSeconds != 3607 ||
			src[1].ConfigMap == nil || src[1].ConfigMap.Name != "kube-root-ca.crt" || src[2].DownwardAPI == nil {
			t.Errorf("projected sources %+v", src)
		}
		mounts := p.Spec.Containers[0].VolumeMounts
		if len(mounts) != 1 || mounts[0].Name != p.Spec.Volumes[0].Name || !mounts[0].ReadOnly ||
			mounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
			t.Errorf("mounts %+v", mounts)
		}
		if p.Spec.Priority == nil || *p.Spec.Priority != 0 || p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
			t.Errorf("priority %v preemptionPolicy %v", p.Spec.Priority, p.Spec.PreemptionPolicy)
		}
		var tols []string
		for _, tol := range p.Spec.Tolerations {
			tols = append(tols, fmt.Sprintf("%s:%s:%d", tol.Key, tol.Effect, *tol.TolerationSeconds))
		}
		if got, want := fmt.Sprint(tols), "[node.kubernetes.io/not-ready:NoExecute:300 node.kubernetes.io/unreachable:NoExecute:300]"; got != want {
			t.Errorf("tolerations %s, want %s", got, want)
		}
	})

	t.Run("a pod naming a missing account is refused", func(t *testing.T) {
		_, errOut, ok := k.run(t, "", "run", "ghost", "--image=nginx", "--overrides", `{"spec":{"serviceAccountName":"ghost"}}`)
		want := `Error from server (Forbidden): pods "ghost" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found`
		if ok || errOut != want {
			t.Fatalf("stderr %q, want %q", errOut, want)
		}
	})

	limits := `apiVersion: v1
kind: LimitRange
metadata:
  name: limits
  namespace: limited
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: "2"}
`
	k.ok(t, limits, "create", "-f", "-")

	t.Run("a LimitRange default appears in a new pod", func(t *testing.T) {
		k.ok(t, "", "-n", "limited", "run", "small", "--image=nginx")
		c := getPod(t, "limited", "small").Spec.Containers[0].Resources
		if got := c.Limits.Cpu().String() + " " + c.Limits.Memory().String() + " " + c.Requests.Cpu().String() + " " + c.Requests.Memory().String(); got != "500m 256Mi 100m 256Mi" {
			t.Errorf("limits/requests %s", got)
		}
	})

	t.Run("a pod over the LimitRange max is refused", func(t *testing.T) {
		big := `apiVersion: v1
kind: Pod
metadata:
  name: big
  namespace: limited
spec:
  containers:
  - name: c
    image: nginx
    resources:
      limits: {cpu: "4"}
`
		_, errOut, ok := k.run(t, big, "create", "-f", "-")
		want := `Error from server (Forbidden): error when creating "STDIN": pods "big" is forbidden: maximum cpu usage per Container is 2, but limit is 4`
		if ok || errOut != want {
			t.Fatalf("stderr %q\nwant   %q", errOut, want)
		}
	})

	t.Run("priorityClassName resolves", func(t *testing.T) {
		never := corev1.PreemptNever
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "polite"}, Value: 1000, PreemptionPolicy: &never}
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		k.ok(t, "", "run", "vip", "--image=nginx", "--overrides", `{"spec":{"priorityClassName":"polite"}}`)
		p := getPod(t, "default", "vip")
		if p.Spec.Priority == nil || *p.Spec.Priority != 1000 || p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever {
			t.Fatalf("priority %v policy %v", p.Spec.Priority, p.Spec.PreemptionPolicy)
		}
	})

	t.Run("system classes resolve", func(t *testing.T) {
		k.ok(t, "", "run", "crit", "--image=nginx", "--overrides", `{"spec":{"priorityClassName":"system-cluster-critical"}}`)
		if p := getPod(t, "default", "crit"); p.Spec.Priority == nil || *p.Spec.Priority != 2000000000 {
			t.Fatalf("priority %v", p.Spec.Priority)
		}
	})

	t.Run("an unknown class is refused", func(t *testing.T) {
		_, errOut, ok := k.run(t, "", "run", "lost", "--image=nginx", "--overrides", `{"spec":{"priorityClassName":"nope"}}`)
		want := `Error from server (Forbidden): pods "lost" is forbidden: no PriorityClass with name nope was found`
		if ok || errOut != want {
			t.Fatalf("stderr %q, want %q", errOut, want)
		}
	})

	t.Run("only one globalDefault class", func(t *testing.T) {
		for i, name := range []string{"first", "second"} {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: int32(10 + i), GlobalDefault: true}
			_, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
			if i == 0 && err != nil {
				t.Fatal(err)
			}
			want := `priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass first is already marked as default. Only one default can exist`
			if i == 1 && (err == nil || err.Error() != want) {
				t.Fatalf("got %v, want %q", err, want)
			}
		}
	})

	t.Run("a new node is tainted not-ready", func(t *testing.T) {
		node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != corev1.TaintNodeNotReady || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
			t.Fatalf("taints %+v", node.Spec.Taints)
		}
	})
}

// TestAdmissionFollowsTheControllers: by default the plugins that prepare
// pods for a controller run only with it. With the serviceaccount and
// taint eviction controllers running, a pod created in a brand-new
// namespace is admitted once the controller has made its account.
func TestAdmissionFollowsTheControllers(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Controllers: []string{"serviceaccount", "taint-eviction-controller"}})
	k := newE2EKubectl(t, c.Server.Kubeconfig)
	ctx := context.Background()
	k.ok(t, "", "create", "namespace", "fresh")
	k.ok(t, "", "-n", "fresh", "run", "p", "--image=nginx")
	p, err := c.Client.CoreV1().Pods("fresh").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.ServiceAccountName != "default" || len(p.Spec.Volumes) != 1 || len(p.Spec.Tolerations) != 2 {
		t.Fatalf("sa %q volumes %d tolerations %d", p.Spec.ServiceAccountName, len(p.Spec.Volumes), len(p.Spec.Tolerations))
	}

	t.Run("without them those plugins stay out", func(t *testing.T) {
		c := clustertest.Start(t, clustertest.Options{})
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.ServiceAccountName != "" || len(p.Spec.Tolerations) != 0 || p.Spec.Priority == nil {
			t.Fatalf("sa %q tolerations %v priority %v", p.Spec.ServiceAccountName, p.Spec.Tolerations, p.Spec.Priority)
		}
	})
}
