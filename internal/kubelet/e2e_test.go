package kubelet

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// webVolumes are web's volumes: an emptyDir, and a memory-backed one
// when the test may mount it (root).
func webVolumes() []corev1.Volume {
	v := []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if os.Geteuid() == 0 {
		v = append(v, corev1.Volume{Name: "ram", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("16Mi"))}}})
	}
	return v
}

func TestKubeletE2E(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	pods := e.c.Client.CoreV1().Pods("default")

	t.Run("the node registers with its machine's figures and a lease", func(t *testing.T) {
		n, err := e.c.Client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info := n.Status.NodeInfo
		if info.ContainerRuntimeVersion != "fake://1.0.0" || info.KubeletVersion != Version || info.KernelVersion == "" || info.BootID == "" || info.MachineID == "" {
			t.Errorf("nodeInfo %+v", info)
		}
		if q := n.Status.Capacity[corev1.ResourcePods]; q.Value() != 110 {
			t.Errorf("pods capacity %s", q.String())
		}
		capMem, allocMem := n.Status.Capacity[corev1.ResourceMemory], n.Status.Allocatable[corev1.ResourceMemory]
		if capMem.Value() <= 0 || capMem.Value()-allocMem.Value() != 100<<20 {
			t.Errorf("memory capacity %s allocatable %s: want 100Mi apart", capMem.String(), allocMem.String())
		}
		if int(n.Status.DaemonEndpoints.KubeletEndpoint.Port) != e.kl.k.Port() {
			t.Errorf("kubelet port %d, serving on %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port, e.kl.k.Port())
		}
		if n.Labels[corev1.LabelHostname] != testNode || n.Labels[corev1.LabelOSStable] != "linux" {
			t.Errorf("labels %v", n.Labels)
		}
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && c.Reason == "KubeletReady" && c.Message == "kubelet is posting ready status" {
				ready = true
			}
		}
		if !ready || len(n.Status.Conditions) != 4 {
			t.Errorf("conditions %+v", n.Status.Conditions)
		}
		if len(n.Status.Images) != 1 || n.Status.Images[0].Names[0] != "busybox" {
			t.Errorf("images %+v", n.Status.Images)
		}
		var l *coordinationv1.Lease
		e.eventually("lease", func() (bool, error) {
			l, err = e.c.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, testNode, metav1.GetOptions{})
			return err == nil, err
		})
		if *l.Spec.HolderIdentity != testNode || l.OwnerReferences[0].UID != n.UID {
			t.Errorf("lease %+v", l.Spec)
		}
	})

	e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(int64(30)),
		Containers: []corev1.Container{
			{Name: "app", Image: "busybox", Command: []string{"sh", "-c", "echo $(POD_NAME)"},
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}},
			{Name: "side", Image: "alpine:3", ImagePullPolicy: corev1.PullIfNotPresent},
		},
		Volumes: webVolumes(),
	}})
	ramDir := func(uid types.UID) string {
		return filepath.Join(e.root, "kubelet", "pods", string(uid), "volumes", pluginEmptyDir, "ram")
	}
	var web *corev1.Pod
	t.Run("a pod runs: Running, Ready, IDs and IPs", func(t *testing.T) {
		web = e.waitPod("web", "Running and Ready", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && podReady(p) })
		app := cstatus(web, "app")
		if !strings.HasPrefix(app.ContainerID, "fake://") || app.RestartCount != 0 || app.Started == nil || !*app.Started || app.ImageID != "sha256:busybox" {
			t.Errorf("app status %+v", app)
		}
		if !strings.HasPrefix(web.Status.PodIP, "10.88.0.") || web.Status.HostIP != "127.0.0.1" || web.Status.StartTime == nil || web.Status.QOSClass != corev1.PodQOSBestEffort {
			t.Errorf("podIP %q hostIP %q start %v qos %q", web.Status.PodIP, web.Status.HostIP, web.Status.StartTime, web.Status.QOSClass)
		}
		if _, err := os.Stat(filepath.Join(e.root, "kubelet", "pods", string(web.UID), "volumes", pluginEmptyDir, "scratch")); err != nil {
			t.Errorf("emptyDir: %v", err)
		}
		if mounted, err := isMountPoint(ramDir(web.UID)); os.Geteuid() == 0 && (err != nil || !mounted) {
			t.Errorf("emptyDir medium Memory is not a mount: %v %v", mounted, err)
		}
	})

	// kubectl's way: JSON, streamed.
	jsonCfg := rest.CopyConfig(e.c.Config)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	jsonClient := kubernetes.NewForConfigOrDie(jsonCfg)
	t.Run("events tell the pod's story", func(t *testing.T) {
		want := map[string]string{
			"Pulled/spec.containers{app}":   `Successfully pulled image "busybox" in `, // busybox is :latest: pull Always
			"Pulling/spec.containers{side}": `Pulling image "alpine:3"`,
			"Created/spec.containers{app}":  "Created container: app",
			"Started/spec.containers{side}": "Started container side",
		}
		e.eventually("web's events", func() (bool, error) {
			evs, err := e.c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
			if err != nil {
				return false, err
			}
			got := map[string]string{}
			for _, ev := range evs.Items {
				got[ev.Reason+"/"+ev.InvolvedObject.FieldPath] = ev.Message
				if ev.Source.Component != "kubelet" || ev.Source.Host != testNode {
					return false, fmt.Errorf("event source %+v", ev.Source)
				}
			}
			for k, v := range want {
				if !strings.HasPrefix(got[k], v) {
					return false, fmt.Errorf("event %s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			return true, nil
		})
	})

	logs := func(name, container string, opts corev1.PodLogOptions) (string, error) {
		opts.Container = container
		rc, err := jsonClient.CoreV1().Pods("default").GetLogs(name, &opts).Stream(ctx)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	t.Run("kubectl logs through the API server reads the CRI log", func(t *testing.T) {
		out, err := logs("web", "app", corev1.PodLogOptions{})
		if err != nil || !strings.Contains(out, "started app attempt 0: sh -c echo web") || !strings.Contains(out, "POD_IP="+web.Status.PodIP) {
			t.Errorf("logs: %v\n%s", err, out)
		}
		out, err = logs("web", "app", corev1.PodLogOptions{TailLines: ptr.To(int64(1)), Timestamps: true})
		if err != nil || strings.Count(out, "\n") != 1 || !strings.Contains(out, "Z env ") {
			t.Errorf("tail 1 with timestamps: %v %q", err, out)
		}
		_, err = logs("web", "app", corev1.PodLogOptions{Previous: true})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `previous terminated container "app" in pod "web" not found`) {
			t.Errorf("previous: %v", err)
		}
	})

	t.Run("a crashed container restarts; its count and last state show", func(t *testing.T) {
		e.fake.exit(strings.TrimPrefix(cstatus(web, "app").ContainerID, "fake://"), 3)
		p := e.waitPod("web", "restarted", func(p *corev1.Pod) bool {
			cs := cstatus(p, "app")
			return cs.RestartCount == 1 && cs.State.Running != nil
		})
		last := cstatus(p, "app").LastTerminationState.Terminated
		if last == nil || last.ExitCode != 3 || last.Reason != "Error" {
			t.Errorf("last state %+v", last)
		}
		out, err := logs("web", "app", corev1.PodLogOptions{Previous: true})
		if err != nil || !strings.Contains(out, "exiting with 3") {
			t.Errorf("previous logs: %v\n%s", err, out)
		}
		web = p
	})

	t.Run("restartPolicy Never: a pod that completes is Succeeded", func(t *testing.T) {
		e.fake.mu.Lock()
		e.fake.exitAtOnce["once"] = 0
		e.fake.exitAtOnce["once-init"] = 0
		e.fake.mu.Unlock()
		e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			InitContainers: []corev1.Container{{Name: "once-init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "once", Image: "busybox"}}}})
		p := e.waitPod("job", "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if term := cstatus(p, "once").State.Terminated; term == nil || term.Reason != "Completed" {
			t.Errorf("once: %+v", cstatus(p, "once").State)
		}
		if term := cstatus(p, "once-init").State.Terminated; term == nil || term.ExitCode != 0 {
			t.Errorf("init: %+v", cstatus(p, "once-init").State)
		}
	})

	t.Run("a pod that does not fit is rejected: Failed, OutOfcpu", func(t *testing.T) {
		e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100000")}}}}}})
		p := e.waitPod("huge", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if p.Status.Reason != "OutOfcpu" || !strings.HasPrefix(p.Status.Message, "Pod was rejected: Node didn't have enough resource: cpu, requested: 100000000") {
			t.Errorf("reason %q message %q", p.Status.Reason, p.Status.Message)
		}
		if obs, err := e.kl.k.obs.observe(ctx, string(p.UID)); err != nil || !obs.empty() {
			t.Errorf("a rejected pod reached the runtime: %+v %v", obs, err)
		}
	})

	t.Run("a missing configMap: CreateContainerConfigError until it exists", func(t *testing.T) {
		e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "needs-config"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Env: []corev1.EnvVar{{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "color"}}}}}}}})
		p := e.waitPod("needs-config", "CreateContainerConfigError", func(p *corev1.Pod) bool { return waitingReason(p, "c") == reasonCreateConfigError })
		if msg := cstatus(p, "c").State.Waiting.Message; msg != `configmap "settings" not found` {
			t.Errorf("message %q", msg)
		}
		if _, err := e.c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
			Data: map[string]string{"color": "teal"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitPod("needs-config", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		out, _ := logs("needs-config", "c", corev1.PodLogOptions{})
		if !strings.Contains(out, "COLOR=teal") {
			t.Errorf("env not in the log:\n%s", out)
		}
	})

	t.Run("a failing pull: ErrImagePull, then ImagePullBackOff", func(t *testing.T) {
		e.fake.mu.Lock()
		e.fake.pullErr["ghcr.io/none/such:1"] = "manifest unknown"
		e.fake.mu.Unlock()
		e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "no-image"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "ghcr.io/none/such:1"}}}})
		// ErrImagePull shows until the next sync, which may come at once
		// (a relist): the events keep it; the back-off's message keeps the
		// error.
		p := e.waitPod("no-image", "ImagePullBackOff", func(p *corev1.Pod) bool { return waitingReason(p, "c") == reasonImagePullBackOff })
		if msg := cstatus(p, "c").State.Waiting.Message; !strings.Contains(msg, `Back-off pulling image "ghcr.io/none/such:1": failed to pull and unpack image`) ||
			!strings.Contains(msg, "manifest unknown") {
			t.Errorf("message %q", msg)
		}
		e.eventually("the ErrImagePull event", func() (bool, error) {
			evs, err := e.c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=no-image,reason=Failed"})
			if err != nil {
				return false, err
			}
			for _, ev := range evs.Items {
				if ev.Message == "Error: "+reasonErrImagePull {
					return true, nil
				}
			}
			return false, nil
		})
		_, err := logs("no-image", "c", corev1.PodLogOptions{})
		if err == nil || !strings.Contains(err.Error(), `is waiting to start: trying and failing to pull image`) {
			t.Errorf("logs of a container that never ran: %v", err)
		}
	})

	t.Run("deleting a pod interrupts its endless pull", func(t *testing.T) {
		began := make(chan struct{})
		e.fake.mu.Lock()
		e.fake.pullHang["slow.example/huge:1"] = began
		e.fake.mu.Unlock()
		e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "slow.example/huge:1"}}}})
		select {
		case <-began:
		case <-time.After(20 * time.Second):
			t.Fatal("the pull did not begin")
		}
		if err := pods.Delete(ctx, "slow", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually("slow gone from the API", func() (bool, error) {
			_, err := pods.Get(ctx, "slow", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})

	t.Run("volumes: configMap, secret, downwardAPI and a projected token, as files", func(t *testing.T) {
		if _, err := e.c.Client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.Client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
			Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("pw")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "files", Labels: map[string]string{"tier": "db"}}, Spec: corev1.PodSpec{
			ServiceAccountName: "runner",
			Containers:         []corev1.Container{{Name: "c", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}}},
			Volumes: []corev1.Volume{
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
					Items: []corev1.KeyToPath{{Key: "color", Path: "colors/current"}}}}},
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To(int32(0o400))}}},
				{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "api", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(3600))}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				}}}},
			},
		}})
		e.waitPod("files", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		vol := filepath.Join(e.root, "kubelet", "pods", string(p.UID), "volumes")
		for path, want := range map[string]string{
			pluginConfigMap + "/cfg/colors/current": "teal",
			pluginSecret + "/sec/user":              "admin",
			pluginDownward + "/info/labels":         `tier="db"`,
			pluginProjected + "/api/namespace":      "default",
		} {
			b, err := os.ReadFile(filepath.Join(vol, path))
			if err != nil || string(b) != want {
				t.Errorf("%s = %q (%v), want %q", path, b, err, want)
			}
		}
		if fi, err := os.Stat(filepath.Join(vol, pluginSecret, "sec", "pass")); err != nil || fi.Mode().Perm() != 0o400 {
			t.Errorf("secret file mode: %v %v", fi, err)
		}
		tok, err := os.ReadFile(filepath.Join(vol, pluginProjected, "api", "token"))
		if err != nil || strings.Count(string(tok), ".") != 2 {
			t.Errorf("token %q: %v", tok, err)
		}
	})

	t.Run("the kubelet API: who may ask, /pods, /run, metrics", func(t *testing.T) {
		if _, _, err := e.kubeletDo(nil, "GET", "/healthz"); err == nil {
			t.Error("a client without a certificate got through")
		}
		certPEM, keyPEM, err := e.c.Server.PKI.IssueClientCert("nobody", nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		nobody, _ := tls.X509KeyPair(certPEM, keyPEM)
		if code, body, err := e.kubeletDo(&nobody, "GET", "/pods"); err != nil || code != http.StatusForbidden ||
			!strings.Contains(body, "Forbidden (user=nobody, verb=get, resource=nodes, subresource(s)=[pods proxy])") {
			t.Errorf("nobody: %d %q %v", code, body, err)
		}
		if code, body, err := e.kubeletDo(&e.admin, "GET", "/healthz"); err != nil || code != 200 || body != "ok" {
			t.Errorf("healthz: %d %q %v", code, body, err)
		}
		if code, body, err := e.kubeletDo(&e.admin, "GET", "/pods"); err != nil || code != 200 || !strings.Contains(body, `"kind":"PodList"`) || !strings.Contains(body, `"name":"web"`) {
			t.Errorf("pods: %d %v", code, err)
		}
		if code, body, err := e.kubeletDo(&e.admin, "POST", "/run/default/web/app?cmd=echo+hello"); err != nil || code != 200 || body != "echo hello\n" {
			t.Errorf("run: %d %q %v", code, body, err)
		}
		code, body, err := e.kubeletDo(&e.admin, "GET", "/metrics/resource")
		if err != nil || code != 200 || !strings.Contains(body, `container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 2.5 `) ||
			!strings.Contains(body, "node_memory_working_set_bytes ") {
			t.Errorf("metrics: %d %v\n%s", code, err, body)
		}
		code, body, err = e.kubeletDo(&e.admin, "GET", "/stats/summary")
		if err != nil || code != 200 || !strings.Contains(body, `"nodeName":"node-1"`) || !strings.Contains(body, `"workingSetBytes":3145728`) {
			t.Errorf("summary: %d %v\n%s", code, err, body)
		}
	})

	t.Run("kubectl top: the API server's metrics.k8s.io reads /metrics/resource", func(t *testing.T) {
		var body []byte
		e.eventually("pod metrics of web", func() (bool, error) {
			var err error
			body, err = e.c.Client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web").DoRaw(ctx)
			return err == nil, err
		})
		if !strings.Contains(string(body), `"name":"app"`) || !strings.Contains(string(body), `"memory":"3Mi"`) {
			t.Errorf("pod metrics %s", body)
		}
		body, err := e.c.Client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/nodes/" + testNode).DoRaw(ctx)
		if err != nil || !strings.Contains(string(body), `"cpu"`) {
			t.Errorf("node metrics %s: %v", body, err)
		}
	})

	t.Run("a followed log streams appends, follows a rotation and ends with the container", func(t *testing.T) {
		e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tail"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}})
		p := e.waitPod("tail", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		id := strings.TrimPrefix(cstatus(p, "c").ContainerID, "fake://")
		e.fake.mu.Lock()
		logPath := e.fake.containers[id].logPath
		e.fake.mu.Unlock()
		cfg := &tls.Config{RootCAs: e.c.Server.PKI.CAPool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{e.admin}}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 20 * time.Second}
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/containerLogs/default/tail/c?follow=true", e.kl.k.Port()))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		lines := bufio.NewReader(resp.Body)
		expect := func(want string) {
			t.Helper()
			l, err := lines.ReadString('\n')
			if err != nil || !strings.Contains(l, want) {
				t.Fatalf("line %q (%v), want %q", l, err, want)
			}
		}
		expect("started c attempt 0")
		expect("env ")
		appendLog(logPath, "stdout", "one more")
		expect("one more")
		if err := os.Rename(logPath, logPath+".1"); err != nil {
			t.Fatal(err)
		}
		appendLog(logPath, "stdout", "after the rotation")
		expect("after the rotation")
		e.fake.exit(id, 0)
		expect("exiting with 0")
		if rest, err := io.ReadAll(lines); err != nil || len(rest) != 0 {
			t.Errorf("after the exit: %q %v", rest, err)
		}
	})

	t.Run("exec, attach and port-forward are proxied to the runtime's stream, upgrade and all", func(t *testing.T) {
		stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "test-stream" {
				http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
				return
			}
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
			rw.Flush()
			line, _ := rw.ReadString('\n')
			rw.WriteString(r.URL.Path + " echo:" + line)
			rw.Flush()
		}))
		defer stream.Close()
		e.fake.mu.Lock()
		e.fake.streamURL = stream.URL
		e.fake.mu.Unlock()
		web := e.pod("web")
		appID := strings.TrimPrefix(cstatus(web, "app").ContainerID, "fake://")
		for _, tc := range []struct{ path, want string }{
			{"/exec/default/web/app?command=sh&input=1&output=1", "/exec/" + appID},
			{"/attach/default/web/" + string(web.UID) + "/app?input=1&output=1&tty=1", "/attach/" + appID},
			{"/portForward/default/web?port=8080", "/portforward/"},
		} {
			conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", e.kl.k.Port()), &tls.Config{RootCAs: e.c.Server.PKI.CAPool, ServerName: "127.0.0.1",
				Certificates: []tls.Certificate{e.admin}, NextProtos: []string{"http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n", tc.path)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				conn.Close()
				t.Fatalf("%s: upgrade: %v %v", tc.path, resp, err)
			}
			fmt.Fprintf(conn, "ping\n")
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := br.ReadString('\n')
			if err != nil || !strings.HasPrefix(got, tc.want) || !strings.HasSuffix(got, " echo:ping\n") {
				t.Errorf("%s: through the stream: %q %v", tc.path, got, err)
			}
			conn.Close()
		}
		if code, body, _ := e.kubeletDo(&e.admin, "POST", "/exec/default/web/nope?command=sh"); code != http.StatusNotFound {
			t.Errorf("exec in a container the pod has not: %d %q", code, body)
		}
	})

	t.Run("a restarted kubelet adopts its pods: nothing started twice", func(t *testing.T) {
		before := e.pod("web")
		e.fake.mu.Lock()
		starts := e.fake.starts
		e.fake.mu.Unlock()
		e.kl.stop()
		e.start()
		// Several relists and syncs later, nothing new started.
		e.eventually("a node status post after the restart", func() (bool, error) {
			n, err := e.c.Client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
			return err == nil && int(n.Status.DaemonEndpoints.KubeletEndpoint.Port) == e.kl.k.Port(), err
		})
		for range 5 {
			if err := e.kl.k.relist(ctx); err != nil {
				t.Fatal(err)
			}
		}
		e.fake.mu.Lock()
		after := e.fake.starts
		e.fake.mu.Unlock()
		if after != starts {
			t.Errorf("%d containers started after the restart", after-starts)
		}
		p := e.pod("web")
		if cstatus(p, "app").RestartCount != cstatus(before, "app").RestartCount || cstatus(p, "app").ContainerID != cstatus(before, "app").ContainerID {
			t.Errorf("app before %+v after %+v", cstatus(before, "app"), cstatus(p, "app"))
		}
	})

	t.Run("a pod deleted while the kubelet was down is removed when it comes back", func(t *testing.T) {
		p := e.pod("needs-config")
		if obs, err := e.kl.k.obs.observe(ctx, string(p.UID)); err != nil || len(obs.running()) == 0 {
			t.Fatalf("needs-config not running: %v", err)
		}
		e.kl.stop()
		if err := pods.Delete(ctx, "needs-config", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
			t.Fatal(err)
		}
		e.start()
		e.eventually("needs-config gone from the runtime", func() (bool, error) {
			obs, err := e.kl.k.obs.observe(ctx, string(p.UID))
			return err == nil && obs.empty(), err
		})
	})

	t.Run("syncs with nothing new write nothing", func(t *testing.T) {
		before := e.pod("web")
		for range 3 {
			n := e.kl.k.syncs.Load()
			e.kl.k.trigger(before.UID)
			e.eventually("a sync", func() (bool, error) { return e.kl.k.syncs.Load() > n, nil })
		}
		if after := e.pod("web"); after.ResourceVersion != before.ResourceVersion {
			t.Errorf("the pod was written: %s -> %s\n%+v\n%+v", before.ResourceVersion, after.ResourceVersion, before.Status, after.Status)
		}
	})

	t.Run("deletion: containers stop, the pod goes from the API and the node", func(t *testing.T) {
		p := e.pod("web")
		if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually("web gone from the API", func() (bool, error) {
			_, err := pods.Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		e.eventually("web gone from the runtime and the disk", func() (bool, error) {
			obs, err := e.kl.k.obs.observe(ctx, string(p.UID))
			if err != nil || !obs.empty() {
				return false, err
			}
			_, err = os.Stat(filepath.Join(e.root, "kubelet", "pods", string(p.UID)))
			return os.IsNotExist(err), nil
		})
		if mps, err := mountsUnder(e.root); err != nil || len(mps) != 0 {
			t.Errorf("mounts left: %v %v", mps, err)
		}
	})

	t.Run("a sandbox of no pod is removed (orphan GC)", func(t *testing.T) {
		e.fake.mu.Lock()
		id := e.fake.id()
		e.fake.sandboxes[id] = &fakeSandbox{id: id, ready: true, created: time.Now(), cfg: &corev1PodSandboxConfigForGhost}
		e.fake.mu.Unlock()
		e.eventually("the ghost's sandbox removed", func() (bool, error) {
			e.fake.mu.Lock()
			defer e.fake.mu.Unlock()
			_, ok := e.fake.sandboxes[id]
			return !ok, nil
		})
	})
}
