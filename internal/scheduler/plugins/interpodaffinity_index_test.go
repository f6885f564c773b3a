package plugins

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// The index must give exactly what a cycle computed from scratch over
// every pod gives (upstream's algorithm, written plainly below), however
// the snapshot changed between cycles: pods added and removed in place,
// node labels changed, NodeInfos replaced by clones, nodes added and
// removed.
func TestInterPodAffinityIndexMatchesFullScan(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			ipaTRandomRun(t, rand.New(rand.NewSource(seed)), 12, 60)
		})
	}
	// Enough nodes that the first sync plans them in parallel.
	t.Run("large cold start", func(t *testing.T) {
		ipaTRandomRun(t, rand.New(rand.NewSource(99)), 3*ipaPlanParallelMin, 8)
	})
}

var ipaTNamespaces = []runtime.Object{ipaTNamespace("ns1", "team=t1"), ipaTNamespace("ns2", "team=t2")}

func ipaTRandomTerm(r *rand.Rand) corev1.PodAffinityTerm {
	t := corev1.PodAffinityTerm{
		TopologyKey:   []string{ipaTHost, ipaTZone}[r.Intn(2)],
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": []string{"a", "b", "c"}[r.Intn(3)]}},
	}
	if r.Intn(4) == 0 {
		t.LabelSelector.MatchLabels["tier"] = []string{"x", "y"}[r.Intn(2)]
	}
	switch r.Intn(5) {
	case 0:
		t.Namespaces = []string{"ns2"}
	case 1:
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "t1"}}
	case 2:
		t.NamespaceSelector = &metav1.LabelSelector{}
	}
	return t
}

func ipaTRandomPod(r *rand.Rand, name, node string, termOdds int) *corev1.Pod {
	lbls := []string{"app=" + []string{"a", "b", "c"}[r.Intn(3)]}
	if r.Intn(2) == 0 {
		lbls = append(lbls, "tier="+[]string{"x", "y"}[r.Intn(2)])
	}
	p := ipaTPod([]string{"ns1", "ns2"}[r.Intn(2)], name, node, lbls...)
	terms := func() []corev1.PodAffinityTerm {
		if r.Intn(termOdds) != 0 {
			return nil
		}
		out := []corev1.PodAffinityTerm{ipaTRandomTerm(r)}
		if r.Intn(3) == 0 {
			out = append(out, ipaTRandomTerm(r))
		}
		return out
	}
	weighted := func() []corev1.WeightedPodAffinityTerm {
		if r.Intn(termOdds) != 0 {
			return nil
		}
		return []corev1.WeightedPodAffinityTerm{{Weight: int32(1 + r.Intn(10)), PodAffinityTerm: ipaTRandomTerm(r)}}
	}
	aff, anti := terms(), terms()
	if aff != nil || anti != nil {
		ipaTWithRequired(p, aff, anti)
	}
	paff, panti := weighted(), weighted()
	if paff != nil || panti != nil {
		ipaTWithPreferred(p, paff, panti)
	}
	return p
}

func ipaTRandomRun(t *testing.T, r *rand.Rand, nodes, steps int) {
	zones := []string{"z1", "z2", "z3", ""}
	var nis []*framework.NodeInfo
	nodeSeq, podSeq := 0, 0
	newNode := func() *framework.NodeInfo {
		nodeSeq++
		ni := framework.NewNodeInfo()
		ni.SetNode(ipaTNode(fmt.Sprintf("n%d", nodeSeq), zones[r.Intn(len(zones))]))
		return ni
	}
	addPod := func(ni *framework.NodeInfo) {
		podSeq++
		ni.AddPod(framework.NewPodInfo(ipaTRandomPod(r, fmt.Sprintf("p%d", podSeq), ni.Name(), 3)))
	}
	for i := 0; i < nodes; i++ {
		ni := newNode()
		for j := r.Intn(4); j > 0; j-- {
			addPod(ni)
		}
		nis = append(nis, ni)
	}
	snap := framework.NewSnapshot(nis...)
	pl, h := ipaTPlugin(t, snap, &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ipaTPtr(int32(2))}, ipaTNamespaces...)
	ref := &ipaTReference{nsLabels: map[string]labels.Set{"ns1": {"team": "t1"}, "ns2": {"team": "t2"}}, hardWeight: 2}

	for step := 0; step < steps; step++ {
		switch k := r.Intn(10); {
		case k < 4:
			addPod(nis[r.Intn(len(nis))])
		case k < 6:
			ni := nis[r.Intn(len(nis))]
			if len(ni.Pods) > 0 {
				if err := ni.RemovePod(ni.Pods[r.Intn(len(ni.Pods))].Pod); err != nil {
					t.Fatal(err)
				}
			}
		case k == 6:
			ni := nis[r.Intn(len(nis))]
			n := ni.Node().DeepCopy()
			if z := zones[r.Intn(len(zones))]; z == "" {
				delete(n.Labels, ipaTZone)
			} else {
				n.Labels[ipaTZone] = z
			}
			ni.SetNode(n)
		case k == 7:
			i := r.Intn(len(nis))
			nis[i] = nis[i].Clone()
		case k == 8:
			nis = append(nis, newNode())
		default:
			if len(nis) > 3 {
				i := r.Intn(len(nis))
				nis = append(nis[:i], nis[i+1:]...)
			}
		}
		snap = framework.NewSnapshot(nis...)
		h.snapshot = snap
		for q := 0; q < 4; q++ {
			podSeq++
			pod := ipaTRandomPod(r, fmt.Sprintf("in%d", podSeq), "", 2)
			_, got := ipaTFilterAll(t, pl, snap, pod)
			want := ref.filter(pod, snap)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("step %d: filter for %s/%s %v\n got %v\nwant %v", step, pod.Namespace, pod.Name, pod.Spec.Affinity, got, want)
			}
			skip, raw, _ := ipaTScores(t, pl, snap, pod)
			wantRaw, contributed := ref.score(pod, snap)
			if skip == contributed || (!skip && fmt.Sprint(raw) != fmt.Sprint(wantRaw)) {
				t.Fatalf("step %d: score skip=%v raw=%v, want contributed=%v raw=%v", step, skip, raw, contributed, wantRaw)
			}
		}
	}
}

// ipaTReference is upstream's per-cycle computation, without an index.
type ipaTReference struct {
	nsLabels   map[string]labels.Set
	hardWeight int64
}

func (ref *ipaTReference) resolve(terms []framework.AffinityTerm) []framework.AffinityTerm {
	out := make([]framework.AffinityTerm, len(terms))
	for i, t := range terms {
		t.Namespaces = t.Namespaces.Clone()
		if t.NamespaceSelector != nil && !t.NamespaceSelector.Empty() {
			for ns, l := range ref.nsLabels {
				if t.NamespaceSelector.Matches(l) {
					t.Namespaces.Insert(ns)
				}
			}
			t.NamespaceSelector = labels.Nothing()
		}
		out[i] = t
	}
	return out
}

// counts is upstream's PreFilter: every existing pod against the pod.
func (ref *ipaTReference) counts(pod *corev1.Pod, snap *framework.Snapshot) (aff, anti []framework.AffinityTerm, existing, affC, antiC map[ipaPair]int64) {
	pi := framework.NewPodInfo(pod)
	aff, anti = ref.resolve(pi.RequiredAffinityTerms), ref.resolve(pi.RequiredAntiAffinityTerms)
	nsl := ref.nsLabels[pod.Namespace]
	existing, affC, antiC = map[ipaPair]int64{}, map[ipaPair]int64{}, map[ipaPair]int64{}
	for _, ni := range snap.NodeInfoList {
		nl := ni.Node().Labels
		for _, ep := range ni.Pods {
			for _, t := range ep.RequiredAntiAffinityTerms {
				if v, ok := nl[t.TopologyKey]; ok && t.Matches(pod, nsl) {
					existing[ipaPair{t.TopologyKey, v}]++
				}
			}
			if ipaMatchesAll(aff, ep.Pod) {
				for _, t := range aff {
					if v, ok := nl[t.TopologyKey]; ok {
						affC[ipaPair{t.TopologyKey, v}]++
					}
				}
			}
			for _, t := range anti {
				if v, ok := nl[t.TopologyKey]; ok && t.Matches(ep.Pod, nil) {
					antiC[ipaPair{t.TopologyKey, v}]++
				}
			}
		}
	}
	return aff, anti, existing, affC, antiC
}

func (ref *ipaTReference) filter(pod *corev1.Pod, snap *framework.Snapshot) []string {
	aff, anti, existing, affC, antiC := ref.counts(pod, snap)
	skip := len(existing) == 0 && len(aff) == 0 && len(anti) == 0
	var out []string
	for _, ni := range snap.NodeInfoList {
		nl := ni.Node().Labels
		res := "ok"
		if !skip {
			if !ref.affinityOK(aff, affC, pod, nl) {
				res = ipaTAff
			} else if ref.violates(anti, antiC, nl) {
				res = ipaTAnti
			} else {
				for k, v := range nl {
					if existing[ipaPair{k, v}] > 0 {
						res = ipaTExisting
						break
					}
				}
			}
		}
		out = append(out, ni.Name()+": "+res)
	}
	return out
}

func (ref *ipaTReference) affinityOK(aff []framework.AffinityTerm, counts map[ipaPair]int64, pod *corev1.Pod, nl map[string]string) bool {
	exist := true
	for _, t := range aff {
		v, ok := nl[t.TopologyKey]
		if !ok {
			return false
		}
		if counts[ipaPair{t.TopologyKey, v}] <= 0 {
			exist = false
		}
	}
	return exist || (len(counts) == 0 && ipaMatchesAll(aff, pod))
}

func (ref *ipaTReference) violates(anti []framework.AffinityTerm, counts map[ipaPair]int64, nl map[string]string) bool {
	for _, t := range anti {
		if v, ok := nl[t.TopologyKey]; ok && counts[ipaPair{t.TopologyKey, v}] > 0 {
			return true
		}
	}
	return false
}

func (ref *ipaTReference) score(pod *corev1.Pod, snap *framework.Snapshot) ([]int64, bool) {
	pi := framework.NewPodInfo(pod)
	nsl := ref.nsLabels[pod.Namespace]
	resolveW := func(in []framework.WeightedAffinityTerm) []framework.WeightedAffinityTerm {
		out := make([]framework.WeightedAffinityTerm, len(in))
		for i := range in {
			out[i] = framework.WeightedAffinityTerm{AffinityTerm: ref.resolve([]framework.AffinityTerm{in[i].AffinityTerm})[0], Weight: in[i].Weight}
		}
		return out
	}
	paff, panti := resolveW(pi.PreferredAffinityTerms), resolveW(pi.PreferredAntiAffinityTerms)
	topo := map[ipaPair]int64{}
	contributed := false
	add := func(t *framework.AffinityTerm, w int64, p *corev1.Pod, l labels.Set, nl map[string]string) {
		if v, ok := nl[t.TopologyKey]; ok && t.Matches(p, l) {
			topo[ipaPair{t.TopologyKey, v}] += w
			contributed = true
		}
	}
	for _, ni := range snap.NodeInfoList {
		nl := ni.Node().Labels
		for _, ep := range ni.Pods {
			for i := range paff {
				add(&paff[i].AffinityTerm, int64(paff[i].Weight), ep.Pod, nil, nl)
			}
			for i := range panti {
				add(&panti[i].AffinityTerm, -int64(panti[i].Weight), ep.Pod, nil, nl)
			}
			for i := range ep.RequiredAffinityTerms {
				add(&ep.RequiredAffinityTerms[i], ref.hardWeight, pod, nsl, nl)
			}
			for i := range ep.PreferredAffinityTerms {
				add(&ep.PreferredAffinityTerms[i].AffinityTerm, int64(ep.PreferredAffinityTerms[i].Weight), pod, nsl, nl)
			}
			for i := range ep.PreferredAntiAffinityTerms {
				add(&ep.PreferredAntiAffinityTerms[i].AffinityTerm, -int64(ep.PreferredAntiAffinityTerms[i].Weight), pod, nsl, nl)
			}
		}
	}
	var raw []int64
	for _, ni := range snap.NodeInfoList {
		var s int64
		for k, v := range ni.Node().Labels {
			s += topo[ipaPair{k, v}]
		}
		raw = append(raw, s)
	}
	return raw, contributed
}

// The plugin must hand the snapshot's changes to the index even when the
// same NodeInfo pointers stay in the lists (the scheduler's in-place
// snapshot update).
func TestInterPodAffinityIndexFollowsInPlaceChanges(t *testing.T) {
	web := map[string]string{"app": "web"}
	nodes := []*corev1.Node{ipaTNode("n1", "a"), ipaTNode("n2", "b")}
	snap := ipaTSnapshot(nodes, nil)
	pl, _ := ipaTPlugin(t, snap, nil)
	pod := ipaTWithRequired(ipaTPod("default", "p", "", "app=web"), nil, []corev1.PodAffinityTerm{ipaTTerm(ipaTZone, web)})
	steps := []struct {
		name string
		edit func()
		want string
	}{
		{"empty cluster", func() {}, "n1: ok|n2: ok"},
		{"a web pod lands on n1", func() {
			snap.NodeInfoList[0].AddPod(framework.NewPodInfo(ipaTPod("default", "w1", "n1", "app=web")))
		}, "n1: " + ipaTAnti + "|n2: ok"},
		{"n2 moves to zone a", func() {
			n := snap.NodeInfoList[1].Node().DeepCopy()
			n.Labels[ipaTZone] = "a"
			snap.NodeInfoList[1].SetNode(n)
		}, "n1: " + ipaTAnti + "|n2: " + ipaTAnti},
		{"the web pod leaves", func() {
			if err := snap.NodeInfoList[0].RemovePod(ipaTPod("default", "w1", "n1")); err != nil {
				t.Fatal(err)
			}
		}, "n1: ok|n2: ok"},
	}
	for _, st := range steps {
		st.edit()
		_, got := ipaTFilterAll(t, pl, snap, pod)
		if g := strings.Join(got, "|"); g != st.want {
			t.Fatalf("%s: got %s, want %s", st.name, g, st.want)
		}
	}
}
