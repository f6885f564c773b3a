package plugins

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

const (
	ipaTHost = corev1.LabelHostname
	ipaTZone = corev1.LabelTopologyZone
)

func ipaTNode(name, zone string) *corev1.Node {
	l := map[string]string{ipaTHost: name}
	if zone != "" {
		l[ipaTZone] = zone
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// ipaTPod builds a pod; labels are "k=v" pairs.
func ipaTPod(ns, name, node string, lbls ...string) *corev1.Pod {
	l := map[string]string{}
	for _, kv := range lbls {
		k, v, _ := strings.Cut(kv, "=")
		l[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: l},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

func ipaTTerm(key string, sel map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
}

func ipaTWithRequired(p *corev1.Pod, aff, anti []corev1.PodAffinityTerm) *corev1.Pod {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if aff != nil {
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: aff}
	}
	if anti != nil {
		p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: anti}
	}
	return p
}

func ipaTWithPreferred(p *corev1.Pod, aff, anti []corev1.WeightedPodAffinityTerm) *corev1.Pod {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if aff != nil {
		if p.Spec.Affinity.PodAffinity == nil {
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
		}
		p.Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = aff
	}
	if anti != nil {
		if p.Spec.Affinity.PodAntiAffinity == nil {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = anti
	}
	return p
}

func ipaTNamespace(name string, lbls ...string) *corev1.Namespace {
	l := map[string]string{}
	for _, kv := range lbls {
		k, v, _ := strings.Cut(kv, "=")
		l[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

func ipaTSnapshot(nodes []*corev1.Node, pods []*corev1.Pod) *framework.Snapshot {
	var nis []*framework.NodeInfo
	for _, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		for _, p := range pods {
			if p.Spec.NodeName == n.Name {
				ni.AddPod(framework.NewPodInfo(p))
			}
		}
		nis = append(nis, ni)
	}
	return framework.NewSnapshot(nis...)
}

func ipaTPlugin(t testing.TB, snap *framework.Snapshot, args runtime.Object, objs ...runtime.Object) (*InterPodAffinity, *testHandle) {
	t.Helper()
	h := newTestHandle(snap, objs...)
	p, err := NewInterPodAffinity(context.Background(), args, h)
	if err != nil {
		t.Fatal(err)
	}
	h.start(t)
	return p.(*InterPodAffinity), h
}

// ipaTFilterAll runs PreFilter and Filter on every node and renders each
// node's outcome as "node: Code: reason" ("node: ok" when it fits).
func ipaTFilterAll(t testing.TB, pl *InterPodAffinity, snap *framework.Snapshot, pod *corev1.Pod) (skip bool, out []string) {
	t.Helper()
	ctx := context.Background()
	cs := framework.NewCycleState()
	_, st := pl.PreFilter(ctx, cs, pod, snap.NodeInfoList)
	if st.IsSkip() {
		skip = true
	} else if !st.IsSuccess() {
		return false, []string{"prefilter: " + st.String()}
	}
	for _, ni := range snap.NodeInfoList {
		s := "ok"
		if !skip {
			if fs := pl.Filter(ctx, cs, pod, ni); !fs.IsSuccess() {
				s = fs.String()
			}
		}
		out = append(out, ni.Name()+": "+s)
	}
	return skip, out
}

const (
	ipaTAff      = "UnschedulableAndUnresolvable: " + ipaReasonAffinity
	ipaTAnti     = "Unschedulable: " + ipaReasonAntiAffinity
	ipaTExisting = "Unschedulable: " + ipaReasonExistingAntiAffi
)

func TestInterPodAffinityFilter(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	threeNodes := []*corev1.Node{ipaTNode("n1", "a"), ipaTNode("n2", "a"), ipaTNode("n3", "b")}
	tests := []struct {
		name     string
		nodes    []*corev1.Node
		existing []*corev1.Pod
		objs     []runtime.Object
		pod      *corev1.Pod
		wantSkip bool
		want     []string
	}{
		{
			name:     "no terms and no existing anti-affinity skips",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("default", "w1", "n1", "app=web")},
			pod:      ipaTPod("default", "p", "", "app=web"),
			wantSkip: true,
			want:     []string{"n1: ok", "n2: ok", "n3: ok"},
		},
		{
			name:     "affinity by hostname needs the matching pod on the node",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("default", "db1", "n1", "app=db")},
			pod:      ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, db)}, nil),
			want:     []string{"n1: ok", "n2: " + ipaTAff, "n3: " + ipaTAff},
		},
		{
			name:     "affinity by zone accepts every node of the zone",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("default", "db1", "n1", "app=db")},
			pod:      ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, db)}, nil),
			want:     []string{"n1: ok", "n2: ok", "n3: " + ipaTAff},
		},
		{
			name:     "affinity rejects a node without the topology key",
			nodes:    []*corev1.Node{ipaTNode("n1", "a"), ipaTNode("n2", "")},
			existing: []*corev1.Pod{ipaTPod("default", "db1", "n1", "app=db"), ipaTPod("default", "db2", "n2", "app=db")},
			pod:      ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, db)}, nil),
			want:     []string{"n1: ok", "n2: " + ipaTAff},
		},
		{
			name:  "first pod of a self-affine group goes to any node with the key",
			nodes: []*corev1.Node{ipaTNode("n1", "a"), ipaTNode("n2", "b"), ipaTNode("n3", "")},
			pod:   ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, web)}, nil),
			want:  []string{"n1: ok", "n2: ok", "n3: " + ipaTAff},
		},
		{
			name:  "first-pod rule needs the pod to match its own terms",
			nodes: threeNodes,
			pod:   ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, db)}, nil),
			want:  []string{"n1: " + ipaTAff, "n2: " + ipaTAff, "n3: " + ipaTAff},
		},
		{
			name:     "first-pod rule ends once a group member runs",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("default", "w1", "n1", "app=web")},
			pod:      ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, web)}, nil),
			want:     []string{"n1: ok", "n2: ok", "n3: " + ipaTAff},
		},
		{
			name:  "affinity with two terms needs one pod matching both",
			nodes: threeNodes,
			existing: []*corev1.Pod{
				ipaTPod("default", "x", "n1", "app=db"),
				ipaTPod("default", "y", "n1", "tier=cache"),
				ipaTPod("default", "z", "n3", "app=db", "tier=cache"),
			},
			pod: ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), []corev1.PodAffinityTerm{
				ipaTTerm(ipaTZone, db), ipaTTerm(ipaTZone, map[string]string{"tier": "cache"}),
			}, nil),
			want: []string{"n1: " + ipaTAff, "n2: " + ipaTAff, "n3: ok"},
		},
		{
			name:     "anti-affinity by hostname",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("default", "w1", "n1", "app=web")},
			pod:      ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)}),
			want:     []string{"n1: " + ipaTAnti, "n2: ok", "n3: ok"},
		},
		{
			name:     "anti-affinity by zone",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("default", "w1", "n1", "app=web")},
			pod:      ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, web)}),
			want:     []string{"n1: " + ipaTAnti, "n2: " + ipaTAnti, "n3: ok"},
		},
		{
			name:     "anti-affinity only looks in the pod's namespace by default",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("other", "w1", "n1", "app=web")},
			pod:      ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)}),
			want:     []string{"n1: ok", "n2: ok", "n3: ok"},
		},
		{
			name:     "anti-affinity with a namespace list",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("default", "w1", "n1", "app=web"), ipaTPod("other", "w2", "n2", "app=web")},
			pod: ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), nil, []corev1.PodAffinityTerm{{
				TopologyKey: ipaTHost, LabelSelector: &metav1.LabelSelector{MatchLabels: web}, Namespaces: []string{"other"},
			}}),
			want: []string{"n1: ok", "n2: " + ipaTAnti, "n3: ok"},
		},
		{
			name:     "anti-affinity with a namespace selector",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("ns-a", "w1", "n1", "app=web"), ipaTPod("ns-b", "w2", "n3", "app=web")},
			objs:     []runtime.Object{ipaTNamespace("ns-a", "team=a"), ipaTNamespace("ns-b", "team=b")},
			pod: ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), nil, []corev1.PodAffinityTerm{{
				TopologyKey: ipaTHost, LabelSelector: &metav1.LabelSelector{MatchLabels: web},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			}}),
			want: []string{"n1: " + ipaTAnti, "n2: ok", "n3: ok"},
		},
		{
			name:     "an empty namespace selector means all namespaces",
			nodes:    threeNodes,
			existing: []*corev1.Pod{ipaTPod("ns-a", "w1", "n1", "app=web"), ipaTPod("ns-b", "w2", "n3", "app=web")},
			pod: ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), nil, []corev1.PodAffinityTerm{{
				TopologyKey: ipaTHost, LabelSelector: &metav1.LabelSelector{MatchLabels: web}, NamespaceSelector: &metav1.LabelSelector{},
			}}),
			want: []string{"n1: " + ipaTAnti, "n2: ok", "n3: " + ipaTAnti},
		},
		{
			name:  "existing pod's anti-affinity by hostname rejects its node",
			nodes: threeNodes,
			existing: []*corev1.Pod{
				ipaTWithRequired(ipaTPod("default", "x", "n1", "app=db"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)}),
			},
			pod:  ipaTPod("default", "p", "", "app=web"),
			want: []string{"n1: " + ipaTExisting, "n2: ok", "n3: ok"},
		},
		{
			name:  "existing pod's anti-affinity by zone rejects its zone",
			nodes: threeNodes,
			existing: []*corev1.Pod{
				ipaTWithRequired(ipaTPod("default", "x", "n3", "app=db"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, web)}),
			},
			pod:  ipaTPod("default", "p", "", "app=web"),
			want: []string{"n1: ok", "n2: ok", "n3: " + ipaTExisting},
		},
		{
			name:  "existing pod's anti-affinity that the pod does not match skips",
			nodes: threeNodes,
			existing: []*corev1.Pod{
				ipaTWithRequired(ipaTPod("default", "x", "n3", "app=db"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, db)}),
			},
			pod:      ipaTPod("default", "p", "", "app=web"),
			wantSkip: true,
			want:     []string{"n1: ok", "n2: ok", "n3: ok"},
		},
		{
			name:  "existing pod's anti-affinity selects namespaces by the incoming pod's namespace labels",
			nodes: threeNodes,
			existing: []*corev1.Pod{
				ipaTWithRequired(ipaTPod("infra", "x", "n2", "app=db"), nil, []corev1.PodAffinityTerm{{
					TopologyKey: ipaTHost, LabelSelector: &metav1.LabelSelector{MatchLabels: web},
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
				}}),
			},
			objs: []runtime.Object{ipaTNamespace("ns-a", "team=a")},
			pod:  ipaTPod("ns-a", "p", "", "app=web"),
			want: []string{"n1: ok", "n2: " + ipaTExisting, "n3: ok"},
		},
		{
			name:  "affinity is checked before anti-affinity",
			nodes: threeNodes,
			existing: []*corev1.Pod{
				ipaTPod("default", "db1", "n1", "app=db"), ipaTPod("default", "w1", "n1", "app=web"),
			},
			pod: ipaTWithRequired(ipaTPod("default", "p", "", "app=web"),
				[]corev1.PodAffinityTerm{ipaTTerm(ipaTZone, db)}, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)}),
			want: []string{"n1: " + ipaTAnti, "n2: ok", "n3: " + ipaTAff},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ipaTSnapshot(tc.nodes, tc.existing)
			pl, _ := ipaTPlugin(t, snap, nil, tc.objs...)
			skip, got := ipaTFilterAll(t, pl, snap, tc.pod)
			if skip != tc.wantSkip {
				t.Errorf("PreFilter skip = %v, want %v", skip, tc.wantSkip)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestInterPodAffinityParseError(t *testing.T) {
	snap := ipaTSnapshot([]*corev1.Node{ipaTNode("n1", "a")}, nil)
	pl, _ := ipaTPlugin(t, snap, nil)
	pod := ipaTWithRequired(ipaTPod("default", "p", ""), nil, []corev1.PodAffinityTerm{{
		TopologyKey: ipaTHost,
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: "Bogus"},
		}},
	}})
	_, st := pl.PreFilter(context.Background(), framework.NewCycleState(), pod, snap.NodeInfoList)
	if st.Code() != framework.UnschedulableAndUnresolvable || !strings.HasPrefix(st.Message(), "parsing pod: ") {
		t.Fatalf("PreFilter = %v, want UnschedulableAndUnresolvable parsing pod: ...", st)
	}
}

// Preemption removes victims and adds nominated pods on a clone of the
// state; the original must not change.
func TestInterPodAffinityAddRemovePod(t *testing.T) {
	web := map[string]string{"app": "web"}
	victim := ipaTPod("default", "victim", "n1", "app=web")
	blocker := ipaTWithRequired(ipaTPod("default", "blocker", "n3", "app=db"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, web)})
	nodes := []*corev1.Node{ipaTNode("n1", "a"), ipaTNode("n2", "a"), ipaTNode("n3", "b")}
	snap := ipaTSnapshot(nodes, []*corev1.Pod{victim, blocker})
	pl, _ := ipaTPlugin(t, snap, nil)
	ctx := context.Background()
	pod := ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)})
	cs := framework.NewCycleState()
	if _, st := pl.PreFilter(ctx, cs, pod, snap.NodeInfoList); !st.IsSuccess() {
		t.Fatal(st)
	}
	n1, n2, n3 := snap.NodeInfoList[0], snap.NodeInfoList[1], snap.NodeInfoList[2]
	render := func(cs *framework.CycleState) string {
		var out []string
		for _, ni := range []*framework.NodeInfo{n1, n2, n3} {
			out = append(out, fmt.Sprintf("%s=%v", ni.Name(), pl.Filter(ctx, cs, pod, ni).Code()))
		}
		return strings.Join(out, " ")
	}
	if got, want := render(cs), "n1=Unschedulable n2=Success n3=Unschedulable"; got != want {
		t.Fatalf("before: %s, want %s", got, want)
	}

	tests := []struct {
		name string
		edit func(cs *framework.CycleState)
		want string
	}{
		{"removing the victim frees its node", func(cs *framework.CycleState) {
			pl.RemovePod(ctx, cs, pod, framework.NewPodInfo(victim), n1)
		}, "n1=Success n2=Success n3=Unschedulable"},
		{"removing the pod with anti-affinity frees its zone", func(cs *framework.CycleState) {
			pl.RemovePod(ctx, cs, pod, framework.NewPodInfo(blocker), n3)
		}, "n1=Unschedulable n2=Success n3=Success"},
		{"a nominated pod the pod is anti-affine to blocks its node", func(cs *framework.CycleState) {
			pl.AddPod(ctx, cs, pod, framework.NewPodInfo(ipaTPod("default", "nom", "", "app=web")), n2)
		}, "n1=Unschedulable n2=Unschedulable n3=Unschedulable"},
		{"a nominated pod with anti-affinity to the pod blocks its zone", func(cs *framework.CycleState) {
			pl.RemovePod(ctx, cs, pod, framework.NewPodInfo(victim), n1)
			nom := ipaTWithRequired(ipaTPod("default", "nom", "", "app=db"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, web)})
			pl.AddPod(ctx, cs, pod, framework.NewPodInfo(nom), n2)
		}, "n1=Unschedulable n2=Unschedulable n3=Unschedulable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cs.Clone()
			tc.edit(c)
			if got := render(c); got != tc.want {
				t.Errorf("after: %s, want %s", got, tc.want)
			}
			if got, want := render(cs), "n1=Unschedulable n2=Success n3=Unschedulable"; got != want {
				t.Errorf("original state changed: %s, want %s", got, want)
			}
		})
	}
}

// ipaTScores runs PreScore, Score and NormalizeScore over all nodes.
func ipaTScores(t testing.TB, pl *InterPodAffinity, snap *framework.Snapshot, pod *corev1.Pod) (skip bool, raw, norm []int64) {
	t.Helper()
	ctx := context.Background()
	cs := framework.NewCycleState()
	if st := pl.PreScore(ctx, cs, pod, snap.NodeInfoList); st.IsSkip() {
		return true, nil, nil
	} else if !st.IsSuccess() {
		t.Fatalf("PreScore: %v", st)
	}
	var scores []framework.NodeScore
	for _, ni := range snap.NodeInfoList {
		s, st := pl.Score(ctx, cs, pod, ni)
		if !st.IsSuccess() {
			t.Fatalf("Score: %v", st)
		}
		raw = append(raw, s)
		scores = append(scores, framework.NodeScore{Name: ni.Name(), Score: s})
	}
	if st := pl.ScoreExtensions().NormalizeScore(ctx, cs, pod, scores); !st.IsSuccess() {
		t.Fatal(st)
	}
	for _, s := range scores {
		norm = append(norm, s.Score)
	}
	return false, raw, norm
}

func TestInterPodAffinityScore(t *testing.T) {
	web := map[string]string{"app": "web"}
	nodes := []*corev1.Node{ipaTNode("n1", "a"), ipaTNode("n2", "a"), ipaTNode("n3", "b")}
	weighted := func(w int32, key string, sel map[string]string) []corev1.WeightedPodAffinityTerm {
		return []corev1.WeightedPodAffinityTerm{{Weight: w, PodAffinityTerm: ipaTTerm(key, sel)}}
	}
	// Existing pods for the "existing pods' terms" cases: x on n1 requires
	// affinity to web pods on its host; y on n3 prefers (weight 4) no web
	// pods in its zone.
	existingTerms := []*corev1.Pod{
		ipaTWithRequired(ipaTPod("default", "x", "n1", "app=db"), []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)}, nil),
		ipaTWithPreferred(ipaTPod("default", "y", "n3", "app=cache"), nil, weighted(4, ipaTZone, web)),
	}
	tests := []struct {
		name     string
		args     runtime.Object
		existing []*corev1.Pod
		pod      *corev1.Pod
		wantSkip bool
		wantRaw  []int64
		wantNorm []int64
	}{
		{
			// n1, n2: +5 (zone a has db); n3: -3 (cache on its host).
			// min -3, max 5: (5+3)/8*100 = 100, 0.
			name:     "pod's preferred affinity and anti-affinity",
			existing: []*corev1.Pod{ipaTPod("default", "db1", "n1", "app=db"), ipaTPod("default", "c1", "n3", "app=cache")},
			pod: ipaTWithPreferred(ipaTPod("default", "p", "", "app=web"),
				weighted(5, ipaTZone, map[string]string{"app": "db"}), weighted(3, ipaTHost, map[string]string{"app": "cache"})),
			wantRaw:  []int64{5, 5, -3},
			wantNorm: []int64{100, 100, 0},
		},
		{
			// Two matching pods in zone a count twice: n1, n2 = 2*2 = 4.
			name:     "weights multiply by matching pods",
			existing: []*corev1.Pod{ipaTPod("default", "db1", "n1", "app=db"), ipaTPod("default", "db2", "n2", "app=db")},
			pod:      ipaTWithPreferred(ipaTPod("default", "p", "", "app=web"), weighted(2, ipaTZone, map[string]string{"app": "db"}), nil),
			wantRaw:  []int64{4, 4, 0},
			wantNorm: []int64{100, 100, 0},
		},
		{
			// n1: +1 (x's required affinity, hardPodAffinityWeight 1);
			// n3: -4 (y's preferred anti-affinity). min -4, max 1:
			// n1 100, n2 (0+4)/5*100 = 80, n3 0.
			name:     "existing pods' required affinity and preferred anti-affinity",
			existing: existingTerms,
			pod:      ipaTPod("default", "p", "", "app=web"),
			wantRaw:  []int64{1, 0, -4},
			wantNorm: []int64{100, 80, 0},
		},
		{
			name:     "hardPodAffinityWeight scales existing pods' required affinity",
			args:     &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ipaTPtr(int32(6))},
			existing: existingTerms,
			pod:      ipaTPod("default", "p", "", "app=web"),
			wantRaw:  []int64{6, 0, -4},
			wantNorm: []int64{100, 40, 0},
		},
		{
			name:     "hardPodAffinityWeight 0 ignores existing pods' required affinity",
			args:     &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ipaTPtr(int32(0))},
			existing: existingTerms,
			pod:      ipaTPod("default", "p", "", "app=web"),
			wantRaw:  []int64{0, 0, -4},
			wantNorm: []int64{100, 100, 0},
		},
		{
			name:     "ignorePreferredTermsOfExistingPods skips a pod without preferences",
			args:     &configv1.InterPodAffinityArgs{IgnorePreferredTermsOfExistingPods: true},
			existing: existingTerms,
			pod:      ipaTPod("default", "p", "", "app=web"),
			wantSkip: true,
		},
		{
			name:     "nothing to score skips",
			existing: []*corev1.Pod{ipaTPod("default", "db1", "n1", "app=db")},
			pod:      ipaTPod("default", "p", "", "app=web"),
			wantSkip: true,
		},
		{
			name:     "preferences matching no pod skip",
			existing: []*corev1.Pod{ipaTPod("default", "db1", "n1", "app=db")},
			pod:      ipaTWithPreferred(ipaTPod("default", "p", "", "app=web"), weighted(5, ipaTZone, web), nil),
			wantSkip: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ipaTSnapshot(nodes, tc.existing)
			pl, _ := ipaTPlugin(t, snap, tc.args)
			skip, raw, norm := ipaTScores(t, pl, snap, tc.pod)
			if skip != tc.wantSkip {
				t.Fatalf("skip = %v, want %v", skip, tc.wantSkip)
			}
			if fmt.Sprint(raw) != fmt.Sprint(tc.wantRaw) || fmt.Sprint(norm) != fmt.Sprint(tc.wantNorm) {
				t.Errorf("raw %v norm %v, want raw %v norm %v", raw, norm, tc.wantRaw, tc.wantNorm)
			}
		})
	}
}

func ipaTPtr[T any](v T) *T { return &v }

func TestInterPodAffinityArgs(t *testing.T) {
	h := newTestHandle(framework.NewEmptySnapshot())
	for _, tc := range []struct {
		name    string
		args    runtime.Object
		wantErr bool
	}{
		{"nil args", nil, false},
		{"typed nil", (*configv1.InterPodAffinityArgs)(nil), false},
		{"weight in range", &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ipaTPtr(int32(100))}, false},
		{"weight out of range", &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ipaTPtr(int32(101))}, true},
		{"wrong type", &configv1.VolumeBindingArgs{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewInterPodAffinity(context.Background(), tc.args, h)
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestInterPodAffinityQueueingHints(t *testing.T) {
	web := map[string]string{"app": "web"}
	pl := &InterPodAffinity{}
	affPod := ipaTWithRequired(ipaTPod("default", "p", "", "app=x"), []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, web)}, nil)
	antiPod := ipaTWithRequired(ipaTPod("default", "p", "", "app=x"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)})
	plainWeb := ipaTPod("default", "p", "", "app=web")
	tests := []struct {
		name     string
		pod      *corev1.Pod
		old, new interface{}
		want     framework.QueueingHint
	}{
		{"added pod matching affinity", affPod, nil, ipaTPod("default", "w", "n1", "app=web"), framework.Queue},
		{"added pod not matching affinity", affPod, nil, ipaTPod("default", "w", "n1", "app=db"), framework.QueueSkip},
		{"unscheduled pod is ignored", affPod, nil, ipaTPod("default", "w", "", "app=web"), framework.QueueSkip},
		{"deleted pod matching anti-affinity", antiPod, ipaTPod("default", "w", "n1", "app=web"), nil, framework.Queue},
		{"deleted pod not matching anti-affinity", antiPod, ipaTPod("default", "w", "n1", "app=db"), nil, framework.QueueSkip},
		{"deleted pod whose anti-affinity rejected the pod", plainWeb,
			ipaTWithRequired(ipaTPod("default", "w", "n1", "app=db"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)}), nil, framework.Queue},
		{"label update leaving anti-affinity", antiPod, ipaTPod("default", "w", "n1", "app=web"), ipaTPod("default", "w", "n1", "app=db"), framework.Queue},
		{"label update entering affinity", affPod, ipaTPod("default", "w", "n1", "app=db"), ipaTPod("default", "w", "n1", "app=web"), framework.Queue},
		{"label update irrelevant", affPod, ipaTPod("default", "w", "n1", "app=db"), ipaTPod("default", "w", "n1", "app=db2"), framework.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pl.ipaHintPodChange(tc.pod, tc.old, tc.new)
			if err != nil || got != tc.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	t.Run("node with the topology key", func(t *testing.T) {
		if got, _ := pl.ipaHintNodeChange(affPod, nil, ipaTNode("n9", "a")); got != framework.Queue {
			t.Errorf("hint = %v, want Queue", got)
		}
		if got, _ := pl.ipaHintNodeChange(affPod, nil, ipaTNode("n9", "")); got != framework.QueueSkip {
			t.Errorf("hint = %v, want QueueSkip", got)
		}
	})
}

// Filter and Score run once per node per pod: a passing node must cost no
// allocation, also on a state preemption edited.
func TestInterPodAffinityFilterAndScoreDoNotAllocate(t *testing.T) {
	web, db := map[string]string{"app": "web"}, map[string]string{"app": "db"}
	nodes := []*corev1.Node{ipaTNode("n1", "a"), ipaTNode("n2", "a"), ipaTNode("n3", "b")}
	existing := []*corev1.Pod{
		ipaTPod("default", "db1", "n1", "app=db"),
		ipaTWithRequired(ipaTPod("default", "x", "n3", "app=x"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)}),
	}
	snap := ipaTSnapshot(nodes, existing)
	pl, _ := ipaTPlugin(t, snap, nil)
	ctx := context.Background()
	pod := ipaTWithRequired(ipaTPod("default", "p", "", "app=web"),
		[]corev1.PodAffinityTerm{ipaTTerm(ipaTZone, db)}, []corev1.PodAffinityTerm{ipaTTerm(ipaTHost, web)})
	ipaTWithPreferred(pod, []corev1.WeightedPodAffinityTerm{{Weight: 3, PodAffinityTerm: ipaTTerm(ipaTZone, db)}}, nil)
	cs := framework.NewCycleState()
	if _, st := pl.PreFilter(ctx, cs, pod, snap.NodeInfoList); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := pl.PreScore(ctx, cs, pod, snap.NodeInfoList); !st.IsSuccess() {
		t.Fatal(st)
	}
	edited := cs.Clone()
	pl.AddPod(ctx, edited, pod, framework.NewPodInfo(ipaTPod("default", "nom", "", "app=web")), snap.NodeInfoList[0])
	n2 := snap.NodeInfoList[1]
	for name, state := range map[string]*framework.CycleState{"prefilter state": cs, "edited clone": edited} {
		if st := pl.Filter(ctx, state, pod, n2); !st.IsSuccess() {
			t.Fatalf("%s: n2 should fit: %v", name, st)
		}
		if a := testing.AllocsPerRun(200, func() { pl.Filter(ctx, state, pod, n2) }); a != 0 {
			t.Errorf("%s: Filter allocates %v times per call", name, a)
		}
	}
	if a := testing.AllocsPerRun(200, func() { pl.Score(ctx, cs, pod, n2) }); a != 0 {
		t.Errorf("Score allocates %v times per call", a)
	}
}
