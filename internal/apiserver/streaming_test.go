package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// TestNodeStreams: logs, exec, attach, port-forward and the proxies are
// checked by the API server as upstream checks them, then handed to the
// node's kubelet: simulated nodes serve logs and /healthz, and refuse
// exec and the like with a clear error (they run no containers).
func TestNodeStreams(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 1})
	cs, kc := c.Client, c.Server.Kubeconfig
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := controllertest.CreateNamespace(t, cs, "streams")
	controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "web", "sim-0", 8080))
	controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "pair", "sim-0", 0, func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36"}}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox:1.36"})
	}))
	controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "unbound", "", 0))

	t.Run("kubectl logs", func(t *testing.T) {
		// The node answers once the container started (400 until then).
		var res controllertest.KubectlResult
		for ctx.Err() == nil {
			if res = controllertest.Kubectl(t, kc, "logs", "-n", ns, "web"); res.Code == 0 || !strings.Contains(res.Stderr, "is waiting to start") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if res.Code != 0 || !strings.Contains(res.Stdout, "simnode: starting container app (image ") {
			t.Errorf("kubectl logs: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		res = controllertest.Kubectl(t, kc, "logs", "-n", ns, "nobody")
		if res.Code == 0 || !strings.Contains(res.Stderr, `pods "nobody" not found`) {
			t.Errorf("kubectl logs of a missing pod: exit %d, stderr %q", res.Code, res.Stderr)
		}
		res = controllertest.Kubectl(t, kc, "logs", "-n", ns, "web", "-c", "nope")
		if res.Code == 0 || !strings.Contains(res.Stderr, "container nope is not valid for pod web") {
			t.Errorf("kubectl logs -c nope: exit %d, stderr %q", res.Code, res.Stderr)
		}
	})

	t.Run("log options", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			pod  string
			opts corev1.PodLogOptions
			want string
			is   func(error) bool
		}{
			{"container required", "pair", corev1.PodLogOptions{}, "a container name must be specified for pod pair, choose one of: [init app sidecar]", apierrors.IsBadRequest},
			{"negative tail", "web", corev1.PodLogOptions{TailLines: new(int64(-1))}, "tailLines: Invalid value: -1: must be greater than or equal to 0", apierrors.IsInvalid},
			{"zero since", "web", corev1.PodLogOptions{SinceSeconds: new(int64(0))}, "sinceSeconds: Invalid value: 0: must be greater than 0", apierrors.IsInvalid},
			{"zero limit", "web", corev1.PodLogOptions{LimitBytes: new(int64(0))}, "limitBytes: Invalid value: 0: must be greater than 0", apierrors.IsInvalid},
			{"both since", "web", corev1.PodLogOptions{SinceSeconds: new(int64(5)), SinceTime: &metav1.Time{Time: time.Now()}},
				"at most one of `sinceTime` or `sinceSeconds` may be specified", apierrors.IsInvalid},
			{"missing pod", "nobody", corev1.PodLogOptions{}, `pods "nobody" not found`, apierrors.IsNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := cs.CoreV1().Pods(ns).GetLogs(tc.pod, &tc.opts).Do(ctx).Error()
				if !tc.is(err) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %v, want %q", err, tc.want)
				}
			})
		}
		// A pod on no node has no logs yet: an empty answer.
		if out, err := cs.CoreV1().Pods(ns).GetLogs("unbound", &corev1.PodLogOptions{}).DoRaw(ctx); err != nil || len(out) != 0 {
			t.Errorf("logs of an unbound pod: %q, %v", out, err)
		}
	})

	t.Run("kubectl exec", func(t *testing.T) {
		res := controllertest.Kubectl(t, kc, "exec", "-n", ns, "web", "--", "ls")
		t.Logf("kubectl exec: %s", res.Stderr)
		if res.Code == 0 || !strings.Contains(res.Stderr, "simulated node sim-0 runs no containers: exec is not supported") {
			t.Errorf("kubectl exec: exit %d, stderr %q", res.Code, res.Stderr)
		}
		res = controllertest.Kubectl(t, kc, "exec", "-n", ns, "unbound", "--", "ls")
		if res.Code == 0 || !strings.Contains(res.Stderr, "pod unbound does not have a host assigned") {
			t.Errorf("kubectl exec on an unbound pod: exit %d, stderr %q", res.Code, res.Stderr)
		}
	})

	t.Run("proxies", func(t *testing.T) {
		controllertest.CreateService(t, cs, controllertest.WebService(ns))
		rc := cs.CoreV1().RESTClient()
		for _, tc := range []struct {
			name string
			req  func() error
			code int32
			want string
		}{
			{"node", func() error {
				out, err := rc.Get().AbsPath("/api/v1/nodes/sim-0/proxy/healthz").DoRaw(ctx)
				if err == nil && string(out) != "ok" {
					t.Errorf("node proxy healthz: %q", out)
				}
				return err
			}, 0, ""},
			{"missing node", func() error { return rc.Get().AbsPath("/api/v1/nodes/nope/proxy/healthz").Do(ctx).Error() }, 404, `nodes "nope" not found`},
			{"service without endpoints", func() error {
				return rc.Get().AbsPath("/api/v1/namespaces/" + ns + "/services/web:http/proxy/").Do(ctx).Error()
			}, 503, `no endpoints available for service "web"`},
			{"service with an endpoint", func() error {
				ready := true
				slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
					AddressType: discoveryv1.AddressTypeIPv4,
					Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
					Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(8080))}}}
				if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				return rc.Get().AbsPath("/api/v1/namespaces/" + ns + "/services/web:http/proxy/healthz").Do(ctx).Error()
			}, 503, "error trying to reach http://10.0.0.9:8080/healthz: the API server has no route to the pod network"},
			{"pod", func() error {
				return rc.Get().AbsPath("/api/v1/namespaces/" + ns + "/pods/unbound/proxy/").Do(ctx).Error()
			}, 400, "address not allowed"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.req()
				if tc.code == 0 {
					if err != nil {
						t.Errorf("got %v, want success", err)
					}
					return
				}
				se, ok := err.(apierrors.APIStatus)
				if !ok || se.Status().Code != tc.code || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %v, want %d with %q", err, tc.code, tc.want)
				}
			})
		}
	})

	t.Run("websocket exec needs create", func(t *testing.T) {
		// jane may get pods/exec but not create it: the SPDY form (POST)
		// and the WebSocket form (GET with an upgrade) are both refused,
		// the latter because it writes to the pod as much as a POST does.
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "exec-get", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/log"}, Verbs: []string{"get"}}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "exec-get", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "exec-get"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "jane"}}}
		if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rc := rest.CopyConfig(c.Config)
		rc.Impersonate = rest.ImpersonationConfig{UserName: "jane"}
		jane, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		path := "/api/v1/namespaces/" + ns + "/pods/web/exec"
		var err2 error
		for ctx.Err() == nil { // RBAC caches catch up with the binding
			err2 = jane.CoreV1().RESTClient().Get().AbsPath(path).Param("command", "ls").Param("stdout", "true").
				SetHeader("Connection", "Upgrade").SetHeader("Upgrade", "websocket").Do(ctx).Error()
			if !apierrors.IsForbidden(err2) || strings.Contains(err2.Error(), "cannot create") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !apierrors.IsForbidden(err2) || !strings.Contains(err2.Error(), `cannot create resource "pods/exec"`) {
			t.Errorf("websocket exec without create: %v, want 403 naming create", err2)
		}
		if err := jane.CoreV1().RESTClient().Post().AbsPath(path).Param("command", "ls").Do(ctx).Error(); !apierrors.IsForbidden(err) {
			t.Errorf("SPDY exec without create: %v, want 403", err)
		}
		// get on pods/log is all logs need: past authorization, the node answers.
		if err := jane.CoreV1().Pods(ns).GetLogs("web", &corev1.PodLogOptions{}).Do(ctx).Error(); err != nil {
			t.Errorf("logs as jane: %v", err)
		}
	})

	t.Run("discovery", func(t *testing.T) {
		list, err := cs.Discovery().ServerResourcesForGroupVersion("v1")
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]string{}
		for _, r := range list.APIResources {
			found[r.Name] = r.Group + "/" + r.Kind + " " + strings.Join(r.Verbs, ",")
		}
		for name, want := range map[string]string{
			"pods/eviction": "policy/Eviction create", "pods/log": "/Pod get", "pods/exec": "/PodExecOptions create,get",
			"pods/ephemeralcontainers": "/Pod get,patch,update", "nodes/proxy": "/NodeProxyOptions create,delete,get,patch,update",
		} {
			if found[name] != want {
				t.Errorf("discovery of %s = %q, want %q", name, found[name], want)
			}
		}
	})
}
