package registry

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FlowControlBootstrap returns the API Priority and Fairness objects
// kube-apiserver creates at start: the mandatory ones (the exempt and
// catch-all priority levels and flow schemas, which a cluster cannot do
// without) and the suggested configuration, with upstream's names, specs
// and the apf.kubernetes.io/autoupdate-spec annotation. The API server
// ensures them with EnsureObjects; existing objects are left as they are.
func FlowControlBootstrap() []runtime.Object {
	var objs []runtime.Object
	for _, pl := range []*flowcontrolv1.PriorityLevelConfiguration{
		flowExemptLevel(),
		flowLimitedLevel(flowcontrolv1.PriorityLevelConfigurationNameCatchAll, 5, 0, nil),
		flowLimitedLevel("system", 30, 33, flowQueuing(64, 6)),
		flowLimitedLevel("node-high", 40, 25, flowQueuing(64, 6)),
		flowLimitedLevel("leader-election", 10, 0, flowQueuing(16, 4)),
		flowLimitedLevel("workload-high", 40, 50, flowQueuing(128, 6)),
		flowLimitedLevel("workload-low", 100, 90, flowQueuing(128, 6)),
		flowLimitedLevel("global-default", 20, 50, flowQueuing(128, 6)),
	} {
		pl.SetGroupVersionKind(flowcontrolv1.SchemeGroupVersion.WithKind("PriorityLevelConfiguration"))
		objs = append(objs, pl)
	}

	all := []flowcontrolv1.PolicyRulesWithSubjects{}
	everything := func(subjects ...flowcontrolv1.Subject) []flowcontrolv1.PolicyRulesWithSubjects {
		return append(all, flowcontrolv1.PolicyRulesWithSubjects{Subjects: subjects,
			ResourceRules:    []flowcontrolv1.ResourcePolicyRule{flowResourceRule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}, true)},
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}})
	}
	getCreateUpdate := []string{"get", "create", "update"}
	kubeSystemSAs := flowServiceAccount(metav1.NamespaceSystem, "*")
	everyone := []flowcontrolv1.Subject{flowGroup("system:unauthenticated"), flowGroup("system:authenticated")}
	for _, fs := range []*flowcontrolv1.FlowSchema{
		flowSchema("exempt", "exempt", 1, "", everything(flowGroup("system:masters"))),
		flowSchema("catch-all", "catch-all", 10000, flowcontrolv1.FlowDistinguisherMethodByUserType, everything(everyone...)),
		flowSchema("system-nodes", "system", 500, flowcontrolv1.FlowDistinguisherMethodByUserType, everything(flowGroup("system:nodes"))),
		flowSchema("system-node-high", "node-high", 400, flowcontrolv1.FlowDistinguisherMethodByUserType, []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{flowGroup("system:nodes")},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{
				flowResourceRule([]string{"*"}, []string{""}, []string{"nodes", "nodes/status"}, []string{"*"}, true),
				flowResourceRule([]string{"*"}, []string{"coordination.k8s.io"}, []string{"leases"}, []string{"*"}, false),
			}}}),
		flowSchema("probes", "exempt", 2, "", []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: everyone,
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}}}}}),
		flowSchema("system-leader-election", "leader-election", 100, flowcontrolv1.FlowDistinguisherMethodByUserType, []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{flowUser("system:kube-controller-manager"), flowUser("system:kube-scheduler"), kubeSystemSAs},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{
				flowResourceRule(getCreateUpdate, []string{""}, []string{"endpoints", "configmaps"}, []string{metav1.NamespaceSystem}, false),
				flowResourceRule(getCreateUpdate, []string{"coordination.k8s.io"}, []string{"leases"}, []string{"*"}, false),
			}}}),
		flowSchema("workload-leader-election", "leader-election", 200, flowcontrolv1.FlowDistinguisherMethodByUserType, []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{kubeSystemSAs},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{
				flowResourceRule(getCreateUpdate, []string{""}, []string{"endpoints", "configmaps"}, []string{"*"}, false),
				flowResourceRule(getCreateUpdate, []string{"coordination.k8s.io"}, []string{"leases"}, []string{"*"}, false),
			}}}),
		flowSchema("endpoint-controller", "workload-high", 150, flowcontrolv1.FlowDistinguisherMethodByUserType, []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{flowUser("system:kube-controller-manager"),
				flowServiceAccount(metav1.NamespaceSystem, "endpoint-controller"), flowServiceAccount(metav1.NamespaceSystem, "endpointslice-controller")},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{
				flowResourceRule(getCreateUpdate, []string{""}, []string{"endpoints"}, []string{"*"}, false),
			}}}),
		flowSchema("kube-controller-manager", "workload-high", 800, flowcontrolv1.FlowDistinguisherMethodByNamespaceType,
			everything(flowUser("system:kube-controller-manager"))),
		flowSchema("kube-scheduler", "workload-high", 800, flowcontrolv1.FlowDistinguisherMethodByNamespaceType, everything(flowUser("system:kube-scheduler"))),
		flowSchema("kube-system-service-accounts", "workload-high", 900, flowcontrolv1.FlowDistinguisherMethodByNamespaceType, everything(kubeSystemSAs)),
		flowSchema("service-accounts", "workload-low", 9000, flowcontrolv1.FlowDistinguisherMethodByUserType, everything(flowGroup("system:serviceaccounts"))),
		flowSchema("global-default", "global-default", 9900, flowcontrolv1.FlowDistinguisherMethodByUserType, everything(everyone...)),
	} {
		fs.SetGroupVersionKind(flowcontrolv1.SchemeGroupVersion.WithKind("FlowSchema"))
		objs = append(objs, fs)
	}
	return objs
}

func flowBootstrapMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}}
}

func flowExemptLevel() *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: flowBootstrapMeta(flowcontrolv1.PriorityLevelConfigurationNameExempt),
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: new(int32(0)), LendablePercent: new(int32(0))}}}
}

func flowQueuing(queues, hand int32) *flowcontrolv1.QueuingConfiguration {
	return &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: 50}
}

// flowLimitedLevel is a Limited level; without queuing it rejects what
// exceeds its share.
func flowLimitedLevel(name string, shares, lendable int32, q *flowcontrolv1.QueuingConfiguration) *flowcontrolv1.PriorityLevelConfiguration {
	resp := flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	if q != nil {
		resp = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: q}
	}
	return &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: flowBootstrapMeta(name),
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: new(shares), LendablePercent: new(lendable),
				LimitResponse: resp}}}
}

func flowSchema(name, level string, precedence int32, method flowcontrolv1.FlowDistinguisherMethodType, rules []flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: flowBootstrapMeta(name), Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
		MatchingPrecedence:         precedence, Rules: rules}}
	if method != "" {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: method}
	}
	return fs
}

func flowResourceRule(verbs, groups, resources, namespaces []string, clusterScope bool) flowcontrolv1.ResourcePolicyRule {
	return flowcontrolv1.ResourcePolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, Namespaces: namespaces, ClusterScope: clusterScope}
}

func flowGroup(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: name}}
}

func flowUser(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: name}}
}

func flowServiceAccount(namespace, name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: namespace, Name: name}}
}
