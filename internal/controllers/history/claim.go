package history

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Claims sorts an owner's candidate objects (those it controls and the
// orphans of its namespace) by what the owner does with them.
type Claims[T metav1.Object] struct {
	Owned   []T // controlled by the owner and matching
	Adopt   []T // orphans that match
	Release []T // controlled by the owner but no longer matching
}

// PlanClaims decides ownership as upstream's controller-ref manager
// does. An object matches when the selector selects its labels and
// member (if not nil) accepts it. An object controlled by someone else
// is never touched; an orphan is adopted only if it matches and neither
// it nor the owner is being deleted; an owned object that stopped
// matching is released, unless the owner is being deleted (the garbage
// collector then deals with it).
func PlanClaims[T metav1.Object](owner metav1.Object, selector labels.Selector, candidates []T, member func(T) bool) Claims[T] {
	var c Claims[T]
	deleting := owner.GetDeletionTimestamp() != nil
	for _, o := range candidates {
		match := selector.Matches(labels.Set(o.GetLabels())) && (member == nil || member(o))
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
			switch {
			case ref.UID != owner.GetUID():
			case match:
				c.Owned = append(c.Owned, o)
			case !deleting:
				c.Release = append(c.Release, o)
			}
			continue
		}
		if match && !deleting && o.GetDeletionTimestamp() == nil && o.GetNamespace() == owner.GetNamespace() {
			c.Adopt = append(c.Adopt, o)
		}
	}
	return c
}

// Patcher applies a strategic merge patch to one object.
type Patcher[T metav1.Object] func(ctx context.Context, obj T, patch []byte) error

// Claim carries out a plan: it adopts and releases with patch, and
// returns the objects the owner holds afterwards. canAdopt runs once,
// before the first adoption: it should re-read the owner from the API
// server, since the cache may not show yet that the owner is being
// deleted and an adopted object would then outlive its collection.
func Claim[T metav1.Object](ctx context.Context, owner metav1.Object, gvk schema.GroupVersionKind, plan Claims[T], patch Patcher[T], canAdopt func(context.Context) error) ([]T, error) {
	held := plan.Owned
	var errs []error
	var recheck error
	checked := false
	for _, o := range plan.Adopt {
		if !checked {
			recheck, checked = canAdopt(ctx), true
		}
		if recheck != nil {
			errs = append(errs, fmt.Errorf("can't adopt %s %s/%s (%s): %w", gvk.Kind, o.GetNamespace(), o.GetName(), o.GetUID(), recheck))
			continue
		}
		if err := patch(ctx, o, AdoptPatch(owner, gvk, o.GetUID())); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		held = append(held, o)
	}
	for _, o := range plan.Release {
		err := patch(ctx, o, ReleasePatch(owner.GetUID(), o.GetUID()))
		// Gone, or replaced by another object of the same name (the UID
		// in the patch no longer matches): nothing to release.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			errs = append(errs, err)
		}
	}
	return held, utilerrors.NewAggregate(errs)
}

// The patches carry the object's UID: if it was replaced by another of
// the same name, the server rejects the change of UID instead of
// adopting or releasing the wrong object. ownerReferences merge by uid,
// and the API server refuses a second controller reference, so an
// adoption cannot steal what another controller adopted meanwhile.

type patchMeta struct {
	Metadata struct {
		OwnerReferences []any     `json:"ownerReferences"`
		UID             types.UID `json:"uid"`
	} `json:"metadata"`
}

// AdoptPatch makes owner the controller of the object with uid.
func AdoptPatch(owner metav1.Object, gvk schema.GroupVersionKind, uid types.UID) []byte {
	var p patchMeta
	p.Metadata.OwnerReferences = []any{metav1.NewControllerRef(owner, gvk)}
	p.Metadata.UID = uid
	b, _ := json.Marshal(p)
	return b
}

// ReleasePatch removes the reference to ownerUID from the object with uid.
func ReleasePatch(ownerUID, uid types.UID) []byte {
	var p patchMeta
	p.Metadata.OwnerReferences = []any{map[string]any{"$patch": "delete", "uid": ownerUID}}
	p.Metadata.UID = uid
	b, _ := json.Marshal(p)
	return b
}
