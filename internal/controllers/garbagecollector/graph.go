package garbagecollector

import (
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// identity names one observed object: enough to read, patch or delete it
// and to tell whether an ownerReference points at it.
type identity struct {
	resource  schema.GroupVersionResource
	kind      string
	namespace string
	name      string
	uid       types.UID
}

func (id identity) apiVersion() string { return id.resource.GroupVersion().String() }

// String renders the identity the way upstream's messages do.
func (id identity) String() string {
	return refString(id.apiVersion(), id.kind, id.namespace, id.name, id.uid)
}

func refString(apiVersion, kind, namespace, name string, uid types.UID) string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", apiVersion, kind, namespace, name, uid)
}

// node is what the graph keeps of one object: its identity, its owners
// and where it stands in deletion. It is also the value an informer event
// is turned into (see graph.observe).
type node struct {
	id     identity
	owners []metav1.OwnerReference
	// beingDeleted: deletionTimestamp is set.
	beingDeleted bool
	// deletingDependents: being deleted with the foregroundDeletion
	// finalizer, i.e. waiting for its blocking dependents to go.
	deletingDependents bool
	// orphaning: being deleted with the orphan finalizer, i.e. waiting
	// for its dependents to be released.
	orphaning bool
}

// absentKey names an owner the API server confirmed does not exist (no
// object of that name carries that UID). UIDs are never reused, so the
// confirmation never goes stale. The version is left out: every version
// of a group's kind serves the same objects.
type absentKey struct {
	group, kind, namespace, name string
	uid                          types.UID
}

// invalidRef is an ownerReference that can never be satisfied: it names
// a namespaced owner the dependent cannot have (one in another namespace,
// or any namespaced owner of a cluster-scoped dependent).
type invalidRef struct {
	dependent identity
	ref       metav1.OwnerReference
}

// effects are what the collector must do after the graph changed: the
// graph itself does no I/O.
type effects struct {
	// attemptToDelete are objects to look at: dependents that may have
	// lost their owners, and owners that may be done waiting for their
	// dependents.
	attemptToDelete []types.UID
	// attemptToOrphan are owners whose dependents must be released.
	attemptToOrphan []types.UID
	invalid         []invalidRef
	absent          []absentKey
}

// graph is the collector's picture of ownership in the cluster: every
// observed object, and for every owner UID (observed or not) the
// observed objects that name it in an ownerReference.
//
// An owner UID with dependents but no node is upstream's "virtual node":
// an owner nobody has seen. Its dependents are queued when they are
// observed and each checks its own reference with a live read, so
// dependents that disagree about an owner's kind, name or namespace never
// confuse one another.
//
// The graph is safe for concurrent use: informer handlers write it,
// workers read views of it.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
	// dependents maps an owner UID to the UIDs of observed objects
	// referring to it.
	dependents map[types.UID]map[types.UID]struct{}
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}, dependents: map[types.UID]map[types.UID]struct{}{}}
}

// observe records an object as an informer reports it (added or
// updated) and returns what must happen because of the change.
func (g *graph) observe(o node) effects {
	g.mu.Lock()
	defer g.mu.Unlock()
	var eff effects
	uid := o.id.uid
	n, found := g.nodes[uid]
	if !found {
		n = &node{id: o.id}
		g.nodes[uid] = n
		// Dependents seen before their owner: now that its coordinates
		// are known, those that name it wrongly must check their
		// references against the API server.
		for d := range g.dependents[uid] {
			dep := g.nodes[d]
			for _, ref := range dep.owners {
				if ref.UID != uid {
					continue
				}
				ok, wrongNamespace := refersTo(ref, dep.id.namespace, o.id)
				if wrongNamespace {
					eff.invalid = append(eff.invalid, invalidRef{dependent: dep.id, ref: ref})
				}
				if !ok {
					eff.attemptToDelete = append(eff.attemptToDelete, d)
				}
			}
		}
	}
	old := *n
	n.id = o.id
	n.owners = o.owners
	n.beingDeleted = o.beingDeleted
	n.deletingDependents = o.deletingDependents
	n.orphaning = o.orphaning

	added, removed, unblocked := diffOwners(old.owners, o.owners)
	for _, ref := range removed {
		g.unlink(ref.UID, uid)
	}
	// An owner waiting for its blocking dependents may be done now.
	for _, ref := range append(removed, unblocked...) {
		if isBlocking(ref) {
			if owner := g.nodes[ref.UID]; owner != nil && owner.deletingDependents {
				eff.attemptToDelete = append(eff.attemptToDelete, ref.UID)
			}
		}
	}
	check := false
	for _, ref := range added {
		g.link(ref.UID, uid)
		owner := g.nodes[ref.UID]
		if owner == nil || owner == n {
			// Unobserved (or self-owned, which no object can
			// satisfy): only a live read can tell.
			check = true
			continue
		}
		ok, wrongNamespace := refersTo(ref, o.id.namespace, owner.id)
		if wrongNamespace {
			eff.invalid = append(eff.invalid, invalidRef{dependent: o.id, ref: ref})
		}
		if !ok {
			check = true
		}
	}
	if check {
		eff.attemptToDelete = append(eff.attemptToDelete, uid)
	}

	switch {
	case n.orphaning && !old.orphaning:
		eff.attemptToOrphan = append(eff.attemptToOrphan, uid)
	case n.deletingDependents && !old.deletingDependents:
		eff.attemptToDelete = append(eff.attemptToDelete, uid)
		for d := range g.dependents[uid] {
			eff.attemptToDelete = append(eff.attemptToDelete, d)
		}
	}
	return eff
}

// forget removes an object that is gone (or no longer watched). Its
// dependents are queued to check their owners, and its own owners that
// wait for their dependents to go are queued too. confirmed says the
// object's absence is certain (an informer's delete, or a live read), so
// its dependents may trust it without asking the API server again.
func (g *graph) forget(uid types.UID, confirmed bool) effects {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.forgetLocked(uid, confirmed)
}

func (g *graph) forgetLocked(uid types.UID, confirmed bool) effects {
	var eff effects
	n, ok := g.nodes[uid]
	if !ok {
		return eff
	}
	delete(g.nodes, uid)
	for _, ref := range n.owners {
		g.unlink(ref.UID, uid)
		if owner := g.nodes[ref.UID]; owner != nil && owner.deletingDependents {
			eff.attemptToDelete = append(eff.attemptToDelete, ref.UID)
		}
	}
	deps := g.dependents[uid]
	for d := range deps {
		eff.attemptToDelete = append(eff.attemptToDelete, d)
	}
	if confirmed && len(deps) > 0 {
		eff.absent = append(eff.absent, absentKey{group: n.id.resource.Group, kind: n.id.kind,
			namespace: n.id.namespace, name: n.id.name, uid: uid})
	}
	return eff
}

// purge forgets every object of a resource no longer watched (its type
// left discovery). Their absence is not confirmed: dependents ask.
func (g *graph) purge(resource schema.GroupVersionResource) effects {
	g.mu.Lock()
	defer g.mu.Unlock()
	var all effects
	for uid, n := range g.nodes {
		if n.id.resource == resource {
			eff := g.forgetLocked(uid, false)
			all.attemptToDelete = append(all.attemptToDelete, eff.attemptToDelete...)
		}
	}
	return all
}

func (g *graph) link(owner, dependent types.UID) {
	deps := g.dependents[owner]
	if deps == nil {
		deps = map[types.UID]struct{}{}
		g.dependents[owner] = deps
	}
	deps[dependent] = struct{}{}
}

func (g *graph) unlink(owner, dependent types.UID) {
	deps := g.dependents[owner]
	delete(deps, dependent)
	if len(deps) == 0 {
		delete(g.dependents, owner)
	}
}

// itemView is a copy of what a worker needs to know about one object.
type itemView struct {
	id                 identity
	owners             []metav1.OwnerReference
	beingDeleted       bool
	deletingDependents bool
	// ownersLive: every owner is observed, named exactly and not being
	// deleted, so there is nothing to collect. (A stale graph can only
	// err towards keeping: the owner's deletion, once observed, queues
	// this object again.)
	ownersLive bool
	dependents []dependentView
}

type dependentView struct {
	id identity
	// blocking: its reference to the owner has blockOwnerDeletion.
	blocking           bool
	deletingDependents bool
}

// view returns a copy of an object's state and its dependents', or false
// if the object is not in the graph.
func (g *graph) view(uid types.UID) (itemView, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return itemView{}, false
	}
	v := itemView{id: n.id, owners: slices.Clone(n.owners), beingDeleted: n.beingDeleted,
		deletingDependents: n.deletingDependents, ownersLive: len(n.owners) > 0}
	for _, ref := range n.owners {
		owner := g.nodes[ref.UID]
		if owner == nil || owner == n || owner.beingDeleted {
			v.ownersLive = false
			break
		}
		if ok, _ := refersTo(ref, n.id.namespace, owner.id); !ok {
			v.ownersLive = false
			break
		}
	}
	for d := range g.dependents[uid] {
		dep := g.nodes[d]
		dv := dependentView{id: dep.id, deletingDependents: dep.deletingDependents}
		for _, ref := range dep.owners {
			if ref.UID == uid && isBlocking(ref) {
				dv.blocking = true
			}
		}
		v.dependents = append(v.dependents, dv)
	}
	return v, true
}

// observed reports whether an object with this UID is in the graph.
func (g *graph) observed(uid types.UID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, ok := g.nodes[uid]
	return ok
}

// size returns the number of observed objects and of owner UIDs with
// dependents.
func (g *graph) size() (nodes, owners int) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes), len(g.dependents)
}

// refersTo reports whether ref, held by a dependent in depNamespace,
// names owner exactly (same group, kind and name), and whether it is
// invalid because owner is namespaced and the dependent is not in its
// namespace. A cluster-scoped owner may be referred to from anywhere.
func refersTo(ref metav1.OwnerReference, depNamespace string, owner identity) (ok, wrongNamespace bool) {
	if owner.namespace != "" && owner.namespace != depNamespace {
		return false, true
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false, false
	}
	return gv.Group == owner.resource.Group && ref.Kind == owner.kind && ref.Name == owner.name, false
}

func isBlocking(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

// diffOwners compares two ownerReference lists by owner UID: references
// added, removed, and kept but no longer blocking (blockOwnerDeletion
// turned off; the old reference is returned).
func diffOwners(old, cur []metav1.OwnerReference) (added, removed, unblocked []metav1.OwnerReference) {
	for _, c := range cur {
		i := slices.IndexFunc(old, func(o metav1.OwnerReference) bool { return o.UID == c.UID })
		if i < 0 {
			added = append(added, c)
			continue
		}
		if isBlocking(old[i]) && !isBlocking(c) {
			unblocked = append(unblocked, old[i])
		}
	}
	for _, o := range old {
		if !slices.ContainsFunc(cur, func(c metav1.OwnerReference) bool { return c.UID == o.UID }) {
			removed = append(removed, o)
		}
	}
	return added, removed, unblocked
}
