package endpoints_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/endpoints"
)

// view renders subsets as "[ports] ready=a,b notReady=c" lines.
func view(ep *corev1.Endpoints) []string {
	names := func(as []corev1.EndpointAddress) string {
		var out []string
		for _, a := range as {
			out = append(out, a.TargetRef.Name)
		}
		return strings.Join(out, ",")
	}
	var out []string
	for _, ss := range ep.Subsets {
		var ports []string
		for _, p := range ss.Ports {
			ports = append(ports, fmt.Sprintf("%s:%d", p.Name, p.Port))
		}
		out = append(out, fmt.Sprintf("[%s] ready=%s notReady=%s", strings.Join(ports, ","), names(ss.Addresses), names(ss.NotReadyAddresses)))
	}
	slices.Sort(out)
	return out
}

// waitView waits until ns/web's Endpoints render as want.
func waitView(t *testing.T, cs kubernetes.Interface, ns string, want ...string) *corev1.Endpoints {
	t.Helper()
	var ep *corev1.Endpoints
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		var err error
		ep, err = cs.CoreV1().Endpoints(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if diff := cmp.Diff(want, view(ep)); diff != "" {
			return false, "subsets (-want +got):\n" + diff
		}
		return true, ""
	})
	return ep
}

func waitGone(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		_, err := cs.CoreV1().Endpoints(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("endpoints %s/%s: err=%v", ns, name, err)
	})
}

func userEndpoints(ns, name string, annotations map[string]string) *corev1.Endpoints {
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "192.0.2.10"}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		}},
	}
}

func TestEndpoints(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	ctx := context.Background()

	// Before the controller starts: an Endpoints object whose Service is
	// gone, a leader-election record kept in Endpoints, and a Service
	// without a selector with the Endpoints its user wrote.
	controllertest.CreateNamespace(t, cs, "leftover")
	for _, ep := range []*corev1.Endpoints{
		userEndpoints("leftover", "orphan", nil),
		userEndpoints("leftover", "lock", map[string]string{resourcelock.LeaderElectionRecordAnnotationKey: "{}"}),
		userEndpoints("leftover", "manual", nil),
	} {
		if _, err := cs.CoreV1().Endpoints("leftover").Create(ctx, ep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	manual := controllertest.WebService("leftover", func(s *corev1.Service) { s.Name, s.Spec.Selector = "manual", nil })
	controllertest.CreateService(t, cs, manual)
	kubernetesBefore, kubernetesErr := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})

	controllertest.Run(t, c.Config, endpoints.Descriptor)

	t.Run("at start, Endpoints without a Service are deleted", func(t *testing.T) {
		waitGone(t, cs, "leftover", "orphan")
		for _, name := range []string{"lock", "manual"} {
			ep, err := cs.CoreV1().Endpoints("leftover").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if ep.Subsets[0].Addresses[0].IP != "192.0.2.10" {
				t.Errorf("%s rewritten: %v", name, ep.Subsets)
			}
		}
	})

	t.Run("default/kubernetes left alone", func(t *testing.T) {
		after, err := cs.CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(kubernetesErr):
			if !apierrors.IsNotFound(err) {
				t.Errorf("default/kubernetes Endpoints created by the controller (err=%v)", err)
			}
		case kubernetesErr != nil:
			t.Fatal(kubernetesErr)
		case err != nil:
			t.Errorf("default/kubernetes: %v", err)
		case after.ResourceVersion != kubernetesBefore.ResourceVersion && !equalSubsets(after, kubernetesBefore):
			t.Errorf("default/kubernetes rewritten: %v -> %v", kubernetesBefore.Subsets, after.Subsets)
		}
	})

	t.Run("three ready pods", func(t *testing.T) {
		ns := "basic"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns))
		for i := range 3 {
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, fmt.Sprintf("p%d", i), fmt.Sprintf("sim-%d", i), 8080, controllertest.HoldDeletion))
		}
		t.Cleanup(func() {
			for i := range 3 {
				controllertest.ReleaseDeletion(t, cs, ns, fmt.Sprintf("p%d", i))
			}
		})
		ep := waitView(t, cs, ns, "[http:8080] ready=p0,p1,p2 notReady=")
		if !maps.Equal(ep.Labels, map[string]string{"team": "a"}) {
			t.Errorf("labels %v, want the Service's", ep.Labels)
		}
		// A later sync with no new trigger drops the annotation, as
		// upstream's does: when it is there, it is a time.
		if v, ok := ep.Annotations[corev1.EndpointsLastChangeTriggerTime]; !ok {
			t.Logf("no %s annotation at this sync", corev1.EndpointsLastChangeTriggerTime)
		} else if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
			t.Errorf("%s annotation: %v", corev1.EndpointsLastChangeTriggerTime, err)
		}
		for _, a := range ep.Subsets[0].Addresses {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, a.TargetRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if a.IP != p.Status.PodIP || a.NodeName == nil || *a.NodeName != p.Spec.NodeName || a.TargetRef.UID != p.UID {
				t.Errorf("%s: address %s node %v uid %s; pod %s on %s uid %s", p.Name, a.IP, a.NodeName, a.TargetRef.UID, p.Status.PodIP, p.Spec.NodeName, p.UID)
			}
		}

		t.Run("a pod turns not ready", func(t *testing.T) {
			controllertest.SetPodReady(t, cs, ns, "p0", false)
			waitView(t, cs, ns, "[http:8080] ready=p1,p2 notReady=p0")
		})
		t.Run("a terminating pod is left out", func(t *testing.T) {
			if err := cs.CoreV1().Pods(ns).Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitView(t, cs, ns, "[http:8080] ready=p2 notReady=p0")
		})
		t.Run("deleted Endpoints are put back", func(t *testing.T) {
			if err := cs.CoreV1().Endpoints(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitView(t, cs, ns, "[http:8080] ready=p2 notReady=p0")
		})
		t.Run("Service deleted: Endpoints deleted", func(t *testing.T) {
			if err := cs.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitGone(t, cs, ns, "web")
		})
	})

	t.Run("named targetPort resolved per pod", func(t *testing.T) {
		ns := "named"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 8080))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "b", "sim-1", 9090))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "c", "sim-2", 0)) // no port named http
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "d", "sim-2", 8080))
		waitView(t, cs, ns, "[http:8080] ready=a,d notReady=", "[http:9090] ready=b notReady=")
	})

	t.Run("numeric targetPort", func(t *testing.T) {
		ns := "numeric"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns, func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(7000) }))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 0))
		waitView(t, cs, ns, "[http:7000] ready=a notReady=")
	})

	t.Run("publishNotReadyAddresses lists every pod as ready", func(t *testing.T) {
		ns := "publish"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns, func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 8080, controllertest.NeverReady))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "b", "sim-1", 8080, controllertest.HoldDeletion))
		t.Cleanup(func() { controllertest.ReleaseDeletion(t, cs, ns, "b") })
		waitView(t, cs, ns, "[http:8080] ready=a,b notReady=")
		if err := cs.CoreV1().Pods(ns).Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Terminating, still listed; the control is a third pod arriving.
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "c", "sim-2", 8080))
		waitView(t, cs, ns, "[http:8080] ready=a,b,c notReady=")
	})

	t.Run("headless Service: marked, hostnames published", func(t *testing.T) {
		ns := "headless"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns, func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 8080, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a0", "web" }))
		ep := waitView(t, cs, ns, "[http:8080] ready=a notReady=")
		if _, ok := ep.Labels[corev1.IsHeadlessService]; !ok {
			t.Errorf("labels %v lack %s", ep.Labels, corev1.IsHeadlessService)
		}
		if h := ep.Subsets[0].Addresses[0].Hostname; h != "a0" {
			t.Errorf("hostname %q, want a0", h)
		}
	})

	t.Run("no pods: an Endpoints object without subsets", func(t *testing.T) {
		ns := "empty"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns))
		waitView(t, cs, ns)
	})
}

func equalSubsets(a, b *corev1.Endpoints) bool { return cmp.Equal(a.Subsets, b.Subsets) }
