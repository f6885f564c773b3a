package apiserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// writeObject encodes one object in the negotiated form. h may be nil for
// objects that belong to no resource (Status, discovery).
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, t target, code int, h *resourceHandler, obj runtime.Object) {
	switch t.transform {
	case asTable:
		tbl, err := h.table([]runtime.Object{obj}, r.URL.Query().Get("includeObject"), t.groupVersion)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		obj = tbl
	case asPartialMetadata:
		obj = partialMetadata(obj, t.groupVersion)
	}
	buf := getBuffer()
	defer putBuffer(buf)
	if err := s.codecs.encoderFor(t.media, r.URL.Query().Get("pretty") == "true").Encode(obj, buf); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeBytes(w, code, t.media, buf.Bytes())
}

// buffers are the encoding buffers of responses, reused: an object's
// encoding grows a fresh buffer through several sizes, on every write.
// A ResponseWriter is done with what it was given when Write returns
// (net/http copies it out, the loopback's pipe hands it to the reader),
// so the buffer goes back to the pool once written.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer is the largest buffer kept for reuse: a LIST's
// response may be huge, and is better given back to the heap.
const maxPooledBuffer = 64 << 10

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	buffers.Put(b)
}

// writeList writes a list of cached objects. For the plain object form it
// splices each object's cached encoding into the list instead of encoding
// the list again, which is what makes a LIST of 10,000 pods cheap.
func (h *resourceHandler) writeList(w http.ResponseWriter, r *http.Request, t target, items []*cacheObject, lm metav1.ListMeta) {
	switch t.transform {
	case asTable:
		objs := make([]runtime.Object, len(items))
		for i, o := range items {
			objs[i] = o.obj
		}
		tbl, err := h.table(objs, r.URL.Query().Get("includeObject"), t.groupVersion)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		tbl.ListMeta = lm
		h.s.writeObject(w, r, target{media: t.media}, http.StatusOK, h, tbl)
		return
	case asPartialMetadata:
		list := &metav1.PartialObjectMetadataList{ListMeta: lm, Items: make([]metav1.PartialObjectMetadata, len(items))}
		list.GetObjectKind().SetGroupVersionKind(t.groupVersion.WithKind("PartialObjectMetadataList"))
		for i, o := range items {
			list.Items[i] = *partialMetadata(o.obj, t.groupVersion)
		}
		h.s.writeObject(w, r, target{media: t.media}, http.StatusOK, h, list)
		return
	}
	listGVK := h.gvk.GroupVersion().WithKind(h.gvk.Kind + "List")
	switch t.media {
	case mediaProtobuf:
		data, err := h.protoList(listGVK, items, lm)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		writeBytes(w, http.StatusOK, mediaProtobuf, data)
	case mediaYAML:
		list, err := h.typedList(items, lm)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		h.s.writeObject(w, r, target{media: mediaYAML}, http.StatusOK, h, list)
	default:
		if r.URL.Query().Get("pretty") == "true" {
			list, err := h.typedList(items, lm)
			if err != nil {
				h.s.writeError(w, r, err)
				return
			}
			h.s.writeObject(w, r, target{media: mediaJSON}, http.StatusOK, h, list)
			return
		}
		data, err := h.jsonList(listGVK, items, lm)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		writeBytes(w, http.StatusOK, mediaJSON, data)
	}
}

func (h *resourceHandler) jsonList(gvk schema.GroupVersionKind, items []*cacheObject, lm metav1.ListMeta) ([]byte, error) {
	metaJSON, err := json.Marshal(lm)
	if err != nil {
		return nil, err
	}
	size := 128 + len(metaJSON)
	encoded := make([][]byte, len(items))
	for i, o := range items {
		if encoded[i], err = o.jsonOf(h.s.codecs); err != nil {
			return nil, err
		}
		size += len(encoded[i]) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteString(`{"kind":"`)
	buf.WriteString(gvk.Kind)
	buf.WriteString(`","apiVersion":"`)
	buf.WriteString(gvk.GroupVersion().String())
	buf.WriteString(`","metadata":`)
	buf.Write(metaJSON)
	buf.WriteString(`,"items":[`)
	// Items in a list carry no kind or apiVersion, as upstream's do. The
	// cached encodings start with exactly those two fields (TypeMeta is
	// encoded first), so they are sliced off rather than re-encoded.
	typePrefix := []byte(`{"kind":"` + h.gvk.Kind + `","apiVersion":"` + h.gvk.GroupVersion().String() + `",`)
	for i, e := range encoded {
		if i > 0 {
			buf.WriteByte(',')
		}
		if bytes.HasPrefix(e, typePrefix) {
			buf.WriteByte('{')
			e = e[len(typePrefix):]
		}
		buf.Write(e)
	}
	buf.WriteString("]}\n")
	return buf.Bytes(), nil
}

// protoList assembles a XxxList message by hand: every built-in list is
// "ListMeta metadata = 1; repeated Xxx items = 2", so the cached item
// messages are appended as field 2 without decoding or re-encoding them.
func (h *resourceHandler) protoList(gvk schema.GroupVersionKind, items []*cacheObject, lm metav1.ListMeta) ([]byte, error) {
	metaRaw, err := lm.Marshal()
	if err != nil {
		return nil, err
	}
	raws := make([][]byte, len(items))
	size := len(metaRaw) + 8
	for i, o := range items {
		if raws[i], err = o.protoOf(); err != nil {
			return nil, err
		}
		size += len(raws[i]) + 8
	}
	msg := make([]byte, 0, size)
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendBytes(msg, metaRaw)
	for _, raw := range raws {
		msg = protowire.AppendTag(msg, 2, protowire.BytesType)
		msg = protowire.AppendBytes(msg, raw)
	}
	return protoEnvelope(gvk, msg), nil
}

// typedList builds the list object itself, for the encodings that cannot
// be spliced (YAML, pretty JSON).
func (h *resourceHandler) typedList(items []*cacheObject, lm metav1.ListMeta) (runtime.Object, error) {
	listGVK := h.gvk.GroupVersion().WithKind(h.gvk.Kind + "List")
	var list runtime.Object = &unstructured.UnstructuredList{Object: map[string]interface{}{}} // custom resources
	if h.custom == nil {
		var err error
		if list, err = h.s.codecs.scheme.New(listGVK); err != nil {
			return nil, err
		}
	}
	objs := make([]runtime.Object, len(items))
	for i, o := range items {
		objs[i] = o.obj
	}
	if err := meta.SetList(list, objs); err != nil {
		return nil, err
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(lm.ResourceVersion)
	la.SetContinue(lm.Continue)
	list.GetObjectKind().SetGroupVersionKind(listGVK)
	return list, nil
}

// partialMetadata returns the metadata-only form of an object.
func partialMetadata(obj runtime.Object, gv schema.GroupVersion) *metav1.PartialObjectMetadata {
	if gv.Version == "" {
		gv = metav1.SchemeGroupVersion
	}
	p := &metav1.PartialObjectMetadata{}
	p.GetObjectKind().SetGroupVersionKind(gv.WithKind("PartialObjectMetadata"))
	p.ObjectMeta = *objectMetaStruct(obj)
	return p
}

// table renders objects as the resource's Table. includeObject is the
// client's choice of what each row carries: Metadata (the default), Object
// or None.
func (h *resourceHandler) table(objs []runtime.Object, includeObject string, gv schema.GroupVersion) (*metav1.Table, error) {
	if gv.Version == "" {
		gv = metav1.SchemeGroupVersion
	}
	tbl := &metav1.Table{Rows: make([]metav1.TableRow, 0, len(objs))}
	tbl.GetObjectKind().SetGroupVersionKind(gv.WithKind("Table"))
	cols, row := defaultColumns, defaultRow
	if h.res.Table != nil {
		cols, row = h.res.Table.Columns, h.res.Table.Row
	}
	tbl.ColumnDefinitions = cols
	for _, obj := range objs {
		tr := metav1.TableRow{Cells: row(obj)}
		switch includeObject {
		case "None":
		case "Object":
			raw, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			tr.Object.Raw = raw
		case "", "Metadata":
			raw, err := json.Marshal(partialMetadata(obj, gv))
			if err != nil {
				return nil, err
			}
			tr.Object.Raw = raw
		default:
			return nil, apierrors.NewBadRequest("includeObject must be one of None, Metadata, Object")
		}
		tbl.Rows = append(tbl.Rows, tr)
	}
	return tbl, nil
}

// The table upstream prints for resources without their own columns.
var defaultColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func defaultRow(obj runtime.Object) []interface{} {
	m := objectMeta(obj)
	return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
}

// writeError writes err as a metav1.Status with its HTTP code.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	se := toStatusError(err, schema.GroupResource{}, "")
	st := statusFor(se)
	if st.Code == http.StatusTooManyRequests || st.Code == http.StatusGatewayTimeout {
		if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
		}
	}
	t, ok := negotiate(r, false)
	if !ok {
		t = target{media: mediaJSON}
	}
	var buf bytes.Buffer
	if err := s.codecs.encoderFor(t.media, false).Encode(st, &buf); err != nil {
		t.media = mediaJSON
		buf.Reset()
		json.NewEncoder(&buf).Encode(st)
	}
	writeBytes(w, int(st.Code), t.media, buf.Bytes())
}
