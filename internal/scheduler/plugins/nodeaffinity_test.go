package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func naNode(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func naNodeInfo(node *corev1.Node, pods ...*corev1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}

func naReq(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// naPodRequired builds a pod whose required node affinity has one term
// per element of terms.
func naPodRequired(terms ...corev1.NodeSelectorTerm) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p"},
		Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
		}}},
	}
}

func naExprs(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

func naFields(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchFields: reqs}
}

func naNew(t *testing.T, args *configv1.NodeAffinityArgs) *NodeAffinity {
	t.Helper()
	var p framework.Plugin
	var err error
	if args == nil {
		p, err = NewNodeAffinity(context.Background(), nil, nil) // untyped nil: defaults
	} else {
		p, err = NewNodeAffinity(context.Background(), args, nil)
	}
	if err != nil {
		t.Fatalf("NewNodeAffinity: %v", err)
	}
	return p.(*NodeAffinity)
}

// naRunFilter runs PreFilter then (unless skipped) Filter, as the
// framework would, and returns the final status.
func naRunFilter(t *testing.T, pl *NodeAffinity, pod *corev1.Pod, node *corev1.Node) *framework.Status {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	ni := naNodeInfo(node)
	res, s := pl.PreFilter(ctx, state, pod, []*framework.NodeInfo{ni})
	if s.IsSkip() {
		return nil
	}
	if !s.IsSuccess() {
		return s
	}
	if res != nil && res.NodeNames != nil && !res.NodeNames.Has(node.Name) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, "excluded by PreFilterResult")
	}
	return pl.Filter(ctx, state, pod, ni)
}

func TestNodeAffinityFilter(t *testing.T) {
	zoneA := map[string]string{"zone": "a", "gpu": "4", "disk": "ssd"}
	tests := []struct {
		name  string
		pod   *corev1.Pod
		node  *corev1.Node
		added *corev1.NodeAffinity
		fits  bool
		// reason when it does not fit; the code is always
		// UnschedulableAndUnresolvable
		reason string
	}{
		{name: "no constraints fits anywhere", pod: &corev1.Pod{}, node: naNode("n", nil), fits: true},
		{name: "nodeSelector matches", pod: &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}}}, node: naNode("n", zoneA), fits: true},
		{name: "nodeSelector wrong value", pod: &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"zone": "b"}}}, node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "nodeSelector missing label", pod: &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"rack": "1"}}}, node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "nodeSelector empty value needs the label present", pod: &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"rack": ""}}}, node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "In matches", pod: naPodRequired(naExprs(naReq("zone", corev1.NodeSelectorOpIn, "b", "a"))), node: naNode("n", zoneA), fits: true},
		{name: "In needs the label", pod: naPodRequired(naExprs(naReq("rack", corev1.NodeSelectorOpIn, "1"))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "NotIn matches an absent label", pod: naPodRequired(naExprs(naReq("rack", corev1.NodeSelectorOpNotIn, "1"))), node: naNode("n", zoneA), fits: true},
		{name: "NotIn rejects a listed value", pod: naPodRequired(naExprs(naReq("zone", corev1.NodeSelectorOpNotIn, "a"))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "Exists", pod: naPodRequired(naExprs(naReq("disk", corev1.NodeSelectorOpExists))), node: naNode("n", zoneA), fits: true},
		{name: "Exists fails without the label", pod: naPodRequired(naExprs(naReq("rack", corev1.NodeSelectorOpExists))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "DoesNotExist", pod: naPodRequired(naExprs(naReq("rack", corev1.NodeSelectorOpDoesNotExist))), node: naNode("n", zoneA), fits: true},
		{name: "DoesNotExist fails with the label", pod: naPodRequired(naExprs(naReq("disk", corev1.NodeSelectorOpDoesNotExist))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "Gt matches a larger integer", pod: naPodRequired(naExprs(naReq("gpu", corev1.NodeSelectorOpGt, "3"))), node: naNode("n", zoneA), fits: true},
		{name: "Gt is strict", pod: naPodRequired(naExprs(naReq("gpu", corev1.NodeSelectorOpGt, "4"))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "Gt on a non-integer label", pod: naPodRequired(naExprs(naReq("disk", corev1.NodeSelectorOpGt, "1"))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "Lt matches a smaller integer", pod: naPodRequired(naExprs(naReq("gpu", corev1.NodeSelectorOpLt, "10"))), node: naNode("n", zoneA), fits: true},
		{name: "Lt fails without the label", pod: naPodRequired(naExprs(naReq("rack", corev1.NodeSelectorOpLt, "10"))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{
			name: "expressions in a term are ANDed",
			pod: naPodRequired(naExprs(
				naReq("zone", corev1.NodeSelectorOpIn, "a"),
				naReq("disk", corev1.NodeSelectorOpIn, "hdd"),
			)),
			node: naNode("n", zoneA), reason: ErrReasonNodeAffinity,
		},
		{
			name: "terms are ORed",
			pod: naPodRequired(
				naExprs(naReq("zone", corev1.NodeSelectorOpIn, "b")),
				naExprs(naReq("disk", corev1.NodeSelectorOpIn, "ssd")),
			),
			node: naNode("n", zoneA), fits: true,
		},
		{name: "an empty term matches nothing", pod: naPodRequired(corev1.NodeSelectorTerm{}), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "no terms match nothing", pod: naPodRequired(), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{
			name: "a term that does not parse is skipped, the next still matches",
			pod: naPodRequired(
				naExprs(naReq("zone", corev1.NodeSelectorOpIn)), // In without values
				naExprs(naReq("zone", corev1.NodeSelectorOpIn, "a")),
			),
			node: naNode("n", zoneA), fits: true,
		},
		{name: "Gt with a non-integer value never matches", pod: naPodRequired(naExprs(naReq("gpu", corev1.NodeSelectorOpGt, "x"))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "unknown operator never matches", pod: naPodRequired(naExprs(naReq("zone", "Like", "a"))), node: naNode("n", zoneA), reason: ErrReasonNodeAffinity},
		{name: "matchFields metadata.name In", pod: naPodRequired(naFields(naReq("metadata.name", corev1.NodeSelectorOpIn, "n1"))), node: naNode("n1", nil), fits: true},
		{name: "matchFields metadata.name In other node", pod: naPodRequired(naFields(naReq("metadata.name", corev1.NodeSelectorOpIn, "n1"))), node: naNode("n2", nil), reason: "excluded by PreFilterResult"},
		{name: "matchFields metadata.name NotIn", pod: naPodRequired(naFields(naReq("metadata.name", corev1.NodeSelectorOpNotIn, "n1"))), node: naNode("n1", nil), reason: ErrReasonNodeAffinity},
		{name: "matchFields with two values does not parse", pod: naPodRequired(naFields(naReq("metadata.name", corev1.NodeSelectorOpNotIn, "x", "y"))), node: naNode("n1", nil), reason: ErrReasonNodeAffinity},
		{
			name: "matchFields and matchExpressions in one term are ANDed",
			pod: naPodRequired(corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{naReq("zone", corev1.NodeSelectorOpIn, "b")},
				MatchFields:      []corev1.NodeSelectorRequirement{naReq("metadata.name", corev1.NodeSelectorOpIn, "n1")},
			}),
			node: naNode("n1", zoneA), reason: ErrReasonNodeAffinity,
		},
		{
			name: "nodeSelector and affinity must both match: affinity fails",
			pod: func() *corev1.Pod {
				p := naPodRequired(naExprs(naReq("zone", corev1.NodeSelectorOpIn, "b")))
				p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
				return p
			}(),
			node: naNode("n", zoneA), reason: ErrReasonNodeAffinity,
		},
		{
			name: "nodeSelector and affinity must both match: selector fails",
			pod: func() *corev1.Pod {
				p := naPodRequired(naExprs(naReq("zone", corev1.NodeSelectorOpIn, "a")))
				p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
				return p
			}(),
			node: naNode("n", zoneA), reason: ErrReasonNodeAffinity,
		},
		{
			name: "nodeSelector and affinity both match",
			pod: func() *corev1.Pod {
				p := naPodRequired(naExprs(naReq("zone", corev1.NodeSelectorOpIn, "a")))
				p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
				return p
			}(),
			node: naNode("n", zoneA), fits: true,
		},
		{
			name: "added affinity rejects with the enforced reason",
			pod:  &corev1.Pod{},
			added: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{naExprs(naReq("zone", corev1.NodeSelectorOpIn, "b"))},
			}},
			node: naNode("n", zoneA), reason: ErrReasonNodeAffinityEnforced,
		},
		{
			name: "added affinity and pod affinity both pass",
			pod:  naPodRequired(naExprs(naReq("disk", corev1.NodeSelectorOpExists))),
			added: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{naExprs(naReq("zone", corev1.NodeSelectorOpIn, "a"))},
			}},
			node: naNode("n", zoneA), fits: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args *configv1.NodeAffinityArgs
			if tc.added != nil {
				args = &configv1.NodeAffinityArgs{AddedAffinity: tc.added}
			}
			pl := naNew(t, args)
			s := naRunFilter(t, pl, tc.pod, tc.node)
			if tc.fits {
				if !s.IsSuccess() {
					t.Fatalf("want fit, got %v", s)
				}
				return
			}
			if s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != tc.reason {
				t.Fatalf("got %v, want UnschedulableAndUnresolvable: %s", s, tc.reason)
			}
		})
	}
}

func TestNodeAffinityPreFilter(t *testing.T) {
	name := func(v ...string) corev1.NodeSelectorRequirement {
		return naReq(metav1.ObjectNameField, corev1.NodeSelectorOpIn, v...)
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		wantSkip bool
		want     sets.Set[string] // nil: all nodes
		reason   string
	}{
		{name: "no affinity and no selector skips", pod: &corev1.Pod{}, wantSkip: true},
		{name: "a nodeSelector alone does not narrow", pod: &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"a": "b"}}}},
		{name: "one term pinning a name", pod: naPodRequired(naFields(name("n1"))), want: sets.New("n1")},
		{name: "names of terms are unioned", pod: naPodRequired(naFields(name("n1")), naFields(name("n2"))), want: sets.New("n1", "n2")},
		{name: "names within a term are intersected", pod: naPodRequired(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{name("n1"), name("n1")}}), want: sets.New("n1")},
		{
			name: "a term without names lets every node through",
			pod:  naPodRequired(naFields(name("n1")), naExprs(naReq("zone", corev1.NodeSelectorOpExists))),
		},
		{
			name:   "contradicting names in every term",
			pod:    naPodRequired(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{name("n1"), name("n2")}}),
			reason: ErrReasonNodeAffinityConflict,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := naNew(t, nil)
			res, s := pl.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, nil)
			switch {
			case tc.wantSkip:
				if !s.IsSkip() {
					t.Fatalf("want Skip, got %v", s)
				}
			case tc.reason != "":
				if s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != tc.reason {
					t.Fatalf("got %v, want %s", s, tc.reason)
				}
			default:
				if !s.IsSuccess() {
					t.Fatalf("status %v", s)
				}
				var got sets.Set[string]
				if res != nil {
					got = res.NodeNames
				}
				if (got == nil) != (tc.want == nil) || !got.Equal(tc.want) {
					t.Fatalf("NodeNames = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestNodeAffinityScore(t *testing.T) {
	pref := func(w int32, reqs ...corev1.NodeSelectorRequirement) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: w, Preference: naExprs(reqs...)}
	}
	podWith := func(terms ...corev1.PreferredSchedulingTerm) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: terms,
		}}}}
	}
	nodes := []*corev1.Node{
		naNode("a", map[string]string{"zone": "a", "disk": "ssd"}),
		naNode("b", map[string]string{"zone": "b", "disk": "ssd"}),
		naNode("c", map[string]string{"zone": "c"}),
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		added    []corev1.PreferredSchedulingTerm
		wantSkip bool
		want     []int64 // normalized, in node order
	}{
		{name: "no preferences skips", pod: &corev1.Pod{}, wantSkip: true},
		{
			// raw a=5+2=7, b=2, c=0; normalized 100*raw/7.
			name: "weights add up and scale to the best node",
			pod:  podWith(pref(5, naReq("zone", corev1.NodeSelectorOpIn, "a")), pref(2, naReq("disk", corev1.NodeSelectorOpExists))),
			want: []int64{100, 28, 0},
		},
		{
			name: "weight 0 and empty terms are ignored",
			pod:  podWith(pref(0, naReq("zone", corev1.NodeSelectorOpIn, "c")), corev1.PreferredSchedulingTerm{Weight: 9}),
			want: []int64{0, 0, 0},
		},
		{
			// raw a=0, b=0, c=3 (added); the pod's term matches nothing.
			name:  "added preferred terms count for every pod",
			pod:   podWith(pref(4, naReq("zone", corev1.NodeSelectorOpIn, "z"))),
			added: []corev1.PreferredSchedulingTerm{pref(3, naReq("disk", corev1.NodeSelectorOpDoesNotExist))},
			want:  []int64{0, 0, 100},
		},
		{
			name:  "added preferred terms score a pod without preferences",
			pod:   &corev1.Pod{},
			added: []corev1.PreferredSchedulingTerm{pref(3, naReq("zone", corev1.NodeSelectorOpNotIn, "a"))},
			want:  []int64{0, 100, 100},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args *configv1.NodeAffinityArgs
			if tc.added != nil {
				args = &configv1.NodeAffinityArgs{AddedAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: tc.added}}
			}
			pl := naNew(t, args)
			ctx := context.Background()
			state := framework.NewCycleState()
			s := pl.PreScore(ctx, state, tc.pod, nil)
			if tc.wantSkip {
				if !s.IsSkip() {
					t.Fatalf("want Skip, got %v", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			scores := make([]framework.NodeScore, len(nodes))
			for i, n := range nodes {
				v, st := pl.Score(ctx, state, tc.pod, naNodeInfo(n))
				if !st.IsSuccess() {
					t.Fatal(st)
				}
				scores[i] = framework.NodeScore{Name: n.Name, Score: v}
			}
			pl.NormalizeScore(ctx, state, tc.pod, scores)
			for i := range scores {
				if scores[i].Score != tc.want[i] {
					t.Fatalf("scores = %v, want %v", scores, tc.want)
				}
			}
		})
	}
}

func TestNewNodeAffinityArgs(t *testing.T) {
	bad := &configv1.NodeAffinityArgs{AddedAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{naExprs(naReq("zone", corev1.NodeSelectorOpIn))},
		},
	}}
	if _, err := NewNodeAffinity(context.Background(), bad, nil); err == nil {
		t.Error("an addedAffinity that does not parse must be a configuration error")
	}
	badPref := &configv1.NodeAffinityArgs{AddedAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: naExprs(naReq("k", corev1.NodeSelectorOpExists, "v"))}},
	}}
	if _, err := NewNodeAffinity(context.Background(), badPref, nil); err == nil {
		t.Error("added preferred terms that do not parse must be a configuration error")
	}
	if _, err := NewNodeAffinity(context.Background(), &configv1.PodTopologySpreadArgs{}, nil); err == nil {
		t.Error("wrong args type must fail")
	}
}

func TestNodeAffinityQueueingHint(t *testing.T) {
	pod := naPodRequired(naExprs(naReq("zone", corev1.NodeSelectorOpIn, "a")))
	pl := naNew(t, nil)
	events, _ := pl.EventsToRegister(context.Background())
	if len(events) != 1 || events[0].Event.Resource != framework.NodeResource {
		t.Fatalf("events = %+v", events)
	}
	hint := events[0].QueueingHintFn
	tests := []struct {
		name     string
		old, new *corev1.Node
		want     framework.QueueingHint
	}{
		{name: "new matching node", new: naNode("n", map[string]string{"zone": "a"}), want: framework.Queue},
		{name: "new non-matching node", new: naNode("n", map[string]string{"zone": "b"}), want: framework.QueueSkip},
		{name: "label added makes it match", old: naNode("n", nil), new: naNode("n", map[string]string{"zone": "a"}), want: framework.Queue},
		{name: "already matched before", old: naNode("n", map[string]string{"zone": "a"}), new: naNode("n", map[string]string{"zone": "a", "x": "y"}), want: framework.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var oldObj, newObj interface{}
			if tc.old != nil {
				oldObj = tc.old
			}
			if tc.new != nil {
				newObj = tc.new
			}
			got, err := hint(pod, oldObj, newObj)
			if err != nil || got != tc.want {
				t.Fatalf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := hint(pod, nil, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID("x")}}); err == nil {
		t.Error("a pod object in a node event must be an error")
	}
}
