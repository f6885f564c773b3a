package simnode_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/simnode"
)

// kubectl top and kubectl logs against simulated nodes serving the
// kubelet API, through the API server's metrics.k8s.io and pods/log, with
// the real kubectl.
func TestKubeletAPIWithKubectl(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not installed")
	}
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 2})
	ctx := context.Background()
	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", c.Server.Kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	node, err := c.Client.CoreV1().Nodes().Get(ctx, "sim-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	ip := net.ParseIP(node.Status.Addresses[0].Address)
	if port == 0 || ip == nil || !ip.IsLoopback() {
		t.Fatalf("sim-0 advertises %v port %d, want a loopback address and a port", node.Status.Addresses, port)
	}

	// web on sim-0: 250m and 64Mi by annotation, over two containers;
	// batch on sim-1: no annotation, a fraction of its requests.
	web := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{simnode.AnnotationCPUUsage: "250m", simnode.AnnotationMemoryUsage: "64Mi"}},
		Spec: corev1.PodSpec{NodeName: "sim-0", Containers: []corev1.Container{{Name: "app", Image: "nginx"}, {Name: "proxy", Image: "envoy"}}},
	}
	batch := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "kube-system"},
		Spec: corev1.PodSpec{NodeName: "sim-1", Containers: []corev1.Container{{Name: "work", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: mustQ("1"), corev1.ResourceMemory: mustQ("1Gi")}}}}},
	}
	for _, p := range []*corev1.Pod{web, batch} {
		if _, err := c.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range []*corev1.Pod{web, batch} {
			got, err := c.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal("pods not Running:", err)
	}

	t.Run("kubectl top node", func(t *testing.T) {
		out, err := kubectl("top", "node")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		// sim-0: 250m of pods + 100m overhead; 64Mi + 512Mi.
		row := tableRow(t, out, "sim-0")
		if cpu := milli(t, row[1]); cpu < 348 || cpu > 352 {
			t.Errorf("sim-0 cpu %s, want 350m:\n%s", row[1], out)
		}
		if row[3] != "576Mi" {
			t.Errorf("sim-0 memory %s, want 576Mi:\n%s", row[3], out)
		}
		// sim-1: 25-75% of 1 core + 100m.
		if cpu := milli(t, tableRow(t, out, "sim-1")[1]); cpu < 340 || cpu > 860 {
			t.Errorf("sim-1 cpu %dm, want 350m-850m:\n%s", cpu, out)
		}
	})
	t.Run("kubectl top pod -A", func(t *testing.T) {
		out, err := kubectl("top", "pod", "-A")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		row := tableRow(t, out, "web")
		if row[0] != "default" || milli(t, row[2]) < 248 || milli(t, row[2]) > 252 || row[3] != "64Mi" {
			t.Errorf("web row %v, want default web 250m 64Mi:\n%s", row, out)
		}
		if row := tableRow(t, out, "batch"); row[0] != "kube-system" {
			t.Errorf("batch row %v:\n%s", row, out)
		}
	})
	t.Run("kubectl top pod --containers", func(t *testing.T) {
		out, err := kubectl("top", "pod", "--containers", "-l", "app=web")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, name := range []string{"app", "proxy"} {
			row := tableRow(t, out, name)
			if row[0] != "web" || milli(t, row[2]) < 123 || milli(t, row[2]) > 127 || row[3] != "32Mi" {
				t.Errorf("container %s row %v, want web %s 125m 32Mi:\n%s", name, row, name, out)
			}
		}
	})
	t.Run("kubectl logs of a simulated pod", func(t *testing.T) {
		out, err := kubectl("logs", "web", "-c", "proxy")
		if err != nil || !strings.Contains(out, "simnode: starting container proxy (image envoy) of pod default/web on node sim-0") {
			t.Errorf("kubectl logs: %v\n%s", err, out)
		}
		out, err = kubectl("logs", "web", "-c", "proxy", "--tail=1")
		if err != nil || strings.Count(out, "\n") != 1 {
			t.Errorf("kubectl logs --tail=1: %v\n%q", err, out)
		}
	})
	t.Run("kubectl logs -f streams until killed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Server.Kubeconfig, "logs", "-f", "web", "-c", "app")
		lines := followLines(t, cmd)
		// Three lines at start, then one per second: wait for two of those.
		var got []string
		for len(got) < 5 {
			l, ok := <-lines
			if !ok {
				t.Fatalf("kubectl logs -f ended after %d lines: %q", len(got), got)
			}
			got = append(got, l)
		}
		if !strings.Contains(got[4], "simnode: container app is running (") {
			t.Errorf("followed line %q", got[4])
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		for range lines { // drained: kubectl is gone
		}
		_ = cmd.Wait()
	})
	t.Run("kubectl logs -f ends when the container stops", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "short", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "sim-1", Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := c.Client.CoreV1().Pods("default").Get(ctx, "short", metav1.GetOptions{})
			return err == nil && got.Status.Phase == corev1.PodRunning, nil
		}); err != nil {
			t.Fatal("pod not Running:", err)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Server.Kubeconfig, "logs", "-f", "short", "--tail=1", "--timestamps")
		lines := followLines(t, cmd)
		first := <-lines
		if _, err := time.Parse(time.RFC3339Nano, strings.Fields(first)[0]); err != nil || !strings.HasSuffix(first, "simnode: container c is running") {
			t.Errorf("first line %q, want a timestamp and the last start line", first)
		}
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, "short", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for range lines {
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("kubectl logs -f: %v (ended by the deadline?)", err)
		}
	})
	t.Run("kubectl logs --previous of a container that never restarted", func(t *testing.T) {
		out, err := kubectl("logs", "web", "-c", "app", "--previous")
		want := `Error from server (BadRequest): previous terminated container "app" in pod "web" not found`
		if err == nil || strings.TrimSpace(out) != want {
			t.Errorf("kubectl logs --previous: %v\n%q\nwant %q", err, out, want)
		}
	})
	t.Run("kubectl logs --limit-bytes", func(t *testing.T) {
		out, err := kubectl("logs", "web", "-c", "app", "--limit-bytes=10")
		if err != nil || out != "simnode: s" {
			t.Errorf("kubectl logs --limit-bytes=10: %v %q", err, out)
		}
	})
	t.Run("client certificates of other users are authorized by the API server", func(t *testing.T) {
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
		// bob may read node metrics, nothing else; alice nothing.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "node-metrics-reader"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes/metrics"}}}}
		if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-node-metrics"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "bob"}}}
		if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			user, method, path string
			code               int
			body               string
		}{
			{"alice", "GET", "/metrics/resource", 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[metrics])"},
			{"alice", "GET", "/containerLogs/default/web/app", 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])"},
			{"alice", "GET", "/healthz", 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[healthz proxy])"},
			{"alice", "POST", "/exec/default/web/app", 403, "Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])"},
			{"bob", "GET", "/metrics/resource", 200, "node_cpu_usage_seconds_total"},
			{"bob", "GET", "/containerLogs/default/web/app", 403, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])"},
		} {
			code, body := kubeletRequest(t, c, addr, tc.user, tc.method, tc.path)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%s %s %s: %d %q, want %d %q", tc.user, tc.method, tc.path, code, body, tc.code, tc.body)
			}
		}
		// The API server's own certificate still gets through.
		if out, err := kubectl("logs", "web", "-c", "app", "--tail=1"); err != nil {
			t.Errorf("kubectl logs: %v %s", err, out)
		}
	})
	t.Run("the kubelet API wants a client certificate of the cluster CA", func(t *testing.T) {
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			// TLS 1.3 reports the refused certificate on the first read.
			_, err = fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			if err == nil {
				_, err = conn.Read(make([]byte, 1))
			}
			conn.Close()
		}
		if err == nil {
			t.Error("a client without a certificate was served")
		}
	})

	// Nodes that do not serve the kubelet API, or simulated nodes that
	// claim to serve it elsewhere than on loopback, are answered without
	// a dial. (A real node, without the label, is dialed where it says.)
	for _, tc := range []struct {
		name, ip string
		port     int32
		want     string
	}{
		{"port 0", "198.18.9.9", 0, `node "noapi" does not serve the kubelet API`},
		{"not loopback", "192.0.2.1", 10250, `refusing to dial the kubelet of simulated node "remote" at 192.0.2.1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := map[int32]string{0: "noapi", 10250: "remote"}[tc.port]
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{simnode.LabelSimulated: "true"}}}
			n, err := c.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: tc.ip}}
			n.Status.DaemonEndpoints.KubeletEndpoint.Port = tc.port
			if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-" + name, Namespace: "default"},
				Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "img"}}}}
			if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := kubectl("logs", pod.Name)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("kubectl logs: %v\n%s\nwant %q", err, out, tc.want)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("answered in %v: did it dial?", d)
			}
			out, err = kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/"+name)
			if err == nil || !strings.Contains(out, `nodemetrics.metrics.k8s.io "`+name+`" not found`) {
				t.Errorf("node metrics: %v\n%s", err, out)
			}
		})
	}
}

// tableRow finds the row of kubectl's table whose first or second column
// is name.
func tableRow(t *testing.T, table, name string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && (f[0] == name || f[1] == name) {
			return f
		}
	}
	t.Fatalf("no row %q in\n%s", name, table)
	return nil
}

// milli reads kubectl top's CPU column ("350m").
func milli(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSuffix(s, "m"))
	if err != nil {
		t.Fatalf("cpu %q: %v", s, err)
	}
	return n
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

// followLines starts cmd and sends its output lines until it ends.
func followLines(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// kubeletRequest makes one request of a simulated kubelet with a client
// certificate of the cluster CA naming user.
func kubeletRequest(t *testing.T, c *clustertest.Cluster, addr, user, method, path string) (int, string) {
	t.Helper()
	certPEM, keyPEM, err := c.Server.PKI.IssueClientCert(user, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: c.Server.PKI.CAPool, InsecureSkipVerify: true}}}
	req, err := http.NewRequest(method, "https://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
