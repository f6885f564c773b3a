package garbagecollector

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var (
	configMaps   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	clusterRoles = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

// obj builds an observed ConfigMap (namespace "ns" unless the name says
// "ns/name"; "" namespace for a ClusterRole, see role).
func obj(namespace, name string, owners ...metav1.OwnerReference) node {
	return node{id: identity{resource: configMaps, kind: "ConfigMap", namespace: namespace, name: name, uid: types.UID(name)}, owners: owners}
}

func role(name string, owners ...metav1.OwnerReference) node {
	return node{id: identity{resource: clusterRoles, kind: "ClusterRole", name: name, uid: types.UID(name)}, owners: owners}
}

// ownedBy refers to the ConfigMap whose name is also its UID.
func ownedBy(name string, blocking bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID(name), BlockOwnerDeletion: &blocking}
}

func deleting(n node, foreground, orphan bool) node {
	n.beingDeleted, n.deletingDependents, n.orphaning = true, foreground, orphan
	return n
}

type step func(g *graph) effects

func see(n node) step { return func(g *graph) effects { return g.observe(n) } }
func gone(uid string, sure bool) step {
	return func(g *graph) effects { return g.forget(types.UID(uid), sure) }
}
func purged(r schema.GroupVersionResource) step { return func(g *graph) effects { return g.purge(r) } }

func uids(s ...string) []types.UID {
	out := make([]types.UID, len(s))
	for i, x := range s {
		out[i] = types.UID(x)
	}
	return out
}

func TestGraphEffects(t *testing.T) {
	tests := []struct {
		name       string
		steps      []step
		wantDelete []types.UID // of the last step, in any order
		wantOrphan []types.UID
		wantWarn   []string // dependents warned about
		wantAbsent int
	}{
		{
			name:       "dependent seen before its owner is checked",
			steps:      []step{see(obj("ns", "dep", ownedBy("owner", false)))},
			wantDelete: uids("dep"),
		},
		{
			name:  "dependent of an observed owner needs nothing",
			steps: []step{see(obj("ns", "owner")), see(obj("ns", "dep", ownedBy("owner", false)))},
		},
		{
			name:  "owner seen after its dependent, named exactly: nothing",
			steps: []step{see(obj("ns", "dep", ownedBy("owner", false))), see(obj("ns", "owner"))},
		},
		{
			name: "owner deleted: dependents queued, absence cached",
			steps: []step{see(obj("ns", "owner")), see(obj("ns", "a", ownedBy("owner", false))),
				see(obj("ns", "b", ownedBy("owner", true))), gone("owner", true)},
			wantDelete: uids("a", "b"),
			wantAbsent: 1,
		},
		{
			name: "owner purged with its resource: dependents queued, absence not assumed",
			steps: []step{see(role("owner")), see(obj("ns", "a", metav1.OwnerReference{
				APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "owner", UID: "owner"})), purged(clusterRoles)},
			wantDelete: uids("a"),
		},
		{
			name:  "owner without dependents deleted: nothing",
			steps: []step{see(obj("ns", "owner")), gone("owner", true)},
		},
		{
			name: "foreground deletion begins: owner and every dependent queued",
			steps: []step{see(obj("ns", "owner")), see(obj("ns", "a", ownedBy("owner", true))),
				see(obj("ns", "b", ownedBy("owner", false))), see(deleting(obj("ns", "owner"), true, false))},
			wantDelete: uids("owner", "a", "b"),
		},
		{
			name:       "foreground deletion seen first on a restart: queued at once",
			steps:      []step{see(deleting(obj("ns", "owner"), true, false))},
			wantDelete: uids("owner"),
		},
		{
			name:  "foreground deletion seen again: not queued again",
			steps: []step{see(deleting(obj("ns", "owner"), true, false)), see(deleting(obj("ns", "owner"), true, false))},
		},
		{
			name:       "orphan deletion begins: owner queued to orphan",
			steps:      []step{see(obj("ns", "owner")), see(deleting(obj("ns", "owner"), false, true))},
			wantOrphan: uids("owner"),
		},
		{
			name: "blocking reference removed: waiting owner queued",
			steps: []step{see(deleting(obj("ns", "owner"), true, false)), see(obj("ns", "a", ownedBy("owner", true))),
				see(obj("ns", "a"))},
			wantDelete: uids("owner"),
		},
		{
			name: "blocking reference turned off: waiting owner queued",
			steps: []step{see(deleting(obj("ns", "owner"), true, false)), see(obj("ns", "a", ownedBy("owner", true))),
				see(obj("ns", "a", ownedBy("owner", false)))},
			wantDelete: uids("owner"),
		},
		{
			name: "blocking dependent deleted: waiting owner queued",
			steps: []step{see(deleting(obj("ns", "owner"), true, false)), see(obj("ns", "a", ownedBy("owner", true))),
				gone("a", true)},
			wantDelete: uids("owner"),
		},
		{
			name:  "dependent of an owner not waiting deleted: nothing",
			steps: []step{see(obj("ns", "owner")), see(obj("ns", "a", ownedBy("owner", true))), gone("a", true)},
		},
		{
			name:       "owner in another namespace: warning, dependent checked",
			steps:      []step{see(obj("other", "owner")), see(obj("ns", "dep", ownedBy("owner", false)))},
			wantDelete: uids("dep"),
			wantWarn:   []string{"dep"},
		},
		{
			name:       "owner in another namespace seen after the dependent: warning, dependent checked",
			steps:      []step{see(obj("ns", "dep", ownedBy("owner", false))), see(obj("other", "owner"))},
			wantDelete: uids("dep"),
			wantWarn:   []string{"dep"},
		},
		{
			name:       "cluster-scoped dependent of a namespaced owner: warning",
			steps:      []step{see(obj("ns", "owner")), see(role("dep", ownedBy("owner", false)))},
			wantDelete: uids("dep"),
			wantWarn:   []string{"dep"},
		},
		{
			name: "cluster-scoped owner of a namespaced dependent: valid",
			steps: []step{see(role("owner")), see(obj("ns", "dep", metav1.OwnerReference{
				APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "owner", UID: "owner"}))},
		},
		{
			name: "reference with the wrong kind: dependent checked",
			steps: []step{see(obj("ns", "owner")), see(obj("ns", "dep", metav1.OwnerReference{
				APIVersion: "v1", Kind: "Secret", Name: "owner", UID: "owner"}))},
			wantDelete: uids("dep"),
		},
		{
			name:       "reference to itself: checked",
			steps:      []step{see(obj("ns", "self", ownedBy("self", false)))},
			wantDelete: uids("self"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGraph()
			var eff effects
			for _, s := range tt.steps {
				eff = s(g)
			}
			if !sameUIDs(eff.attemptToDelete, tt.wantDelete) {
				t.Errorf("attemptToDelete = %v, want %v", eff.attemptToDelete, tt.wantDelete)
			}
			if !sameUIDs(eff.attemptToOrphan, tt.wantOrphan) {
				t.Errorf("attemptToOrphan = %v, want %v", eff.attemptToOrphan, tt.wantOrphan)
			}
			var warned []string
			for _, w := range eff.invalid {
				warned = append(warned, w.dependent.name)
			}
			if !slices.Equal(warned, tt.wantWarn) {
				t.Errorf("warnings for %v, want %v", warned, tt.wantWarn)
			}
			if len(eff.absent) != tt.wantAbsent {
				t.Errorf("absent = %v, want %d", eff.absent, tt.wantAbsent)
			}
		})
	}
}

func sameUIDs(got, want []types.UID) bool {
	a, b := slices.Clone(got), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func TestGraphView(t *testing.T) {
	tests := []struct {
		name       string
		steps      []step
		item       string
		wantLive   bool
		wantBlocks []string // dependents with blockOwnerDeletion
	}{
		{name: "no owners", steps: []step{see(obj("ns", "a"))}, item: "a"},
		{name: "owner unobserved", steps: []step{see(obj("ns", "a", ownedBy("owner", false)))}, item: "a"},
		{
			name:     "owner observed",
			steps:    []step{see(obj("ns", "owner")), see(obj("ns", "a", ownedBy("owner", false)))},
			item:     "a",
			wantLive: true,
		},
		{
			name:  "one of two owners gone",
			steps: []step{see(obj("ns", "o1")), see(obj("ns", "o2")), see(obj("ns", "a", ownedBy("o1", false), ownedBy("o2", false))), gone("o2", true)},
			item:  "a",
		},
		{
			name:  "owner being deleted",
			steps: []step{see(deleting(obj("ns", "owner"), false, true)), see(obj("ns", "a", ownedBy("owner", false)))},
			item:  "a",
		},
		{
			name:  "owner in another namespace",
			steps: []step{see(obj("other", "owner")), see(obj("ns", "a", ownedBy("owner", false)))},
			item:  "a",
		},
		{
			name: "blocking dependents of an owner",
			steps: []step{see(obj("ns", "owner")), see(obj("ns", "a", ownedBy("owner", true))),
				see(obj("ns", "b", ownedBy("owner", false))), see(obj("ns", "c", ownedBy("owner", true)))},
			item:       "owner",
			wantBlocks: []string{"a", "c"},
		},
		{
			name: "dependent released",
			steps: []step{see(obj("ns", "owner")), see(obj("ns", "a", ownedBy("owner", true))),
				see(obj("ns", "a"))},
			item: "owner",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGraph()
			for _, s := range tt.steps {
				s(g)
			}
			v, ok := g.view(types.UID(tt.item))
			if !ok {
				t.Fatalf("%s not in the graph", tt.item)
			}
			if v.ownersLive != tt.wantLive {
				t.Errorf("ownersLive = %v, want %v", v.ownersLive, tt.wantLive)
			}
			var blocks []string
			for _, d := range v.dependents {
				if d.blocking {
					blocks = append(blocks, d.id.name)
				}
			}
			slices.Sort(blocks)
			if !slices.Equal(blocks, tt.wantBlocks) {
				t.Errorf("blocking dependents %v, want %v", blocks, tt.wantBlocks)
			}
		})
	}
}

// TestGraphForgetsEverything checks that the graph holds nothing once
// the objects it saw are gone, whatever the order: a long-running
// collector must not grow with the cluster's history.
func TestGraphForgetsEverything(t *testing.T) {
	g := newGraph()
	g.observe(obj("ns", "a", ownedBy("ghost", false)))
	g.observe(obj("ns", "b", ownedBy("a", true), ownedBy("ghost", false)))
	g.observe(obj("ns", "owner"))
	g.observe(obj("ns", "c", ownedBy("owner", false)))
	g.observe(obj("ns", "c")) // released
	for _, uid := range []string{"owner", "a", "b", "c"} {
		g.forget(types.UID(uid), true)
	}
	if n, o := g.size(); n != 0 || o != 0 {
		t.Fatalf("graph keeps %d nodes and %d owner entries after every object went", n, o)
	}
}

// BenchmarkGraphObserve measures the informer-side cost of the graph:
// one op is one object observed (a pod with one owner, of 100 owners),
// then updated with its owners unchanged, the common event.
func BenchmarkGraphObserve(b *testing.B) {
	for _, size := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			g := newGraph()
			for i := range 100 {
				g.observe(obj("ns", fmt.Sprintf("owner-%d", i)))
			}
			pods := make([]node, size)
			for i := range pods {
				pods[i] = obj("ns", fmt.Sprintf("pod-%d", i), ownedBy(fmt.Sprintf("owner-%d", i%100), true))
			}
			for _, p := range pods {
				g.observe(p)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g.observe(pods[i%size])
			}
		})
	}
}
