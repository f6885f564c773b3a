package auth

// The Node authorizer: what a kubelet may do, as upstream's Node
// authorization mode (--authorization-mode=Node,RBAC) decides it.
//
// A kubelet authenticates as system:node:<name> in group system:nodes. It
// needs to read the secrets, config maps, claims and volumes of the pods
// it runs, and nothing else of that kind: a compromised node must not
// read every secret in the cluster. RBAC cannot say "the secrets of the
// pods bound to you", so this authorizer answers those requests from a
// NodeRelations index (NodeGraph, kept by watching pods). Everything else
// a kubelet does (register, report status, read pods and services, renew
// its lease, ask for certificates) is granted by a fixed rule list,
// nodeRules, and narrowed to the node's own objects by the
// NodeRestriction admission plugin, which sees the objects an authorizer
// cannot.
//
// Like every authorizer here it never denies: a request it does not allow
// is DecisionNoOpinion, so RBAC may still allow it (an administrator can
// bind more to system:nodes), and the reason shows in the 403, e.g.
//
//	secrets "x" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Node identities, as upstream's default node identifier reads them.
const (
	NodeUserNamePrefix = "system:node:"
	NodesGroup         = "system:nodes"
)

// NodeIdentity returns the node a user is: a name system:node:<name> and
// the group system:nodes. isNode is false for every other user; a node
// user with an empty name is a node whose name is unknown, which both
// the Node authorizer and NodeRestriction refuse.
func NodeIdentity(u *User) (name string, isNode bool) {
	if u == nil || !strings.HasPrefix(u.Name, NodeUserNamePrefix) || !slices.Contains(u.Groups, NodesGroup) {
		return "", false
	}
	return strings.TrimPrefix(u.Name, NodeUserNamePrefix), true
}

// NodeUserName is the user name of the node's credentials.
func NodeUserName(node string) string { return NodeUserNamePrefix + node }

// Relation names a kind of object a node may reach only through the pods
// bound to it.
type Relation uint8

const (
	RelSecret Relation = iota
	RelConfigMap
	RelPersistentVolumeClaim
	RelPersistentVolume
	RelServiceAccount
	RelResourceClaim
	RelVolumeAttachment
)

var relationNames = [...]string{"secret", "configmap", "persistentvolumeclaim", "persistentvolume", "serviceaccount", "resourceclaim", "volumeattachment"}

func (r Relation) String() string {
	if int(r) < len(relationNames) {
		return relationNames[r]
	}
	return fmt.Sprintf("Relation(%d)", r)
}

// NodeRelations answers whether a node has a path to an object: a pod
// bound to the node (spec.nodeName) references it, directly or, for a
// persistent volume, through the claim bound to it; a volume attachment
// names the node. The Node authorizer owns this interface; NodeGraph
// implements it. Implementations are safe for concurrent use and answer
// from memory: the authorizer asks on every request a kubelet makes.
// Until the index has been filled (the first list of pods) every answer
// is false.
type NodeRelations interface {
	Related(node string, kind Relation, namespace, name string) bool
}

// NodeAuthorizer is upstream's Node authorization mode. The zero value is
// not usable; NewNodeAuthorizer makes one.
type NodeAuthorizer struct {
	relations NodeRelations
	rules     []rbacv1.PolicyRule
}

// NewNodeAuthorizer returns the Node authorizer over relations. With nil
// relations no object is related to any node: the fixed rules still
// apply, and RBAC decides on secrets and the like (what the in-process
// SubjectAccessReview evaluator of the CSR approver needs).
func NewNodeAuthorizer(relations NodeRelations) *NodeAuthorizer {
	if relations == nil {
		relations = noRelations{}
	}
	return &NodeAuthorizer{relations: relations, rules: NodeRules()}
}

type noRelations struct{}

func (noRelations) Related(string, Relation, string, string) bool { return false }

// Authorize implements Authorizer, in upstream's order: users that are
// not nodes get no opinion; a node without a name is refused; secrets,
// config maps, claims, volumes, service accounts, volume attachments,
// leases, CSINodes and resource slices are decided by relationship or
// name; everything else by nodeRules.
//
// Upstream (1.32+, AuthorizeNodeWithSelectors) also limits a node's list
// and watch of pods to the spec.nodeName field selector and its reads of
// Nodes to its own; Attributes carry no field selector here, so reads of
// pods and nodes follow the rules upstream used before that gate.
func (n *NodeAuthorizer) Authorize(a Attributes) (Decision, string, error) {
	node, isNode := NodeIdentity(a.User)
	if !isNode {
		return DecisionNoOpinion, "", nil
	}
	if node == "" {
		return DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", a.User.Name), nil
	}
	if a.ResourceRequest {
		switch a.APIGroup + "/" + a.Resource {
		case "/secrets":
			return n.readNamespaced(node, RelSecret, a)
		case "/configmaps":
			return n.readNamespaced(node, RelConfigMap, a)
		case "/persistentvolumeclaims":
			if a.Subresource == "status" {
				return n.statusUpdate(node, RelPersistentVolumeClaim, a)
			}
			return n.get(node, RelPersistentVolumeClaim, a)
		case "/persistentvolumes":
			return n.get(node, RelPersistentVolume, a)
		case "resource.k8s.io/resourceclaims":
			return n.get(node, RelResourceClaim, a)
		case "storage.k8s.io/volumeattachments":
			return n.get(node, RelVolumeAttachment, a)
		case "/serviceaccounts":
			return n.serviceAccount(node, a)
		case "coordination.k8s.io/leases":
			return nodeOwnObject(node, a, "node lease", func(a Attributes) string {
				if a.Namespace != corev1.NamespaceNodeLease {
					return fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
				}
				return ""
			})
		case "storage.k8s.io/csinodes":
			return nodeOwnObject(node, a, "CSINode", func(a Attributes) string {
				if a.Subresource != "" {
					return "cannot authorize CSINode subresources"
				}
				return ""
			})
		case "resource.k8s.io/resourceslices":
			return n.resourceSlice(node, a)
		}
	}
	for i := range n.rules {
		if RuleAllows(a, &n.rules[i]) {
			return DecisionAllow, "", nil
		}
	}
	return DecisionNoOpinion, "", nil
}

// readNamespaced: get, list or watch of one named object in a namespace
// that a pod on the node references.
func (n *NodeAuthorizer) readNamespaced(node string, kind Relation, a Attributes) (Decision, string, error) {
	switch a.Verb {
	case "get", "list", "watch":
	default:
		return DecisionNoOpinion, "can only read resources of this type", nil
	}
	if a.Subresource != "" {
		return DecisionNoOpinion, "cannot read subresource", nil
	}
	if a.Namespace == "" {
		return DecisionNoOpinion, "can only read namespaced object of this type", nil
	}
	return n.related(node, kind, a)
}

// get: only a get of one related object, no subresource.
func (n *NodeAuthorizer) get(node string, kind Relation, a Attributes) (Decision, string, error) {
	if a.Verb != "get" {
		return DecisionNoOpinion, "can only get individual resources of this type", nil
	}
	if a.Subresource != "" {
		return DecisionNoOpinion, "cannot get subresource", nil
	}
	return n.related(node, kind, a)
}

// statusUpdate: update or patch of the status of a related object (a
// claim the kubelet expanded).
func (n *NodeAuthorizer) statusUpdate(node string, kind Relation, a Attributes) (Decision, string, error) {
	if a.Verb != "update" && a.Verb != "patch" {
		return DecisionNoOpinion, "can only get/update/patch this type", nil
	}
	return n.related(node, kind, a)
}

// serviceAccount: a get of a pod's service account, or a token for it
// (NodeRestriction then insists the token is bound to a pod on the node).
func (n *NodeAuthorizer) serviceAccount(node string, a Attributes) (Decision, string, error) {
	if a.Subresource == "" && a.Verb == "get" {
		return n.related(node, RelServiceAccount, a)
	}
	if a.Verb != "create" || a.Name == "" {
		return DecisionNoOpinion, "can only create tokens for individual service accounts", nil
	}
	if a.Subresource != "token" {
		return DecisionNoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return n.related(node, RelServiceAccount, a)
}

func (n *NodeAuthorizer) related(node string, kind Relation, a Attributes) (Decision, string, error) {
	if a.Name == "" {
		return DecisionNoOpinion, "No Object name found", nil
	}
	if !n.relations.Related(node, kind, a.Namespace, a.Name) {
		return DecisionNoOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node), nil
	}
	return DecisionAllow, "", nil
}

// nodeOwnObject decides on objects named after the node (its Lease, its
// CSINode): the usual verbs, and only its own name, except on create,
// where the name is in the body and NodeRestriction checks it.
func nodeOwnObject(node string, a Attributes, what string, extra func(Attributes) string) (Decision, string, error) {
	switch a.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return DecisionNoOpinion, "can only get, create, update, patch, or delete a " + what, nil
	}
	if reason := extra(a); reason != "" {
		return DecisionNoOpinion, reason, nil
	}
	if a.Verb != "create" && a.Name != node {
		return DecisionNoOpinion, "can only access " + what + " with the same name as the requesting node", nil
	}
	return DecisionAllow, "", nil
}

// resourceSlice: a DRA driver on the node publishes its devices. Create
// is checked by NodeRestriction (spec.nodeName); reads and writes of one
// slice would need slices in the relation index, which it does not hold
// yet, so only lists, watches and collection deletes (NodeRestriction
// checks each deleted slice) are allowed.
func (n *NodeAuthorizer) resourceSlice(node string, a Attributes) (Decision, string, error) {
	if a.Subresource != "" {
		return DecisionNoOpinion, "cannot authorize ResourceSlice subresources", nil
	}
	switch a.Verb {
	case "create", "list", "watch", "deletecollection":
		return DecisionAllow, "", nil
	case "get", "update", "patch", "delete":
		return DecisionNoOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node), nil
	}
	return DecisionNoOpinion, "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection", nil
}

// nodeRules is upstream's NodeRules: what every kubelet may do. The
// resources the Node authorizer decides by relationship (secrets, config
// maps, claims, volumes, service accounts, leases, CSINodes, slices)
// appear here too, as upstream lists them, because the same list is the
// system:node ClusterRole; requests for them never reach these rules.
var nodeRules = []ruleRow{
	// Delegated authentication and authorization of the kubelet API.
	{verbs: create, group: "authentication.k8s.io", resources: "tokenreviews"},
	{verbs: create, group: "authorization.k8s.io", resources: "subjectaccessreviews localsubjectaccessreviews"},
	// The service environment variables of pods.
	{verbs: read, group: "", resources: "services"},
	// Registration and status; NodeRestriction limits them to its own Node.
	{verbs: []string{"create", "get", "list", "watch"}, group: "", resources: "nodes"},
	{verbs: []string{"update", "patch"}, group: "", resources: "nodes/status"},
	{verbs: []string{"update", "patch"}, group: "", resources: "nodes"},
	{verbs: []string{"create", "update", "patch"}, group: "", resources: "events"},
	// Its pods; NodeRestriction limits writes to pods bound to it and
	// creates to mirror pods.
	{verbs: read, group: "", resources: "pods"},
	{verbs: []string{"create", "delete"}, group: "", resources: "pods"},
	{verbs: []string{"update", "patch"}, group: "", resources: "pods/status"},
	{verbs: create, group: "", resources: "pods/eviction"},
	{verbs: read, group: "", resources: "configmaps secrets"},
	{verbs: getOnly, group: "", resources: "persistentvolumeclaims persistentvolumes"},
	{verbs: getOnly, group: "", resources: "endpoints"},
	// Its client and serving certificates, and their rotation.
	{verbs: []string{"create", "get", "list", "watch"}, group: "certificates.k8s.io", resources: "certificatesigningrequests"},
	{verbs: []string{"get", "create", "update", "patch", "delete"}, group: "coordination.k8s.io", resources: "leases"},
	{verbs: getOnly, group: "storage.k8s.io", resources: "volumeattachments"},
	{verbs: []string{"get", "update", "patch"}, group: "", resources: "persistentvolumeclaims/status"},
	{verbs: create, group: "", resources: "serviceaccounts/token"},
	{verbs: []string{"get", "list", "watch"}, group: "storage.k8s.io", resources: "csidrivers"},
	{verbs: []string{"get", "create", "update", "patch", "delete"}, group: "storage.k8s.io", resources: "csinodes"},
	{verbs: read, group: "node.k8s.io", resources: "runtimeclasses"},
	{verbs: getOnly, group: "resource.k8s.io", resources: "resourceclaims"},
	{verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}, group: "resource.k8s.io", resources: "resourceslices"},
}

// NodeRules returns the rules every node is granted, as PolicyRules: the
// fixed part of the Node authorizer and the system:node ClusterRole.
// Each call returns new slices.
func NodeRules() []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(nodeRules))
	for i, r := range nodeRules {
		out[i] = r.policyRule()
	}
	return out
}
