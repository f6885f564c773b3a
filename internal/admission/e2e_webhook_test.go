package admission_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// warningCollector is a client-go WarningHandler that keeps what the
// server sent.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningCollector) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningCollector) has(msg string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if m == msg {
			return true
		}
	}
	return false
}

// TestWebhooksEndToEnd runs the two webhook plugins in a real API
// server against a real HTTPS webhook server with its own CA, and
// checks what a client sees. Each case works in its own namespace,
// which its configurations select.
func TestWebhooksEndToEnd(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	srv := startHookServer(t)
	ctx := context.Background()
	warnings := &warningCollector{}
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = warnings
	client := kubernetes.NewForConfigOrDie(cfg)

	newNamespace := func(t *testing.T, name string) {
		t.Helper()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": name}}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	// eventually retries until the configurations just created are in
	// force: the plugins read them from the watch cache.
	eventually := func(t *testing.T, what string, f func() error) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := f()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	createMutating := func(t *testing.T, cfg *admissionregistrationv1.MutatingWebhookConfiguration) {
		t.Helper()
		if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createValidating := func(t *testing.T, cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
		t.Helper()
		if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a webhook mutates and another rejects", func(t *testing.T) {
		newNamespace(t, "main")
		srv.Handle("/main/label", func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			r := addLabel("webhook.example.com/seen", "true")(ctx, req)
			r.Warnings = []string{"labelled by the test webhook"}
			return r
		})
		srv.Handle("/main/deny", func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			if strings.Contains(string(req.Object.Raw), `"deny":"true"`) {
				return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "pods labelled deny=true are not welcome"}}
			}
			return &admissionv1.AdmissionResponse{Allowed: true}
		})
		sel := map[string]string{"e2e": "main"}
		createMutating(t, mutatingConfig("main-label", hookSpec{name: "label.example.com", url: srv.URL + "/main/label", caBundle: srv.CABundle, namespaces: sel}))
		createValidating(t, validatingConfig("main-deny", hookSpec{name: "deny.example.com", url: srv.URL + "/main/deny", caBundle: srv.CABundle, namespaces: sel}))
		eventually(t, "both webhooks in force", func() error {
			if _, err := client.CoreV1().Pods("main").Create(ctx, pod("probe", nil), dryRun); err != nil {
				return err
			}
			if len(srv.Reviews("/main/label")) == 0 || len(srv.Reviews("/main/deny")) == 0 {
				return fmt.Errorf("not called yet")
			}
			return nil
		})

		got, err := client.CoreV1().Pods("main").Create(ctx, pod("web", map[string]string{"app": "web"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["webhook.example.com/seen"] != "true" || got.Labels["app"] != "web" {
			t.Errorf("stored labels %v", got.Labels)
		}
		if !warnings.has("labelled by the test webhook") {
			t.Errorf("warning not passed to the client: %q", warnings.msgs)
		}
		// The validating webhook saw the mutated object.
		last := srv.Reviews("/main/deny")
		if raw := string(last[len(last)-1].Object.Raw); !strings.Contains(raw, `"webhook.example.com/seen":"true"`) {
			t.Errorf("validating webhook saw %s", raw)
		}

		_, err = client.CoreV1().Pods("main").Create(ctx, pod("bad", map[string]string{"deny": "true"}), metav1.CreateOptions{})
		want := `admission webhook "deny.example.com" denied the request: pods labelled deny=true are not welcome`
		if !apierrors.IsBadRequest(err) || err.Error() != want {
			t.Fatalf("err = %v, want 400 %q", err, want)
		}
		if _, err := client.CoreV1().Pods("main").Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the rejected pod was stored: %v", err)
		}

		if kubectl, err := exec.LookPath("kubectl"); err == nil {
			cmd := exec.Command(kubectl, "-n", "main", "run", "bad2", "--image=nginx", "--labels=deny=true")
			cmd.Env = []string{"KUBECONFIG=" + c.Server.Kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err == nil {
				t.Error("kubectl run succeeded")
			}
			// No "(BadRequest)": a refusal carries no reason, so kubectl
			// prints it as it does against kube-apiserver. The mutating
			// webhook's warning comes first.
			wantOut := "Warning: labelled by the test webhook\nError from server: " + want
			if got := strings.TrimSpace(stderr.String()); got != wantOut {
				t.Errorf("kubectl said:\n%s\nwant:\n%s", got, wantOut)
			}
			cmd = exec.Command(kubectl, "get", "validatingwebhookconfigurations", "main-deny")
			cmd.Env = []string{"KUBECONFIG=" + c.Server.Kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("kubectl get: %v", err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME WEBHOOKS AGE" ||
				!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "main-deny 1 ") {
				t.Errorf("kubectl get:\n%s", out)
			}
		}
	})

	t.Run("invalid configurations are refused", func(t *testing.T) {
		bad := validatingConfig("bad", hookSpec{name: "bad", url: "http://127.0.0.1/x"})
		bad.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "object.metadata.name =="}}
		_, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("err = %v, want 422", err)
		}
		for _, want := range []string{
			`webhooks[0].name: Invalid value: "bad": should be a domain with at least three segments separated by dots`,
			`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme`,
			`webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name ==": compilation failed`,
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
	})

	t.Run("a down webhook under Fail and Ignore", func(t *testing.T) {
		newNamespace(t, "down-fail")
		newNamespace(t, "down-ignore")
		down := downURL(t)
		createValidating(t, validatingConfig("down-fail", hookSpec{name: "down.example.com", url: down, caBundle: srv.CABundle,
			namespaces: map[string]string{"e2e": "down-fail"}}))
		createValidating(t, validatingConfig("down-ignore", hookSpec{name: "down.example.com", url: down, caBundle: srv.CABundle,
			failure: admissionregistrationv1.Ignore, namespaces: map[string]string{"e2e": "down-ignore"}}))
		var err error
		eventually(t, "the Fail webhook in force", func() error {
			_, err = client.CoreV1().Pods("down-fail").Create(ctx, pod("web", nil), metav1.CreateOptions{})
			if err == nil {
				client.CoreV1().Pods("down-fail").Delete(ctx, "web", metav1.DeleteOptions{})
				return fmt.Errorf("pod admitted")
			}
			return nil
		})
		want := `Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post "` + down +
			`?timeout=10s": dial tcp ` + strings.TrimPrefix(strings.TrimSuffix(down, "/down"), "https://") + `: connect: connection refused`
		if !apierrors.IsInternalError(err) || err.Error() != want {
			t.Fatalf("err = %v\nwant 500 %s", err, want)
		}
		if _, err := client.CoreV1().Pods("down-ignore").Create(ctx, pod("web", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("Ignore: %v", err)
		}
	})

	t.Run("a slow webhook hits timeoutSeconds", func(t *testing.T) {
		newNamespace(t, "slow")
		srv.Handle("/slow", sleepFor(20*time.Second))
		createMutating(t, mutatingConfig("slow", hookSpec{name: "slow.example.com", url: srv.URL + "/slow", caBundle: srv.CABundle,
			timeout: 1, namespaces: map[string]string{"e2e": "slow"}}))
		eventually(t, "the slow webhook in force", func() error {
			if len(srv.Reviews("/slow")) > 0 {
				return nil
			}
			client.CoreV1().Pods("slow").Create(ctx, pod("probe", nil), dryRun)
			return fmt.Errorf("not called yet")
		})
		start := time.Now()
		_, err := client.CoreV1().Pods("slow").Create(ctx, pod("web", nil), metav1.CreateOptions{})
		took := time.Since(start)
		want := `Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: Post "` + srv.URL + `/slow?timeout=1s": context deadline exceeded`
		if !apierrors.IsInternalError(err) || err.Error() != want {
			t.Fatalf("err = %v\nwant %s", err, want)
		}
		if took > 4*time.Second {
			t.Errorf("the request took %v with a 1 s webhook timeout", took)
		}
	})

	t.Run("reinvocation IfNeeded", func(t *testing.T) {
		newNamespace(t, "reinvoke")
		sel := map[string]string{"e2e": "reinvoke"}
		srv.Handle("/reinvoke/watch", allow)
		srv.Handle("/reinvoke/label", addLabel("team", "blue"))
		createMutating(t, mutatingConfig("reinvoke-a", hookSpec{name: "watch.example.com", url: srv.URL + "/reinvoke/watch", caBundle: srv.CABundle,
			reinvoke: admissionregistrationv1.IfNeededReinvocationPolicy, namespaces: sel}))
		createMutating(t, mutatingConfig("reinvoke-b", hookSpec{name: "label.example.com", url: srv.URL + "/reinvoke/label", caBundle: srv.CABundle, namespaces: sel}))
		eventually(t, "both webhooks in force", func() error {
			before := len(srv.Reviews("/reinvoke/label"))
			client.CoreV1().Pods("reinvoke").Create(ctx, pod("probe", nil), dryRun)
			if len(srv.Reviews("/reinvoke/label")) == before {
				return fmt.Errorf("labeler not called")
			}
			return nil
		})
		watchBefore, labelBefore := len(srv.Reviews("/reinvoke/watch")), len(srv.Reviews("/reinvoke/label"))
		got, err := client.CoreV1().Pods("reinvoke").Create(ctx, pod("web", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		watch := srv.Reviews("/reinvoke/watch")[watchBefore:]
		if len(watch) != 2 || len(srv.Reviews("/reinvoke/label"))-labelBefore != 1 {
			t.Fatalf("watcher called %d times (want 2), labeler %d (want 1)", len(watch), len(srv.Reviews("/reinvoke/label"))-labelBefore)
		}
		if strings.Contains(string(watch[0].Object.Raw), `"team"`) || !strings.Contains(string(watch[1].Object.Raw), `"team":"blue"`) {
			t.Errorf("the watcher's second call should see the label, the first not:\n%s\n%s", watch[0].Object.Raw, watch[1].Object.Raw)
		}
		if got.Labels["team"] != "blue" {
			t.Errorf("stored labels %v", got.Labels)
		}
	})

	t.Run("dry run reaches webhooks without side effects", func(t *testing.T) {
		newNamespace(t, "dry")
		srv.Handle("/dry", addLabel("dry", "seen"))
		createMutating(t, mutatingConfig("dry", hookSpec{name: "dry.example.com", url: srv.URL + "/dry", caBundle: srv.CABundle,
			sideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun, namespaces: map[string]string{"e2e": "dry"}}))
		var got *corev1.Pod
		eventually(t, "the webhook in force", func() error {
			var err error
			got, err = client.CoreV1().Pods("dry").Create(ctx, pod("web", nil), dryRun)
			if err != nil {
				return err
			}
			if got.Labels["dry"] != "seen" {
				return fmt.Errorf("labels %v", got.Labels)
			}
			return nil
		})
		reviews := srv.Reviews("/dry")
		last := reviews[len(reviews)-1]
		var opts map[string]any
		json.Unmarshal(last.Options.Raw, &opts)
		if last.DryRun == nil || !*last.DryRun || fmt.Sprint(opts["dryRun"]) != "[All]" {
			t.Errorf("webhook saw dryRun %v, options %s", last.DryRun, last.Options.Raw)
		}
		if _, err := client.CoreV1().Pods("dry").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a dry-run pod was stored: %v", err)
		}
	})

	t.Run("matchConditions decide in CEL", func(t *testing.T) {
		newNamespace(t, "cel")
		srv.Handle("/cel/deny", func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: "not exempt"}}
		})
		cfg := validatingConfig("cel", hookSpec{name: "cel.example.com", url: srv.URL + "/cel/deny", caBundle: srv.CABundle,
			namespaces: map[string]string{"e2e": "cel"}})
		cfg.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{
			{Name: "not-exempt", Expression: `!has(object.metadata.labels) || !('exempt' in object.metadata.labels)`},
			{Name: "a-create", Expression: `request.operation == 'CREATE' && oldObject == null`},
			// The admin may delete pods here, so this holds: it checks that
			// the authorizer is wired, not who is asking.
			{Name: "authorized", Expression: `authorizer.group('').resource('pods').namespace('cel').check('delete').allowed()`},
		}
		createValidating(t, cfg)
		eventually(t, "the webhook in force", func() error {
			if _, err := client.CoreV1().Pods("cel").Create(ctx, pod("probe", nil), dryRun); err == nil {
				return fmt.Errorf("admitted")
			}
			return nil
		})
		if _, err := client.CoreV1().Pods("cel").Create(ctx, pod("free", map[string]string{"exempt": "yes"}), metav1.CreateOptions{}); err != nil {
			t.Errorf("exempt pod: %v", err)
		}
		_, err := client.CoreV1().Pods("cel").Create(ctx, pod("caught", nil), metav1.CreateOptions{})
		if err == nil || err.Error() != `admission webhook "cel.example.com" denied the request: not exempt` {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("configurations themselves are exempt", func(t *testing.T) {
		// A Fail webhook on every resource that is down must not keep
		// its own configuration from being deleted.
		all := validatingConfig("everything", hookSpec{name: "all.example.com", url: downURL(t), caBundle: srv.CABundle,
			ops: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}})
		all.Webhooks[0].Rules[0].APIGroups = []string{"*"}
		all.Webhooks[0].Rules[0].Resources = []string{"*"}
		all.Webhooks[0].Rules[0].APIVersions = []string{"*"}
		createValidating(t, all)
		eventually(t, "the webhook in force", func() error {
			_, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}}, dryRun)
			if err == nil {
				return fmt.Errorf("configmap admitted")
			}
			return nil
		})
		if err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, "everything", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete the configuration: %v", err)
		}
	})
}
