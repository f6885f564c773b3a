package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// The kubelet against a real API server (embedded etcd, loopback port)
// and a CRI runtime on a real unix socket (fakeCRI): registration, pods
// through their life, deletion, restart and adoption, and the kubelet
// API through the API server (pods/log) and directly (auth, streams,
// metrics).

const testNode = "node-1"

type testKubelet struct {
	k      *Kubelet
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

type e2eEnv struct {
	t     *testing.T
	c     *clustertest.Cluster
	node  kubernetes.Interface // system:node:node-1
	fake  *fakeCRI
	root  string
	logs  string
	cert  tls.Certificate
	kl    *testKubelet
	admin tls.Certificate // the API server's kubelet client certificate
	// endpoint is the CRI socket (the fake's, or the real runtime's:
	// realnode_test.go); cgroupRoot the kubelet's CgroupRoot ("": its
	// default).
	endpoint, cgroupRoot string
}

func newE2E(t *testing.T) *e2eEnv {
	c := clustertest.Start(t, clustertest.Options{})
	e := &e2eEnv{t: t, c: c, fake: startFakeCRI(t), root: t.TempDir(), logs: t.TempDir()}
	e.endpoint = e.fake.endpoint
	// Whatever happens, no mount outlives the test (before TempDir's
	// removal, which runs later).
	t.Cleanup(func() {
		if err := unmountUnder(e.root); err != nil {
			t.Error(err)
		}
	})
	e.fake.images["busybox"] = true
	e.credentials()
	e.start()
	return e
}

// credentials makes the kubelet's client, serving certificate and the
// API server's client certificate for the kubelet API.
func (e *e2eEnv) credentials() {
	e.t.Helper()
	e.node = nodeClient(e.t, e.c)
	var err error
	if e.cert, err = e.c.Server.PKI.IssueServingCert(testNode, []net.IP{net.IPv4(127, 0, 0, 1)}, nil, time.Hour); err != nil {
		e.t.Fatal(err)
	}
	if e.admin, err = e.c.Server.PKI.KubeletClientCert(time.Hour); err != nil {
		e.t.Fatal(err)
	}
}

func (e *e2eEnv) start() {
	e.t.Helper()
	resolv := filepath.Join(e.root, "resolv.conf")
	os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.test\n"), 0o644)
	k, err := New(Config{
		NodeName: testNode, Client: e.node, RuntimeEndpoint: e.endpoint, CgroupRoot: e.cgroupRoot, CgroupsPerQOS: e.cgroupRoot != "",
		RootDir: filepath.Join(e.root, "kubelet"), PodLogsDir: e.logs, ResolvConf: resolv,
		ServingCert: e.cert, ClientCAs: e.c.Server.PKI.CAPool,
		RelistPeriod: 100 * time.Millisecond, NodeStatusUpdateFrequency: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tk := &testKubelet{k: k, cancel: cancel, done: make(chan error, 1)}
	go func() { tk.done <- k.Run(ctx) }()
	e.t.Cleanup(tk.stop)
	select {
	case <-k.Ready():
	case err := <-tk.done:
		e.t.Fatalf("kubelet stopped: %v", err)
	case <-time.After(30 * time.Second):
		e.t.Fatal("kubelet not ready in 30 s")
	}
	e.kl = tk
}

// stop ends the kubelet and waits for Run to return (once).
// kubeletRules is what a kubelet does with the API: the rules upstream's
// system:node role grants it (less what it does not use yet).
var kubeletRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update", "patch"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
}

// nodeClient is a client as system:node:node-1 in system:nodes, allowed
// kubeletRules.
func nodeClient(t *testing.T, c *clustertest.Cluster) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test:kubelet"}, Rules: kubeletRules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test:kubelet"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "test:kubelet"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:nodes"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := c.Server.PKI.IssueClientCert("system:node:"+testNode, []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: c.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: c.Server.PKI.CAPEM, CertData: certPEM, KeyData: keyPEM}, QPS: -1}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	return kubernetes.NewForConfigOrDie(cfg)
}

func (tk *testKubelet) stop() {
	tk.once.Do(func() {
		tk.cancel()
		select {
		case <-tk.done:
		case <-time.After(30 * time.Second):
			panic("kubelet did not stop in 30 s")
		}
	})
}

// eventually polls cond until it holds or 20 s pass.
func (e *e2eEnv) eventually(what string, cond func() (bool, error)) {
	e.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("%s: not in 20 s (last error %v)", what, last)
	}
}

func (e *e2eEnv) pod(name string) *corev1.Pod {
	p, err := e.c.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

// waitPod waits for pod name to satisfy cond and returns it.
func (e *e2eEnv) waitPod(name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	var p *corev1.Pod
	e.eventually("pod "+name+" "+what, func() (bool, error) {
		p = e.pod(name)
		if p != nil && !cond(p) {
			return false, fmt.Errorf("status %+v", p.Status)
		}
		return p != nil, nil
	})
	return p
}

func (e *e2eEnv) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	p.Namespace = "default"
	p.Spec.NodeName = testNode
	if p.Spec.AutomountServiceAccountToken == nil {
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
	}
	out, err := e.c.Client.CoreV1().Pods("default").Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func cstatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

func waitingReason(p *corev1.Pod, name string) string {
	if w := cstatus(p, name).State.Waiting; w != nil {
		return w.Reason
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kubeletGet asks the kubelet API directly with a client certificate.
func (e *e2eEnv) kubeletDo(cert *tls.Certificate, method, path string) (int, string, error) {
	cfg := &tls.Config{RootCAs: e.c.Server.PKI.CAPool, ServerName: "127.0.0.1"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
	req, _ := http.NewRequest(method, fmt.Sprintf("https://127.0.0.1:%d%s", e.kl.k.Port(), path), nil)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}
