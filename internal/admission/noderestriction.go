package admission

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/rudder-dev/rudder/internal/auth"
)

// NodeRestriction confines what a kubelet can write to what concerns its
// own node, as upstream's plugin of that name does. A request is a node's
// when its user is system:node:<name> in group system:nodes; everyone
// else passes untouched. Authorization (RBAC or the Node authorizer)
// decides which verbs a node may use at all; this plugin looks at the
// objects, which an authorizer cannot see:
//
//   - nodes: only its own Node; on create no configSource and no labels
//     outside the kubelet's set; on update no taint changes, no new
//     configSource, no label changes outside the kubelet's set. The
//     kubelet's set is a few well-known labels (hostname, zone, region,
//     instance type, os, arch) and the kubelet.kubernetes.io and
//     node.kubernetes.io namespaces; node-restriction.kubernetes.io and
//     any other kubernetes.io or k8s.io label belong to the cluster
//     administrator, so a node cannot steer workloads to itself;
//   - pods: create only mirror pods bound to itself, owned by its Node and
//     referring to no service account, secret, config map, cluster trust
//     bundle or claim; delete, update status and evict only pods bound to
//     itself; status updates may not touch labels or resource claim
//     statuses; no other subresource;
//   - persistentvolumeclaims: status only, and only capacity, conditions
//     and the allocated resources;
//   - serviceaccounts/token: only tokens bound to a pod on this node;
//   - leases: only its own, in kube-node-lease; csinodes: only its own;
//   - resourceslices: create and delete only its own (spec.nodeName);
//   - certificatesigningrequests: a kubelet-serving or kubelet client CSR
//     must name this node (CN system:node:<name>).
//
// Upstream runs it in the mutating phase; here deletes go through the
// validating phase only, so it checks creates and updates in Admit and
// deletes in Validate.
type NodeRestriction struct {
	// Objects finds the pods and the Node the checks need.
	Objects ObjectSource
}

func (NodeRestriction) Name() string { return "NodeRestriction" }

const (
	nrUserPrefix = auth.NodeUserNamePrefix
	// The two signers whose CSRs carry a node's identity.
	nrKubeletServingSigner = "kubernetes.io/kubelet-serving"
	nrKubeletClientSigner  = "kubernetes.io/kube-apiserver-client-kubelet"
)

var (
	nrNodesGVR          = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	nrPodsGVR           = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nrServiceAccounts   = schema.GroupResource{Resource: "serviceaccounts"}
	nrLeases            = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	nrCSINodes          = schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}
	nrResourceSlices    = schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}
	nrCertificateReqs   = schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	nrKubeletLabelNames = sets.New(
		corev1.LabelHostname,
		corev1.LabelTopologyZone,
		corev1.LabelTopologyRegion,
		corev1.LabelFailureDomainBetaZone,
		corev1.LabelFailureDomainBetaRegion,
		corev1.LabelInstanceType,
		corev1.LabelInstanceTypeStable,
		corev1.LabelOSStable,
		corev1.LabelArchStable,
		"beta.kubernetes.io/os",
		"beta.kubernetes.io/arch",
	)
	nrKubeletLabelNamespaces = []string{corev1.LabelNamespaceSuffixKubelet, corev1.LabelNamespaceSuffixNode}
)

// NodeIdentity returns the node a user is, as upstream's default node
// identifier reads it: a name system:node:<name> and the group
// system:nodes. isNode is false for every other user; a node user with an
// empty name is a node whose name is unknown.
func NodeIdentity(u *auth.User) (name string, isNode bool) {
	// One definition for the Node authorizer and this plugin: they must
	// agree on who is a node.
	return auth.NodeIdentity(u)
}

// Admit implements Mutator: creates and updates.
func (p NodeRestriction) Admit(ctx context.Context, a *Attributes) error {
	if a.Operation != Create && a.Operation != Update {
		return nil
	}
	return p.admit(ctx, a)
}

// Validate implements Validator: deletes, which skip the mutating phase.
func (p NodeRestriction) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Delete {
		return nil
	}
	return p.admit(ctx, a)
}

func (p NodeRestriction) admit(ctx context.Context, a *Attributes) error {
	nodeName, isNode := NodeIdentity(a.User)
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return forbiddenFor(a, fmt.Errorf("could not determine node from user %q", a.User.Name))
	}
	switch a.Resource.GroupResource() {
	case podsResource:
		switch a.Subresource {
		case "":
			return p.admitPod(ctx, nodeName, a)
		case "status":
			return nrPodStatus(nodeName, a)
		case "eviction":
			return p.admitEviction(ctx, nodeName, a)
		default:
			return forbiddenFor(a, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource))
		}
	case nodesResource:
		return nrNode(nodeName, a)
	case pvcsResource:
		if a.Subresource != "status" {
			return forbiddenFor(a, errors.New("may only update PVC status"))
		}
		return nrPVCStatus(nodeName, a)
	case nrServiceAccounts:
		return p.admitTokenRequest(ctx, nodeName, a)
	case nrLeases:
		return nrLease(nodeName, a)
	case nrCSINodes:
		return nrCSINode(nodeName, a)
	case nrResourceSlices:
		return nrResourceSlice(nodeName, a)
	case nrCertificateReqs:
		return nrCSR(nodeName, a)
	}
	return nil
}

func nrUnexpectedType(a *Attributes, obj runtime.Object) error {
	return forbiddenFor(a, fmt.Errorf("unexpected type %T", obj))
}

func (p NodeRestriction) admitPod(ctx context.Context, nodeName string, a *Attributes) error {
	switch a.Operation {
	case Create:
		return p.admitMirrorPod(ctx, nodeName, a)
	case Delete:
		pod, err := p.storedPod(ctx, a, a.Name)
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != nodeName {
			return forbiddenFor(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
		}
		return nil
	}
	return forbiddenFor(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, nodeName))
}

// storedPod is the pod a delete or eviction is about: the one the server
// read for a delete, else the current one (a 404 when it is gone).
func (p NodeRestriction) storedPod(ctx context.Context, a *Attributes, name string) (*corev1.Pod, error) {
	if pod, ok := a.OldObject.(*corev1.Pod); ok && a.Operation == Delete {
		return pod, nil
	}
	obj, err := p.Objects.GetObject(ctx, nrPodsGVR, a.Namespace, name)
	if err != nil {
		return nil, forbiddenFor(a, err)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return pod, nil
}

// admitMirrorPod allows a node to create only the mirror of one of its
// static pods, which must not reach any other API object: the node could
// otherwise read secrets through a pod it made up.
func (p NodeRestriction) admitMirrorPod(ctx context.Context, nodeName string, a *Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nrUnexpectedType(a, a.Object)
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return forbiddenFor(a, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, nodeName))
	}
	if pod.Spec.NodeName != nodeName {
		return forbiddenFor(a, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName))
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return forbiddenFor(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	case 1:
	default:
		return forbiddenFor(a, fmt.Errorf("node %q can only create pods with a single owner reference set to itself", nodeName))
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != corev1.SchemeGroupVersion.String() || owner.Kind != "Node" || owner.Name != nodeName {
		return forbiddenFor(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
	}
	if owner.Controller == nil || !*owner.Controller {
		return forbiddenFor(a, fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", nodeName))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return forbiddenFor(a, fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", nodeName))
	}
	obj, err := p.Objects.GetObject(ctx, nrNodesGVR, "", nodeName)
	if err != nil {
		return forbiddenFor(a, fmt.Errorf("error looking up node %s to verify uid: %v", nodeName, err))
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return apierrors.NewNotFound(nodesResource, nodeName)
	}
	if owner.UID != node.UID {
		return forbiddenFor(a, fmt.Errorf("node %s UID mismatch: expected %s got %s", nodeName, owner.UID, node.UID))
	}
	if pod.Spec.ServiceAccountName != "" {
		return forbiddenFor(a, fmt.Errorf("node %q can not create pods that reference a service account", nodeName))
	}
	if nrPodRefersTo(pod, nrSecretRefs) {
		return forbiddenFor(a, fmt.Errorf("node %q can not create pods that reference secrets", nodeName))
	}
	if nrPodRefersTo(pod, nrConfigMapRefs) {
		return forbiddenFor(a, fmt.Errorf("node %q can not create pods that reference configmaps", nodeName))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ClusterTrustBundle != nil {
					return forbiddenFor(a, fmt.Errorf("node %q can not create pods that reference clustertrustbundles", nodeName))
				}
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return forbiddenFor(a, fmt.Errorf("node %q can not create pods that reference persistentvolumeclaims", nodeName))
		}
	}
	return nil
}

// nrRefs says whether a container or a volume names an object of one
// kind (secrets, config maps).
type nrRefs struct {
	env     func(corev1.EnvVar) bool
	envFrom func(corev1.EnvFromSource) bool
	volume  func(corev1.Volume) bool
	pull    bool // imagePullSecrets count
}

var nrSecretRefs = nrRefs{
	env:     func(e corev1.EnvVar) bool { return e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil },
	envFrom: func(e corev1.EnvFromSource) bool { return e.SecretRef != nil },
	volume:  nrVolumeSecret,
	pull:    true,
}

var nrConfigMapRefs = nrRefs{
	env:     func(e corev1.EnvVar) bool { return e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil },
	envFrom: func(e corev1.EnvFromSource) bool { return e.ConfigMapRef != nil },
	volume: func(v corev1.Volume) bool {
		if v.ConfigMap != nil {
			return true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					return true
				}
			}
		}
		return false
	},
}

// nrVolumeSecret covers every volume source that names a secret, as
// upstream's VisitPodSecretNames does.
func nrVolumeSecret(v corev1.Volume) bool {
	s := v.VolumeSource
	switch {
	case s.Secret != nil, s.AzureFile != nil:
		return true
	case s.CephFS != nil && s.CephFS.SecretRef != nil,
		s.Cinder != nil && s.Cinder.SecretRef != nil,
		s.FlexVolume != nil && s.FlexVolume.SecretRef != nil,
		s.RBD != nil && s.RBD.SecretRef != nil,
		s.ScaleIO != nil && s.ScaleIO.SecretRef != nil,
		s.ISCSI != nil && s.ISCSI.SecretRef != nil,
		s.StorageOS != nil && s.StorageOS.SecretRef != nil,
		s.CSI != nil && s.CSI.NodePublishSecretRef != nil:
		return true
	case s.Projected != nil:
		for _, src := range s.Projected.Sources {
			if src.Secret != nil {
				return true
			}
		}
	}
	return false
}

func nrPodRefersTo(pod *corev1.Pod, r nrRefs) bool {
	if r.pull && len(pod.Spec.ImagePullSecrets) > 0 {
		return true
	}
	check := func(env []corev1.EnvVar, from []corev1.EnvFromSource) bool {
		return slices.ContainsFunc(env, r.env) || slices.ContainsFunc(from, r.envFrom)
	}
	for _, c := range pod.Spec.InitContainers {
		if check(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if check(c.Env, c.EnvFrom) {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if check(c.Env, c.EnvFrom) {
			return true
		}
	}
	return slices.ContainsFunc(pod.Spec.Volumes, r.volume)
}

func nrPodStatus(nodeName string, a *Attributes) error {
	if a.Operation != Update {
		return forbiddenFor(a, fmt.Errorf("unexpected operation %q", a.Operation))
	}
	old, ok := a.OldObject.(*corev1.Pod)
	if !ok {
		return nrUnexpectedType(a, a.OldObject)
	}
	if old.Spec.NodeName != nodeName {
		return forbiddenFor(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nrUnexpectedType(a, a.Object)
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return forbiddenFor(a, fmt.Errorf("node %q cannot update labels through pod status", nodeName))
	}
	if !nrClaimStatusesEqual(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) {
		// Upstream's message, misspelling included.
		return forbiddenFor(a, fmt.Errorf("node %q cannot update resource claim statues", nodeName))
	}
	return nil
}

// nrClaimStatusesEqual compares the claim each entry names; the claims a
// pod uses are the resource claim controller's to record, not the node's.
func nrClaimStatusesEqual(x, y []corev1.PodResourceClaimStatus) bool {
	return slices.EqualFunc(x, y, func(a, b corev1.PodResourceClaimStatus) bool {
		if a.Name != b.Name || (a.ResourceClaimName == nil) != (b.ResourceClaimName == nil) {
			return false
		}
		return a.ResourceClaimName == nil || *a.ResourceClaimName == *b.ResourceClaimName
	})
}

func (p NodeRestriction) admitEviction(ctx context.Context, nodeName string, a *Attributes) error {
	if a.Operation != Create {
		return forbiddenFor(a, fmt.Errorf("unexpected operation %s", a.Operation))
	}
	var evictionName string
	switch e := a.Object.(type) {
	case *policyv1.Eviction:
		evictionName = e.Name
	case *policyv1beta1.Eviction:
		evictionName = e.Name
	default:
		return nrUnexpectedType(a, a.Object)
	}
	// The URL names the pod; the body's name only when the URL does not.
	podName := a.Name
	if podName == "" {
		if evictionName == "" {
			return forbiddenFor(a, errors.New("could not determine pod from request data"))
		}
		podName = evictionName
	}
	pod, err := p.storedPod(ctx, a, podName)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != nodeName {
		return forbiddenFor(a, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

// nrPVCStatus lets a node record what a volume expansion did and
// nothing else: no labels, finalizers or owners through the status.
func nrPVCStatus(nodeName string, a *Attributes) error {
	if a.Operation != Update {
		return forbiddenFor(a, fmt.Errorf("unexpected operation %q", a.Operation))
	}
	old, ok := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nrUnexpectedType(a, a.OldObject)
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nrUnexpectedType(a, a.Object)
	}
	old, pvc = nrPVCComparable(old), nrPVCComparable(pvc)
	if !apiequality.Semantic.DeepEqual(old, pvc) {
		return forbiddenFor(a, fmt.Errorf("node %q is not allowed to update fields other than status.capacity and status.conditions: %v", nodeName, cmp.Diff(old, pvc)))
	}
	return nil
}

// nrPVCComparable is a copy without the fields a node may change (and
// resourceVersion and managedFields, which a write may leave out).
func nrPVCComparable(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	c := pvc.DeepCopy()
	c.ResourceVersion = ""
	c.ManagedFields = nil
	c.Status.Capacity = nil
	c.Status.Conditions = nil
	c.Status.AllocatedResourceStatuses = nil
	c.Status.AllocatedResources = nil
	return c
}

func nrNode(nodeName string, a *Attributes) error {
	if a.Name != nodeName {
		return forbiddenFor(a, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, a.Name))
	}
	switch a.Operation {
	case Create:
		node, ok := a.Object.(*corev1.Node)
		if !ok {
			return nrUnexpectedType(a, a.Object)
		}
		// A node's access is scoped by what its spec names; letting it pick
		// a config source would widen what it can read.
		if node.Spec.ConfigSource != nil {
			// Upstream's message says "pods"; kept so clients see the same text.
			return forbiddenFor(a, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		if bad := nrForbiddenLabels(node.Labels, nil); len(bad) > 0 {
			return forbiddenFor(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", ")))
		}
	case Update:
		node, ok := a.Object.(*corev1.Node)
		if !ok {
			return nrUnexpectedType(a, a.Object)
		}
		old, ok := a.OldObject.(*corev1.Node)
		if !ok {
			return nrUnexpectedType(a, a.Object)
		}
		// Only a new non-nil source is refused: old kubelets drop the field.
		if node.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(node.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbiddenFor(a, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
		}
		if !apiequality.Semantic.DeepEqual(node.Spec.Taints, old.Spec.Taints) {
			return forbiddenFor(a, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if bad := nrForbiddenLabels(node.Labels, old.Labels); len(bad) > 0 {
			return forbiddenFor(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
		}
	}
	return nil
}

// nrForbiddenLabels returns, sorted, the keys that differ between the two
// label sets and that a node may not set, add or remove.
func nrForbiddenLabels(now, before map[string]string) []string {
	bad := sets.New[string]()
	check := func(x, y map[string]string) {
		for k, v := range x {
			if w, ok := y[k]; ok && w == v {
				continue
			}
			ns := nrLabelNamespace(k)
			if ns == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(ns, "."+corev1.LabelNamespaceNodeRestriction) {
				bad.Insert(k)
			}
			if nrKubernetesLabel(ns) && !nrKubeletLabel(k) {
				bad.Insert(k)
			}
		}
	}
	check(now, before)
	check(before, now)
	return sets.List(bad)
}

func nrLabelNamespace(key string) string {
	if ns, _, ok := strings.Cut(key, "/"); ok {
		return ns
	}
	return ""
}

func nrKubernetesLabel(ns string) bool {
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// nrKubeletLabel reports whether a kubelet may set key on its own Node.
func nrKubeletLabel(key string) bool {
	if nrKubeletLabelNames.Has(key) {
		return true
	}
	ns := nrLabelNamespace(key)
	for _, allowed := range nrKubeletLabelNamespaces {
		if ns == allowed || strings.HasSuffix(ns, "."+allowed) {
			return true
		}
	}
	return false
}

// admitTokenRequest lets a node mint service account tokens only for pods
// running on it, bound to the pod so they die with it.
func (p NodeRestriction) admitTokenRequest(ctx context.Context, nodeName string, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "token" {
		return nil
	}
	tr, ok := a.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return nrUnexpectedType(a, a.Object)
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbiddenFor(a, errors.New("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return forbiddenFor(a, errors.New("node requested token with a pod binding without a uid"))
	}
	pod, err := p.storedPod(ctx, a, ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return forbiddenFor(a, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return forbiddenFor(a, errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	return nil
}

func nrLease(nodeName string, a *Attributes) error {
	if a.Namespace != corev1.NamespaceNodeLease {
		return forbiddenFor(a, fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
	}
	name := a.Name
	if a.Operation == Create {
		lease, ok := a.Object.(*coordinationv1.Lease)
		if !ok {
			return nrUnexpectedType(a, a.Object)
		}
		name = lease.Name
	}
	if name != nodeName {
		return forbiddenFor(a, errors.New("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

func nrCSINode(nodeName string, a *Attributes) error {
	name := a.Name
	if a.Operation == Create {
		m, err := meta.Accessor(a.Object)
		if err != nil {
			return forbiddenFor(a, errors.New("unable to access the object name"))
		}
		name = m.GetName()
	}
	if name != nodeName {
		return forbiddenFor(a, errors.New("can only access CSINode with the same name as the requesting node"))
	}
	return nil
}

// nrResourceSlice checks what the Node authorizer cannot: the content of
// a created slice, and each slice of a delete.
func nrResourceSlice(nodeName string, a *Attributes) error {
	switch a.Operation {
	case Create:
		slice, ok := a.Object.(*resourcev1.ResourceSlice)
		if !ok {
			return nrUnexpectedType(a, a.Object)
		}
		if slice.Spec.NodeName == nil || *slice.Spec.NodeName != nodeName {
			return forbiddenFor(a, errors.New("can only create ResourceSlice with the same NodeName as the requesting node"))
		}
	case Delete:
		slice, ok := a.OldObject.(*resourcev1.ResourceSlice)
		if !ok {
			return nrUnexpectedType(a, a.OldObject)
		}
		if slice.Spec.NodeName == nil || *slice.Spec.NodeName != nodeName {
			return forbiddenFor(a, errors.New("can only delete ResourceSlice with the same NodeName as the requesting node"))
		}
	}
	return nil
}

// nrCSR stops a node asking for another node's kubelet certificate; the
// signers check the rest of the request.
func nrCSR(nodeName string, a *Attributes) error {
	if a.Operation != Create {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nrUnexpectedType(a, a.Object)
	}
	if csr.Spec.SignerName != nrKubeletServingSigner && csr.Spec.SignerName != nrKubeletClientSigner {
		return nil
	}
	req, err := certParseCSR(csr.Spec.Request)
	if err != nil {
		return forbiddenFor(a, fmt.Errorf("unable to parse csr: %w", err))
	}
	if req.Subject.CommonName != nrUserPrefix+nodeName {
		return forbiddenFor(a, fmt.Errorf("can only create a node CSR with CN=system:node:%s", nodeName))
	}
	return nil
}

// certParseCSR decodes spec.request, a PEM "CERTIFICATE REQUEST" block.
func certParseCSR(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}
