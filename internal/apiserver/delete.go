package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/storage"
)

// deleteOptions reads DeleteOptions from the body (if any) and the query.
func (h *resourceHandler) deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		ref := kindRef{kind: metav1.SchemeGroupVersion.WithKind("DeleteOptions"), newObject: func() runtime.Object { return &metav1.DeleteOptions{} }}
		dec := h.s.codecs.decoderFor(contentType(r), false)
		if dec == nil {
			return nil, unsupportedMediaType()
		}
		obj, _, err := dec.Decode(data, &ref.kind, opts)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding DeleteOptions: %v", err))
		}
		if o, ok := obj.(*metav1.DeleteOptions); ok {
			opts = o
		}
	}
	q := r.URL.Query()
	if s := q.Get("gracePeriodSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds: %q", s))
		}
		opts.GracePeriodSeconds = &n
	}
	if s := q.Get("propagationPolicy"); s != "" {
		p := metav1.DeletionPropagation(s)
		opts.PropagationPolicy = &p
	}
	if s := q.Get("orphanDependents"); s != "" {
		b := isTrue(s)
		opts.OrphanDependents = &b
	}
	if vals := q["dryRun"]; len(vals) > 0 {
		opts.DryRun = vals
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy: Unsupported value: %q: supported values: \"Foreground\", \"Background\", \"Orphan\"", *p))
		}
		if opts.OrphanDependents != nil {
			return nil, apierrors.NewBadRequest("orphanDependents and propagationPolicy cannot be both set")
		}
	}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	// A grace period beyond what a time.Duration holds would wrap the
	// deletion deadline into the past.
	if g := opts.GracePeriodSeconds; g != nil && *g > maxGracePeriodSeconds {
		capped := int64(maxGracePeriodSeconds)
		opts.GracePeriodSeconds = &capped
	}
	for _, v := range opts.DryRun {
		if v != metav1.DryRunAll {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Invalid dry run value: %q, supported values are: [All]", v))
		}
	}
	return opts, nil
}

func (h *resourceHandler) delete(w http.ResponseWriter, r *http.Request, namespace, name string) {
	opts, err := h.deleteOptions(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	out, pending, err := h.deleteObject(r.Context(), namespace, name, opts, requestUser(r))
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	// Upstream answers 202 only to the old orphanDependents=false form of
	// cascading deletion; changing it for other pending deletes would break
	// clients that expect 200.
	code := http.StatusOK
	if pending && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	if !pending && !returnsDeletedObject[h.res.Resource] {
		st := &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{
			Name: name, Group: h.res.Group, Kind: h.res.Resource, UID: objectMeta(out).GetUID()}}
		st.Kind, st.APIVersion = "Status", "v1"
		h.s.writeObject(w, r, target{media: negotiatedMedia(r)}, code, nil, st)
		return
	}
	h.reply(w, r, code, out)
}

// maxGracePeriodSeconds is the longest grace period whose deadline a
// time.Duration can express (about 292 years).
const maxGracePeriodSeconds = math.MaxInt64 / int64(time.Second)

// returnsDeletedObject lists the resources whose immediate delete answers
// with the deleted object, as upstream's storage for them does; the others
// answer with a Status of Success naming what went.
var returnsDeletedObject = map[string]bool{"pods": true, "services": true, "serviceaccounts": true, "namespaces": true}

// deleteObject deletes, or marks for deletion, one object. It returns the
// object as last stored and whether its deletion is still pending
// (finalizers or a grace period).
func (h *resourceHandler) deleteObject(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions, user *auth.User) (runtime.Object, bool, error) {
	key := h.key(namespace, name)
	isDry := len(opts.DryRun) > 0
	kv, err := h.s.store.Get(ctx, key)
	for attempt := 0; ; attempt++ {
		if err != nil {
			return nil, false, toStatusError(err, h.gr, name)
		}
		cur, err := h.decodeKV(kv)
		if err != nil {
			return nil, false, err
		}
		m := objectMeta(cur)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != m.GetUID() {
				return nil, false, apierrors.NewConflict(h.gr, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
				return nil, false, apierrors.NewConflict(h.gr, name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
			}
		}
		attrs := &admit.Attributes{Operation: admit.Delete, Kind: h.gvk, Resource: h.res.GroupVersionResource(),
			Namespace: namespace, Name: name, OldObject: cur, User: user, DryRun: isDry}
		if err := h.s.admission.Validate(ctx, attrs); err != nil {
			return nil, false, err
		}

		next := cur.DeepCopyObject()
		pending := h.markDeleted(next, opts)
		if isDry {
			return next, pending, nil
		}
		if pending {
			if apiequality.Semantic.DeepEqual(next, cur) {
				return cur, true, nil
			}
			data, err := h.encodeForStorage(next)
			if err != nil {
				return nil, false, err
			}
			rev, latest, err := h.s.store.Update(ctx, key, data, kv.ModRevision)
			if errors.Is(err, storage.ErrConflict) && attempt < maxUpdateRetries {
				kv = latest
				continue
			}
			if err != nil {
				return nil, false, toStatusError(err, h.gr, name)
			}
			objectMeta(next).SetResourceVersion(strconv.FormatInt(rev, 10))
			return next, true, nil
		}
		rev, latest, err := h.s.store.Delete(ctx, key, kv.ModRevision)
		if errors.Is(err, storage.ErrConflict) && attempt < maxUpdateRetries {
			kv = latest
			continue
		}
		if err != nil {
			return nil, false, toStatusError(err, h.gr, name)
		}
		if h.hooks != nil {
			h.hooks.afterWrite(ctx, nil, cur)
		}
		objectMeta(cur).SetResourceVersion(strconv.FormatInt(rev, 10))
		return cur, false, nil
	}
}

// markDeleted sets deletionTimestamp, grace period and the garbage
// collector's finalizers on obj, and reports whether the object must stay
// (finalizers or a grace period to wait out) rather than go now.
func (h *resourceHandler) markDeleted(obj runtime.Object, opts *metav1.DeleteOptions) bool {
	m := objectMeta(obj)
	finalizers := m.GetFinalizers()
	policy := propagation(opts)
	if policy == "" && h.gr.Group == "" && h.gr.Resource == "replicationcontrollers" {
		// Upstream's one legacy default: a bare delete of a
		// ReplicationController orphans its pods.
		policy = metav1.DeletePropagationOrphan
	}
	switch policy {
	case metav1.DeletePropagationOrphan:
		finalizers = addString(finalizers, metav1.FinalizerOrphanDependents)
		finalizers = removeString(finalizers, metav1.FinalizerDeleteDependents)
	case metav1.DeletePropagationForeground:
		finalizers = addString(finalizers, metav1.FinalizerDeleteDependents)
		finalizers = removeString(finalizers, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationBackground:
		finalizers = removeString(finalizers, metav1.FinalizerOrphanDependents)
		finalizers = removeString(finalizers, metav1.FinalizerDeleteDependents)
	}
	deleting := m.GetDeletionTimestamp() != nil
	grace := h.gracePeriod(obj, opts)
	if len(finalizers) == 0 && grace == 0 && !namespacePending(obj) {
		return false
	}
	// A later delete may shorten the grace period, never extend it.
	deadline := metav1.NewTime(h.s.now().Add(time.Duration(grace) * time.Second))
	if old := m.GetDeletionTimestamp(); old == nil || deadline.Before(old) {
		m.SetDeletionTimestamp(&deadline)
		m.SetDeletionGracePeriodSeconds(&grace)
	}
	m.SetFinalizers(finalizers)
	if h.res.HasGeneration && !deleting {
		m.SetGeneration(m.GetGeneration() + 1)
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		ns.Status.Phase = corev1.NamespaceTerminating
	}
	return true
}

// gracePeriod returns the seconds an object is given to terminate. Only
// pods have one: their node must confirm the stop, unless they never ran
// on a node or have already finished.
func (h *resourceHandler) gracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	switch o := obj.(type) {
	case *corev1.Pod:
		if o.Spec.NodeName == "" || o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
			return 0
		}
		if opts.GracePeriodSeconds != nil {
			return *opts.GracePeriodSeconds
		}
		if o.DeletionGracePeriodSeconds != nil {
			return *o.DeletionGracePeriodSeconds
		}
		if o.Spec.TerminationGracePeriodSeconds != nil {
			return *o.Spec.TerminationGracePeriodSeconds
		}
		return corev1.DefaultTerminationGracePeriodSeconds
	}
	return 0
}

// namespacePending keeps a namespace with spec finalizers from going: the
// namespace controller removes them (through /finalize) once its content
// is gone.
func namespacePending(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

func propagation(opts *metav1.DeleteOptions) metav1.DeletionPropagation {
	if opts.PropagationPolicy != nil {
		return *opts.PropagationPolicy
	}
	if opts.OrphanDependents != nil {
		if *opts.OrphanDependents {
			return metav1.DeletePropagationOrphan
		}
		return metav1.DeletePropagationBackground
	}
	return ""
}

func addString(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(slices.Clone(list), s)
}

func removeString(list []string, s string) []string {
	i := slices.Index(list, s)
	if i < 0 {
		return list
	}
	return slices.Delete(slices.Clone(list), i, i+1)
}

// deleteCollection deletes every object in the namespace that matches the
// list options, one by one, and returns them.
func (h *resourceHandler) deleteCollection(w http.ResponseWriter, r *http.Request, namespace string) {
	opts, err := h.deleteOptions(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	lopts, err := parseListOptions(r.URL.Query(), false)
	if err == nil {
		err = h.checkFieldSelector(lopts)
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	if _, err := h.cache.freshRevision(ctx); err != nil {
		h.s.writeError(w, r, toStatusError(err, h.gr, ""))
		return
	}
	items, _ := h.cache.list(h.prefix(namespace), matcher(lopts))
	var deleted []*cacheObject
	for _, o := range items {
		out, _, err := h.deleteObject(ctx, o.meta.GetNamespace(), o.meta.GetName(), opts, requestUser(r))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		rev, _ := strconv.ParseInt(objectMeta(out).GetResourceVersion(), 10, 64)
		co, err := h.cache.newCacheObject(o.key, out, rev)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		deleted = append(deleted, co)
	}
	t, ok := negotiate(r, true)
	if !ok {
		t = target{media: mediaJSON}
	}
	h.writeList(w, r, t, deleted, metav1.ListMeta{ResourceVersion: strconv.FormatInt(h.cache.revision(), 10)})
}
