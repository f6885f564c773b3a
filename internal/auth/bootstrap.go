package auth

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Metadata every bootstrap object carries. The label lets an operator list
// them (kubectl get clusterroles -l kubernetes.io/bootstrapping=rbac-defaults);
// the annotation says rudder may reconcile them back to these defaults on
// start-up. An operator who sets it to "false" keeps their own edits.
const (
	BootstrappingLabel      = "kubernetes.io/bootstrapping"
	BootstrappingLabelValue = "rbac-defaults"
	AutoUpdateAnnotation    = rbacv1.AutoUpdateAnnotationKey // rbac.authorization.kubernetes.io/autoupdate

	AggregateToAdminLabel = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEditLabel  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToViewLabel  = "rbac.authorization.k8s.io/aggregate-to-view"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	create    = []string{"create"}
	getOnly   = []string{"get"}
	anyVerb   = []string{rbacv1.VerbAll}
)

// ruleRow is one PolicyRule as data: a verb list, one API group, and a
// space-separated list of resources (or, for non-resource rules, URLs).
type ruleRow struct {
	verbs     []string
	group     string
	resources string
	urls      string
}

type roleSpec struct {
	name   string
	labels map[string]string
	// aggregateFrom, when set, makes this an aggregated role: its rules are
	// those of every cluster role labelled aggregateFrom="true".
	aggregateFrom string
	rules         []ruleRow
}

// bootstrapRoles is upstream's default user-facing policy as of Kubernetes
// 1.36 (DynamicResourceAllocation on, as it is by default), written as
// data. The shape of the three user roles is upstream's:
//
//	view  <- system:aggregate-to-view                       read, nothing that escalates (no secrets)
//	edit  <- system:aggregate-to-edit + view                write workloads, read secrets, impersonate SAs
//	admin <- system:aggregate-to-admin + edit               plus roles and rolebindings in the namespace
//
// "view" is labelled aggregate-to-edit and "edit" aggregate-to-admin,
// which is how each larger role contains the smaller; a CRD's author adds
// a role labelled aggregate-to-view and every viewer can read it.
var bootstrapRoles = []roleSpec{
	{name: "cluster-admin", rules: []ruleRow{
		{verbs: anyVerb, group: rbacv1.APIGroupAll, resources: rbacv1.ResourceAll},
		{verbs: anyVerb, urls: rbacv1.NonResourceAll},
	}},
	{name: "admin", aggregateFrom: AggregateToAdminLabel},
	{name: "edit", aggregateFrom: AggregateToEditLabel, labels: map[string]string{AggregateToAdminLabel: "true"}},
	{name: "view", aggregateFrom: AggregateToViewLabel, labels: map[string]string{AggregateToEditLabel: "true"}},
	{name: "system:aggregate-to-admin", labels: map[string]string{AggregateToAdminLabel: "true"}, rules: []ruleRow{
		{verbs: create, group: "authorization.k8s.io", resources: "localsubjectaccessreviews"},
		{verbs: readWrite, group: rbacv1.GroupName, resources: "roles rolebindings"},
	}},
	{name: "system:aggregate-to-edit", labels: map[string]string{AggregateToEditLabel: "true"}, rules: []ruleRow{
		// Reading these can reveal credentials or run code, so view does not get them.
		{verbs: read, group: "", resources: "pods/attach pods/proxy pods/exec pods/portforward secrets services/proxy"},
		{verbs: []string{"impersonate"}, group: "", resources: "serviceaccounts"},
		{verbs: write, group: "", resources: "pods pods/attach pods/proxy pods/exec pods/portforward"},
		{verbs: create, group: "", resources: "pods/eviction"},
		// No endpoints or endpointslices: writing them lets a user point a
		// Service at any IP (CVE-2021-25740), so edit lost them in 1.22.
		{verbs: write, group: "", resources: "replicationcontrollers replicationcontrollers/scale serviceaccounts services services/proxy persistentvolumeclaims configmaps secrets events"},
		{verbs: create, group: "", resources: "serviceaccounts/token"},
		{verbs: write, group: "apps", resources: "statefulsets statefulsets/scale daemonsets deployments deployments/scale deployments/rollback replicasets replicasets/scale"},
		{verbs: write, group: "autoscaling", resources: "horizontalpodautoscalers"},
		{verbs: write, group: "batch", resources: "jobs cronjobs"},
		{verbs: write, group: "extensions", resources: "daemonsets deployments deployments/scale deployments/rollback ingresses replicasets replicasets/scale replicationcontrollers/scale networkpolicies"},
		{verbs: write, group: "policy", resources: "poddisruptionbudgets"},
		{verbs: write, group: "networking.k8s.io", resources: "networkpolicies ingresses"},
		{verbs: readWrite, group: "coordination.k8s.io", resources: "leases"},
		{verbs: write, group: "resource.k8s.io", resources: "resourceclaims resourceclaimtemplates"},
	}},
	{name: "system:aggregate-to-view", labels: map[string]string{AggregateToViewLabel: "true"}, rules: []ruleRow{
		{verbs: read, group: "", resources: "pods replicationcontrollers replicationcontrollers/scale serviceaccounts services services/status endpoints persistentvolumeclaims persistentvolumeclaims/status configmaps"},
		{verbs: read, group: "", resources: "limitranges resourcequotas bindings events pods/status resourcequotas/status namespaces/status replicationcontrollers/status pods/log"},
		// Read on namespaces through a RoleBinding means reading that one
		// namespace: the request for namespace "x" is scoped to namespace "x".
		{verbs: read, group: "", resources: "namespaces"},
		{verbs: read, group: "discovery.k8s.io", resources: "endpointslices"},
		{verbs: read, group: "apps", resources: "controllerrevisions statefulsets statefulsets/status statefulsets/scale daemonsets daemonsets/status deployments deployments/status deployments/scale replicasets replicasets/status replicasets/scale"},
		{verbs: read, group: "autoscaling", resources: "horizontalpodautoscalers horizontalpodautoscalers/status"},
		{verbs: read, group: "batch", resources: "jobs jobs/status cronjobs cronjobs/status"},
		{verbs: read, group: "extensions", resources: "daemonsets daemonsets/status deployments deployments/scale deployments/status ingresses ingresses/status replicasets replicasets/scale replicasets/status replicationcontrollers/scale networkpolicies"},
		{verbs: read, group: "policy", resources: "poddisruptionbudgets poddisruptionbudgets/status"},
		{verbs: read, group: "networking.k8s.io", resources: "ingresses ingresses/status networkpolicies"},
		{verbs: read, group: "resource.k8s.io", resources: "resourceclaims resourceclaims/status resourceclaimtemplates"},
	}},
	{name: "system:basic-user", rules: []ruleRow{
		{verbs: create, group: "authorization.k8s.io", resources: "selfsubjectaccessreviews selfsubjectrulesreviews"},
		{verbs: create, group: "authentication.k8s.io", resources: "selfsubjectreviews"},
	}},
	{name: "system:discovery", rules: []ruleRow{
		{verbs: getOnly, urls: "/livez /readyz /healthz /version /version/ /openapi /openapi/* /api /api/* /apis /apis/*"},
	}},
	{name: "system:public-info-viewer", rules: []ruleRow{
		{verbs: getOnly, urls: "/livez /readyz /healthz /version /version/"},
	}},
	// For servers that authenticate and authorize their own clients by
	// asking the API server (metrics-server, aggregated API servers): an
	// operator binds it to their service accounts.
	{name: "system:auth-delegator", rules: []ruleRow{
		{verbs: create, group: "authentication.k8s.io", resources: "tokenreviews"},
		{verbs: create, group: "authorization.k8s.io", resources: "subjectaccessreviews"},
	}},
	// Full access to the kubelet API, checked by kubelets in webhook mode
	// (a SubjectAccessReview on nodes/<subresource>): what the API server's
	// kubelet client needs for logs, exec, proxy and metrics. pods, healthz
	// and configz are the fine-grained subresources (KubeletFineGrainedAuthz).
	{name: "system:kubelet-api-admin", rules: []ruleRow{
		{verbs: read, group: "", resources: "nodes"},
		{verbs: []string{"proxy"}, group: "", resources: "nodes"},
		{verbs: anyVerb, group: "", resources: "nodes/proxy nodes/metrics nodes/spec nodes/stats nodes/log nodes/pods nodes/healthz nodes/configz"},
	}},
	// Relying parties (a pod's workload, or anything a cluster admin binds
	// it to) fetch these to verify service-account tokens offline.
	{name: "system:service-account-issuer-discovery", rules: []ruleRow{
		{verbs: getOnly, urls: "/.well-known/openid-configuration /openid/v1/jwks"},
	}},
	// What every kubelet may do, as the Node authorizer grants it (upstream
	// keeps the role, bound to nobody, for clusters without that mode).
	{name: "system:node", rules: nodeRules},
	// Joining nodes (bootstrap tokens) ask for their client certificate
	// and watch for it to be issued.
	{name: "system:node-bootstrapper", rules: []ruleRow{
		{verbs: []string{"create", "get", "list", "watch"}, group: "certificates.k8s.io", resources: "certificatesigningrequests"},
	}},
	// The CSR approver's checks: whoever may create these pseudo
	// subresources has kubelet client certificates approved, for any node
	// (nodeclient) or for the node it already is (selfnodeclient).
	{name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient", rules: []ruleRow{
		{verbs: create, group: "certificates.k8s.io", resources: "certificatesigningrequests/nodeclient"},
	}},
	{name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", rules: []ruleRow{
		{verbs: create, group: "certificates.k8s.io", resources: "certificatesigningrequests/selfnodeclient"},
	}},
	// The service proxy of a node, when it runs as system:kube-proxy.
	{name: "system:node-proxier", rules: []ruleRow{
		{verbs: []string{"list", "watch"}, group: "", resources: "services endpoints"},
		{verbs: read, group: "", resources: "nodes"},
		{verbs: []string{"create", "update", "patch"}, group: "", resources: "events"},
		{verbs: []string{"create", "update", "patch"}, group: "events.k8s.io", resources: "events"},
		{verbs: []string{"list", "watch"}, group: "discovery.k8s.io", resources: "endpointslices"},
	}},
}

// bootstrapBindings bind the roles above to the groups every request is
// in: system:masters gets everything, every authenticated user may
// discover APIs and ask what it may do, anyone may check health and
// version, and the API server's kubelet client may use the kubelet API.
var bootstrapBindings = []struct {
	role   string
	groups []string
	users  []string
	// name, when set, differs from the role's (kubeadm's bindings).
	name string
}{
	{"cluster-admin", []string{SystemPrivilegedGroup}, nil, ""},
	{"system:basic-user", []string{AllAuthenticated}, nil, ""},
	{"system:discovery", []string{AllAuthenticated}, nil, ""},
	{"system:public-info-viewer", []string{AllAuthenticated, AllUnauthenticated}, nil, ""},
	{"system:service-account-issuer-discovery", []string{AllServiceAccountsGroup}, nil, ""},
	// The API server's client certificate to kubelets (pki.KubeletClientCommonName).
	{"system:kubelet-api-admin", nil, []string{"kube-apiserver-kubelet-client"}, ""},
	{"system:node-proxier", nil, []string{"system:kube-proxy"}, ""},
	// TLS bootstrapping, as kubeadm sets it up: a bootstrap token may ask
	// for a kubelet client certificate, which is then approved; a node
	// may renew its own.
	{"system:node-bootstrapper", []string{BootstrappersGroup}, nil, "rudder:kubelet-bootstrap"},
	{"system:certificates.k8s.io:certificatesigningrequests:nodeclient", []string{BootstrappersGroup}, nil, "rudder:node-autoapprove-bootstrap"},
	{"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", []string{NodesGroup}, nil, "rudder:node-autoapprove-certificate-rotation"},
}

// BootstrapClusterRoles returns the cluster roles rudder creates on first
// start. The aggregated roles (admin, edit, view) come with their rules
// already filled in, as the aggregation controller would leave them, so
// they work before any controller has run. Each call returns new objects.
func BootstrapClusterRoles() []*rbacv1.ClusterRole {
	roles := make([]*rbacv1.ClusterRole, 0, len(bootstrapRoles))
	for _, spec := range bootstrapRoles {
		role := &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: bootstrapMeta(spec.name, spec.labels),
		}
		for _, row := range spec.rules {
			role.Rules = append(role.Rules, row.policyRule())
		}
		if spec.aggregateFrom != "" {
			role.AggregationRule = &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{spec.aggregateFrom: "true"}}},
			}
		}
		roles = append(roles, role)
	}
	// Aggregated roles may contain aggregated roles (admin <- edit <- view),
	// so repeat until nothing changes; each pass fills at least one more
	// level, and there are fewer levels than roles.
	for range roles {
		changed := false
		for _, role := range roles {
			if role.AggregationRule == nil {
				continue
			}
			rules, err := AggregatedRules(role, roles)
			if err != nil {
				panic(fmt.Sprintf("bootstrap role %s: %v", role.Name, err)) // static data is broken
			}
			if !equality.Semantic.DeepEqual(rules, role.Rules) {
				role.Rules, changed = rules, true
			}
		}
		if !changed {
			break
		}
	}
	return roles
}

// BootstrapClusterRoleBindings returns the cluster role bindings rudder
// creates on first start. Each call returns new objects.
func BootstrapClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(bootstrapBindings))
	for _, b := range bootstrapBindings {
		name := b.name
		if name == "" {
			name = b.role
		}
		crb := &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: bootstrapMeta(name, nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
		}
		for _, g := range b.groups {
			crb.Subjects = append(crb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
		}
		for _, u := range b.users {
			crb.Subjects = append(crb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
		}
		out = append(out, crb)
	}
	return out
}

// AggregatedRules computes the rules of an aggregated cluster role the way
// upstream's aggregation controller does, so that the future controller
// and the bootstrap data agree: for each selector in order, the matching
// roles sorted by name (role itself excluded), their rules appended in
// order, skipping any rule equal to one already taken.
func AggregatedRules(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	if role.AggregationRule == nil {
		return role.Rules, nil
	}
	var rules []rbacv1.PolicyRule
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, err
		}
		var matching []*rbacv1.ClusterRole
		for _, r := range all {
			if r.Name != role.Name && sel.Matches(labels.Set(r.Labels)) {
				matching = append(matching, r)
			}
		}
		sort.Slice(matching, func(a, b int) bool { return matching[a].Name < matching[b].Name })
		for _, r := range matching {
			for _, rule := range r.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, rule) }) {
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules, nil
}

func bootstrapMeta(name string, extraLabels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: BootstrappingLabelValue}
	for k, v := range extraLabels {
		l[k] = v
	}
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      l,
		Annotations: map[string]string{AutoUpdateAnnotation: "true"},
	}
}

// policyRule builds the rule with every list sorted, as upstream's rule
// builder does, so that objects compare and print the same as upstream's.
func (r ruleRow) policyRule() rbacv1.PolicyRule {
	rule := rbacv1.PolicyRule{Verbs: sorted(r.verbs)}
	if r.urls != "" {
		rule.NonResourceURLs = sorted(strings.Fields(r.urls))
		return rule
	}
	rule.APIGroups = []string{r.group}
	rule.Resources = sorted(strings.Fields(r.resources))
	return rule
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
