package registry

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const flowcontrolGroup = "flowcontrol.apiserver.k8s.io"

// TestFlowControlBootstrapValid: upstream's mandatory and suggested
// objects pass validation, and the mandatory ones are there.
func TestFlowControlBootstrapValid(t *testing.T) {
	names := map[string]bool{}
	for _, obj := range FlowControlBootstrap() {
		var r *Resource
		var name string
		switch o := obj.(type) {
		case *flowcontrolv1.FlowSchema:
			r, name = mustResource(t, flowcontrolGroup, "flowschemas"), "fs/"+o.Name
		case *flowcontrolv1.PriorityLevelConfiguration:
			r, name = mustResource(t, flowcontrolGroup, "prioritylevelconfigurations"), "pl/"+o.Name
		}
		names[name] = true
		t.Run(name, func(t *testing.T) { expectErrs(t, runCreate(r, obj.DeepCopyObject())) })
	}
	for _, want := range []string{"fs/exempt", "fs/catch-all", "pl/exempt", "pl/catch-all", "fs/global-default", "pl/workload-low", "fs/probes"} {
		if !names[want] {
			t.Errorf("bootstrap lacks %s", want)
		}
	}
	if len(names) != 21 {
		t.Errorf("%d bootstrap objects, want upstream's 21 (8 levels, 13 schemas)", len(names))
	}
}

func TestFlowSchemaValidate(t *testing.T) {
	all := func() flowcontrolv1.PolicyRulesWithSubjects {
		return flowcontrolv1.PolicyRulesWithSubjects{Subjects: []flowcontrolv1.Subject{flowGroup("system:authenticated")},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{flowResourceRule([]string{"*"}, []string{"*"}, []string{"*"}, []string{"*"}, true)}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*flowcontrolv1.FlowSchema)
		want   []string
	}{
		{name: "valid", mutate: func(*flowcontrolv1.FlowSchema) {}},
		{name: "precedence defaulted", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 0 }},
		{name: "precedence too high", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 },
			want: []string{"spec.matchingPrecedence: Invalid value"}},
		{name: "no level", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" },
			want: []string{"spec.priorityLevelConfiguration.name: Required value"}},
		{name: "bad distinguisher", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: "ByVerb"}
		}, want: []string{"spec.distinguisherMethod.type: Unsupported value"}},
		{name: "no subjects", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects = nil },
			want: []string{"spec.rules[0].subjects: Required value"}},
		{name: "no rules", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].ResourceRules = nil },
			want: []string{"spec.rules[0]: Required value"}},
		{name: "wildcard with others", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].ResourceRules[0].Verbs = []string{"*", "get"} },
			want: []string{"spec.rules[0].resourceRules[0].verbs: Invalid value"}},
		{name: "namespaced without namespaces", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].ResourceRules[0].ClusterScope, fs.Spec.Rules[0].ResourceRules[0].Namespaces = false, nil
		}, want: []string{"spec.rules[0].resourceRules[0].namespaces: Required value"}},
		{name: "service account without namespace", mutate: func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.Rules[0].Subjects = []flowcontrolv1.Subject{flowServiceAccount("", "x")}
		}, want: []string{"spec.rules[0].subjects[0].serviceAccount.namespace: Required value"}},
		{name: "bad kind", mutate: func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules[0].Subjects[0].Kind = "Robot" },
			want: []string{"spec.rules[0].subjects[0].kind: Unsupported value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flowSchema("team-a", "workload-low", 500, flowcontrolv1.FlowDistinguisherMethodByUserType, []flowcontrolv1.PolicyRulesWithSubjects{all()})
			tc.mutate(fs)
			expectErrs(t, runCreate(mustResource(t, flowcontrolGroup, "flowschemas"), fs), tc.want...)
		})
	}
}

func TestPriorityLevelValidate(t *testing.T) {
	r := mustResource(t, flowcontrolGroup, "prioritylevelconfigurations")
	d := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}}}}}
	expectErrs(t, runCreate(r, d))
	if l := d.Spec.Limited; *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || *l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}) {
		t.Errorf("defaults: %+v %+v", l, l.LimitResponse.Queuing)
	}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want []string
	}{
		{name: "exempt named otherwise", obj: func() runtime.Object { e := flowExemptLevel(); e.Name = "vip"; return e }(),
			want: []string{"spec.type: Invalid value"}},
		{name: "exempt as limited", obj: flowLimitedLevel("exempt", 1, 0, nil), want: []string{"spec.type: Invalid value"}},
		{name: "lendable over 100", obj: flowLimitedLevel("a", 1, 101, nil), want: []string{"spec.limited.lendablePercent: Invalid value"}},
		{name: "negative shares", obj: flowLimitedLevel("a", -1, 0, nil), want: []string{"spec.limited.nominalConcurrencyShares: Invalid value"}},
		{name: "hand bigger than deck", obj: flowLimitedLevel("a", 1, 0, &flowcontrolv1.QueuingConfiguration{Queues: 4, HandSize: 5, QueueLengthLimit: 1}),
			want: []string{"spec.limited.limitResponse.queuing.handSize: Invalid value"}},
		{name: "too much entropy", obj: flowLimitedLevel("a", 1, 0, &flowcontrolv1.QueuingConfiguration{Queues: 1 << 20, HandSize: 4, QueueLengthLimit: 1}),
			want: []string{"spec.limited.limitResponse.queuing.handSize: Invalid value"}},
		{name: "queue without queuing", obj: func() runtime.Object {
			pl := flowLimitedLevel("a", 1, 0, nil)
			pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeQueue
			return pl
		}(), want: []string{"spec.limited.limitResponse.queuing: Required value"}},
		{name: "limited without limited", obj: &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited}},
			want: []string{"spec.limited: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectErrs(t, runCreate(r, tc.obj), tc.want...) })
	}
}
