package apiserver

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/rudder-dev/rudder/internal/storage"
)

// bookmarkInterval is how often a watch that allows bookmarks is told the
// current resourceVersion, so a client restarting it need not replay (or
// miss) history.
const bookmarkInterval = time.Minute

// initialEventsEndAnnotation marks the bookmark that ends the initial
// events of a sendInitialEvents watch (a WatchList).
const initialEventsEndAnnotation = "k8s.io/initial-events-end"

var watchersGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "apiserver_registered_watchers",
	Help: "Number of watchers currently open, by resource.",
}, []string{"group", "resource"})

// watcher writes one watch stream. It runs on the request's goroutine.
type watcher struct {
	h        *resourceHandler
	w        *bufio.Writer
	flusher  http.Flusher
	t        target
	match    func(*cacheObject) bool
	include  string // includeObject, for tables
	bookmark bool
	// headerSent is set once a table watch sent its column definitions.
	headerSent bool
	lastRev    int64
	frame      []byte
}

func (h *resourceHandler) watch(w http.ResponseWriter, r *http.Request, namespace, name string) {
	t, ok := negotiate(r, true)
	if !ok {
		h.s.writeError(w, r, notAcceptable())
		return
	}
	if t.media == mediaYAML {
		// YAML has no stream framing: upstream negotiates watches among
		// the stream serializers only and refuses YAML with a 406.
		h.s.writeError(w, r, notAcceptableStream())
		return
	}
	opts, err := parseListOptions(r.URL.Query(), true)
	if err == nil {
		err = h.checkFieldSelector(opts)
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if name != "" {
		// A watch of one object is a watch with metadata.name selected.
		opts.fields = andName(opts.fields, name)
	}
	ctx := r.Context()
	timeout := time.Duration(opts.timeoutSeconds) * time.Second
	if timeout == 0 {
		// Upstream spreads watch lifetimes over [30m, 60m) so reconnections
		// of many clients do not come at once.
		timeout = 30*time.Minute + time.Duration(rand.Int64N(int64(30*time.Minute)))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	initial := opts.resourceVersion == "" || opts.resourceVersion == "0"
	if opts.sendInitialEvents != nil {
		initial = *opts.sendInitialEvents
	}
	fromRev := opts.rv
	switch {
	case opts.sendInitialEvents != nil && *opts.sendInitialEvents:
		// WatchList: the initial state is consistent (as fresh as etcd now)
		// unless a minimum resourceVersion was given.
		if fromRev == 0 && opts.resourceVersion == "" {
			if _, err := h.cache.freshRevision(ctx); err != nil {
				h.writeNotFresh(w, r, err)
				return
			}
		} else if fromRev > 0 {
			if err := h.cache.waitFresh(ctx, fromRev, freshTimeout); err != nil {
				h.s.writeError(w, r, tooLargeRV(fromRev, h.cache.revision()))
				return
			}
		}
		fromRev = 0
	case fromRev > 0:
		if err := h.cache.waitFresh(ctx, fromRev, freshTimeout); errors.Is(err, errNotFresh) {
			h.s.writeError(w, r, tooLargeRV(fromRev, h.cache.revision()))
			return
		} else if err != nil {
			return
		}
	case opts.resourceVersion == "":
		// Unset means "from the most recent version", which upstream reads
		// consistently: the start must include every write acknowledged
		// before the watch, so the cache first catches up with etcd.
		if _, err := h.cache.freshRevision(ctx); err != nil {
			h.writeNotFresh(w, r, err)
			return
		}
	default:
		if err := h.cache.waitFresh(ctx, 0, freshTimeout); err != nil {
			return
		}
	}
	match := matcher(opts)
	if namespace != "" {
		// The ring holds every namespace's events: a namespaced watch
		// sees only keys under its namespace.
		prefix, inner := h.prefix(namespace), match
		match = func(o *cacheObject) bool {
			return strings.HasPrefix(o.key, prefix) && (inner == nil || inner(o))
		}
	}
	start, err := h.cache.startWatch(h.prefix(namespace), fromRev, initial)
	if errors.Is(err, storage.ErrCompacted) {
		// Upstream answers a too-old watch with a 200 and one ERROR event.
		se := toStatusError(err, h.gr, "")
		h.startStream(w, t)
		ww := h.newWatcher(w, t, match, opts, r)
		ww.writeStatus(statusFor(se))
		ww.w.Flush()
		return
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}

	watchersGauge.WithLabelValues(h.res.Group, h.res.Resource).Inc()
	defer watchersGauge.WithLabelValues(h.res.Group, h.res.Resource).Dec()
	h.startStream(w, t)
	ww := h.newWatcher(w, t, match, opts, r)
	ww.lastRev = start.rev
	for _, o := range start.initial {
		if match == nil || match(o) {
			if err := ww.write(watch.Added, o, nil); err != nil {
				return
			}
		}
	}
	if opts.sendInitialEvents != nil && *opts.sendInitialEvents {
		if err := ww.writeBookmark(start.rev, true); err != nil {
			return
		}
	}
	if err := ww.flush(); err != nil {
		return
	}
	ww.loop(ctx, start.seq, start.generation)
}

func notAcceptableStream() error {
	return apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "", "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch", 0, false)
}

// writeNotFresh answers a watch whose consistent start could not be
// reached: 504 when the cache lagged etcd too long (the client retries),
// nothing when the client went away.
func (h *resourceHandler) writeNotFresh(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	if errors.Is(err, errNotFresh) {
		err = apierrors.NewTimeoutError("the watch cache did not catch up with etcd in time", 1)
	}
	h.s.writeError(w, r, toStatusError(err, h.gr, ""))
}

func (h *resourceHandler) startStream(w http.ResponseWriter, t target) {
	ct := mediaJSON
	if t.media == mediaProtobuf {
		ct = mediaProtobuf + ";stream=watch"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
}

func (h *resourceHandler) newWatcher(w http.ResponseWriter, t target, match func(*cacheObject) bool, opts *listOptions, r *http.Request) *watcher {
	f, _ := w.(http.Flusher)
	return &watcher{h: h, w: bufio.NewWriterSize(w, 32<<10), flusher: f, t: t, match: match,
		include: r.URL.Query().Get("includeObject"), bookmark: opts.allowBookmarks}
}

// loop follows the cache's event ring until the context ends or the
// watcher falls behind.
func (ww *watcher) loop(ctx context.Context, seq uint64, generation int) {
	var buf []*cacheEvent
	var bookmarks <-chan time.Time
	if ww.bookmark {
		tk := time.NewTicker(bookmarkInterval)
		defer tk.Stop()
		bookmarks = tk.C
	}
	for {
		evs, next, rev, notify, err := ww.h.cache.readEvents(seq, generation, 512, buf)
		if err != nil {
			return // the client re-watches from its last resourceVersion
		}
		buf, seq = evs, next
		for _, ev := range evs {
			if err := ww.dispatch(ev); err != nil {
				return
			}
		}
		if len(evs) > 0 {
			if err := ww.flush(); err != nil {
				return
			}
			continue
		}
		select {
		case <-notify:
		case <-bookmarks:
			if err := ww.writeBookmark(rev, false); err != nil {
				return
			}
			if err := ww.flush(); err != nil {
				return
			}
		case <-ctx.Done():
			// rev, not the cache's revision now: events may have arrived
			// since readEvents, and the bookmark must not claim them.
			if ww.bookmark && ctx.Err() == context.DeadlineExceeded {
				ww.writeBookmark(rev, false)
				ww.flush()
			}
			return
		}
	}
}

// dispatch sends one event as this watcher sees it through its selector:
// an object that starts matching is ADDED, one that stops is DELETED.
func (ww *watcher) dispatch(ev *cacheEvent) error {
	ww.lastRev = ev.rev
	if ww.match == nil {
		return ww.writeEvent(ev)
	}
	cur := ww.match(ev.obj)
	prev := ev.prev != nil && ww.match(ev.prev)
	switch {
	case ev.typ == watch.Deleted:
		if prev {
			return ww.writeEvent(ev)
		}
	case cur && prev:
		return ww.writeEvent(ev)
	case cur && ev.typ == watch.Added:
		return ww.writeEvent(ev)
	case cur:
		return ww.write(watch.Added, ev.obj, nil)
	case prev:
		// The object left the selection: send its last matching state, at
		// the revision of the change.
		gone := ev.prev.obj.DeepCopyObject()
		objectMeta(gone).SetResourceVersion(strconv.FormatInt(ev.rev, 10))
		return ww.write(watch.Deleted, nil, gone)
	}
	return nil
}

// writeEvent sends an event as it happened, from its shared frame when the
// watcher wants plain objects.
func (ww *watcher) writeEvent(ev *cacheEvent) error {
	if ww.t.transform != asObject {
		return ww.write(ev.typ, ev.obj, nil)
	}
	frame, err := ev.frame(ww.t.media, ww.h.s.codecs)
	if err != nil {
		return err
	}
	_, err = ww.w.Write(frame)
	return err
}

// write sends one event for a cached object o, or for a one-off object.
func (ww *watcher) write(typ watch.EventType, o *cacheObject, obj runtime.Object) error {
	if o != nil {
		obj = o.obj
	}
	switch ww.t.transform {
	case asTable:
		tbl, err := ww.h.table([]runtime.Object{obj}, ww.include, ww.t.groupVersion)
		if err != nil {
			return err
		}
		if ww.headerSent {
			tbl.ColumnDefinitions = nil
		}
		ww.headerSent = true
		return ww.writeEncoded(typ, tbl)
	case asPartialMetadata:
		return ww.writeEncoded(typ, partialMetadata(obj, ww.t.groupVersion))
	}
	if o != nil {
		if ww.t.media == mediaProtobuf {
			env, err := o.protoEnvelopeOf()
			if err != nil {
				return err
			}
			return ww.writeProtoFrame(typ, env)
		}
		data, err := o.jsonOf(ww.h.s.codecs)
		if err != nil {
			return err
		}
		return ww.writeJSONFrame(typ, data)
	}
	return ww.writeEncoded(typ, obj)
}

// writeEncoded encodes obj in the stream's media type and writes the frame.
func (ww *watcher) writeEncoded(typ watch.EventType, obj runtime.Object) error {
	if ww.t.media == mediaProtobuf {
		raw, ok := obj.(interface{ Marshal() ([]byte, error) })
		if !ok {
			return errors.New("object has no protobuf form")
		}
		data, err := raw.Marshal()
		if err != nil {
			return err
		}
		return ww.writeProtoFrame(typ, protoEnvelope(obj.GetObjectKind().GroupVersionKind(), data))
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return ww.writeJSONFrame(typ, data)
}

func (ww *watcher) writeJSONFrame(typ watch.EventType, obj []byte) error {
	ww.frame = appendJSONFrame(ww.frame[:0], typ, obj)
	_, err := ww.w.Write(ww.frame)
	return err
}

// writeProtoFrame writes a length-prefixed WatchEvent whose object is the
// already-encoded (enveloped) obj.
func (ww *watcher) writeProtoFrame(typ watch.EventType, obj []byte) error {
	var err error
	if ww.frame, err = appendProtoFrame(ww.frame[:0], typ, obj); err != nil {
		return err
	}
	_, err = ww.w.Write(ww.frame)
	return err
}

// appendJSONFrame appends one JSON watch event: {"type":…,"object":…}.
func appendJSONFrame(dst []byte, typ watch.EventType, obj []byte) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","object":`...)
	dst = append(dst, obj...)
	return append(dst, "}\n"...)
}

// appendProtoFrame appends one protobuf watch event: a 4-byte big-endian
// length, then the WatchEvent message. Stream frames carry no envelope of
// their own (the "raw" protobuf form clients expect in a stream); the
// object inside them does.
func appendProtoFrame(dst []byte, typ watch.EventType, obj []byte) ([]byte, error) {
	ev := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: obj}}
	n := ev.Size()
	start := len(dst)
	dst = slices.Grow(dst, 4+n)[:start+4+n]
	binary.BigEndian.PutUint32(dst[start:start+4], uint32(n))
	if _, err := ev.MarshalToSizedBuffer(dst[start+4:]); err != nil {
		return nil, err
	}
	return dst, nil
}

// frame returns the event's complete stream frame in media, built once and
// written as is by every watcher that sees the event unchanged: the common
// case, where one event goes to many watchers.
func (ev *cacheEvent) frame(media string, cs *codecs) ([]byte, error) {
	if media == mediaProtobuf {
		ev.protoOnce.Do(func() {
			env, err := ev.obj.protoEnvelopeOf()
			if err == nil {
				ev.protoFrame, err = appendProtoFrame(nil, ev.typ, env)
			}
			ev.protoErr = err
		})
		return ev.protoFrame, ev.protoErr
	}
	ev.jsonOnce.Do(func() {
		data, err := ev.obj.jsonOf(cs)
		if err == nil {
			ev.jsonFrame = appendJSONFrame(nil, ev.typ, data)
		}
		ev.jsonErr = err
	})
	return ev.jsonFrame, ev.jsonErr
}

// writeBookmark sends a BOOKMARK: an empty object of the kind carrying only
// the resourceVersion (and, for the end of a WatchList's initial events,
// the annotation client-go waits for).
func (ww *watcher) writeBookmark(rev int64, initialEnd bool) error {
	if !ww.bookmark {
		return nil
	}
	obj := ww.h.res.New()
	obj.GetObjectKind().SetGroupVersionKind(ww.h.gvk)
	m := objectMeta(obj)
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{initialEventsEndAnnotation: "true"})
	}
	if ww.t.transform != asObject {
		// Tables and metadata watches get the bookmark in their own shape.
		p := partialMetadata(obj, ww.t.groupVersion)
		if ww.t.transform == asTable {
			tbl := &metav1.Table{}
			tbl.GetObjectKind().SetGroupVersionKind(p.GroupVersionKind().GroupVersion().WithKind("Table"))
			tbl.ResourceVersion = strconv.FormatInt(rev, 10)
			return ww.writeEncoded(watch.Bookmark, tbl)
		}
		return ww.writeEncoded(watch.Bookmark, p)
	}
	return ww.writeEncoded(watch.Bookmark, obj)
}

func (ww *watcher) writeStatus(st *metav1.Status) error {
	return ww.writeEncoded(watch.Error, st)
}

func (ww *watcher) flush() error {
	if err := ww.w.Flush(); err != nil {
		return err
	}
	if ww.flusher != nil {
		ww.flusher.Flush()
	}
	return nil
}

// andName narrows a field selector to one object name.
func andName(sel fields.Selector, name string) fields.Selector {
	return fields.AndSelectors(sel, fields.OneTermEqualSelector("metadata.name", name))
}
