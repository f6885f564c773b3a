package admission

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/auth"
)

var (
	nrTestNodesGVR     = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	nrTestLeasesGVR    = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	nrTestCSINodesGVR  = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csinodes"}
	nrTestSAsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	nrTestConfigMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	nrTestSlicesGVR    = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"}
)

func nrNodeUser(name string) *auth.User {
	return &auth.User{Name: "system:node:" + name, Groups: []string{"system:nodes", auth.AllAuthenticated}}
}

func nrTestNode(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func nrTestPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
}

// nrMirror is a mirror pod as a kubelet would post it for node.
func nrMirror(node string, edit func(*corev1.Pod)) *corev1.Pod {
	p := nrTestPod("static-"+node, node)
	p.UID = ""
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID("uid-" + node), Controller: ptr.To(true)}}
	if edit != nil {
		edit(p)
	}
	return p
}

func TestNodeRestriction(t *testing.T) {
	objects := gvrObjects{
		nrNodesGVR: {nrTestNode("n1", nil), nrTestNode("n2", nil)},
		nrPodsGVR:  {nrTestPod("mine", "n1"), nrTestPod("theirs", "n2")},
	}
	n1 := nrNodeUser("n1")
	withStatus := func(p *corev1.Pod, edit func(*corev1.Pod)) *corev1.Pod {
		p = p.DeepCopy()
		edit(p)
		return p
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", ResourceVersion: "5"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"}}
	pvcGrown := pvc.DeepCopy()
	pvcGrown.ResourceVersion = ""
	pvcGrown.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
	pvcGrown.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing, Status: "True"}}
	pvcRelabelled := pvcGrown.DeepCopy()
	pvcRelabelled.Labels = map[string]string{"x": "y"}

	cases := []struct {
		name  string
		attrs Attributes
		err   string // exact message; "" allows
	}{
		// Who is a node.
		{name: "other users are not restricted", attrs: Attributes{Operation: Update, Resource: nrTestNodesGVR, Name: "n2",
			Object: nrTestNode("n2", nil, corev1.Taint{Key: "k", Effect: "NoSchedule"}), OldObject: nrTestNode("n2", nil), User: &auth.User{Name: "alice"}}},
		{name: "a node name outside system:nodes is not a node", attrs: Attributes{Operation: Update, Resource: nrTestNodesGVR, Name: "n2",
			Object: nrTestNode("n2", nil), OldObject: nrTestNode("n2", nil), User: &auth.User{Name: "system:node:n1"}}},
		{name: "a node without a name", attrs: Attributes{Operation: Update, Resource: nrTestNodesGVR, Name: "n1",
			Object: nrTestNode("n1", nil), OldObject: nrTestNode("n1", nil), User: nrNodeUser("")},
			err: `nodes "n1" is forbidden: could not determine node from user "system:node:"`},

		// Nodes.
		{name: "a node registers itself", attrs: Attributes{Operation: Create, Resource: nrTestNodesGVR, Name: "n1", User: n1,
			Object: nrTestNode("n1", map[string]string{"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z", "node.kubernetes.io/instance-type": "big",
				"kubelet.kubernetes.io/x": "1", "foo.node.kubernetes.io/y": "2", "example.com/team": "a"})}},
		{name: "a node may not register another", attrs: Attributes{Operation: Create, Resource: nrTestNodesGVR, Name: "n2", User: n1, Object: nrTestNode("n2", nil)},
			err: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{name: "nor set cluster labels when registering", attrs: Attributes{Operation: Create, Resource: nrTestNodesGVR, Name: "n1", User: n1,
			Object: nrTestNode("n1", map[string]string{"node-restriction.kubernetes.io/pci": "yes", "node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "n1"})},
			err: `nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/pci, node-role.kubernetes.io/control-plane`},
		{name: "nor register with a config source", attrs: Attributes{Operation: Create, Resource: nrTestNodesGVR, Name: "n1", User: n1,
			Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{ConfigSource: &corev1.NodeConfigSource{}}}},
			err: `nodes "n1" is forbidden: node "n1" is not allowed to create pods with a non-nil configSource`},
		{name: "a node updates its own status and kubelet labels", attrs: Attributes{Operation: Update, Resource: nrTestNodesGVR, Subresource: "status", Name: "n1", User: n1,
			Object: nrTestNode("n1", map[string]string{"kubernetes.io/arch": "arm64", "team": "x"}), OldObject: nrTestNode("n1", map[string]string{"kubernetes.io/arch": "amd64"})}},
		{name: "a node may not update another", attrs: Attributes{Operation: Update, Resource: nrTestNodesGVR, Subresource: "status", Name: "n2", User: n1,
			Object: nrTestNode("n2", nil), OldObject: nrTestNode("n2", nil)},
			err: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{name: "nor change its taints", attrs: Attributes{Operation: Update, Resource: nrTestNodesGVR, Name: "n1", User: n1,
			Object: nrTestNode("n1", nil), OldObject: nrTestNode("n1", nil, corev1.Taint{Key: "dedicated", Value: "db", Effect: "NoSchedule"})},
			err: `nodes "n1" is forbidden: node "n1" is not allowed to modify taints`},
		{name: "nor add, change or remove cluster labels", attrs: Attributes{Operation: Update, Resource: nrTestNodesGVR, Name: "n1", User: n1,
			Object:    nrTestNode("n1", map[string]string{"node-restriction.kubernetes.io/a": "1", "k8s.io/b": "2"}),
			OldObject: nrTestNode("n1", map[string]string{"node-restriction.kubernetes.io/a": "0", "example.k8s.io/c": "3"})},
			err: `nodes "n1" is forbidden: is not allowed to modify labels: example.k8s.io/c, k8s.io/b, node-restriction.kubernetes.io/a`},
		{name: "unchanged cluster labels are fine", attrs: Attributes{Operation: Update, Resource: nrTestNodesGVR, Name: "n1", User: n1,
			Object:    nrTestNode("n1", map[string]string{"node-restriction.kubernetes.io/a": "1", "kubernetes.io/hostname": "n1"}),
			OldObject: nrTestNode("n1", map[string]string{"node-restriction.kubernetes.io/a": "1"})}},
		{name: "a node may delete itself", attrs: Attributes{Operation: Delete, Resource: nrTestNodesGVR, Name: "n1", User: n1, OldObject: nrTestNode("n1", nil)}},
		{name: "but not another", attrs: Attributes{Operation: Delete, Resource: nrTestNodesGVR, Name: "n2", User: n1, OldObject: nrTestNode("n2", nil)},
			err: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},

		// Mirror pods.
		{name: "a mirror pod of its own", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1, Object: nrMirror("n1", nil)}},
		{name: "an ordinary pod", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1, Object: nrTestPod("p", "n1")},
			err: `pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`},
		{name: "a mirror pod bound elsewhere", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) { p.Spec.NodeName = "n2" })},
			err: `pods "static-n1" is forbidden: node "n1" can only create pods with spec.nodeName set to itself`},
		{name: "a mirror pod without an owner", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) { p.OwnerReferences = nil })},
			err: `pods "static-n1" is forbidden: node "n1" can only create pods with an owner reference set to itself`},
		{name: "a mirror pod with two owners", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) { p.OwnerReferences = append(p.OwnerReferences, p.OwnerReferences[0]) })},
			err: `pods "static-n1" is forbidden: node "n1" can only create pods with a single owner reference set to itself`},
		{name: "a mirror pod owned by another node", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) { p.OwnerReferences[0].Name = "n2" })},
			err: `pods "static-n1" is forbidden: node "n1" can only create pods with an owner reference set to itself`},
		{name: "a mirror pod whose owner is not its controller", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil })},
			err: `pods "static-n1" is forbidden: node "n1" can only create pods with a controller owner reference set to itself`},
		{name: "a mirror pod blocking its owner's deletion", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) { p.OwnerReferences[0].BlockOwnerDeletion = ptr.To(true) })},
			err: `pods "static-n1" is forbidden: node "n1" must not set blockOwnerDeletion on an owner reference`},
		{name: "a mirror pod owned by a stale node uid", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" })},
			err: `pods "static-n1" is forbidden: node n1 UID mismatch: expected old got uid-n1`},
		{name: "a mirror pod of a node that does not exist", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: nrNodeUser("n9"),
			Object: nrMirror("n9", nil)},
			err: `nodes "n9" not found`},
		{name: "a mirror pod with a service account", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" })},
			err: `pods "static-n1" is forbidden: node "n1" can not create pods that reference a service account`},
		{name: "a mirror pod reading a secret through env", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
			})},
			err: `pods "static-n1" is forbidden: node "n1" can not create pods that reference secrets`},
		{name: "a mirror pod with a projected secret", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{}}}}}}}
			})},
			err: `pods "static-n1" is forbidden: node "n1" can not create pods that reference secrets`},
		{name: "a mirror pod with a config map", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}}}
			})},
			err: `pods "static-n1" is forbidden: node "n1" can not create pods that reference configmaps`},
		{name: "a mirror pod with a cluster trust bundle", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{}}}}}}}
			})},
			err: `pods "static-n1" is forbidden: node "n1" can not create pods that reference clustertrustbundles`},
		{name: "a mirror pod with a claim", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", User: n1,
			Object: nrMirror("n1", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
			})},
			err: `pods "static-n1" is forbidden: node "n1" can not create pods that reference persistentvolumeclaims`},

		// Other pod writes.
		{name: "deleting a pod of its own", attrs: Attributes{Operation: Delete, Resource: testPodsGVR, Namespace: "ns", Name: "mine", User: n1, OldObject: nrTestPod("mine", "n1")}},
		{name: "deleting another node's pod", attrs: Attributes{Operation: Delete, Resource: testPodsGVR, Namespace: "ns", Name: "theirs", User: n1, OldObject: nrTestPod("theirs", "n2")},
			err: `pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`},
		{name: "updating a pod", attrs: Attributes{Operation: Update, Resource: testPodsGVR, Namespace: "ns", Name: "mine", User: n1, Object: nrTestPod("mine", "n1"), OldObject: nrTestPod("mine", "n1")},
			err: `pods "mine" is forbidden: unexpected operation "UPDATE", node "n1" can only create and delete mirror pods`},
		{name: "binding a pod", attrs: Attributes{Operation: Update, Resource: testPodsGVR, Subresource: "binding", Namespace: "ns", Name: "mine", User: n1, Object: nrTestPod("mine", "n1"), OldObject: nrTestPod("mine", "")},
			err: `pods "mine" is forbidden: unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},
		{name: "status of a pod of its own", attrs: Attributes{Operation: Update, Resource: testPodsGVR, Subresource: "status", Namespace: "ns", Name: "mine", User: n1,
			Object: withStatus(nrTestPod("mine", "n1"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), OldObject: nrTestPod("mine", "n1")}},
		{name: "status of another node's pod", attrs: Attributes{Operation: Update, Resource: testPodsGVR, Subresource: "status", Namespace: "ns", Name: "theirs", User: n1,
			Object: nrTestPod("theirs", "n2"), OldObject: nrTestPod("theirs", "n2")},
			err: `pods "theirs" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself`},
		{name: "labels through pod status", attrs: Attributes{Operation: Update, Resource: testPodsGVR, Subresource: "status", Namespace: "ns", Name: "mine", User: n1,
			Object: withStatus(nrTestPod("mine", "n1"), func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }), OldObject: nrTestPod("mine", "n1")},
			err: `pods "mine" is forbidden: node "n1" cannot update labels through pod status`},
		{name: "resource claim statuses through pod status", attrs: Attributes{Operation: Update, Resource: testPodsGVR, Subresource: "status", Namespace: "ns", Name: "mine", User: n1,
			Object: withStatus(nrTestPod("mine", "n1"), func(p *corev1.Pod) {
				p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("claim")}}
			}), OldObject: nrTestPod("mine", "n1")},
			err: `pods "mine" is forbidden: node "n1" cannot update resource claim statues`},
		{name: "evicting a pod of its own", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Subresource: "eviction", Namespace: "ns", Name: "mine", User: n1,
			Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "ns"}}}},
		{name: "evicting another node's pod (named by the body)", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Subresource: "eviction", Namespace: "ns", User: n1,
			Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "ns"}}},
			err: `pods "theirs" is forbidden: node n1 can only evict pods with spec.nodeName set to itself`},
		{name: "evicting a pod that is gone", attrs: Attributes{Operation: Create, Resource: testPodsGVR, Subresource: "eviction", Namespace: "ns", Name: "gone", User: n1,
			Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns"}}},
			err: `pods "gone" not found`},
		{name: "resizing a pod", attrs: Attributes{Operation: Update, Resource: testPodsGVR, Subresource: "resize", Namespace: "ns", Name: "mine", User: n1,
			Object: nrTestPod("mine", "n1"), OldObject: nrTestPod("mine", "n1")},
			err: `pods "mine" is forbidden: unexpected pod subresource "resize", only 'status' and 'eviction' are allowed`},
		{name: "exec into a pod", attrs: Attributes{Operation: Connect, Resource: testPodsGVR, Subresource: "exec", Namespace: "ns", Name: "mine", User: n1}},

		// Claims.
		{name: "claim capacity and conditions", attrs: Attributes{Operation: Update, Resource: testPVCsGVR, Subresource: "status", Namespace: "ns", Name: "data", User: n1,
			Object: pvcGrown, OldObject: pvc}},
		{name: "claim labels through status", attrs: Attributes{Operation: Update, Resource: testPVCsGVR, Subresource: "status", Namespace: "ns", Name: "data", User: n1,
			Object: pvcRelabelled, OldObject: pvc},
			err: `persistentvolumeclaims "data" is forbidden: node "n1" is not allowed to update fields other than status.capacity and status.conditions: `},
		{name: "claim spec", attrs: Attributes{Operation: Update, Resource: testPVCsGVR, Namespace: "ns", Name: "data", User: n1, Object: pvc, OldObject: pvc},
			err: `persistentvolumeclaims "data" is forbidden: may only update PVC status`},

		// Tokens.
		{name: "a token for a pod of its own", attrs: Attributes{Operation: Create, Resource: nrTestSAsGVR, Subresource: "token", Namespace: "ns", Name: "default", User: n1,
			Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mine", UID: "uid-mine"}}}}},
		{name: "an unbound token", attrs: Attributes{Operation: Create, Resource: nrTestSAsGVR, Subresource: "token", Namespace: "ns", Name: "default", User: n1,
			Object: &authenticationv1.TokenRequest{}},
			err: `serviceaccounts "default" is forbidden: node requested token not bound to a pod`},
		{name: "a token bound without a uid", attrs: Attributes{Operation: Create, Resource: nrTestSAsGVR, Subresource: "token", Namespace: "ns", Name: "default", User: n1,
			Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mine"}}}},
			err: `serviceaccounts "default" is forbidden: node requested token with a pod binding without a uid`},
		{name: "a token for a recreated pod", attrs: Attributes{Operation: Create, Resource: nrTestSAsGVR, Subresource: "token", Namespace: "ns", Name: "default", User: n1,
			Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mine", UID: "old"}}}},
			err: `serviceaccounts "default" is forbidden: the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
		{name: "a token for another node's pod", attrs: Attributes{Operation: Create, Resource: nrTestSAsGVR, Subresource: "token", Namespace: "ns", Name: "default", User: n1,
			Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "theirs", UID: "uid-theirs"}}}},
			err: `serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node`},

		// Leases and CSINodes.
		{name: "its own lease", attrs: Attributes{Operation: Create, Resource: nrTestLeasesGVR, Namespace: "kube-node-lease", User: n1,
			Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}}}},
		{name: "renewing its own lease", attrs: Attributes{Operation: Update, Resource: nrTestLeasesGVR, Namespace: "kube-node-lease", Name: "n1", User: n1,
			Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}}}},
		{name: "deleting its own lease", attrs: Attributes{Operation: Delete, Resource: nrTestLeasesGVR, Namespace: "kube-node-lease", Name: "n1", User: n1}},
		{name: "creating another node's lease", attrs: Attributes{Operation: Create, Resource: nrTestLeasesGVR, Namespace: "kube-node-lease", User: n1,
			Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n2", Namespace: "kube-node-lease"}}},
			err: `leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node`},
		{name: "its own CSINode", attrs: Attributes{Operation: Create, Resource: nrTestCSINodesGVR, User: n1,
			Object: &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}},
		{name: "another node's lease", attrs: Attributes{Operation: Update, Resource: nrTestLeasesGVR, Namespace: "kube-node-lease", Name: "n2", User: n1,
			Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n2", Namespace: "kube-node-lease"}}},
			err: `leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node`},
		{name: "a lease elsewhere", attrs: Attributes{Operation: Create, Resource: nrTestLeasesGVR, Namespace: "kube-system", User: n1,
			Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-system"}}},
			err: `leases.coordination.k8s.io "n1" is forbidden: can only access leases in the "kube-node-lease" system namespace`},
		{name: "another node's CSINode", attrs: Attributes{Operation: Create, Resource: nrTestCSINodesGVR, User: n1,
			Object: &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}},
			err: `csinodes.storage.k8s.io "n2" is forbidden: can only access CSINode with the same name as the requesting node`},

		// Resource slices.
		{name: "its own resource slice", attrs: Attributes{Operation: Create, Resource: nrTestSlicesGVR, User: n1,
			Object: &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{NodeName: ptr.To("n1")}}}},
		{name: "a resource slice for another node", attrs: Attributes{Operation: Create, Resource: nrTestSlicesGVR, User: n1,
			Object: &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{NodeName: ptr.To("n2")}}},
			err: `resourceslices.resource.k8s.io "s" is forbidden: can only create ResourceSlice with the same NodeName as the requesting node`},
		{name: "deleting another node's resource slice", attrs: Attributes{Operation: Delete, Resource: nrTestSlicesGVR, Name: "s", User: n1,
			OldObject: &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourcev1.ResourceSliceSpec{AllNodes: ptr.To(true)}}},
			err: `resourceslices.resource.k8s.io "s" is forbidden: can only delete ResourceSlice with the same NodeName as the requesting node`},

		// Everything else is the authorizer's business.
		{name: "config maps are not restricted here", attrs: Attributes{Operation: Create, Resource: nrTestConfigMapGVR, Namespace: "ns", User: n1, Object: &corev1.ConfigMap{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NodeRestriction{Objects: objects}
			a := tc.attrs
			err := p.Admit(context.Background(), &a)
			if err == nil {
				err = p.Validate(context.Background(), &a)
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			// The claim diff is go-cmp's, whose layout is not stable by
			// design: only its start is compared.
			if strings.HasSuffix(tc.err, ": ") {
				if !strings.HasPrefix(got, tc.err) || !strings.Contains(got, "Labels") {
					t.Fatalf("got %q, want it to start %q and show the labels", got, tc.err)
				}
				return
			}
			if got != tc.err {
				t.Fatalf("got  %q\nwant %q", got, tc.err)
			}
		})
	}
}

func TestNodeRestrictionCSRs(t *testing.T) {
	n1 := nrNodeUser("n1")
	cases := []struct {
		name   string
		signer string
		req    []byte
		err    string
	}{
		{name: "its own client certificate", signer: "kubernetes.io/kube-apiserver-client-kubelet", req: certRequestPEM(t, "system:node:n1", "system:nodes")},
		{name: "its own serving certificate", signer: "kubernetes.io/kubelet-serving", req: certRequestPEM(t, "system:node:n1", "system:nodes")},
		{name: "another node's client certificate", signer: "kubernetes.io/kube-apiserver-client-kubelet", req: certRequestPEM(t, "system:node:n2", "system:nodes"),
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: can only create a node CSR with CN=system:node:n1`},
		{name: "another node's serving certificate", signer: "kubernetes.io/kubelet-serving", req: certRequestPEM(t, "system:node:n2", "system:nodes"),
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: can only create a node CSR with CN=system:node:n1`},
		{name: "an unparsable node CSR", signer: "kubernetes.io/kubelet-serving", req: []byte("junk"),
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: unable to parse csr: PEM block type must be CERTIFICATE REQUEST`},
		{name: "other signers are the signer's business", signer: "example.com/anything", req: certRequestPEM(t, "whatever")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"},
				Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: tc.signer, Request: tc.req}}
			err := NodeRestriction{Objects: gvrObjects{}}.Admit(context.Background(), &Attributes{Operation: Create, Resource: testCSRsGVR, Object: csr, User: n1})
			certCheck(t, err, tc.err)
		})
	}
}
