package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// End-to-end tests of the REST semantics Kubernetes documents, driven with
// client-go against a real server (embedded etcd, loopback HTTPS).

func testDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

func testPod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

func testConfigMap(name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: map[string]string{"k": "v"}}
}

func names[T any](items []T, name func(*T) string) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, name(&items[i]))
	}
	return out
}

func configMapNames(l *corev1.ConfigMapList) []string {
	return names(l.Items, func(c *corev1.ConfigMap) string { return c.Name })
}

func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

func TestAPIRESTSemantics(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "rest")

	t.Run("create fills generateName uid creationTimestamp generation", func(t *testing.T) {
		d := testDeployment("", 1)
		d.GenerateName = "web-"
		got, err := e.cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Upstream appends five random characters to the prefix.
		if !strings.HasPrefix(got.Name, "web-") || len(got.Name) != len("web-")+5 {
			t.Errorf("name %q: want web- plus 5 characters", got.Name)
		}
		if got.UID == "" || got.CreationTimestamp.IsZero() || got.ResourceVersion == "" {
			t.Errorf("system metadata not set: %+v", got.ObjectMeta)
		}
		if got.Generation != 1 {
			t.Errorf("generation %d, want 1 on create", got.Generation)
		}
		// A kind without a spec/status split has no generation.
		cm, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cm.Name) != len("cm-")+5 || cm.UID == "" || cm.UID == got.UID {
			t.Errorf("configmap metadata: %+v", cm.ObjectMeta)
		}
	})

	t.Run("generation follows spec only", func(t *testing.T) {
		dc := e.cs.AppsV1().Deployments(ns)
		if _, err := dc.Create(ctx, testDeployment("gen", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name     string
			change   func(d *appsv1.Deployment) (*appsv1.Deployment, error)
			wantBump bool
		}{
			{"label change", func(d *appsv1.Deployment) (*appsv1.Deployment, error) {
				d.Labels = map[string]string{"new": "label"}
				return dc.Update(ctx, d, metav1.UpdateOptions{})
			}, false},
			{"status change", func(d *appsv1.Deployment) (*appsv1.Deployment, error) {
				d.Status.Replicas, d.Status.ObservedGeneration = 1, d.Generation
				return dc.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			}, false},
			{"spec change", func(d *appsv1.Deployment) (*appsv1.Deployment, error) {
				d.Spec.Replicas = new(int32(3))
				return dc.Update(ctx, d, metav1.UpdateOptions{})
			}, true},
			// Upstream's deployment strategy counts annotations too: the
			// controller copies them onto the replica sets.
			{"annotation change", func(d *appsv1.Deployment) (*appsv1.Deployment, error) {
				d.Annotations = map[string]string{"note": "x"}
				return dc.Update(ctx, d, metav1.UpdateOptions{})
			}, true},
			{"no-op update", func(d *appsv1.Deployment) (*appsv1.Deployment, error) {
				return dc.Update(ctx, d, metav1.UpdateOptions{})
			}, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before, err := dc.Get(ctx, "gen", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				after, err := tc.change(before.DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				want := before.Generation
				if tc.wantBump {
					want++
				}
				if after.Generation != want {
					t.Errorf("generation %d -> %d, want %d", before.Generation, after.Generation, want)
				}
			})
		}
	})

	t.Run("status only through status subresource", func(t *testing.T) {
		dc := e.cs.AppsV1().Deployments(ns)
		d, err := dc.Create(ctx, testDeployment("split", 2), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A status written through the main resource is dropped.
		d.Status.Replicas = 7
		d.Spec.MinReadySeconds = 5
		d, err = dc.Update(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.Replicas != 0 || d.Spec.MinReadySeconds != 5 {
			t.Fatalf("main update: status.replicas=%d minReadySeconds=%d, want 0 and 5", d.Status.Replicas, d.Spec.MinReadySeconds)
		}
		// A spec written through /status is dropped.
		d.Spec.Replicas = new(int32(9))
		d.Status.Replicas = 2
		written, err := dc.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := dc.Get(ctx, "split", metav1.GetOptions{})
		if err == nil && written.ResourceVersion != got.ResourceVersion {
			t.Errorf("status write answered resourceVersion %s, stored %s", written.ResourceVersion, got.ResourceVersion)
		}
		if err != nil {
			t.Fatal(err)
		}
		if *got.Spec.Replicas != 2 || got.Status.Replicas != 2 {
			t.Fatalf("after status update: spec.replicas=%d status.replicas=%d, want 2 and 2", *got.Spec.Replicas, got.Status.Replicas)
		}
	})

	t.Run("binding assigns a node once", func(t *testing.T) {
		pc := e.cs.CoreV1().Pods(ns)
		if _, err := pc.Create(ctx, testPod("bind-me", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		bind := func(node string) error {
			return pc.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bind-me"},
				Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
		}
		if err := bind("node-a"); err != nil {
			t.Fatal(err)
		}
		p, err := pc.Get(ctx, "bind-me", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "node-a" {
			t.Fatalf("nodeName %q, want node-a", p.Spec.NodeName)
		}
		wantStatus(t, bind("node-b"), http.StatusConflict, metav1.StatusReasonConflict)
	})

	t.Run("scale subresource", func(t *testing.T) {
		dc := e.cs.AppsV1().Deployments(ns)
		d, err := dc.Create(ctx, testDeployment("scaled", 2), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := dc.GetScale(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Spec.Replicas != 2 || sc.Status.Selector != "app=scaled" || sc.UID != d.UID {
			t.Fatalf("scale %+v", sc)
		}
		stale := sc.DeepCopy()
		sc.Spec.Replicas = 5
		out, err := dc.UpdateScale(ctx, "scaled", sc, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Spec.Replicas != 5 {
			t.Fatalf("scale update returned %d replicas", out.Spec.Replicas)
		}
		got, err := dc.Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *got.Spec.Replicas != 5 || got.Generation != d.Generation+1 {
			t.Fatalf("deployment after scale: replicas=%d generation=%d", *got.Spec.Replicas, got.Generation)
		}
		// The Scale carries the parent's resourceVersion: a stale one conflicts.
		stale.Spec.Replicas = 1
		_, err = dc.UpdateScale(ctx, "scaled", stale, metav1.UpdateOptions{})
		wantStatus(t, err, http.StatusConflict, metav1.StatusReasonConflict)
	})

	t.Run("namespaced and cluster-scoped kinds", func(t *testing.T) {
		cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-reader"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
		got, err := e.cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Namespace != "" {
			t.Errorf("cluster-scoped object got namespace %q", got.Namespace)
		}
		if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, testConfigMap("scoped", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A cluster-scoped kind has no namespaced path and a namespaced
		// object no cluster path, as upstream routes them.
		for _, path := range []string{
			"/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/clusterroles/e2e-reader",
			"/api/v1/configmaps/scoped",
		} {
			if r := e.do(t, http.MethodGet, path, nil, nil); r.code != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", path, r.code)
			}
		}
		for _, path := range []string{
			"/apis/rbac.authorization.k8s.io/v1/clusterroles/e2e-reader",
			"/api/v1/namespaces/" + ns + "/configmaps/scoped",
		} {
			if r := e.do(t, http.MethodGet, path, nil, nil); r.code != http.StatusOK {
				t.Errorf("GET %s: %d, want 200", path, r.code)
			}
		}
	})

	t.Run("list across all namespaces", func(t *testing.T) {
		other := e.namespace(t, "rest-other")
		sel := map[string]string{"spread": "yes"}
		for _, n := range []string{ns, other} {
			if _, err := e.cs.CoreV1().ConfigMaps(n).Create(ctx, testConfigMap("spread", sel), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for name, c := range map[string]*kubernetes.Clientset{"protobuf": e.cs, "json": e.jcs} {
			list, err := c.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: "spread=yes"})
			if err != nil {
				t.Fatal(err)
			}
			got := names(list.Items, func(c *corev1.ConfigMap) string { return c.Namespace + "/" + c.Name })
			if !sameSet(got, []string{ns + "/spread", other + "/spread"}) {
				t.Errorf("%s: all-namespace list = %v", name, got)
			}
		}
	})

	t.Run("deletecollection with a label selector", func(t *testing.T) {
		dcns := e.namespace(t, "rest-dc")
		for _, c := range []struct{ name, tier string }{{"a1", "a"}, {"a2", "a"}, {"a3", "a"}, {"b1", "b"}, {"b2", "b"}} {
			if _, err := e.cs.CoreV1().ConfigMaps(dcns).Create(ctx, testConfigMap(c.name, map[string]string{"tier": c.tier}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.cs.CoreV1().ConfigMaps(dcns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "tier=a"}); err != nil {
			t.Fatal(err)
		}
		list, err := e.cs.CoreV1().ConfigMaps(dcns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := configMapNames(list); !sameSet(got, []string{"b1", "b2"}) {
			t.Fatalf("left after deletecollection: %v, want [b1 b2]", got)
		}
	})

	t.Run("dryRun=All writes nothing", func(t *testing.T) {
		cmc := e.cs.CoreV1().ConfigMaps(ns)
		dry := []string{metav1.DryRunAll}
		out, err := cmc.Create(ctx, testConfigMap("dry", nil), metav1.CreateOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if out.Name != "dry" || out.UID == "" {
			t.Errorf("dry-run create returned %+v", out.ObjectMeta)
		}
		if _, err := cmc.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("dry-run create stored the object: %v", err)
		}
		real, err := cmc.Create(ctx, testConfigMap("dry", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changed := real.DeepCopy()
		changed.Data["k"] = "dry"
		if _, err := cmc.Update(ctx, changed, metav1.UpdateOptions{DryRun: dry}); err != nil {
			t.Fatal(err)
		}
		if err := cmc.Delete(ctx, "dry", metav1.DeleteOptions{DryRun: dry}); err != nil {
			t.Fatal(err)
		}
		got, err := cmc.Get(ctx, "dry", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("dry-run delete removed the object: %v", err)
		}
		if got.Data["k"] != "v" || got.ResourceVersion != real.ResourceVersion {
			t.Fatalf("dry-run update changed the object: %v rv %s->%s", got.Data, real.ResourceVersion, got.ResourceVersion)
		}
	})
}

func TestAPISelectors(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "sel")
	for name, labels := range map[string]map[string]string{
		"a": {"env": "prod"},
		"b": {"env": "dev"},
		"c": {"env": "test"},
		"d": {"other": "x"},
		"e": {"env": "prod", "tier": "web"},
	} {
		if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, testConfigMap(name, labels), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("label selectors", func(t *testing.T) {
		cases := []struct {
			name, selector string
			want           []string
		}{
			{"equals", "env=prod", []string{"a", "e"}},
			{"double equals", "env==prod", []string{"a", "e"}},
			// != matches objects without the label too.
			{"not equals", "env!=prod", []string{"b", "c", "d"}},
			{"in", "env in (dev,test)", []string{"b", "c"}},
			{"notin", "env notin (prod,dev)", []string{"c", "d"}},
			{"exists", "env", []string{"a", "b", "c", "e"}},
			{"does not exist", "!env", []string{"d"}},
			{"conjunction", "env=prod,tier=web", []string{"e"}},
			{"no match", "env=staging", []string{}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				// Without a limit the list comes from the watch cache, with
				// one from etcd: both must filter alike.
				for _, limit := range []int64{0, 100} {
					list, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: tc.selector, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					if got := configMapNames(list); !sameSet(got, tc.want) {
						t.Errorf("limit %d: %q selected %v, want %v", limit, tc.selector, got, tc.want)
					}
				}
			})
		}
	})

	// Pods: one per node, one unscheduled; events about two of them.
	pc := e.cs.CoreV1().Pods(ns)
	for _, p := range []*corev1.Pod{testPod("p1", "node-a"), testPod("p2", "node-b"), testPod("p3", "")} {
		if _, err := pc.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p1, err := pc.Get(ctx, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p1.Status.Phase = corev1.PodRunning
	if _, err := pc.UpdateStatus(ctx, p1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, about := range []string{"p1", "p2", "p1"} {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: about + "-ev-" + string(rune('a'+i))},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: about},
			Reason:         "Test", Message: "e2e", Type: corev1.EventTypeNormal,
			Source:         corev1.EventSource{Component: "e2e"},
			FirstTimestamp: metav1.NewTime(time.Now()), LastTimestamp: metav1.NewTime(time.Now()), Count: 1,
		}
		if _, err := e.cs.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other := e.namespace(t, "sel-other")
	if _, err := e.cs.CoreV1().ConfigMaps(other).Create(ctx, testConfigMap("a", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("field selectors", func(t *testing.T) {
		cases := []struct {
			name      string
			namespace string
			resource  string
			selector  string
			want      []string // namespace/name
		}{
			{"configmap by name", ns, "configmaps", "metadata.name=b", []string{ns + "/b"}},
			{"configmap not name", ns, "configmaps", "metadata.name!=a", []string{ns + "/b", ns + "/c", ns + "/d", ns + "/e"}},
			{"name across namespaces", "", "configmaps", "metadata.name=a", []string{ns + "/a", other + "/a"}},
			{"namespace across namespaces", "", "configmaps", "metadata.namespace=" + other, []string{other + "/a"}},
			{"pods on a node", ns, "pods", "spec.nodeName=node-a", []string{ns + "/p1"}},
			// The scheduler's query: pods with no node yet.
			{"unscheduled pods", ns, "pods", "spec.nodeName=", []string{ns + "/p3"}},
			{"running pods", ns, "pods", "status.phase=Running", []string{ns + "/p1"}},
			{"pending pods on a node", ns, "pods", "status.phase=Pending,spec.nodeName!=", []string{ns + "/p2"}},
			{"events about a pod", ns, "events", "involvedObject.name=p1", []string{ns + "/p1-ev-a", ns + "/p1-ev-c"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				for _, limit := range []int64{0, 100} {
					list, err := e.meta.Resource(corev1.SchemeGroupVersion.WithResource(tc.resource)).Namespace(tc.namespace).
						List(ctx, metav1.ListOptions{FieldSelector: tc.selector, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					got := names(list.Items, func(o *metav1.PartialObjectMetadata) string { return o.Namespace + "/" + o.Name })
					if !sameSet(got, tc.want) {
						t.Errorf("limit %d: %s %q selected %v, want %v", limit, tc.resource, tc.selector, got, tc.want)
					}
				}
			})
		}
	})

	t.Run("unsupported field label is a bad request", func(t *testing.T) {
		cases := []struct {
			name string
			call func() error
		}{
			{"list configmaps by a pod field", func() error {
				_, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=x"})
				return err
			}},
			{"list pods by an unknown field", func() error {
				_, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"})
				return err
			}},
			{"watch pods by an unknown field", func() error {
				w, err := e.cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "spec.bogus=x"})
				if err == nil {
					w.Stop()
				}
				return err
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				st := wantStatus(t, tc.call(), http.StatusBadRequest, metav1.StatusReasonBadRequest)
				if !strings.Contains(st.Message, "field label not supported") {
					t.Errorf("message %q", st.Message)
				}
			})
		}
	})
}
