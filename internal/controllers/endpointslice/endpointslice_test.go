package endpointslice_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/endpointslice"
)

// listSlices returns the controller's slices of Service ns/web.
func listSlices(t *testing.T, cs kubernetes.Interface, ns string) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=web," + discoveryv1.LabelManagedBy + "=" + endpointslice.ManagedBy,
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// conds renders an endpoint's conditions as letters: r(eady) s(erving)
// t(erminating), "-" for none.
func conds(ep discoveryv1.Endpoint) string {
	var b strings.Builder
	for _, c := range []struct {
		v *bool
		l string
	}{{ep.Conditions.Ready, "r"}, {ep.Conditions.Serving, "s"}, {ep.Conditions.Terminating, "t"}} {
		if c.v != nil && *c.v {
			b.WriteString(c.l)
		}
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// view renders slices as "ports -> pod:conds ..." lines, sorted, for
// comparison with what a test expects.
func view(items []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range items {
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s:%d", *p.Name, *p.Port))
		}
		var eps []string
		for _, ep := range s.Endpoints {
			eps = append(eps, ep.TargetRef.Name+":"+conds(ep))
		}
		slices.Sort(eps)
		out = append(out, fmt.Sprintf("[%s] %s", strings.Join(ports, ","), strings.Join(eps, " ")))
	}
	slices.Sort(out)
	return out
}

// waitView waits until the Service's slices render as want.
func waitView(t *testing.T, cs kubernetes.Interface, ns string, want ...string) []discoveryv1.EndpointSlice {
	t.Helper()
	var items []discoveryv1.EndpointSlice
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		items = listSlices(t, cs, ns)
		got := view(items)
		if diff := cmp.Diff(want, got); diff != "" {
			return false, "slices (-want +got):\n" + diff
		}
		return true, ""
	})
	return items
}

func TestEndpointSlices(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	ctx := context.Background()
	stop := controllertest.Run(t, c.Config, endpointslice.Descriptor)

	t.Run("three ready pods: one slice", func(t *testing.T) {
		ns := "basic"
		controllertest.CreateNamespace(t, cs, ns)
		svc := controllertest.CreateService(t, cs, controllertest.WebService(ns))
		for i := range 3 {
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, fmt.Sprintf("p%d", i), fmt.Sprintf("sim-%d", i), 8080, controllertest.HoldDeletion))
		}
		t.Cleanup(func() {
			for i := range 3 {
				controllertest.ReleaseDeletion(t, cs, ns, fmt.Sprintf("p%d", i))
			}
		})
		items := waitView(t, cs, ns, "[http:8080] p0:rs p1:rs p2:rs")
		s := items[0]
		if !strings.HasPrefix(s.Name, "web-") || s.GenerateName != "web-" {
			t.Errorf("name %q generateName %q, want generated from web-", s.Name, s.GenerateName)
		}
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			t.Errorf("addressType %s", s.AddressType)
		}
		wantLabels := map[string]string{"team": "a", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: endpointslice.ManagedBy}
		if !maps.Equal(s.Labels, wantLabels) {
			t.Errorf("labels %v, want %v", s.Labels, wantLabels)
		}
		wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: svc.UID, Controller: new(true), BlockOwnerDeletion: new(true)}}
		if diff := cmp.Diff(wantOwner, s.OwnerReferences); diff != "" {
			t.Errorf("owner references (-want +got):\n%s", diff)
		}
		if _, ok := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; !ok {
			t.Errorf("no %s annotation", corev1.EndpointsLastChangeTriggerTime)
		}
		for _, ep := range s.Endpoints {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, ep.TargetRef.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node, err := cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			zone := node.Labels[corev1.LabelTopologyZone]
			if zone == "" || ep.Zone == nil || *ep.Zone != zone {
				t.Errorf("%s: zone %v, want its node's %q", p.Name, ep.Zone, zone)
			}
			if ep.NodeName == nil || *ep.NodeName != p.Spec.NodeName {
				t.Errorf("%s: nodeName %v, want %s", p.Name, ep.NodeName, p.Spec.NodeName)
			}
			if !slices.Equal(ep.Addresses, []string{p.Status.PodIP}) || ep.TargetRef.UID != p.UID {
				t.Errorf("%s: addresses %v targetRef %+v; pod IP %s uid %s", p.Name, ep.Addresses, ep.TargetRef, p.Status.PodIP, p.UID)
			}
		}

		t.Run("a pod turns not ready", func(t *testing.T) {
			controllertest.SetPodReady(t, cs, ns, "p0", false)
			waitView(t, cs, ns, "[http:8080] p0:- p1:rs p2:rs")
		})
		t.Run("a pod terminating: serving but not ready", func(t *testing.T) {
			if err := cs.CoreV1().Pods(ns).Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitView(t, cs, ns, "[http:8080] p0:- p1:st p2:rs")
		})
		t.Run("slice updated in place", func(t *testing.T) {
			if got := listSlices(t, cs, ns); len(got) != 1 || got[0].UID != s.UID {
				t.Errorf("slices %v, want the original %s only", view(got), s.Name)
			}
		})
	})

	t.Run("named targetPort resolved per pod", func(t *testing.T) {
		ns := "named"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 8080))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "b", "sim-1", 9090))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "c", "sim-2", 0)) // no port named http
		waitView(t, cs, ns, "[] c:rs", "[http:8080] a:rs", "[http:9090] b:rs")
	})

	t.Run("numeric targetPort", func(t *testing.T) {
		ns := "numeric"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns, func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(7000) }))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 0))
		waitView(t, cs, ns, "[http:7000] a:rs")
	})

	t.Run("publishNotReadyAddresses: not ready pods are ready endpoints", func(t *testing.T) {
		ns := "publish"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns, func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 8080, controllertest.NeverReady))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "b", "sim-1", 8080))
		waitView(t, cs, ns, "[http:8080] a:r b:rs")
	})

	t.Run("headless Service: marked, hostnames published", func(t *testing.T) {
		ns := "headless"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns, func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 8080, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a0", "web" }))
		items := waitView(t, cs, ns, "[http:8080] a:rs")
		if _, ok := items[0].Labels[corev1.IsHeadlessService]; !ok {
			t.Errorf("labels %v lack %s", items[0].Labels, corev1.IsHeadlessService)
		}
		if h := items[0].Endpoints[0].Hostname; h == nil || *h != "a0" {
			t.Errorf("hostname %v, want a0", h)
		}
	})

	t.Run("no pods: one empty placeholder slice", func(t *testing.T) {
		ns := "empty"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns))
		waitView(t, cs, ns, "[] ")
	})

	t.Run("Services without a selector are left alone", func(t *testing.T) {
		ns := "manual"
		controllertest.CreateNamespace(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns, func(s *corev1.Service) { s.Spec.Selector = nil }))
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "a", "sim-0", 8080))
		// The control: a Service with a selector in the same namespace
		// gets its slice, so the controller has seen this namespace.
		ctl := controllertest.WebService(ns)
		ctl.Name = "control"
		controllertest.CreateService(t, cs, ctl)
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=control"})
			if err != nil {
				return false, err.Error()
			}
			return len(list.Items) == 1 && len(list.Items[0].Endpoints) == 1, fmt.Sprintf("control slices: %d", len(list.Items))
		})
		if got := listSlices(t, cs, ns); len(got) != 0 {
			t.Errorf("selector-less Service got slices: %v", view(got))
		}
		list, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=kubernetes," + discoveryv1.LabelManagedBy + "=" + endpointslice.ManagedBy,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Errorf("default/kubernetes got %d slices from the controller", len(list.Items))
		}
	})

	t.Run("250 pods: slices of 100 at most, updated in place", func(t *testing.T) {
		ns := "scale"
		controllertest.CreateNamespace(t, cs, ns)
		for i := range 250 {
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, fmt.Sprintf("p%03d", i), fmt.Sprintf("sim-%d", i%3), 8080))
		}
		waitRunning(t, cs, ns, 250)
		w := watchSlices(t, cs, ns)
		controllertest.CreateService(t, cs, controllertest.WebService(ns))

		initial := waitSliceSizes(t, cs, ns, 250)
		if len(initial) != 3 {
			t.Fatalf("%d slices for 250 endpoints, want 3", len(initial))
		}
		for _, s := range initial {
			if len(s.Endpoints) > endpointslice.DefaultMaxEndpointsPerSlice {
				t.Errorf("slice %s holds %d endpoints", s.Name, len(s.Endpoints))
			}
		}
		created, _, deleted := w.counts()
		if created != 3 || deleted != 0 {
			t.Errorf("creating the Service: %d slices created, %d deleted; want 3, 0", created, deleted)
		}

		// Ten pods of the half-full slice go: that slice shrinks, the two
		// full ones are not written at all, none is made or removed.
		victim := slices.IndexFunc(initial, func(s discoveryv1.EndpointSlice) bool { return len(s.Endpoints) == 50 })
		if victim < 0 {
			t.Fatalf("no slice of 50 among %v", sizes(initial))
		}
		zero := int64(0)
		deletePods := func(eps []discoveryv1.Endpoint) {
			t.Helper()
			for _, ep := range eps {
				if err := cs.CoreV1().Pods(ns).Delete(ctx, ep.TargetRef.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
					t.Fatal(err)
				}
			}
		}
		deletePods(initial[victim].Endpoints[:10])
		after := waitSliceSizes(t, cs, ns, 240)
		created, updated, deleted := w.counts()
		if created != 3 || deleted != 0 {
			t.Errorf("after deleting 10 pods: %d slices created, %d deleted in all; want 3, 0", created, deleted)
		}
		checkWrites(t, initial, after, victim)
		t.Logf("250 pods: 3 slices created; deleting 10 pods of one slice: %d slice updates", updated)

		t.Run("a restarted controller reuses the slices", func(t *testing.T) {
			stop()
			// While no controller runs, 5 pods of the same slice go and 2
			// pods come.
			deletePods(after[victim].Endpoints[:5])
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "q000", "sim-0", 8080))
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "q001", "sim-1", 8080))
			waitRunning(t, cs, ns, 237)
			controllertest.Run(t, c.Config, endpointslice.Descriptor)
			restarted := waitSliceSizes(t, cs, ns, 237)
			if created, _, deleted := w.counts(); created != 3 || deleted != 0 {
				t.Errorf("after the restart: %d slices created, %d deleted in all; want 3, 0", created, deleted)
			}
			// The newcomers fill the slice being written anyway.
			checkWrites(t, after, restarted, victim)
			if n := len(restarted[victim].Endpoints); n != 37 {
				t.Errorf("slice %s holds %d endpoints, want 35 left + 2 new", restarted[victim].Name, n)
			}
		})
	})

	t.Run("Service deleted: slices are owned by it", func(t *testing.T) {
		// The garbage collector deletes them by their owner reference
		// (checked above); this controller must not write them again.
		ns := "named"
		before := listSlices(t, cs, ns)
		if err := cs.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		controllertest.Consistently(t, time.Second, func() (bool, string) {
			diff := cmp.Diff(before, listSlices(t, cs, ns))
			return diff == "", "slices of a deleted Service changed (-before +after):\n" + diff
		})
	})
}

// sliceWatch counts the slice events of one namespace.
type sliceWatch struct {
	mu                        sync.Mutex
	created, updated, deleted int
}

func (w *sliceWatch) counts() (created, updated, deleted int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.created, w.updated, w.deleted
}

// watchSlices watches ns's slices until the test ends.
func watchSlices(t *testing.T, cs kubernetes.Interface, ns string) *sliceWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := cs.DiscoveryV1().EndpointSlices(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &sliceWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			w.mu.Lock()
			switch ev.Type {
			case watch.Added:
				w.created++
			case watch.Modified:
				w.updated++
			case watch.Deleted:
				w.deleted++
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		wi.Stop()
		<-done
	})
	return w
}

// waitSliceSizes waits until the Service's slices hold total endpoints,
// all ready.
func waitSliceSizes(t *testing.T, cs kubernetes.Interface, ns string, total int) []discoveryv1.EndpointSlice {
	t.Helper()
	var items []discoveryv1.EndpointSlice
	controllertest.Eventually(t, 15*time.Second, func() (bool, string) {
		items = listSlices(t, cs, ns)
		n, ready := 0, 0
		var sizes []int
		for _, s := range items {
			n += len(s.Endpoints)
			sizes = append(sizes, len(s.Endpoints))
			for _, ep := range s.Endpoints {
				if conds(ep) == "rs" {
					ready++
				}
			}
		}
		return n == total && ready == total, fmt.Sprintf("slice sizes %v (%d ready), want %d endpoints", sizes, ready, total)
	})
	return items
}

// checkWrites checks that from before to after the same slices exist and
// only the one at index written was written.
func checkWrites(t *testing.T, before, after []discoveryv1.EndpointSlice, written int) {
	t.Helper()
	if !slices.Equal(names(before), names(after)) {
		t.Fatalf("slices %v became %v", names(before), names(after))
	}
	for i := range before {
		same := before[i].ResourceVersion == after[i].ResourceVersion
		switch {
		case i == written && same:
			t.Errorf("slice %s not updated", before[i].Name)
		case i != written && !same:
			t.Errorf("slice %s (%d endpoints) rewritten though none of its endpoints changed", before[i].Name, len(before[i].Endpoints))
		}
	}
}

func sizes(items []discoveryv1.EndpointSlice) []int {
	var out []int
	for _, s := range items {
		out = append(out, len(s.Endpoints))
	}
	return out
}

func names(items []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range items {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}
