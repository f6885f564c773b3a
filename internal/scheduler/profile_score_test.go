package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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
