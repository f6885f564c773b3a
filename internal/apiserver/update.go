package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/storage"
)

// allowCreateOnUpdate lists the resources a PUT may create, as upstream's
// strategies allow (leader election and event recorders rely on it).
var allowCreateOnUpdate = map[string]bool{
	"leases": true, "endpoints": true, "events": true,
	"roles": true, "rolebindings": true, "clusterroles": true, "clusterrolebindings": true,
}

// mutation computes a new object from the current one (a copy the
// function may modify). preconditioned reports that the result's
// resourceVersion was chosen by the client: a mismatch is then a 409, not a
// reason to retry.
type mutation func(cur runtime.Object) (next runtime.Object, preconditioned bool, err error)

// updateRequest is one update through the pipeline.
type updateRequest struct {
	namespace, name string
	subresource     string // "", "status"; others map onto one of these
	user            *auth.User
	dryRun          bool
	mutate          mutation
	// create builds the object to create when none exists, for the
	// resources that allow create-on-update; nil otherwise.
	create func() (runtime.Object, error)
	// forceCreate lets create run for any resource: a server-side apply
	// creates what it names.
	forceCreate bool
	// track means managedFields record the write: manager (possibly
	// empty, as upstream records a client that names nobody) becomes the
	// manager of what the write changed (an Update entry).
	track   bool
	manager string
	// managedSubresource is the subresource managedFields record when it
	// is not subresource: a /scale write goes through the main resource's
	// strategy but is recorded as "scale".
	managedSubresource string
	// applied means the mutation is a server-side apply, which records its
	// own managedFields (an Apply entry).
	applied bool
	// replaces means the mutation ignores the current object (a PUT
	// replaces it): it is given nil instead of a copy made for nothing.
	replaces bool
	// admitted means the caller ran admission on the request's own object
	// (a Binding is admitted as a create of pods/binding, as upstream
	// does), so the update of the object it changes is not admitted again.
	admitted bool
}

// maxUpdateRetries bounds the retries of an unconditional update that
// keeps losing compare-and-swap races.
const maxUpdateRetries = 16

// guaranteedUpdate applies a mutation with compare-and-swap, retrying on
// conflicts unless the client pinned a resourceVersion. It returns the
// stored object and whether it was created.
func (h *resourceHandler) guaranteedUpdate(ctx context.Context, req updateRequest) (runtime.Object, bool, error) {
	key := h.key(req.namespace, req.name)
	var (
		cur       runtime.Object
		rev       int64
		fromCache bool
	)
	// The watch cache usually holds the object already, which saves an etcd
	// read per update: the compare-and-swap makes a stale copy harmless,
	// and a copy from the cache is never trusted to refuse a client (409)
	// before etcd confirms it. The copy is private: strategies modify it.
	if o := h.cache.get(key); o != nil {
		cur, rev, fromCache = o.obj.DeepCopyObject(), o.rev, true
	}
	for attempt := 0; ; attempt++ {
		if cur == nil {
			kv, err := h.s.store.Get(ctx, key)
			if errors.Is(err, storage.ErrNotFound) && req.create != nil && (req.forceCreate || allowCreateOnUpdate[h.res.Resource]) && req.subresource == "" {
				obj, err := req.create()
				if err != nil {
					return nil, false, err
				}
				created, err := h.createTracked(ctx, obj, createRequest{user: req.user, dryRun: req.dryRun, track: req.track, manager: req.manager, applied: req.applied})
				return created, true, err
			}
			if err != nil {
				return nil, false, toStatusError(err, h.gr, req.name)
			}
			if cur, err = h.decodeKV(kv); err != nil {
				return nil, false, err
			}
			rev, fromCache = kv.ModRevision, false
		}
		var mutable runtime.Object
		if !req.replaces {
			mutable = cur.DeepCopyObject()
		}
		next, preconditioned, err := req.mutate(mutable)
		if err != nil {
			return nil, false, err
		}
		nm := objectMeta(next)
		if rv := nm.GetResourceVersion(); rv != "" && rv != strconv.FormatInt(rev, 10) {
			if fromCache {
				cur = nil // the cache may lag the client: ask etcd
				continue
			}
			return nil, false, apierrors.NewConflict(h.gr, req.name, errors.New(conflictMessage))
		}
		nm.SetResourceVersion(strconv.FormatInt(rev, 10))
		if req.track && !req.applied {
			// Defaults first, as decoding applies them upstream: a field
			// the client left to its default is not a field it removed.
			if h.res.Default != nil && (req.subresource == "" || req.subresource == "status") {
				h.res.Default(next)
			}
			sub := req.subresource
			if req.managedSubresource != "" {
				sub = req.managedSubresource
			}
			next = h.trackUpdate(cur, next, req.manager, sub)
		}
		next, err = h.prepareUpdate(ctx, next, cur, req)
		if err != nil {
			return nil, false, err
		}
		// A status write stores a fresh copy: stamp the version on it.
		nm = objectMeta(next)
		if sameButManagedTimes(next, cur) {
			return cur, false, nil // nothing changed: no write, no new resourceVersion
		}
		if req.dryRun {
			return next, false, nil
		}
		if finished(next) {
			return h.deleteFinal(ctx, key, next, rev)
		}
		undo := func() {}
		if h.hooks != nil {
			if undo, err = h.hooks.beforeWrite(ctx, next, cur); err != nil {
				return nil, false, err
			}
		}
		data, err := h.encodeForStorage(next)
		if err != nil {
			undo()
			return nil, false, err
		}
		newRev, latest, err := h.s.store.Update(ctx, key, data, rev)
		if err != nil {
			undo()
		}
		if errors.Is(err, storage.ErrConflict) && (!preconditioned || fromCache) && attempt < maxUpdateRetries {
			if cur, err = h.decodeKV(latest); err != nil {
				return nil, false, err
			}
			rev, fromCache = latest.ModRevision, false
			continue
		}
		if err != nil {
			return nil, false, toStatusError(err, h.gr, req.name)
		}
		if h.hooks != nil {
			h.hooks.afterWrite(ctx, next, cur)
		}
		nm.SetResourceVersion(strconv.FormatInt(newRev, 10))
		return next, false, nil
	}
}

// prepareUpdate turns what the client sent into what will be stored:
// system metadata kept, the spec/status split enforced, generation bumped,
// defaults, admission and validation applied.
func (h *resourceHandler) prepareUpdate(ctx context.Context, next, cur runtime.Object, req updateRequest) (runtime.Object, error) {
	nm, cm := objectMeta(next), objectMeta(cur)
	if req.subresource == "status" {
		// A status write changes the status and, as upstream's status
		// strategies allow, the annotations (the deployment controller
		// keeps its revision there); nothing else.
		out := cur.DeepCopyObject()
		copyStatus(out, next)
		objectMeta(out).SetAnnotations(nm.GetAnnotations())
		objectMeta(out).SetResourceVersion(nm.GetResourceVersion())
		if req.track {
			objectMeta(out).SetManagedFields(nm.GetManagedFields())
		}
		next, nm = out, objectMeta(out)
	} else {
		if nm.GetUID() == "" {
			nm.SetUID(cm.GetUID())
		}
		nm.SetCreationTimestamp(cm.GetCreationTimestamp())
		nm.SetDeletionTimestamp(cm.GetDeletionTimestamp())
		nm.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
		nm.SetGeneration(cm.GetGeneration())
		nm.SetSelfLink("")
		// binding and finalize are server-built writes of a few fields; only
		// a client's write of the main resource goes through the strategy.
		if req.subresource == "" {
			if h.res.HasStatus {
				copyStatus(next, cur)
			}
			if h.res.Default != nil {
				h.res.Default(next)
			}
			if h.res.PrepareForUpdate != nil {
				h.res.PrepareForUpdate(next, cur)
			}
			if h.res.HasGeneration && specChanged(next, cur) {
				nm.SetGeneration(cm.GetGeneration() + 1)
			}
		}
	}
	next.GetObjectKind().SetGroupVersionKind(h.gvk)
	attrs := &admit.Attributes{Operation: admit.Update, Kind: h.gvk, Resource: h.res.GroupVersionResource(),
		Subresource: req.subresource, Namespace: nm.GetNamespace(), Name: nm.GetName(),
		Object: next, OldObject: cur, User: req.user, DryRun: req.dryRun}
	if req.admitted {
		return next, h.validateUpdate(next, cur, req.subresource)
	}
	if err := admitKeepingManagedFields(next, func() error { return h.s.admission.Admit(ctx, attrs) }); err != nil {
		return nil, err
	}
	if err := h.validateUpdate(next, cur, req.subresource); err != nil {
		return nil, err
	}
	if err := h.s.admission.Validate(ctx, attrs); err != nil {
		return nil, err
	}
	return next, nil
}

func (h *resourceHandler) validateUpdate(next, cur runtime.Object, subresource string) error {
	var errs field.ErrorList
	switch {
	case subresource == "status":
		errs = registry.ValidateMetaUpdate(objectMetaStruct(next), objectMetaStruct(cur))
		if h.res.ValidateStatusUpdate != nil {
			errs = append(errs, h.res.ValidateStatusUpdate(next, cur)...)
		}
	case subresource != "":
		errs = registry.ValidateMetaUpdate(objectMetaStruct(next), objectMetaStruct(cur))
	case h.res.ValidateUpdate != nil:
		errs = h.res.ValidateUpdate(next, cur)
	default:
		errs = registry.ValidateMetaUpdate(objectMetaStruct(next), objectMetaStruct(cur))
		if h.res.Validate != nil {
			errs = append(errs, h.res.Validate(next)...)
		}
	}
	return h.invalid(next, errs)
}

// finished reports whether an object marked for deletion has nothing left
// to wait for: no finalizers and no grace period running.
func finished(obj runtime.Object) bool {
	m := objectMeta(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 || namespacePending(obj) {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// deleteFinal removes an object whose deletion has completed.
func (h *resourceHandler) deleteFinal(ctx context.Context, key string, obj runtime.Object, rev int64) (runtime.Object, bool, error) {
	delRev, _, err := h.s.store.Delete(ctx, key, rev)
	if err != nil {
		return nil, false, toStatusError(err, h.gr, objectMeta(obj).GetName())
	}
	if h.hooks != nil {
		h.hooks.afterWrite(ctx, nil, obj)
	}
	objectMeta(obj).SetResourceVersion(strconv.FormatInt(delRev, 10))
	return obj, false, nil
}

func (h *resourceHandler) update(w http.ResponseWriter, r *http.Request, namespace, name, subresource string) {
	opts, err := parseWriteOptions(r, "UpdateOptions", "")
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	obj, _, err := h.readObject(w, r, h.kindRef())
	if err == nil {
		if m := objectMeta(obj); m.GetName() != name {
			err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
		} else {
			err = h.placeInNamespace(obj, namespace)
		}
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	rv := objectMeta(obj).GetResourceVersion()
	req := updateRequest{namespace: namespace, name: name, subresource: subresource, user: requestUser(r), dryRun: opts.dryRun,
		track: true, manager: opts.manager, replaces: true,
		mutate: func(runtime.Object) (runtime.Object, bool, error) {
			return obj.DeepCopyObject(), rv != "", nil
		},
		create: func() (runtime.Object, error) { return obj.DeepCopyObject(), nil },
	}
	out, created, err := h.guaranteedUpdate(r.Context(), req)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	h.reply(w, r, code, out)
}

// fieldErrs is a one-error list for a field that has an invalid value.
func fieldErrs(path string, value interface{}, msg string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, msg)}
}
