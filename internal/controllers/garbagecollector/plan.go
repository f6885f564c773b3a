package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ownerState is what a live read says about one owner of a dependent.
type ownerState int

const (
	// ownerSolid exists and is not waiting for its dependents.
	ownerSolid ownerState = iota
	// ownerDangling does not exist: not found, or the name now belongs
	// to an object with another UID.
	ownerDangling
	// ownerWaiting is being deleted in the foreground: it waits for its
	// blocking dependents to go first.
	ownerWaiting
)

type classifiedRef struct {
	ref   metav1.OwnerReference
	state ownerState
}

// verdictAction is what becomes of a dependent.
type verdictAction int

const (
	// keep: an owner remains and no reference needs to go.
	keep verdictAction = iota
	// dropRefs: an owner remains; the references to owners that are
	// gone, or waiting on their dependents, are removed (a waiting owner
	// would otherwise wait for this dependent forever).
	dropRefs
	// deleteItem: no owner remains; the dependent is deleted.
	deleteItem
)

// verdict is the decision about one dependent.
type verdict struct {
	action verdictAction
	// drop lists the owner UIDs whose references go (dropRefs).
	drop []types.UID
	// policy is the propagation of the delete (deleteItem).
	policy metav1.DeletionPropagation
	// unblockFirst: before a foreground delete, make this dependent's own
	// references non-blocking. One of its dependents is itself deleting
	// its dependents, so the owners could otherwise wait on each other
	// in a cycle.
	unblockFirst bool
}

// judge decides about a dependent from its owners' states (read live),
// its finalizers and its own dependents (from the graph):
//
//   - any owner solid: keep it, dropping references to owners that are
//     gone or waiting;
//   - otherwise, if some owner waits for its dependents and this object
//     has dependents of its own: delete it in the foreground, so the
//     owner waits for the whole subtree;
//   - otherwise: delete it, honouring an orphan or foregroundDeletion
//     finalizer it already carries, else in the background.
func judge(refs []classifiedRef, finalizers []string, dependents []dependentView) verdict {
	var solid, waiting bool
	var drop []types.UID
	for _, r := range refs {
		switch r.state {
		case ownerSolid:
			solid = true
		case ownerWaiting:
			waiting = true
			drop = append(drop, r.ref.UID)
		default:
			drop = append(drop, r.ref.UID)
		}
	}
	switch {
	case solid && len(drop) == 0:
		return verdict{action: keep}
	case solid:
		return verdict{action: dropRefs, drop: drop}
	case waiting && len(dependents) > 0:
		v := verdict{action: deleteItem, policy: metav1.DeletePropagationForeground}
		v.unblockFirst = slices.ContainsFunc(dependents, func(d dependentView) bool { return d.deletingDependents })
		return v
	}
	v := verdict{action: deleteItem, policy: metav1.DeletePropagationBackground}
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		v.policy = metav1.DeletePropagationOrphan
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		v.policy = metav1.DeletePropagationForeground
	}
	return v
}

// planForeground decides about an owner being deleted in the
// foreground: once none of its dependents blocks it, its
// foregroundDeletion finalizer goes (and the API server removes it);
// until then the blocking dependents are queued for deletion, except
// those themselves waiting on their own dependents (they are already on
// their way).
func planForeground(dependents []dependentView) (done bool, attempt []types.UID) {
	done = true
	for _, d := range dependents {
		if !d.blocking {
			continue
		}
		done = false
		if !d.deletingDependents {
			attempt = append(attempt, d.id.uid)
		}
	}
	return done, attempt
}

// withoutOwners returns refs minus those naming the given UIDs, and
// whether any was removed.
func withoutOwners(refs []metav1.OwnerReference, uids ...types.UID) ([]metav1.OwnerReference, bool) {
	out := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return slices.Contains(uids, r.UID) })
	return out, len(out) != len(refs)
}

// unblocked returns refs with blockOwnerDeletion turned off, and whether
// any was on.
func unblocked(refs []metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
	out := slices.Clone(refs)
	changed := false
	for i := range out {
		if isBlocking(out[i]) {
			f := false
			out[i].BlockOwnerDeletion = &f
			changed = true
		}
	}
	return out, changed
}

// withoutFinalizer returns finalizers minus f, and whether it was there.
func withoutFinalizer(finalizers []string, f string) ([]string, bool) {
	out := slices.DeleteFunc(slices.Clone(finalizers), func(s string) bool { return s == f })
	return out, len(out) != len(finalizers)
}
