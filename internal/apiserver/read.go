package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/storage"
)

// freshTimeout bounds how long a read waits for the watch cache to catch up
// with a requested resourceVersion before answering 504, as upstream does.
const freshTimeout = 3 * time.Second

func (h *resourceHandler) get(w http.ResponseWriter, r *http.Request, namespace, name string) {
	t, ok := negotiate(r, true)
	if !ok {
		h.s.writeError(w, r, notAcceptable())
		return
	}
	ctx := r.Context()
	rvParam := r.URL.Query().Get("resourceVersion")
	var minRev int64
	switch rvParam {
	case "", "0":
	default:
		rv, err := strconv.ParseInt(rvParam, 10, 64)
		if err != nil || rv < 0 {
			h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", rvParam)))
			return
		}
		minRev = rv
	}
	// Served from the cache once it is known to be fresh enough: for ""
	// that means as fresh as etcd is now (one cheap revision read), for N
	// at least N, for "0" anything. A "" read the cache cannot answer yet
	// (it lags etcd during a write storm) reads etcd at once, as upstream
	// serves every such GET: waiting for the cache cost seconds there.
	var err error
	switch {
	case rvParam == "":
		var fresh bool
		if fresh, err = h.cache.freshNow(ctx); err == nil && !fresh {
			err = errNotFresh
		}
	case minRev > 0:
		err = h.cache.waitFresh(ctx, minRev, freshTimeout)
		if errors.Is(err, errNotFresh) {
			h.s.writeError(w, r, tooLargeRV(minRev, h.cache.revision()))
			return
		}
	default:
		err = h.cache.waitFresh(ctx, 0, freshTimeout)
	}
	if err == nil {
		o := h.cache.get(h.key(namespace, name))
		if o == nil {
			h.s.writeError(w, r, apierrors.NewNotFound(h.gr, name))
			return
		}
		h.writeCached(w, r, t, o)
		return
	}
	if ctx.Err() != nil {
		return
	}
	obj, _, err := h.getStored(ctx, namespace, name)
	if err != nil {
		h.s.writeError(w, r, toStatusError(err, h.gr, name))
		return
	}
	h.s.writeObject(w, r, t, http.StatusOK, h, obj)
}

// matcher returns the predicate of a list or watch: the namespace is
// already in the key prefix, labels and fields are checked here.
func matcher(opts *listOptions) func(*cacheObject) bool {
	if opts.labels.Empty() && opts.fields.Empty() {
		return nil
	}
	return func(o *cacheObject) bool {
		return opts.labels.Matches(labels.Set(o.meta.GetLabels())) && opts.fields.Matches(o.fields)
	}
}

// checkFieldSelector rejects selectors on fields the resource does not
// index, as upstream does, with its message.
func (h *resourceHandler) checkFieldSelector(opts *listOptions) error {
	if opts.fields.Empty() {
		return nil
	}
	supported := objectFields(h.res, h.res.New(), objectMeta(h.res.New()))
	for _, req := range opts.fields.Requirements() {
		if _, ok := supported[req.Field]; !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return nil
}

func (h *resourceHandler) list(w http.ResponseWriter, r *http.Request, namespace string) {
	t, ok := negotiate(r, true)
	if !ok {
		h.s.writeError(w, r, notAcceptable())
		return
	}
	opts, err := parseListOptions(r.URL.Query(), false)
	if err == nil {
		err = h.checkFieldSelector(opts)
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	prefix := h.prefix(namespace)
	match := matcher(opts)

	switch {
	case opts.continueToken != "":
		start, rev, err := decodeContinue(opts.continueToken, prefix)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		if rev < 0 {
			rev = 0 // an inconsistent continuation: read the latest
		}
		h.listStored(w, r, t, prefix, start, rev, opts.limit, match, true)
		return
	case opts.rvMatch == metav1.ResourceVersionMatchExact:
		h.listStored(w, r, t, prefix, "", opts.rv, opts.limit, match, false)
		return
	case opts.limit > 0 && opts.resourceVersion != "0":
		// Pages are read from etcd, pinned to the revision of the first.
		h.listStored(w, r, t, prefix, "", opts.rv, opts.limit, match, false)
		return
	}

	switch {
	case opts.resourceVersion == "":
		_, err = h.cache.freshRevision(ctx)
	case opts.rv > 0:
		if err = h.cache.waitFresh(ctx, opts.rv, freshTimeout); errors.Is(err, errNotFresh) {
			h.s.writeError(w, r, tooLargeRV(opts.rv, h.cache.revision()))
			return
		}
	default:
		err = h.cache.waitFresh(ctx, 0, freshTimeout)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		// The cache could not catch up: answer from etcd, as consistent.
		h.listStored(w, r, t, prefix, "", 0, 0, match, false)
		return
	}
	items, rev := h.cache.list(prefix, match)
	h.writeList(w, r, t, items, metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)})
}

// listStored reads a list, or one page of it, from etcd: pages fill up to
// limit matching objects, reading further when selectors filter some out.
func (h *resourceHandler) listStored(w http.ResponseWriter, r *http.Request, t target, prefix, start string, rev, limit int64, match func(*cacheObject) bool, continuing bool) {
	ctx := r.Context()
	items, listRev, next, remaining, err := h.readPages(ctx, prefix, start, rev, limit, match)
	if err != nil {
		if errors.Is(err, storage.ErrCompacted) {
			if continuing {
				h.s.writeError(w, r, expiredContinue(prefix, start))
			} else {
				h.s.writeError(w, r, apierrors.NewResourceExpired(fmt.Sprintf("The resourceVersion for the provided list is too old.")))
			}
			return
		}
		if errors.Is(err, storage.ErrFuture) {
			// As upstream: name the store's revision, or 0 when even
			// that read fails.
			current, _ := h.s.store.CurrentRevision(ctx)
			h.s.writeError(w, r, tooLargeRV(rev, current))
			return
		}
		h.s.writeError(w, r, toStatusError(err, h.gr, ""))
		return
	}
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(listRev, 10)}
	if next != "" {
		lm.Continue = encodeContinue(listRev, strings.TrimPrefix(next, prefix))
		if match == nil {
			// Unfiltered, the one page read holds exactly limit objects
			// and etcd counted the rest of the range. Filtered, the count
			// would include objects the selector drops, so upstream
			// leaves it unset, and so do we.
			lm.RemainingItemCount = &remaining
		}
	}
	h.writeList(w, r, t, items, lm)
}

// maxPageRead is the most keys one etcd read of a filtered list asks for,
// as upstream's.
const maxPageRead = 10000

// readPages reads pages of limit keys until limit objects match. When a
// selector filters a page short, the next read asks for twice as many
// keys (up to maxPageRead), as upstream does: a selector that matches
// little must not cost one etcd round trip per object. remaining is how
// many keys of the range lie after the page, as etcd counted them.
func (h *resourceHandler) readPages(ctx context.Context, prefix, start string, rev, limit int64, match func(*cacheObject) bool) (items []*cacheObject, listRev int64, next string, remaining int64, err error) {
	pageSize := limit
	for {
		page, err := h.s.store.List(ctx, prefix, start, rev, pageSize)
		if err != nil {
			return nil, 0, "", 0, err
		}
		rev = page.Revision
		for i, kv := range page.KVs {
			obj, err := h.decodeKV(kv)
			if err != nil {
				return nil, 0, "", 0, err
			}
			o := &cacheObject{key: kv.Key, obj: obj, meta: objectMeta(obj), rev: kv.ModRevision}
			o.fields = objectFields(h.res, obj, o.meta)
			if match == nil || match(o) {
				items = append(items, o)
			}
			if limit > 0 && int64(len(items)) == limit {
				if i < len(page.KVs)-1 || page.More {
					return items, rev, kv.Key + "\x00", page.Count - int64(i+1), nil
				}
				return items, rev, "", 0, nil
			}
		}
		if limit == 0 || !page.More || len(page.KVs) == 0 {
			return items, rev, "", 0, nil
		}
		start = page.KVs[len(page.KVs)-1].Key + "\x00"
		pageSize = min(2*pageSize, max(limit, maxPageRead))
	}
}

// expiredContinue is upstream's 410 for a continue token whose revision was
// compacted, carrying a token that resumes at the latest revision.
func expiredContinue(prefix, start string) error {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
	err.ErrStatus.ListMeta.Continue = encodeContinue(-1, strings.TrimPrefix(start, prefix))
	return err
}

// tooLargeRV is upstream's 504 for a resourceVersion the server has not
// reached yet.
func tooLargeRV(requested, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

func notAcceptable() error {
	return apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "", "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf", 0, false)
}
