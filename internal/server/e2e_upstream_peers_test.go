package server

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// upstreamPeersVersion is the Kubernetes release whose scheduler and
// controller manager must run on rudder unchanged (issue 17 item 8).
const upstreamPeersVersion = "v1.36.3"

// upstreamPeerBinaries finds kube-scheduler and kube-controller-manager
// as scripts/upstream-peers.sh builds them ($RUDDER_UPSTREAM_BIN, else
// ~/.cache/rudder/upstream/VERSION/bin), or skips the test.
func upstreamPeerBinaries(t *testing.T) (scheduler, controllerManager string) {
	dir := os.Getenv("RUDDER_UPSTREAM_BIN")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "rudder", "upstream", upstreamPeersVersion, "bin")
	}
	scheduler, controllerManager = filepath.Join(dir, "kube-scheduler"), filepath.Join(dir, "kube-controller-manager")
	for _, bin := range []string{scheduler, controllerManager} {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("%s missing: run scripts/upstream-peers.sh to build upstream's components", bin)
		}
	}
	return scheduler, controllerManager
}

// syncBuffer collects a process's output for the failure message.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startPeer runs an upstream component until the test ends.
func startPeer(t *testing.T, bin string, args ...string) *syncBuffer {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", filepath.Base(bin), err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return out
}

// TestUpstreamPeers runs upstream kube-scheduler and
// kube-controller-manager against `rudder server --disable-scheduler
// --controllers=-*` with simulated nodes, and rolls out a Deployment:
// upstream's components must find every API they list and watch (DRA,
// ServiceCIDRs, VolumeAttributesClasses, ...) and agree with rudder's
// resourceVersion semantics.
func TestUpstreamPeers(t *testing.T) {
	scheduler, kcm := upstreamPeerBinaries(t)
	srv, rc := startTestServer(t, Config{SimulatedNodes: 2, DisableScheduler: true, Controllers: []string{"-*"}})
	cs := kubernetes.NewForConfigOrDie(rc)
	select {
	case <-srv.SimNodes.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("simulated nodes did not register")
	}
	schedLog := startPeer(t, scheduler, "--kubeconfig="+srv.Kubeconfig, "--leader-elect=false", "--secure-port=0", "-v=2")
	kcmLog := startPeer(t, kcm, "--kubeconfig="+srv.Kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers=*", "--use-service-account-credentials=false", "-v=2")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-scheduler log (tail):\n%s", tail(schedLog.String(), 60))
			t.Logf("kube-controller-manager log (tail):\n%s", tail(kcmLog.String(), 80))
		}
	})

	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rolledOut := func(image string) func() (bool, error) {
		return func() (bool, error) {
			d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s := d.Status
			return d.Spec.Template.Spec.Containers[0].Image == image && s.ObservedGeneration == d.Generation &&
				s.UpdatedReplicas == 3 && s.AvailableReplicas == 3 && s.Replicas == 3, nil
		}
	}
	eventually(t, 90*time.Second, "deployment web available through upstream's scheduler and controllers", rolledOut("nginx:1.27"))

	// A rolling update: a second ReplicaSet, scaled up as the first is
	// scaled down, all by upstream's deployment controller.
	d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
	if _, err := cs.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "deployment web rolled out to nginx:1.28", rolledOut("nginx:1.28"))
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			t.Errorf("pod %s not scheduled", p.Name)
		}
	}
	// A list or watch failing means an API upstream's components use is
	// missing or wrong. kube-controller-manager's consistency check ("read
	// version: N is not as new as written version: M") is not counted: it
	// fires, as on upstream's API server, when a controller syncs again
	// before its informer has seen its own write, and requeues; the
	// rollout above completing is what shows its informers catch up
	// (rudder's watch events carry the write's revision, deletes the
	// delete's, and no-op writes keep the old resourceVersion).
	for name, log := range map[string]string{"kube-scheduler": schedLog.String(), "kube-controller-manager": kcmLog.String()} {
		for _, bad := range []string{"Failed to watch", "failed to list", "the server could not find the requested resource"} {
			if strings.Contains(log, bad) {
				t.Errorf("%s logged %q", name, bad)
			}
		}
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
