package auth

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func nodeUser(name string) *User {
	return &User{Name: NodeUserName(name), Groups: []string{NodesGroup, AllAuthenticated}}
}

// nodeTestPod is a pod in "ns" bound to node that references one object
// of every kind the graph follows.
func nodeTestPod(name, node string) *corev1.Pod {
	claim := "claim-" + name
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PodSpec{
			NodeName:           node,
			ServiceAccountName: "sa-" + name,
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull-" + name}},
			InitContainers: []corev1.Container{{Name: "i", Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-" + name}, Key: "k"}}}}}},
			Containers: []corev1.Container{{Name: "c",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-" + name}}}},
				Env: []corev1.EnvVar{{Name: "B", ValueFrom: &corev1.EnvVarSource{
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cmenv-" + name}, Key: "k"}}}}}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e",
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-" + name}}}}}}},
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-" + name}}},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "volcm-" + name}}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-" + name}}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projcm-" + name}}},
				}}}},
				{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-" + name}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-" + name}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}},
		},
	}
}

func TestNodeAuthorizer(t *testing.T) {
	g := NewNodeGraph()
	pods := g.PodStore()
	if err := pods.Replace([]any{nodeTestPod("a", "n1"), nodeTestPod("b", "n2"), nodeTestPod("pending", "")}, "1"); err != nil {
		t.Fatal(err)
	}
	claims := g.ClaimStore()
	claims.Replace([]any{&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pvc-a"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-a"}}}, "1")
	g.VolumeAttachmentStore().Replace([]any{&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-1"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "n1"}}}, "1")
	if !g.Synced() {
		t.Fatal("graph not synced after the three relists")
	}

	az := NewNodeAuthorizer(g)
	n1 := nodeUser("n1")
	noRel := "no relationship found between node 'n1' and this object"
	tests := []struct {
		name   string
		attrs  Attributes
		allow  bool
		reason string
	}{
		// relationships, one per way a pod references an object
		{"secret volume", resourceAttrs(n1, "get", "", "secrets", "", "ns", "vol-a"), true, ""},
		{"projected secret", resourceAttrs(n1, "get", "", "secrets", "", "ns", "proj-a"), true, ""},
		{"CSI node publish secret", resourceAttrs(n1, "get", "", "secrets", "", "ns", "csi-a"), true, ""},
		{"image pull secret", resourceAttrs(n1, "get", "", "secrets", "", "ns", "pull-a"), true, ""},
		{"init container env secret", resourceAttrs(n1, "get", "", "secrets", "", "ns", "env-a"), true, ""},
		{"ephemeral container envFrom secret", resourceAttrs(n1, "get", "", "secrets", "", "ns", "debug-a"), true, ""},
		{"watch of one secret", resourceAttrs(n1, "watch", "", "secrets", "", "ns", "vol-a"), true, ""},
		{"config map volume", resourceAttrs(n1, "get", "", "configmaps", "", "ns", "volcm-a"), true, ""},
		{"projected config map", resourceAttrs(n1, "list", "", "configmaps", "", "ns", "projcm-a"), true, ""},
		{"config map env", resourceAttrs(n1, "get", "", "configmaps", "", "ns", "cmenv-a"), true, ""},
		{"config map envFrom", resourceAttrs(n1, "get", "", "configmaps", "", "ns", "envfrom-a"), true, ""},
		{"claim", resourceAttrs(n1, "get", "", "persistentvolumeclaims", "", "ns", "pvc-a"), true, ""},
		{"ephemeral volume claim", resourceAttrs(n1, "get", "", "persistentvolumeclaims", "", "ns", "a-scratch"), true, ""},
		{"claim status", resourceAttrs(n1, "patch", "", "persistentvolumeclaims", "status", "ns", "pvc-a"), true, ""},
		{"volume through its claim", resourceAttrs(n1, "get", "", "persistentvolumes", "", "", "pv-a"), true, ""},
		{"service account", resourceAttrs(n1, "get", "", "serviceaccounts", "", "ns", "sa-a"), true, ""},
		{"service account token", resourceAttrs(n1, "create", "", "serviceaccounts", "token", "ns", "sa-a"), true, ""},
		{"resource claim", resourceAttrs(n1, "get", "resource.k8s.io", "resourceclaims", "", "ns", "claim-a"), true, ""},
		{"volume attachment", resourceAttrs(n1, "get", "storage.k8s.io", "volumeattachments", "", "", "va-1"), true, ""},

		// and none of another node's
		{"another node's secret", resourceAttrs(n1, "get", "", "secrets", "", "ns", "vol-b"), false, noRel},
		{"an unreferenced secret", resourceAttrs(n1, "get", "", "secrets", "", "ns", "nobody"), false, noRel},
		{"a pending pod's secret", resourceAttrs(n1, "get", "", "secrets", "", "ns", "vol-pending"), false, noRel},
		{"same name, other namespace", resourceAttrs(n1, "get", "", "secrets", "", "other", "vol-a"), false, noRel},
		{"another node's config map", resourceAttrs(n1, "get", "", "configmaps", "", "ns", "volcm-b"), false, noRel},
		{"another node's claim", resourceAttrs(n1, "get", "", "persistentvolumeclaims", "", "ns", "pvc-b"), false, noRel},
		{"an unbound volume", resourceAttrs(n1, "get", "", "persistentvolumes", "", "", "pv-b"), false, noRel},
		{"another node's token", resourceAttrs(n1, "create", "", "serviceaccounts", "token", "ns", "sa-b"), false, noRel},
		{"another node's attachment", resourceAttrs(nodeUser("n2"), "get", "storage.k8s.io", "volumeattachments", "", "", "va-1"), false, "no relationship found between node 'n2' and this object"},

		// verbs the relationship does not cover
		{"list all secrets", resourceAttrs(n1, "list", "", "secrets", "", "", ""), false, "can only read namespaced object of this type"},
		{"list a namespace's secrets", resourceAttrs(n1, "list", "", "secrets", "", "ns", ""), false, "No Object name found"},
		{"update a related secret", resourceAttrs(n1, "update", "", "secrets", "", "ns", "vol-a"), false, "can only read resources of this type"},
		{"list claims", resourceAttrs(n1, "list", "", "persistentvolumeclaims", "", "ns", ""), false, "can only get individual resources of this type"},
		{"update a related claim", resourceAttrs(n1, "update", "", "persistentvolumeclaims", "", "ns", "pvc-a"), false, "can only get individual resources of this type"},
		{"get a claim's status", resourceAttrs(n1, "get", "", "persistentvolumeclaims", "status", "ns", "pvc-a"), false, "can only get/update/patch this type"},
		{"delete a service account", resourceAttrs(n1, "delete", "", "serviceaccounts", "", "ns", "sa-a"), false, "can only create tokens for individual service accounts"},

		// leases and CSINodes by name
		{"its own lease", resourceAttrs(n1, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n1"), true, ""},
		{"creating a lease (NodeRestriction checks the name)", resourceAttrs(n1, "create", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), true, ""},
		{"another node's lease", resourceAttrs(n1, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n2"), false, "can only access node lease with the same name as the requesting node"},
		{"a lease elsewhere", resourceAttrs(n1, "get", "coordination.k8s.io", "leases", "", "kube-system", "n1"), false, `can only access leases in the "kube-node-lease" system namespace`},
		{"listing leases", resourceAttrs(n1, "list", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), false, "can only get, create, update, patch, or delete a node lease"},
		{"its own CSINode", resourceAttrs(n1, "patch", "storage.k8s.io", "csinodes", "", "", "n1"), true, ""},
		{"another CSINode", resourceAttrs(n1, "get", "storage.k8s.io", "csinodes", "", "", "n2"), false, "can only access CSINode with the same name as the requesting node"},

		// the fixed rules
		{"register", resourceAttrs(n1, "create", "", "nodes", "", "", ""), true, ""},
		{"report status", resourceAttrs(n1, "patch", "", "nodes", "status", "", "n1"), true, ""},
		{"watch pods", resourceAttrs(n1, "watch", "", "pods", "", "", ""), true, ""},
		{"pod status", resourceAttrs(n1, "update", "", "pods", "status", "ns", "a"), true, ""},
		{"mirror pods", resourceAttrs(n1, "create", "", "pods", "", "ns", ""), true, ""},
		{"evict", resourceAttrs(n1, "create", "", "pods", "eviction", "ns", "a"), true, ""},
		{"services", resourceAttrs(n1, "list", "", "services", "", "", ""), true, ""},
		{"events", resourceAttrs(n1, "create", "", "events", "", "ns", ""), true, ""},
		{"CSRs", resourceAttrs(n1, "create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), true, ""},
		{"token reviews", resourceAttrs(n1, "create", "authentication.k8s.io", "tokenreviews", "", "", ""), true, ""},
		{"runtime classes", resourceAttrs(n1, "watch", "node.k8s.io", "runtimeclasses", "", "", ""), true, ""},
		{"resource slices (create)", resourceAttrs(n1, "create", "resource.k8s.io", "resourceslices", "", "", ""), true, ""},
		{"pod exec is not a kubelet's", resourceAttrs(n1, "create", "", "pods", "exec", "ns", "a"), false, ""},
		{"deployments are not a kubelet's", resourceAttrs(n1, "list", "apps", "deployments", "", "ns", ""), false, ""},
		{"nor is deleting nodes", resourceAttrs(n1, "delete", "", "nodes", "", "", "n2"), false, ""},
		{"nor paths", pathAttrs(n1, "get", "/metrics"), false, ""},

		// who is a node
		{"not in system:nodes", resourceAttrs(&User{Name: "system:node:n1"}, "get", "", "secrets", "", "ns", "vol-a"), false, ""},
		{"a member without a node name", resourceAttrs(&User{Name: "kubelet", Groups: []string{NodesGroup}}, "get", "", "secrets", "", "ns", "vol-a"), false, ""},
		{"a node with an empty name", resourceAttrs(&User{Name: "system:node:", Groups: []string{NodesGroup}}, "get", "", "nodes", "", "", ""), false, `unknown node for user "system:node:"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := az.Authorize(tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if d == DecisionDeny {
				t.Fatal("the Node authorizer must never deny, only decline")
			}
			if got := d == DecisionAllow; got != tc.allow {
				t.Fatalf("allowed = %v (%q), want %v", got, reason, tc.allow)
			}
			if reason != tc.reason {
				t.Errorf("reason = %q, want %q", reason, tc.reason)
			}
		})
	}
}

// TestNodeGraphFollowsEvents drives the graph as a reflector would and
// checks that access appears and disappears with the pods.
func TestNodeGraphFollowsEvents(t *testing.T) {
	g := NewNodeGraph()
	pods, claims := g.PodStore(), g.ClaimStore()
	pods.Replace(nil, "1")
	claims.Replace(nil, "1")
	secret := func(node, name string) bool { return g.Related(node, RelSecret, "ns", name) }

	pending := nodeTestPod("a", "")
	pods.Add(pending)
	if secret("n1", "vol-a") {
		t.Fatal("an unscheduled pod gave access")
	}
	bound := nodeTestPod("a", "n1")
	pods.Update(bound)
	if !secret("n1", "vol-a") {
		t.Fatal("binding the pod did not give its node access")
	}

	t.Run("a second pod keeps a shared secret reachable", func(t *testing.T) {
		other := nodeTestPod("c", "n1")
		other.Spec.Volumes[0].Secret.SecretName = "vol-a"
		pods.Add(other)
		pods.Delete(other)
		if !secret("n1", "vol-a") {
			t.Fatal("deleting one of two pods dropped the shared reference")
		}
	})

	t.Run("an update that changes references moves access", func(t *testing.T) {
		changed := bound.DeepCopy()
		changed.Spec.Volumes[0].Secret.SecretName = "rotated"
		pods.Update(changed)
		if secret("n1", "vol-a") || !secret("n1", "rotated") {
			t.Fatal("the update did not replace the pod's references")
		}
		pods.Update(bound)
	})

	t.Run("a claim bound later reaches its volume", func(t *testing.T) {
		if g.Related("n1", RelPersistentVolume, "", "pv-1") {
			t.Fatal("an unbound volume is reachable")
		}
		claims.Add(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pvc-a"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}})
		if !g.Related("n1", RelPersistentVolume, "", "pv-1") {
			t.Fatal("the bound volume is not reachable")
		}
		claims.Delete(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pvc-a"}})
		if g.Related("n1", RelPersistentVolume, "", "pv-1") {
			t.Fatal("the volume stayed reachable after its claim went")
		}
	})

	t.Run("resource claims from templates appear in the status", func(t *testing.T) {
		withStatus := bound.DeepCopy()
		name := "a-gpu-xyz"
		withStatus.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &name}}
		pods.Update(withStatus)
		if !g.Related("n1", RelResourceClaim, "ns", name) {
			t.Fatal("the generated claim is not reachable")
		}
		pods.Update(bound)
	})

	// A delete the reflector missed arrives as a tombstone.
	pods.Delete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: bound})
	if secret("n1", "vol-a") || len(g.nodes) != 0 || len(g.pods) != 0 {
		t.Fatalf("deleting the last pod left state: nodes %v pods %v", g.nodes, g.pods)
	}
}

func TestNodeGraphUnsynced(t *testing.T) {
	g := NewNodeGraph()
	if g.Synced() {
		t.Fatal("a new graph claims to be synced")
	}
	d, reason, _ := NewNodeAuthorizer(g).Authorize(resourceAttrs(nodeUser("n1"), "get", "", "secrets", "", "ns", "s"))
	if d != DecisionNoOpinion || !strings.Contains(reason, "no relationship") {
		t.Fatalf("before the first list: %v %q", d, reason)
	}
}

// TestNodeRBACChain checks the chain the server runs: the Node authorizer
// declines and RBAC still decides, and the bootstrap policy gives the
// bootstrap and node identities their certificate permissions.
func TestNodeRBACChain(t *testing.T) {
	src := bootstrapSource()
	src.bind("ns", "node-reads-secrets", "ClusterRole", "edit", groupSubject(NodesGroup))
	az := NewNodeRBACAuthorizer(src, NewNodeGraph())
	bootstrapper := &User{Name: "system:bootstrap:abcdef", Groups: []string{BootstrappersGroup, AllAuthenticated}}
	tests := []struct {
		name  string
		attrs Attributes
		want  bool
	}{
		{"RBAC grants what the Node authorizer declines", resourceAttrs(nodeUser("n1"), "get", "", "secrets", "", "ns", "x"), true},
		{"but only where it is bound", resourceAttrs(nodeUser("n1"), "get", "", "secrets", "", "other", "x"), false},
		{"a bootstrap token creates CSRs", resourceAttrs(bootstrapper, "create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), true},
		{"and watches them", resourceAttrs(bootstrapper, "watch", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), true},
		{"and is auto-approved for node client certificates", resourceAttrs(bootstrapper, "create", "certificates.k8s.io", "certificatesigningrequests", "nodeclient", "", ""), true},
		{"but not for its own renewal", resourceAttrs(bootstrapper, "create", "certificates.k8s.io", "certificatesigningrequests", "selfnodeclient", "", ""), false},
		{"nor anything else", resourceAttrs(bootstrapper, "list", "", "secrets", "", "kube-system", ""), false},
		{"nodes renew their own", resourceAttrs(nodeUser("n1"), "create", "certificates.k8s.io", "certificatesigningrequests", "selfnodeclient", "", ""), true},
		{"kube-proxy watches endpoint slices", resourceAttrs(&User{Name: "system:kube-proxy"}, "watch", "discovery.k8s.io", "endpointslices", "", "", ""), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Authorize(az, tc.attrs)
			if (err == nil) != tc.want {
				t.Fatalf("Authorize = %v, want allowed %v", err, tc.want)
			}
		})
	}
	t.Run("the 403 carries the node's reason", func(t *testing.T) {
		err := Authorize(az, resourceAttrs(nodeUser("n2"), "get", "", "secrets", "", "other", "x"))
		want := `secrets "x" is forbidden: User "system:node:n2" cannot get resource "secrets" in API group "" in the namespace "other": no relationship found between node 'n2' and this object`
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
}

func BenchmarkNodeAuthorizerSecret(b *testing.B) {
	g := NewNodeGraph()
	var list []any
	for i := range 10000 {
		list = append(list, nodeTestPod(fmt.Sprintf("p%d", i), fmt.Sprintf("n%d", i%100)))
	}
	g.PodStore().Replace(list, "1")
	az := NewNodeAuthorizer(g)
	attrs := resourceAttrs(nodeUser("n7"), "get", "", "secrets", "", "ns", "vol-p107")
	b.ReportAllocs()
	for b.Loop() {
		if d, _, _ := az.Authorize(attrs); d != DecisionAllow {
			b.Fatal("not allowed")
		}
	}
}

// BenchmarkNodeGraphPodEvents is what each pod event costs the server:
// a bind (references added), then status updates (nothing changes).
func BenchmarkNodeGraphPodEvents(b *testing.B) {
	g := NewNodeGraph()
	store := g.PodStore()
	store.Replace(nil, "1")
	pending, bound := nodeTestPod("p", ""), nodeTestPod("p", "n1")
	b.Run("bind", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			store.Update(bound)
			store.Update(pending)
		}
	})
	b.Run("status", func(b *testing.B) {
		store.Update(bound)
		b.ReportAllocs()
		for b.Loop() {
			store.Update(bound)
		}
	})
}
