package scheduler

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// cacheTestNode builds a node in region "r", zone zone ("" for none),
// with 4 cpus and the given images of 100 bytes each.
func cacheTestNode(name, zone string, images ...string) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
	if zone != "" {
		n.Labels[corev1.LabelTopologyRegion], n.Labels[corev1.LabelTopologyZone] = "r", zone
	}
	for _, img := range images {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{img}, SizeBytes: 100})
	}
	return n
}

type cachePodOpt func(*corev1.Pod)

func cacheAffinityTerm(app string) []corev1.PodAffinityTerm {
	return []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   corev1.LabelHostname,
	}}
}

func cacheWithAffinity(p *corev1.Pod) {
	p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: cacheAffinityTerm("db")}}
}

func cacheWithAntiAffinity(p *corev1.Pod) {
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: cacheAffinityTerm("web")}}
}

func cacheWithClaim(claim string) cachePodOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
	}
}

// cacheTestPod builds a pod requesting milliCPU on node ("" = unbound).
func cacheTestPod(uid, node string, milliCPU int64, opts ...cachePodOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: types.UID(uid)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI),
			}},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// cacheAssumeCopy is what the scheduling loop does: copy, set the node.
func cacheAssumeCopy(p *corev1.Pod, node string) *framework.PodInfo {
	c := p.DeepCopy()
	c.Spec.NodeName = node
	return framework.NewPodInfo(c)
}

// cacheModel is the test's independent idea of the cluster, from which a
// snapshot is built from scratch with framework.NewSnapshot.
type cacheModel struct {
	nodes map[string]*corev1.Node
	pods  map[types.UID]*corev1.Pod // as last told to the cache (assumed ones with the node set)
}

func newCacheModel() *cacheModel {
	return &cacheModel{nodes: map[string]*corev1.Node{}, pods: map[types.UID]*corev1.Pod{}}
}

func (m *cacheModel) snapshot() *framework.Snapshot {
	var infos []*framework.NodeInfo
	for _, name := range slices.Sorted(maps.Keys(m.nodes)) {
		ni := framework.NewNodeInfo()
		ni.SetNode(m.nodes[name])
		for _, p := range m.pods {
			if p.Spec.NodeName == name && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				ni.AddPod(framework.NewPodInfo(p))
			}
		}
		infos = append(infos, ni)
	}
	return framework.NewSnapshot(infos...)
}

// cacheOp is one event applied to both the cache and the model.
type cacheOp func(t testing.TB, c *Cache, m *cacheModel)

func cacheAddNode(n *corev1.Node) cacheOp {
	return func(_ testing.TB, c *Cache, m *cacheModel) { c.AddNode(n); m.nodes[n.Name] = n }
}

func cacheRemoveNode(name string) cacheOp {
	return func(_ testing.TB, c *Cache, m *cacheModel) { c.RemoveNode(m.nodes[name]); delete(m.nodes, name) }
}

func cacheAddPod(p *corev1.Pod) cacheOp {
	return func(_ testing.TB, c *Cache, m *cacheModel) { c.AddPod(p); m.pods[p.UID] = p }
}

// cacheUpdatePod replaces the model's version of the pod with the same
// name (which may have another UID: a recreated pod).
func cacheUpdatePod(p *corev1.Pod) cacheOp {
	return func(_ testing.TB, c *Cache, m *cacheModel) {
		var old *corev1.Pod
		for uid, q := range m.pods {
			if q.Name == p.Name {
				old = q
				delete(m.pods, uid)
			}
		}
		c.UpdatePod(old, p)
		m.pods[p.UID] = p
	}
}

func cacheRemovePod(uid string) cacheOp {
	return func(_ testing.TB, c *Cache, m *cacheModel) {
		if p := m.pods[types.UID(uid)]; p != nil {
			c.RemovePod(p)
		} else {
			c.RemovePod(cacheTestPod(uid, "somewhere", 1))
		}
		delete(m.pods, types.UID(uid))
	}
}

func cacheAssume(p *corev1.Pod, node string) cacheOp {
	return func(t testing.TB, c *Cache, m *cacheModel) {
		pi := cacheAssumeCopy(p, node)
		if err := c.AssumePod(pi); err != nil {
			t.Fatalf("AssumePod: %v", err)
		}
		m.pods[p.UID] = pi.Pod
	}
}

func cacheForget(uid string) cacheOp {
	return func(t testing.TB, c *Cache, m *cacheModel) {
		if err := c.ForgetPod(m.pods[types.UID(uid)]); err != nil {
			t.Fatalf("ForgetPod: %v", err)
		}
		delete(m.pods, types.UID(uid))
	}
}

func cacheOps(ops ...cacheOp) cacheOp {
	return func(t testing.TB, c *Cache, m *cacheModel) {
		for _, op := range ops {
			op(t, c, m)
		}
	}
}

func cacheFreshSnapshot(t testing.TB, c *Cache) *framework.Snapshot {
	t.Helper()
	s := framework.NewEmptySnapshot()
	if err := c.UpdateSnapshot(s); err != nil {
		t.Fatalf("UpdateSnapshot: %v", err)
	}
	return s
}

func cacheNames(list []*framework.NodeInfo) []string {
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = n.Name()
	}
	return out
}

func cacheSortedNames(list []*framework.NodeInfo) []string {
	out := cacheNames(list)
	sort.Strings(out)
	return out
}

func cachePodUIDs(n *framework.NodeInfo) []string {
	out := make([]string, len(n.Pods))
	for i, p := range n.Pods {
		out[i] = string(p.Pod.UID)
	}
	sort.Strings(out)
	return out
}

func cacheResourceEqual(a, b *framework.Resource) bool {
	return a.MilliCPU == b.MilliCPU && a.Memory == b.Memory && a.EphemeralStorage == b.EphemeralStorage &&
		a.AllowedPodNumber == b.AllowedPodNumber && maps.Equal(a.Scalar, b.Scalar)
}

// cacheCheckSnapshot compares got with want order-insensitively (node
// names, Requested, pod UIDs, affinity lists, used claims) and checks
// got's own consistency: every list entry is the map's entry.
func cacheCheckSnapshot(t testing.TB, got, want *framework.Snapshot) {
	t.Helper()
	if g, w := cacheSortedNames(got.NodeInfoList), cacheSortedNames(want.NodeInfoList); !slices.Equal(g, w) {
		t.Fatalf("nodes = %v, want %v", g, w)
	}
	if g, w := slices.Sorted(maps.Keys(got.NodeInfoMap)), cacheSortedNames(want.NodeInfoList); !slices.Equal(g, w) {
		t.Fatalf("map keys = %v, want %v", g, w)
	}
	for _, l := range [][]*framework.NodeInfo{got.NodeInfoList, got.HavePodsWithAffinityList, got.HavePodsWithRequiredAntiAffinityList} {
		for _, n := range l {
			if got.NodeInfoMap[n.Name()] != n {
				t.Fatalf("list entry for %s is not the map's entry", n.Name())
			}
		}
	}
	for _, w := range want.NodeInfoList {
		g := got.NodeInfoMap[w.Name()]
		if !cacheResourceEqual(g.Requested, w.Requested) || !cacheResourceEqual(g.NonZeroRequested, w.NonZeroRequested) {
			t.Errorf("node %s Requested = %+v, want %+v", w.Name(), g.Requested, w.Requested)
		}
		if gu, wu := cachePodUIDs(g), cachePodUIDs(w); !slices.Equal(gu, wu) {
			t.Errorf("node %s pods = %v, want %v", w.Name(), gu, wu)
		}
		if g.Node() != w.Node() {
			t.Errorf("node %s: snapshot holds a stale node object", w.Name())
		}
	}
	if g, w := cacheSortedNames(got.HavePodsWithAffinityList), cacheSortedNames(want.HavePodsWithAffinityList); !slices.Equal(g, w) {
		t.Errorf("nodes with affinity pods = %v, want %v", g, w)
	}
	if g, w := cacheSortedNames(got.HavePodsWithRequiredAntiAffinityList), cacheSortedNames(want.HavePodsWithRequiredAntiAffinityList); !slices.Equal(g, w) {
		t.Errorf("nodes with anti-affinity pods = %v, want %v", g, w)
	}
	if g, w := slices.Sorted(maps.Keys(got.UsedPVCSet)), slices.Sorted(maps.Keys(want.UsedPVCSet)); !slices.Equal(g, w) {
		t.Errorf("used claims = %v, want %v", g, w)
	}
}

// cacheCheckImageCounts checks every listed node's image counts against
// the model's nodes.
func cacheCheckImageCounts(t testing.TB, s *framework.Snapshot, m *cacheModel) {
	t.Helper()
	holders := map[string]int{}
	for _, n := range m.nodes {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				holders[name]++
			}
		}
	}
	for _, ni := range s.List() {
		for name, st := range ni.ImageStates {
			if st.NumNodes != holders[name] {
				t.Fatalf("%s: image %s on %d nodes, want %d", ni.Name(), name, st.NumNodes, holders[name])
			}
		}
	}
}

func TestCachePodsAndNodesInAnyOrder(t *testing.T) {
	terminal := cacheTestPod("t", "n1", 100)
	terminal.Status.Phase = corev1.PodSucceeded
	failed := cacheTestPod("c", "n1", 300)
	failed.Status.Phase = corev1.PodFailed
	recreated := cacheTestPod("b2", "n1", 250)
	recreated.Name = "p-b"
	n1, n2 := cacheTestNode("n1", ""), cacheTestNode("n2", "")
	cases := []struct {
		name        string
		ops         []cacheOp
		listed      []string
		nodes, pods int // NodeCount, PodCount
	}{
		{"node then pod", []cacheOp{cacheAddNode(n1), cacheAddPod(cacheTestPod("a", "n1", 100))}, []string{"n1"}, 1, 1},
		{"pod before its node is listed once the node comes",
			[]cacheOp{cacheAddPod(cacheTestPod("a", "n1", 100)), cacheAddPod(cacheTestPod("b", "n2", 200)), cacheAddNode(n1)},
			[]string{"n1"}, 2, 2},
		{"node deleted with pods keeps them until they go",
			[]cacheOp{cacheAddNode(n1), cacheAddNode(n2), cacheAddPod(cacheTestPod("a", "n1", 100)), cacheRemoveNode("n1")},
			[]string{"n2"}, 2, 1},
		{"deleted node's info goes with its last pod",
			[]cacheOp{cacheAddNode(n1), cacheAddPod(cacheTestPod("a", "n1", 100)), cacheRemoveNode("n1"), cacheRemovePod("a")},
			[]string{}, 0, 0},
		{"node re-added while its pods remain sees them",
			[]cacheOp{cacheAddNode(n1), cacheAddPod(cacheTestPod("a", "n1", 100)), cacheRemoveNode("n1"), cacheAddNode(n1)},
			[]string{"n1"}, 1, 1},
		{"unbound and terminal pods take no room",
			[]cacheOp{cacheAddNode(n1), cacheAddPod(cacheTestPod("a", "", 100)), cacheAddPod(terminal),
				cacheAddPod(cacheTestPod("c", "n1", 300)), cacheUpdatePod(failed)},
			[]string{"n1"}, 1, 0},
		{"pod recreated under the same name arrives as an update",
			[]cacheOp{cacheAddNode(n1), cacheAddPod(cacheTestPod("b", "n1", 100)), cacheUpdatePod(recreated)},
			[]string{"n1"}, 1, 1},
		{"removing unknown nodes and pods is harmless",
			[]cacheOp{func(_ testing.TB, c *Cache, _ *cacheModel) { c.RemoveNode(cacheTestNode("ghost", "")) }, cacheRemovePod("x"), cacheAddNode(n1)},
			[]string{"n1"}, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, m := NewCache(), newCacheModel()
			incr := cacheFreshSnapshot(t, c)
			cacheOps(tc.ops...)(t, c, m)
			if err := c.UpdateSnapshot(incr); err != nil {
				t.Fatalf("UpdateSnapshot: %v", err)
			}
			for _, s := range []*framework.Snapshot{incr, cacheFreshSnapshot(t, c)} {
				if got := cacheSortedNames(s.List()); !slices.Equal(got, tc.listed) {
					t.Errorf("listed nodes = %v, want %v", got, tc.listed)
				}
				cacheCheckSnapshot(t, s, m.snapshot())
			}
			if got := c.NodeCount(); got != tc.nodes {
				t.Errorf("NodeCount = %d, want %d", got, tc.nodes)
			}
			if got := c.PodCount(); got != tc.pods {
				t.Errorf("PodCount = %d, want %d", got, tc.pods)
			}
		})
	}
}

func TestCacheAssumedPods(t *testing.T) {
	a := cacheTestPod("a", "", 500)
	bound := func(node string, cpu int64) *corev1.Pod { return cacheTestPod("a", node, cpu) }
	assume := func(node string) func(c *Cache) error {
		return func(c *Cache) error { return c.AssumePod(cacheAssumeCopy(a, node)) }
	}
	event := func(f func(c *Cache)) func(c *Cache) error { return func(c *Cache) error { f(c); return nil } }
	type step struct {
		do      func(c *Cache) error
		cpu     [2]int64 // milli-cpu requested on n1, n2 after the step
		assumed bool     // IsAssumedPod(a) after the step
		wantErr bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"assume, confirm, update, remove keeps Requested exact", []step{
			{do: assume("n1"), cpu: [2]int64{500, 0}, assumed: true},
			{do: event(func(c *Cache) { c.FinishBinding(bound("n1", 500)) }), cpu: [2]int64{500, 0}, assumed: true},
			{do: event(func(c *Cache) { c.AddPod(bound("n1", 500)) }), cpu: [2]int64{500, 0}},
			{do: event(func(c *Cache) { c.UpdatePod(bound("n1", 500), bound("n1", 700)) }), cpu: [2]int64{700, 0}},
			{do: event(func(c *Cache) { c.RemovePod(bound("n1", 700)) }), cpu: [2]int64{0, 0}},
		}},
		{"forget restores the node", []step{
			{do: assume("n1"), cpu: [2]int64{500, 0}, assumed: true},
			{do: func(c *Cache) error { return c.ForgetPod(bound("n1", 500)) }, cpu: [2]int64{0, 0}},
			{do: assume("n2"), cpu: [2]int64{0, 500}, assumed: true},
		}},
		{"assumed pod confirmed on another node moves", []step{
			{do: assume("n1"), cpu: [2]int64{500, 0}, assumed: true},
			{do: event(func(c *Cache) { c.AddPod(bound("n2", 500)) }), cpu: [2]int64{0, 500}},
		}},
		{"confirmation through an update from unbound", []step{
			{do: assume("n1"), cpu: [2]int64{500, 0}, assumed: true},
			{do: event(func(c *Cache) { c.UpdatePod(a, bound("n1", 500)) }), cpu: [2]int64{500, 0}},
		}},
		{"removing an assumed pod drops it", []step{
			{do: assume("n1"), cpu: [2]int64{500, 0}, assumed: true},
			{do: event(func(c *Cache) { c.RemovePod(bound("n1", 500)) }), cpu: [2]int64{0, 0}},
			{do: func(c *Cache) error { return c.ForgetPod(bound("n1", 500)) }, cpu: [2]int64{0, 0}},
		}},
		{"a pod can be assumed only once", []step{
			{do: assume("n1"), cpu: [2]int64{500, 0}, assumed: true},
			{do: assume("n2"), cpu: [2]int64{500, 0}, assumed: true, wantErr: true},
		}},
		{"a bound pod can be neither forgotten nor assumed", []step{
			{do: event(func(c *Cache) { c.AddPod(bound("n1", 500)) }), cpu: [2]int64{500, 0}},
			{do: func(c *Cache) error { return c.ForgetPod(bound("n1", 500)) }, cpu: [2]int64{500, 0}, wantErr: true},
			{do: assume("n2"), cpu: [2]int64{500, 0}, wantErr: true},
		}},
		{"forget names the node the pod was assumed on", []step{
			{do: assume("n1"), cpu: [2]int64{500, 0}, assumed: true},
			{do: func(c *Cache) error { return c.ForgetPod(bound("n2", 500)) }, cpu: [2]int64{500, 0}, assumed: true, wantErr: true},
		}},
		{"assume needs a node", []step{
			{do: func(c *Cache) error { return c.AssumePod(framework.NewPodInfo(a)) }, cpu: [2]int64{0, 0}, wantErr: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			c.AddNode(cacheTestNode("n1", ""))
			c.AddNode(cacheTestNode("n2", ""))
			incr := cacheFreshSnapshot(t, c)
			for i, st := range tc.steps {
				if err := st.do(c); (err != nil) != st.wantErr {
					t.Fatalf("step %d: err = %v, wantErr %v", i, err, st.wantErr)
				}
				if err := c.UpdateSnapshot(incr); err != nil {
					t.Fatalf("step %d: UpdateSnapshot: %v", i, err)
				}
				for j, node := range []string{"n1", "n2"} {
					ni, err := incr.Get(node)
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					if ni.Requested.MilliCPU != st.cpu[j] || (len(ni.Pods) > 0) != (st.cpu[j] > 0) {
						t.Errorf("step %d: %s requests %dm with %d pods, want %dm", i, node, ni.Requested.MilliCPU, len(ni.Pods), st.cpu[j])
					}
				}
				if got := c.IsAssumedPod(a); got != st.assumed {
					t.Errorf("step %d: IsAssumedPod = %v, want %v", i, got, st.assumed)
				}
			}
		})
	}
}

func TestCacheImageStates(t *testing.T) {
	type counts map[string]map[string]int // node → image → NumNodes
	node := func(name string, images ...string) cacheOp { return cacheAddNode(cacheTestNode(name, "", images...)) }
	cases := []struct {
		name string
		ops  []cacheOp
		want counts
	}{
		{"shared image counts every node",
			[]cacheOp{node("n1", "pause", "nginx"), node("n2", "pause")},
			counts{"n1": {"pause": 2, "nginx": 1}, "n2": {"pause": 2}}},
		{"a node going away lowers the others' counts",
			[]cacheOp{node("n1", "pause", "nginx"), node("n2", "pause", "nginx"), node("n3", "pause"), cacheRemoveNode("n2")},
			counts{"n1": {"pause": 2, "nginx": 1}, "n3": {"pause": 2}}},
		{"an image pulled on one node raises the others",
			[]cacheOp{node("n1", "pause", "redis"), node("n2", "pause"), node("n2", "pause", "redis")},
			counts{"n1": {"pause": 2, "redis": 2}, "n2": {"pause": 2, "redis": 2}}},
		{"an image removed from a node drops from it",
			[]cacheOp{node("n1", "pause", "redis"), node("n2", "pause", "redis"), node("n2", "pause")},
			counts{"n1": {"pause": 2, "redis": 1}, "n2": {"pause": 2}}},
		{"the only node with an image re-reporting it keeps it",
			[]cacheOp{node("n1", "pause", "redis"), node("n1", "pause", "redis")},
			counts{"n1": {"pause": 1, "redis": 1}}},
		{"an image on no node any more leaves the index",
			[]cacheOp{node("n1", "pause"), node("n2", "pause", "redis"), cacheRemoveNode("n2")},
			counts{"n1": {"pause": 1}}},
		{"pods on a deleted node do not keep its images counted",
			[]cacheOp{node("n1", "pause"), node("n2", "pause"), cacheAddPod(cacheTestPod("a", "n2", 1)), cacheRemoveNode("n2")},
			counts{"n1": {"pause": 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, m := NewCache(), newCacheModel()
			// incr is updated after every event, so a node copied early
			// and unchanged since must still show the current counts.
			incr := cacheFreshSnapshot(t, c)
			for _, op := range tc.ops {
				op(t, c, m)
				if err := c.UpdateSnapshot(incr); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range []*framework.Snapshot{incr, cacheFreshSnapshot(t, c)} {
				got := counts{}
				for _, ni := range s.List() {
					got[ni.Name()] = map[string]int{}
					for img, st := range ni.ImageStates {
						got[ni.Name()][img] = st.NumNodes
						if st.Size != 100 {
							t.Errorf("%s %s size = %d, want 100", ni.Name(), img, st.Size)
						}
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("image counts = %v, want %v", got, tc.want)
				}
				// The snapshot's index has exactly the images some
				// node reports, with the nodes' shared state.
				wantIndex := map[string]int{}
				for _, imgs := range tc.want {
					maps.Copy(wantIndex, imgs)
				}
				gotIndex := map[string]int{}
				for img, st := range s.Images {
					gotIndex[img] = st.NumNodes
				}
				if fmt.Sprint(gotIndex) != fmt.Sprint(wantIndex) {
					t.Errorf("snapshot images = %v, want %v", gotIndex, wantIndex)
				}
			}
		})
	}
}

// TestCacheSnapshotMatchesScratch updates one snapshot after every step
// and compares it with a snapshot built from scratch from the model, and
// its order with the node tree's.
func TestCacheSnapshotMatchesScratch(t *testing.T) {
	pod := cacheTestPod
	aff, anti, claim := cacheWithAffinity, cacheWithAntiAffinity, cacheWithClaim
	steps := []struct {
		name string
		op   cacheOp
	}{
		{"three nodes in two zones", cacheOps(cacheAddNode(cacheTestNode("n1", "a")), cacheAddNode(cacheTestNode("n2", "b")), cacheAddNode(cacheTestNode("n3", "a")))},
		{"plain pod", cacheAddPod(pod("p1", "n1", 100))},
		{"affinity pod puts n2 on the affinity list", cacheAddPod(pod("p2", "n2", 200, aff))},
		{"second pod on n2 keeps it listed", cacheAddPod(pod("p3", "n2", 300))},
		{"assumed anti-affinity pod with a claim", cacheAssume(pod("p4", "", 400, anti, claim("c1")), "n3")},
		{"assumed pod confirmed", cacheAddPod(pod("p4", "n3", 400, anti, claim("c1")))},
		{"same claim on another node", cacheAddPod(pod("p5", "n1", 50, claim("c1")))},
		{"anti-affinity pod leaves, claim stays", cacheRemovePod("p4")},
		{"last user of the claim leaves", cacheRemovePod("p5")},
		{"pod update changes requests", cacheUpdatePod(pod("p1", "n1", 900))},
		{"pod before its node", cacheAddPod(pod("p6", "n4", 10, aff))},
		{"the node arrives", cacheAddNode(cacheTestNode("n4", "c"))},
		{"node with pods deleted", cacheRemoveNode("n2")},
		{"one of its pods goes", cacheRemovePod("p2")},
		{"node comes back", cacheAddNode(cacheTestNode("n2", "b"))},
		{"node moves zone", cacheAddNode(cacheTestNode("n1", "c"))},
		{"assume then forget", cacheOps(cacheAssume(pod("p7", "", 70, claim("c2")), "n4"), cacheForget("p7"))},
		{"assume and forget across a snapshot", cacheAssume(pod("p8", "", 80, claim("c2")), "n4")},
		{"forgotten", cacheForget("p8")},
		{"empty node deleted", cacheRemoveNode("n3")},
		{"node added and another deleted in one interval", cacheOps(cacheAddNode(cacheTestNode("n5", "a")), cacheRemoveNode("n1"))},
		{"pod confirmed elsewhere than assumed", cacheOps(cacheAssume(pod("p9", "", 90, aff), "n5"), cacheAddPod(pod("p9", "n2", 90, aff)))},
		{"nothing changes", cacheOps()},
		{"all pods removed", func(t testing.TB, c *Cache, m *cacheModel) {
			for uid := range m.pods {
				cacheRemovePod(string(uid))(t, c, m)
			}
		}},
		{"all nodes removed", func(t testing.TB, c *Cache, m *cacheModel) {
			for name := range m.nodes {
				cacheRemoveNode(name)(t, c, m)
			}
		}},
	}
	c, m := NewCache(), newCacheModel()
	incr := framework.NewEmptySnapshot()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.op(t, c, m)
			if err := c.UpdateSnapshot(incr); err != nil {
				t.Fatalf("UpdateSnapshot: %v", err)
			}
			cacheCheckSnapshot(t, incr, m.snapshot())
			// The tree is read directly: updating another snapshot here
			// would take the lists' ownership away from incr and force
			// the rebuild path every step.
			if got, want := cacheNames(incr.List()), c.tree.list(); !slices.Equal(got, want) {
				t.Errorf("order = %v, want the tree's %v", got, want)
			}
		})
	}
	if c.NodeCount() != 0 || c.PodCount() != 0 {
		t.Errorf("cache not empty at the end: %d nodes, %d pods", c.NodeCount(), c.PodCount())
	}
}

// TestCacheSnapshotRandomOps runs seeded random event sequences, taking
// a snapshot every few events, and checks each against the model.
func TestCacheSnapshotRandomOps(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 42} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			c, m := NewCache(), newCacheModel()
			assumed := map[types.UID]bool{}
			zones := []string{"", "a", "b", "c"}
			nodeName := func() string { return fmt.Sprintf("n%d", r.IntN(12)) }
			opts := func() []cachePodOpt {
				claim := cacheWithClaim(fmt.Sprintf("c%d", r.IntN(3)))
				return [][]cachePodOpt{{cacheWithAffinity}, {cacheWithAntiAffinity, claim}, {claim}, nil, nil}[r.IntN(5)]
			}
			anyPod := func() (types.UID, bool) {
				if len(m.pods) == 0 {
					return "", false
				}
				keys := slices.Sorted(maps.Keys(m.pods))
				return keys[r.IntN(len(keys))], true
			}
			snaps := []*framework.Snapshot{framework.NewEmptySnapshot(), framework.NewEmptySnapshot()}
			for i := range 600 {
				uid, havePod := anyPod()
				switch op := r.IntN(10); {
				case op < 2:
					cacheAddNode(cacheTestNode(nodeName(), zones[r.IntN(len(zones))], fmt.Sprintf("img%d", r.IntN(4))))(t, c, m)
				case op == 2:
					if name := nodeName(); m.nodes[name] != nil {
						cacheRemoveNode(name)(t, c, m)
					}
				case op == 3:
					cacheAddPod(cacheTestPod(fmt.Sprintf("p%d", i), nodeName(), int64(r.IntN(1000)), opts()...))(t, c, m)
				case op == 4:
					uid := fmt.Sprintf("p%d", i)
					cacheAssume(cacheTestPod(uid, "", int64(r.IntN(1000)), opts()...), nodeName())(t, c, m)
					assumed[types.UID(uid)] = true
				case op == 5 && havePod:
					cacheRemovePod(string(uid))(t, c, m)
					delete(assumed, uid)
				case op == 6 && havePod && assumed[uid]:
					cacheForget(string(uid))(t, c, m)
					delete(assumed, uid)
				case op > 6 && havePod:
					// An informer update, or the confirmation of an
					// assumed pod, sometimes on another node.
					node := m.pods[uid].Spec.NodeName
					if r.IntN(4) == 0 {
						node = nodeName()
					}
					cacheUpdatePod(cacheTestPod(string(uid), node, int64(r.IntN(1000)), opts()...))(t, c, m)
					delete(assumed, uid)
				}
				if r.IntN(3) == 0 {
					// Two snapshots updated in turn exercise the path
					// where the cache does not own the snapshot's lists.
					s := snaps[r.IntN(2)]
					if err := c.UpdateSnapshot(s); err != nil {
						t.Fatalf("op %d: UpdateSnapshot: %v", i, err)
					}
					if cacheCheckSnapshot(t, s, m.snapshot()); t.Failed() {
						t.Fatalf("op %d: snapshot differs", i)
					}
					cacheCheckImageCounts(t, s, m)
				}
			}
		})
	}
}

func TestCacheSnapshotZoneOrder(t *testing.T) {
	zoned := func(name, region, zone string) *corev1.Node {
		n := cacheTestNode(name, "")
		for k, v := range map[string]string{corev1.LabelTopologyRegion: region, corev1.LabelTopologyZone: zone} {
			if v != "" {
				n.Labels[k] = v
			}
		}
		return n
	}
	beta := cacheTestNode("o1", "")
	beta.Labels[corev1.LabelFailureDomainBetaZone] = "old"
	add := func(nodes ...*corev1.Node) func(c *Cache) {
		return func(c *Cache) {
			for _, n := range nodes {
				c.AddNode(n)
			}
		}
	}
	cases := []struct {
		name string
		ops  []func(c *Cache)
		want []string
	}{
		{"round robin over zones in arrival order",
			[]func(c *Cache){add(zoned("a1", "r", "a"), zoned("b1", "r", "b"), zoned("a2", "r", "a"), zoned("c1", "r", "c"),
				zoned("x1", "", ""), zoned("a3", "r", "a"), zoned("c2", "r", "c"))},
			[]string{"a1", "b1", "c1", "x1", "a2", "c2", "a3"}},
		{"same zone name in two regions is two zones",
			[]func(c *Cache){add(zoned("e1", "east", "z"), zoned("e2", "east", "z"), zoned("w1", "west", "z"), zoned("r1", "west", ""))},
			[]string{"e1", "w1", "r1", "e2"}},
		{"a zone emptied drops out, the others keep their order",
			[]func(c *Cache){add(zoned("a1", "r", "a"), zoned("b1", "r", "b"), zoned("a2", "r", "a"), zoned("c1", "r", "c")),
				func(c *Cache) { c.RemoveNode(zoned("b1", "r", "b")) }},
			[]string{"a1", "c1", "a2"}},
		{"a node relabelled into another zone moves to its end",
			[]func(c *Cache){add(zoned("a1", "r", "a"), zoned("a2", "r", "a"), zoned("b1", "r", "b")),
				func(c *Cache) { c.UpdateNode(nil, zoned("a1", "r", "b")) }},
			[]string{"a2", "b1", "a1"}},
		{"beta labels count as zones",
			[]func(c *Cache){add(zoned("a1", "", "a"), zoned("a2", "", "a"), beta)},
			[]string{"a1", "o1", "a2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			incr := cacheFreshSnapshot(t, c)
			for _, op := range tc.ops {
				op(c)
				if err := c.UpdateSnapshot(incr); err != nil {
					t.Fatal(err)
				}
			}
			if got := cacheNames(incr.List()); !slices.Equal(got, tc.want) {
				t.Errorf("order = %v, want %v", got, tc.want)
			}
		})
	}
}

// cacheBigCluster returns a cache of n nodes in 3 zones, each with two
// pods, one in ten with an affinity pod, and a snapshot of it.
func cacheBigCluster(tb testing.TB, n int) (*Cache, *framework.Snapshot) {
	c := NewCache()
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		c.AddNode(cacheTestNode(name, fmt.Sprintf("z%d", i%3), "pause", fmt.Sprintf("app-%d", i%50)))
		c.AddPod(cacheTestPod(name+"-a", name, 100))
		if i%10 == 0 {
			c.AddPod(cacheTestPod(name+"-b", name, 100, cacheWithAffinity))
		} else {
			c.AddPod(cacheTestPod(name+"-b", name, 100))
		}
	}
	return c, cacheFreshSnapshot(tb, c)
}

func TestCacheUpdateSnapshotCopiesOnlyChanged(t *testing.T) {
	c, s := cacheBigCluster(t, 5000)
	cases := []struct {
		name   string
		node   string
		setup  func() // applied and snapshotted before the change
		change func()
		delta  int // pods the change adds to node
	}{
		{name: "pod added to a plain node", node: "node-01234", delta: 1,
			change: func() { c.AddPod(cacheTestPod("extra-1", "node-01234", 7)) }},
		{name: "pod added to a node on the affinity list", node: "node-02220", delta: 1,
			change: func() { c.AddPod(cacheTestPod("extra-2", "node-02220", 7)) }},
		{name: "pod updated", node: "node-02220", delta: 0,
			change: func() { c.UpdatePod(nil, cacheTestPod("extra-2", "node-02220", 9)) }},
		{name: "assumed pod forgotten", node: "node-04999", delta: -1,
			setup: func() {
				if err := c.AssumePod(cacheAssumeCopy(cacheTestPod("extra-3", "", 7), "node-04999")); err != nil {
					t.Fatal(err)
				}
			},
			change: func() {
				if err := c.ForgetPod(cacheTestPod("extra-3", "node-04999", 7)); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
				if err := c.UpdateSnapshot(s); err != nil {
					t.Fatal(err)
				}
			}
			list := slices.Clone(s.NodeInfoList)
			aff := slices.Clone(s.HavePodsWithAffinityList)
			old := maps.Clone(s.NodeInfoMap)
			oldPods := len(old[tc.node].Pods)
			listBacking := &s.NodeInfoList[0]

			tc.change()
			if err := c.UpdateSnapshot(s); err != nil {
				t.Fatal(err)
			}
			if &s.NodeInfoList[0] != listBacking {
				t.Errorf("NodeInfoList was rebuilt; want the changed entry replaced in place")
			}
			changed := 0
			for i, ni := range s.NodeInfoList {
				if ni == list[i] {
					continue
				}
				changed++
				if ni.Name() != tc.node || list[i].Name() != tc.node {
					t.Errorf("entry %d changed from %s to %s; only %s changed", i, list[i].Name(), ni.Name(), tc.node)
				}
			}
			if changed != 1 {
				t.Errorf("%d list entries replaced, want 1", changed)
			}
			for name, ni := range s.NodeInfoMap {
				if (ni != old[name]) != (name == tc.node) {
					t.Errorf("map entry %s replaced = %v", name, ni != old[name])
				}
			}
			for i, ni := range s.HavePodsWithAffinityList {
				if ni != s.NodeInfoMap[ni.Name()] || (ni != aff[i]) != (ni.Name() == tc.node) {
					t.Errorf("affinity list entry %d (%s) not patched right", i, ni.Name())
				}
			}
			if got := len(old[tc.node].Pods); got != oldPods {
				t.Errorf("previous snapshot copy was modified: %d pods, had %d", got, oldPods)
			}
			if got, want := len(s.NodeInfoMap[tc.node].Pods), oldPods+tc.delta; got != want {
				t.Errorf("new copy has %d pods, want %d", got, want)
			}
		})
	}
}

// TestCacheConcurrentEvents feeds events from several goroutines while
// the scheduling loop takes snapshots, then checks the final state; run
// with -race it checks the locking and that snapshots share nothing the
// cache writes later.
func TestCacheConcurrentEvents(t *testing.T) {
	c := NewCache()
	const workers, perWorker = 4, 200
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := fmt.Sprintf("n%d", w)
			c.AddNode(cacheTestNode(node, fmt.Sprintf("z%d", w%2), "pause"))
			for i := range perWorker {
				p := cacheTestPod(fmt.Sprintf("w%d-%d", w, i), "", 10, cacheWithAffinity)
				pi := cacheAssumeCopy(p, node)
				if err := c.AssumePod(pi); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					c.AddPod(pi.Pod)
				} else {
					_ = c.ForgetPod(pi.Pod)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	s := framework.NewEmptySnapshot()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		if err := c.UpdateSnapshot(s); err != nil {
			t.Fatal(err)
		}
		// Read what plugins read, as a cycle would.
		for _, ni := range s.List() {
			_ = ni.Requested.MilliCPU + int64(len(ni.Pods))
			for _, st := range ni.ImageStates {
				_ = st.NumNodes
			}
		}
	}
	if err := c.UpdateSnapshot(s); err != nil {
		t.Fatal(err)
	}
	if got := s.NumNodes(); got != workers {
		t.Fatalf("nodes = %d, want %d", got, workers)
	}
	for _, ni := range s.List() {
		if len(ni.Pods) != perWorker/2 || ni.Requested.MilliCPU != 10*perWorker/2 {
			t.Errorf("%s: %d pods, %dm cpu; want %d, %dm", ni.Name(), len(ni.Pods), ni.Requested.MilliCPU, perWorker/2, 10*perWorker/2)
		}
		if ni.ImageStates["pause"].NumNodes != workers {
			t.Errorf("%s: pause on %d nodes, want %d", ni.Name(), ni.ImageStates["pause"].NumNodes, workers)
		}
	}
	if len(s.HavePodsWithAffinityList) != workers {
		t.Errorf("%d nodes with affinity pods, want %d", len(s.HavePodsWithAffinityList), workers)
	}
}

// BenchmarkUpdateSnapshot measures one scheduling cycle's snapshot
// update after `changed` nodes each got or lost a pod. ns/op includes
// those informer events; snapshot-ns/op is UpdateSnapshot alone (timed
// by hand: stopping the benchmark timer every iteration costs more
// than the update).
func BenchmarkUpdateSnapshot(b *testing.B) {
	for _, changed := range []int{1, 100} {
		b.Run(fmt.Sprintf("nodes=5000/changed=%d", changed), func(b *testing.B) {
			c, s := cacheBigCluster(b, 5000)
			pods := make([]*corev1.Pod, changed)
			for j := range pods {
				name := fmt.Sprintf("node-%05d", j*(5000/changed))
				pods[j] = cacheTestPod("bench-"+name, name, 5)
			}
			var inUpdate time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for _, p := range pods {
					if i%2 == 0 {
						c.AddPod(p)
					} else {
						c.RemovePod(p)
					}
				}
				start := time.Now()
				if err := c.UpdateSnapshot(s); err != nil {
					b.Fatal(err)
				}
				inUpdate += time.Since(start)
			}
			b.ReportMetric(float64(inUpdate.Nanoseconds())/float64(b.N), "snapshot-ns/op")
		})
	}
}

// BenchmarkSnapshotFromScratch is the cost incremental updates avoid:
// copying all 5000 nodes into an empty snapshot.
func BenchmarkSnapshotFromScratch(b *testing.B) {
	c, _ := cacheBigCluster(b, 5000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.UpdateSnapshot(framework.NewEmptySnapshot()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAssume(b *testing.B) {
	c, _ := cacheBigCluster(b, 5000)
	const batch = 1024
	pis := make([]*framework.PodInfo, batch)
	for i := range pis {
		pis[i] = cacheAssumeCopy(cacheTestPod(fmt.Sprintf("assume-%d", i), "", 100), fmt.Sprintf("node-%05d", i*4))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := c.AssumePod(pis[i%batch]); err != nil {
			b.Fatal(err)
		}
		if i%batch == batch-1 {
			b.StopTimer()
			for _, pi := range pis {
				_ = c.ForgetPod(pi.Pod)
			}
			b.StartTimer()
		}
	}
}
