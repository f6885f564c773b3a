package simnode_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/server"
	"github.com/rudder-dev/rudder/internal/simnode"
)

// The end-to-end tests run a fleet against a real server: embedded etcd in
// a temp dir, the API on a loopback port, the fleet a client over HTTPS.

const renew = 100 * time.Millisecond // lease renewal period in these tests

func startServer(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir(), Controllers: []string{"-*"}, DisableScheduler: true})
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Stop()
	})
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return kubernetes.NewForConfigOrDie(rc)
}

// fastConfig runs everything in tenths of a second so the tests are quick.
func fastConfig(cs kubernetes.Interface) simnode.Config {
	return simnode.Config{
		Client: cs, Count: 3, Zones: 3,
		Capacity:      corev1.ResourceList{"example.com/gpu": resource.MustParse("4")},
		Taints:        []corev1.Taint{{Key: "simulated", Value: "yes", Effect: corev1.TaintEffectPreferNoSchedule}},
		LeaseDuration: time.Second, LeaseRenewInterval: renew, StatusUpdateFrequency: renew,
		PodStartDelay: 50 * time.Millisecond, PodStopDelay: 50 * time.Millisecond,
		JobDuration: 200 * time.Millisecond, RestartBackoff: 100 * time.Millisecond,
	}
}

func startFleet(t testing.TB, cfg simnode.Config) *simnode.Fleet {
	t.Helper()
	f, err := simnode.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		f.Stop()
	})
	select {
	case <-f.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("fleet not ready within 30s")
	}
	return f
}

// eventually polls cond with the shared controllertest.Eventually until it
// holds or the timeout passes; an error from cond fails the test at once.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	controllertest.Eventually(t, timeout, func() (bool, string) {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return ok, what
	})
}

func renewTime(t *testing.T, cs kubernetes.Interface, node string) time.Time {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Spec.RenewTime.Time
}

// waitRenewals waits until node's lease has been renewed n more times.
func waitRenewals(t *testing.T, cs kubernetes.Interface, node string, n int) {
	t.Helper()
	last, seen := renewTime(t, cs, node), 0
	eventually(t, 10*time.Second, node+" lease renewals", func() (bool, error) {
		if r := renewTime(t, cs, node); r.After(last) {
			last, seen = r, seen+1
		}
		return seen >= n, nil
	})
}

func TestFleet(t *testing.T) {
	cs := startServer(t)
	ctx := context.Background()
	startFleet(t, fastConfig(cs))

	t.Run("nodes register", func(t *testing.T) {
		for i, zone := range []string{"zone-0", "zone-1", "zone-2"} {
			name := fmt.Sprintf("sim-%d", i)
			t.Run(name, func(t *testing.T) {
				node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelHostname: name,
					corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64", simnode.LabelSimulated: "true"} {
					if node.Labels[k] != v {
						t.Errorf("label %s=%q, want %q", k, node.Labels[k], v)
					}
				}
				if q := node.Status.Allocatable["example.com/gpu"]; q.Value() != 4 {
					t.Errorf("allocatable gpu %s", q.String())
				}
				if q := node.Status.Capacity[corev1.ResourcePods]; q.Value() != 110 {
					t.Errorf("pods capacity %s", q.String())
				}
				if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "simulated" {
					t.Errorf("taints %v", node.Spec.Taints)
				}
				if want := fmt.Sprintf("10.128.%d.0/24", i); node.Spec.PodCIDR != want {
					t.Errorf("podCIDR %s, want %s", node.Spec.PodCIDR, want)
				}
				conds := map[corev1.NodeConditionType]corev1.ConditionStatus{}
				for _, c := range node.Status.Conditions {
					conds[c.Type] = c.Status
				}
				if conds[corev1.NodeReady] != corev1.ConditionTrue || conds[corev1.NodeMemoryPressure] != corev1.ConditionFalse ||
					conds[corev1.NodeDiskPressure] != corev1.ConditionFalse || conds[corev1.NodePIDPressure] != corev1.ConditionFalse {
					t.Errorf("conditions %v", conds)
				}
				if node.Status.NodeInfo.KubeletVersion != simnode.KubeletVersion {
					t.Errorf("nodeInfo %+v", node.Status.NodeInfo)
				}
				// No kubelet API in this fleet: nothing to dial.
				if p := node.Status.DaemonEndpoints.KubeletEndpoint.Port; p != 0 {
					t.Errorf("kubelet port %d, want 0", p)
				}
				lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if *lease.Spec.HolderIdentity != name || *lease.Spec.LeaseDurationSeconds != 1 ||
					len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != node.UID {
					t.Errorf("lease %+v", lease)
				}
			})
		}
	})

	t.Run("leases renew", func(t *testing.T) {
		for _, name := range []string{"sim-0", "sim-1", "sim-2"} {
			waitRenewals(t, cs, name, 3)
		}
	})

	t.Run("pods run", func(t *testing.T) {
		node, _ := cs.CoreV1().Nodes().Get(ctx, "sim-0", metav1.GetOptions{})
		cidr := netip.MustParsePrefix(node.Spec.PodCIDR)
		ips := map[string]bool{}
		for i := range 3 {
			pod := createPod(t, cs, fmt.Sprintf("web-%d", i), "sim-0", corev1.RestartPolicyAlways, nil)
			pod = waitPhase(t, cs, pod, corev1.PodRunning)
			ip, err := netip.ParseAddr(pod.Status.PodIP)
			if err != nil || !cidr.Contains(ip) || ips[pod.Status.PodIP] || pod.Status.PodIPs[0].IP != pod.Status.PodIP {
				t.Errorf("pod IP %q (node CIDR %s, taken %v)", pod.Status.PodIP, cidr, ips)
			}
			ips[pod.Status.PodIP] = true
			if pod.Status.HostIP != "198.18.0.1" || pod.Status.StartTime == nil {
				t.Errorf("hostIP %q startTime %v", pod.Status.HostIP, pod.Status.StartTime)
			}
			for _, c := range pod.Status.Conditions {
				if c.Status != corev1.ConditionTrue {
					t.Errorf("condition %s=%s", c.Type, c.Status)
				}
			}
			if len(pod.Status.Conditions) != 5 {
				t.Errorf("conditions %+v", pod.Status.Conditions)
			}
			if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
				t.Fatalf("container statuses %+v", pod.Status.ContainerStatuses)
			}
			for i, c := range pod.Status.ContainerStatuses {
				if !c.Ready || c.State.Running == nil || !strings.HasPrefix(c.ContainerID, "simnode://") ||
					c.Name != pod.Spec.Containers[i].Name || c.Image != pod.Spec.Containers[i].Image {
					t.Errorf("container %+v", c)
				}
			}
		}
	})

	t.Run("job pods", func(t *testing.T) {
		for _, tc := range []struct {
			name        string
			policy      corev1.RestartPolicy
			annotations map[string]string
			phase       corev1.PodPhase
			code        int32
			reason      string
		}{
			{"succeeds", corev1.RestartPolicyNever, map[string]string{simnode.AnnotationRunDuration: "100ms"}, corev1.PodSucceeded, 0, "Completed"},
			{"fails with its exit code", corev1.RestartPolicyNever, map[string]string{simnode.AnnotationExitCode: "3"}, corev1.PodFailed, 3, "Error"},
			{"runs as long as annotated", corev1.RestartPolicyOnFailure, map[string]string{simnode.AnnotationRunDuration: "1ms"}, corev1.PodSucceeded, 0, "Completed"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				pod := createPod(t, cs, "job-"+strings.ReplaceAll(tc.name, " ", "-"), "sim-1", tc.policy, tc.annotations)
				pod = waitPhase(t, cs, pod, tc.phase)
				for _, c := range pod.Status.ContainerStatuses {
					if term := c.State.Terminated; term == nil || term.ExitCode != tc.code || term.Reason != tc.reason || c.Ready {
						t.Errorf("container %s: %+v", c.Name, c.State)
					}
				}
			})
		}
		t.Run("OnFailure with an exit code crash-loops", func(t *testing.T) {
			pod := createPod(t, cs, "job-crashloop", "sim-1", corev1.RestartPolicyOnFailure, map[string]string{simnode.AnnotationExitCode: "2"})
			eventually(t, 10*time.Second, "a restart", func() (bool, error) {
				p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil || len(p.Status.ContainerStatuses) == 0 {
					return false, err
				}
				c := p.Status.ContainerStatuses[0]
				return c.RestartCount >= 1 && c.LastTerminationState.Terminated != nil && c.LastTerminationState.Terminated.ExitCode == 2 &&
					p.Status.Phase == corev1.PodRunning, nil
			})
		})
	})

	t.Run("graceful deletion is confirmed", func(t *testing.T) {
		pod := waitPhase(t, cs, createPod(t, cs, "deleted", "sim-2", corev1.RestartPolicyAlways, nil), corev1.PodRunning)
		if err := cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The default grace period is 30 s; the node confirms long before.
		waitGone(t, cs, pod, 10*time.Second)
	})

	t.Run("a stopped node stops renewing", func(t *testing.T) {
		setStopped(t, cs, "sim-1", true)
		stoppedAt := waitStill(t, cs, "sim-1")
		pod := createPod(t, cs, "on-stopped", "sim-1", corev1.RestartPolicyAlways, nil)
		// Another node goes on meanwhile.
		waitRenewals(t, cs, "sim-0", 3)
		if r := renewTime(t, cs, "sim-1"); !r.Equal(stoppedAt) {
			t.Fatalf("stopped node renewed its lease: %v → %v", stoppedAt, r)
		}
		if p, _ := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); p.Status.Phase != corev1.PodPending {
			t.Fatalf("a stopped node started a pod: %s", p.Status.Phase)
		}

		setStopped(t, cs, "sim-1", false)
		waitRenewals(t, cs, "sim-1", 2)
		waitPhase(t, cs, pod, corev1.PodRunning)
	})
}

// TestFleetRestart stops a fleet and starts another with the same prefix:
// it adopts the nodes, and the pods keep their addresses.
func TestFleetRestart(t *testing.T) {
	cs := startServer(t)
	ctx := context.Background()
	cfg := fastConfig(cs)
	cfg.Count = 1
	first, err := simnode.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	if err := first.Start(fctx); err != nil {
		t.Fatal(err)
	}
	<-first.Ready()
	pod := waitPhase(t, cs, createPod(t, cs, "kept", "sim-0", corev1.RestartPolicyAlways, nil), corev1.PodRunning)
	before, _ := cs.CoreV1().Nodes().Get(ctx, "sim-0", metav1.GetOptions{})
	cancel()
	first.Stop()

	startFleet(t, cfg)
	after, _ := cs.CoreV1().Nodes().Get(ctx, "sim-0", metav1.GetOptions{})
	if after.UID != before.UID || after.Spec.PodCIDR != before.Spec.PodCIDR {
		t.Fatalf("node not adopted: uid %s→%s, podCIDR %s→%s", before.UID, after.UID, before.Spec.PodCIDR, after.Spec.PodCIDR)
	}
	waitRenewals(t, cs, "sim-0", 2)
	second := waitPhase(t, cs, createPod(t, cs, "new", "sim-0", corev1.RestartPolicyAlways, nil), corev1.PodRunning)
	if second.Status.PodIP == pod.Status.PodIP {
		t.Fatalf("the restarted node gave %s out twice", pod.Status.PodIP)
	}
	if err := cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, cs, pod, 10*time.Second)
}

func createPod(t *testing.T, cs kubernetes.Interface, name, node string, policy corev1.RestartPolicy, annotations map[string]string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: policy,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}, {Name: "log", Image: "busybox"}}},
	}
	out, err := cs.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func waitPhase(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	eventually(t, 10*time.Second, fmt.Sprintf("pod %s %s", pod.Name, phase), func() (bool, error) {
		var err error
		got, err = cs.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == phase, err
	})
	return got
}

func waitGone(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "pod "+pod.Name+" gone", func() (bool, error) {
		_, err := cs.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func setStopped(t *testing.T, cs kubernetes.Interface, node string, stopped bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, simnode.AnnotationStopped)
	if !stopped {
		patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, simnode.AnnotationStopped)
	}
	if _, err := cs.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitStill waits until node's lease has gone unrenewed for ten renewal
// periods, and returns its last renewTime.
func waitStill(t *testing.T, cs kubernetes.Interface, node string) time.Time {
	t.Helper()
	last, since := renewTime(t, cs, node), time.Now()
	eventually(t, 10*time.Second, node+" lease still", func() (bool, error) {
		if r := renewTime(t, cs, node); !r.Equal(last) {
			last, since = r, time.Now()
		}
		return time.Since(since) > 10*renew, nil
	})
	return last
}
