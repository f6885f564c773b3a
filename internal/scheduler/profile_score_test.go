package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// TestBatchScoresMatchPerNodeScores checks the BatchScorer fast paths
// against the plugins' per-node Score, the implementation they replace:
// on seeded random clusters and pods (requests, PreferNoSchedule taints
// and tolerations, images, preferred node affinity, soft spreading,
// preferred pod affinity), every node's weighted total must be equal,
// and so must the node chosen with equally seeded tie-breaking.
func TestBatchScoresMatchPerNodeScores(t *testing.T) {
	for _, parallelism := range []int{1, 2} {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("parallelism %d seed %d", parallelism, seed), func(t *testing.T) {
				ctx := context.Background()
				r := rand.New(rand.NewPCG(seed, 7))
				s, err := New(ctx, Config{Client: fake.NewSimpleClientset(), DisableEvents: true, Parallelism: parallelism, Seed: seed}) //nolint:staticcheck // no field management needed
				if err != nil {
					t.Fatal(err)
				}
				prof := s.profiles[DefaultSchedulerName]
				numNodes := 50 + r.IntN(400)
				for i := range numNodes {
					s.cache.AddNode(scoreTestNode(r, i))
				}
				for i := range 3 * numNodes {
					s.cache.AddPod(scoreTestPod(r, fmt.Sprintf("e%d", i), fmt.Sprintf("n%d", r.IntN(numNodes))))
				}
				if err := s.cache.UpdateSnapshot(s.snapshot); err != nil {
					t.Fatal(err)
				}
				nodes := s.snapshot.List()
				placed := 0
				for i := range 40 {
					pod := scoreTestPod(r, fmt.Sprintf("p%d", i), "")
					feasible := nodes[r.IntN(len(nodes)/2):]
					state := framework.NewCycleState()
					if _, st := prof.runPreFilter(ctx, state, pod, nodes); !st.IsSuccess() {
						t.Fatalf("PreFilter: %v", st)
					}
					if st := prof.runPreScore(ctx, state, pod, feasible); !st.IsSuccess() {
						t.Fatalf("PreScore: %v", st)
					}
					prof.noBatchScore = true
					ref, st := prof.runScore(ctx, state, pod, feasible)
					if !st.IsSuccess() {
						t.Fatalf("per-node Score: %v", st)
					}
					ref = slices.Clone(ref)
					prof.noBatchScore = false
					got, st := prof.runScore(ctx, state, pod, feasible)
					if !st.IsSuccess() {
						t.Fatalf("batch Score: %v", st)
					}
					if !slices.Equal(got, ref) {
						for j := range ref {
							if got[j] != ref[j] {
								t.Fatalf("pod %d: node %d scored %+v in batch, %+v node by node", i, j, got[j], ref[j])
							}
						}
					}
					s.rand = rand.New(rand.NewPCG(seed, uint64(i)))
					refNode := s.selectHost(ref)
					s.rand = rand.New(rand.NewPCG(seed, uint64(i)))
					if gotNode := s.selectHost(got); gotNode != refNode {
						t.Fatalf("pod %d: batch scores pick %s, per-node scores %s", i, gotNode, refNode)
					}
					if refNode != "" {
						placed++
					}
				}
				if placed == 0 {
					t.Fatal("no pod was placed; the test compares nothing")
				}
			})
		}
	}
}

var scoreTestImages = []string{"app:1", "app:2", "db:1", "cache:3"}

func scoreTestNode(r *rand.Rand, i int) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{
			corev1.LabelHostname:     fmt.Sprintf("n%d", i),
			corev1.LabelTopologyZone: fmt.Sprintf("z%d", r.IntN(3)),
			"disk":                   []string{"ssd", "hdd"}[r.IntN(2)],
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(2000+r.IntN(30000)), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(4+r.IntN(120))<<30, resource.BinarySI),
			corev1.ResourcePods:   resource.MustParse("110"),
		}},
	}
	if r.IntN(4) == 0 {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "soft", Value: "x", Effect: corev1.TaintEffectPreferNoSchedule})
	}
	for _, img := range scoreTestImages {
		if r.IntN(3) == 0 {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{img}, SizeBytes: int64(r.IntN(900)) << 20})
		}
	}
	return n
}

// scoreTestPod makes a pod with random requests and scoring preferences,
// bound to node unless node is "".
func scoreTestPod(r *rand.Rand, name, node string) *corev1.Pod {
	app := []string{"web", "db"}[r.IntN(2)]
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name: "c", Image: scoreTestImages[r.IntN(len(scoreTestImages))],
		}}},
	}
	if r.IntN(5) > 0 {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(r.IntN(2000)), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(r.IntN(4096))<<20, resource.BinarySI),
		}
	}
	if r.IntN(2) == 0 {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "soft", Operator: corev1.TolerationOpExists}}
	}
	if r.IntN(3) == 0 {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight:     int32(1 + r.IntN(100)),
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
		}}}}
	}
	if r.IntN(3) == 0 {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}}
	}
	if r.IntN(4) == 0 {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelTopologyZone,
			},
		}}}
	}
	return p
}

// fixedScorer scores node i (by its name "n<i>") with score(i); with
// normalize set it also has a NormalizeScore that adds 1 to every score.
type fixedScorer struct {
	name      string
	score     func(i int) int64
	normalize bool
}

func (f *fixedScorer) Name() string { return f.name }

func (f *fixedScorer) Score(_ context.Context, _ *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var i int
	fmt.Sscanf(ni.Name(), "n%d", &i)
	return f.score(i), nil
}

func (f *fixedScorer) ScoreExtensions() framework.ScoreExtensions {
	if f.normalize {
		return f
	}
	return nil
}

func (f *fixedScorer) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	for i := range scores {
		scores[i].Score++
	}
	return nil
}

// TestRunScoreTotalsAndInvalidScores checks the weighted totals, summed
// partly inside the parallel ranges (plugins without NormalizeScore) and
// partly after normalization, and that an out-of-range score is reported
// for the first such node of the first such plugin, as a serial pass
// over plugins and nodes would, whichever range found it first.
func TestRunScoreTotalsAndInvalidScores(t *testing.T) {
	const numNodes = 300
	nodes := make([]*framework.NodeInfo, numNodes)
	for i := range nodes {
		nodes[i] = framework.NewNodeInfo()
		nodes[i].SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	ok := func(i int) int64 { return int64(i % 100) }
	badFrom := func(first int) func(int) int64 {
		return func(i int) int64 {
			if i >= first && i%7 == first%7 {
				return framework.MaxNodeScore + 1
			}
			return 0
		}
	}
	tests := []struct {
		name    string
		plugins []weightedScore
		wantErr string
	}{
		{name: "valid", plugins: []weightedScore{
			{ScorePlugin: &fixedScorer{name: "a", score: ok}, weight: 2},
			{ScorePlugin: &fixedScorer{name: "b", score: ok, normalize: true}, weight: 3},
		}},
		{name: "first invalid node of the plugin is named", plugins: []weightedScore{
			{ScorePlugin: &fixedScorer{name: "a", score: ok}, weight: 1},
			{ScorePlugin: &fixedScorer{name: "bad", score: badFrom(250)}, weight: 1},
		}, wantErr: `plugin "bad" returns an invalid score 101 for node "n250"`},
		{name: "earlier plugin's error wins", plugins: []weightedScore{
			{ScorePlugin: &fixedScorer{name: "norm", score: func(int) int64 { return framework.MaxNodeScore }, normalize: true}, weight: 1},
			{ScorePlugin: &fixedScorer{name: "bad", score: badFrom(3)}, weight: 1},
		}, wantErr: `plugin "norm" returns an invalid score 101 for node "n0"`},
	}
	for _, parallelism := range []int{1, 2} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s parallelism %d", tc.name, parallelism), func(t *testing.T) {
				p := &Profile{handle: &handle{parallel: framework.NewParallelizer(parallelism)}}
				for _, pl := range tc.plugins {
					pl.normalize = pl.ScoreExtensions()
					p.score = append(p.score, pl)
				}
				state := framework.NewCycleState()
				state.SkipScore = map[string]bool{}
				totals, st := p.runScore(context.Background(), state, pod, nodes)
				if tc.wantErr != "" {
					if st.IsSuccess() || !strings.Contains(st.Message(), tc.wantErr) {
						t.Fatalf("got %v, want an error containing %q", st, tc.wantErr)
					}
					return
				}
				if !st.IsSuccess() {
					t.Fatal(st)
				}
				for i, ns := range totals {
					want := int64(0)
					for _, pl := range tc.plugins {
						sc := pl.ScorePlugin.(*fixedScorer).score(i)
						if pl.ScoreExtensions() != nil {
							sc++
						}
						want += sc * pl.weight
					}
					if ns.Name != fmt.Sprintf("n%d", i) || ns.Score != want {
						t.Fatalf("node %d: got %+v, want score %d", i, ns, want)
					}
				}
			})
		}
	}
}
