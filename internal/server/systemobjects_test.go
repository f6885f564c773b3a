package server

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/auth"
)

// TestSystemObjectsRecreated checks that the system objects a user deletes
// come back within seconds, as upstream's API server re-creates them: the
// kube-node-lease namespace, the kubernetes Service and the Endpoints and
// EndpointSlice naming the API server; and that the immortal namespaces
// cannot be deleted at all. It drives the deletions with kubectl.
func TestSystemObjectsRecreated(t *testing.T) {
	srv, rc := startTestServer(t, Config{AdvertiseAddress: "192.0.2.10", Controllers: []string{"namespace"}, DisableScheduler: true})
	cs := kubernetes.NewForConfigOrDie(rc)
	k := kubectlFor(t, srv.Kubeconfig)
	ctx := context.Background()
	port := int32(portOf(t, srv.URL))

	type object struct {
		kind, name string
		get        func() (metav1.Object, error)
	}
	objects := []object{
		{"svc", "kubernetes", func() (metav1.Object, error) {
			return cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		}},
		{"endpoints", "kubernetes", func() (metav1.Object, error) {
			return cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		}},
		{"endpointslice", "kubernetes", func() (metav1.Object, error) {
			return cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		}},
		{"svc", "kube-dns", func() (metav1.Object, error) {
			return cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
		}},
	}
	// back waits for a new object (another UID) to replace old.
	back := func(t *testing.T, what string, old types.UID, get func() (metav1.Object, error)) metav1.Object {
		t.Helper()
		var got metav1.Object
		eventually(t, 20*time.Second, what+" re-created", func() (bool, error) {
			o, err := get()
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			got = o
			return err == nil && o.GetUID() != old && o.GetDeletionTimestamp() == nil, err
		})
		return got
	}

	t.Run("the API server's endpoints are published", func(t *testing.T) {
		var slice metav1.Object
		eventually(t, 20*time.Second, "endpointslice default/kubernetes", func() (bool, error) {
			o, err := objects[2].get()
			slice = o
			return err == nil, nil
		})
		s, _ := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, slice.GetName(), metav1.GetOptions{})
		if len(s.Endpoints) != 1 || !slices.Equal(s.Endpoints[0].Addresses, []string{"192.0.2.10"}) || len(s.Ports) != 1 || *s.Ports[0].Port != port ||
			s.Labels["kubernetes.io/service-name"] != "kubernetes" {
			t.Errorf("endpointslice %+v, want 192.0.2.10:%d", s, port)
		}
		ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) != 1 || ep.Subsets[0].Addresses[0].IP != "192.0.2.10" || ep.Subsets[0].Ports[0].Port != port {
			t.Errorf("endpoints %+v (%v)", ep, err)
		}
	})

	kept := map[string]string{} // resourceVersion of each, once re-created
	for _, o := range objects {
		t.Run("deleted "+o.kind+" "+o.name+" comes back", func(t *testing.T) {
			old, err := o.get()
			if err != nil {
				t.Fatal(err)
			}
			ns := "default"
			if o.name == "kube-dns" {
				ns = "kube-system"
			}
			k.ok(t, "-n", ns, "delete", o.kind, o.name)
			kept[o.kind+o.name] = back(t, o.kind, old.GetUID(), o.get).GetResourceVersion()
		})
	}

	t.Run("deleted kube-node-lease comes back", func(t *testing.T) {
		getNS := func() (metav1.Object, error) {
			return cs.CoreV1().Namespaces().Get(ctx, corev1.NamespaceNodeLease, metav1.GetOptions{})
		}
		old, err := getNS()
		if err != nil {
			t.Fatal(err)
		}
		k.ok(t, "delete", "namespace", corev1.NamespaceNodeLease, "--wait=false")
		ns := back(t, "namespace kube-node-lease", old.GetUID(), getNS).(*corev1.Namespace)
		if ns.Status.Phase != corev1.NamespaceActive {
			t.Errorf("phase %s", ns.Status.Phase)
		}
		// The passes that re-created it left the other objects alone.
		for _, o := range objects {
			cur, err := o.get()
			if err != nil {
				t.Fatal(err)
			}
			if rv := cur.GetResourceVersion(); kept[o.kind+o.name] != "" && rv != kept[o.kind+o.name] {
				t.Errorf("%s rewritten by a pass (resourceVersion %s, was %s)", o.kind, rv, kept[o.kind+o.name])
			}
		}
	})

	// The default ServiceCIDR is the service range, Ready as upstream's
	// default-servicecidr controller marks it, and comes back when deleted.
	t.Run("default servicecidr", func(t *testing.T) {
		var uid types.UID
		for round := range 2 {
			eventually(t, 20*time.Second, "servicecidr kubernetes Ready", func() (bool, error) {
				c, err := cs.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				if !slices.Equal(c.Spec.CIDRs, []string{"10.96.0.0/12"}) {
					t.Fatalf("cidrs %v, want the default service range", c.Spec.CIDRs)
				}
				if c.UID == uid {
					return false, nil
				}
				uid = c.UID
				return apimeta.IsStatusConditionTrue(c.Status.Conditions, "Ready"), nil
			})
			if round == 0 {
				out := k.ok(t, "get", "servicecidr")
				if !strings.Contains(out, "kubernetes   10.96.0.0/12") {
					t.Errorf("kubectl get servicecidr:\n%s", out)
				}
				k.ok(t, "delete", "servicecidr", "kubernetes")
			}
		}
	})

	// Each FlowSchema says whether its priority level exists (kubectl's
	// MISSINGPL), as upstream's APF configuration controller keeps it.
	t.Run("flowschema dangling condition", func(t *testing.T) {
		dangling := func(name string) func() (bool, error) {
			return func() (bool, error) {
				fs, err := cs.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, c := range fs.Status.Conditions {
					if c.Type == "Dangling" {
						return string(c.Status) == map[string]string{"exempt": "False", "service-accounts": "True"}[name], nil
					}
				}
				return false, nil
			}
		}
		eventually(t, 20*time.Second, "exempt Dangling=False", dangling("exempt"))
		k.ok(t, "delete", "prioritylevelconfiguration", "workload-low")
		eventually(t, 20*time.Second, "service-accounts Dangling=True", dangling("service-accounts"))
		out := k.ok(t, "get", "flowschemas", "exempt", "service-accounts")
		if !strings.Contains(out, "MISSINGPL") || !strings.HasSuffix(strings.TrimSpace(strings.Split(out, "\n")[1]), "False") {
			t.Errorf("kubectl get flowschemas:\n%s", out)
		}
	})

	for _, name := range []string{"default", "kube-system", "kube-public"} {
		t.Run(name+" cannot be deleted", func(t *testing.T) {
			r := k.run(t, "", "delete", "namespace", name)
			want := `Error from server (Forbidden): namespaces "` + name + `" is forbidden: this namespace may not be deleted`
			if r.code != 1 || r.stderr != want+"\n" {
				t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
			}
		})
	}
}

// TestBootstrapRBACReconciled checks that the bootstrap RBAC policy is put
// back on start as upstream does: missing rules and subjects are added,
// what an administrator added stays, and an object annotated
// rbac.authorization.kubernetes.io/autoupdate: "false" is left alone.
func TestBootstrapRBACReconciled(t *testing.T) {
	dir := t.TempDir()
	start := func() (*Server, *kubernetes.Clientset) {
		t.Helper()
		srv, err := Start(context.Background(), Config{DataDir: dir, Controllers: []string{"-*"}, DisableScheduler: true})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return srv, kubernetes.NewForConfigOrDie(rc)
	}
	ctx := context.Background()
	srv, cs := start()
	roles, bindings := cs.RbacV1().ClusterRoles(), cs.RbacV1().ClusterRoleBindings()
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}

	// An administrator's changes: one role loses its rules and gains one,
	// another is cut down and marked not to be updated, a binding loses
	// its subjects and gains another.
	discovery, err := roles.Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRules := discovery.Rules
	discovery.Rules = []rbacv1.PolicyRule{extra}
	if _, err := roles.Update(ctx, discovery, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	frozen, err := roles.Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	frozen.Rules = []rbacv1.PolicyRule{extra}
	frozen.Annotations[auth.AutoUpdateAnnotation] = "false"
	if _, err := roles.Update(ctx, frozen, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding, err := bindings.Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSubjects := binding.Subjects
	jane := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "jane"}
	binding.Subjects = []rbacv1.Subject{jane}
	if _, err := bindings.Update(ctx, binding, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	srv, cs = start()
	defer srv.Stop()
	roles, bindings = cs.RbacV1().ClusterRoles(), cs.RbacV1().ClusterRoleBindings()
	t.Run("missing rules are added, the administrator's kept", func(t *testing.T) {
		got, err := roles.Get(ctx, "system:discovery", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range append([]rbacv1.PolicyRule{extra}, wantRules...) {
			if !containsRule(got.Rules, r) {
				t.Errorf("rule %v missing from %v", r, got.Rules)
			}
		}
	})
	t.Run("autoupdate false is left alone", func(t *testing.T) {
		got, err := roles.Get(ctx, "system:basic-user", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Rules) != 1 || !containsRule(got.Rules, extra) {
			t.Errorf("rules %v, want only the administrator's", got.Rules)
		}
	})
	t.Run("missing subjects are added", func(t *testing.T) {
		got, err := bindings.Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append([]rbacv1.Subject{jane}, wantSubjects...) {
			if !slices.Contains(got.Subjects, s) {
				t.Errorf("subject %v missing from %v", s, got.Subjects)
			}
		}
	})
}

// portOf is the port of a server URL.
func portOf(t *testing.T, url string) int {
	t.Helper()
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == ':' {
			p, err := strconv.Atoi(url[i+1:])
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no port in %s", url)
	return 0
}
