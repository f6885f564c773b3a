package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/storage"
)

// resourceHandler serves the REST verbs of one resource.
type resourceHandler struct {
	s     *Server
	res   *registry.Resource
	gvk   schema.GroupVersionKind
	gr    schema.GroupResource
	cache *watchCache
	// hooks, when set, take part in writes (service IP allocation).
	hooks *writeHooks
}

func (h *resourceHandler) key(namespace, name string) string {
	if !h.res.Namespaced {
		namespace = ""
	}
	return storage.Key(h.res.Group, h.res.Resource, namespace, name)
}

// prefix is the key prefix of one namespace, or of the whole resource.
func (h *resourceHandler) prefix(namespace string) string {
	if !h.res.Namespaced {
		namespace = ""
	}
	return storage.Prefix(h.res.Group, h.res.Resource, namespace)
}

// decodeKV turns a stored value into an object with its resourceVersion.
func (h *resourceHandler) decodeKV(kv *storage.KV) (runtime.Object, error) {
	obj := h.res.New()
	if err := h.s.codec.Decode(kv.Value, obj, h.gvk); err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return obj, nil
}

// encodeForStorage encodes obj without its resourceVersion, which etcd's
// revision supplies on every read.
func (h *resourceHandler) encodeForStorage(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	obj.GetObjectKind().SetGroupVersionKind(h.gvk)
	data, err := h.s.codec.Encode(obj)
	m.SetResourceVersion(rv)
	return data, err
}

// getStored reads the object at key from etcd.
func (h *resourceHandler) getStored(ctx context.Context, namespace, name string) (runtime.Object, int64, error) {
	kv, err := h.s.store.Get(ctx, h.key(namespace, name))
	if err != nil {
		return nil, 0, toStatusError(err, h.gr, name)
	}
	obj, err := h.decodeKV(kv)
	if err != nil {
		return nil, 0, err
	}
	return obj, kv.ModRevision, nil
}

// jsonOf returns the object's JSON, encoded once per cached version.
func (o *cacheObject) jsonOf(cs *codecs) ([]byte, error) {
	o.jsonOnce.Do(func() {
		var buf bytes.Buffer
		if err := cs.json.Encode(o.obj, &buf); err != nil {
			o.encErr = err
			return
		}
		o.json = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	})
	return o.json, o.encErr
}

// protoOf returns the object's protobuf message (no envelope), encoded
// once per cached version.
func (o *cacheObject) protoOf() ([]byte, error) {
	o.protoOnce.Do(func() {
		m, ok := o.obj.(interface{ Marshal() ([]byte, error) })
		if !ok {
			o.encErr = fmt.Errorf("%T has no protobuf encoding", o.obj)
			return
		}
		o.proto, o.encErr = m.Marshal()
	})
	return o.proto, o.encErr
}

// writeCached writes one cached object in the negotiated form, reusing its
// cached encoding when the client wants the object itself.
func (h *resourceHandler) writeCached(w http.ResponseWriter, r *http.Request, t target, o *cacheObject) {
	if t.transform == asObject {
		switch t.media {
		case mediaJSON:
			if data, err := o.jsonOf(h.s.codecs); err == nil && r.URL.Query().Get("pretty") != "true" {
				writeBytes(w, http.StatusOK, mediaJSON, data)
				return
			}
		case mediaProtobuf:
			if raw, err := o.protoOf(); err == nil {
				writeBytes(w, http.StatusOK, mediaProtobuf, protoEnvelope(o.obj.GetObjectKind().GroupVersionKind(), raw))
				return
			}
		}
	}
	h.s.writeObject(w, r, t, http.StatusOK, h, o.obj)
}

func writeBytes(w http.ResponseWriter, code int, media string, data []byte) {
	w.Header().Set("Content-Type", media)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(code)
	w.Write(data)
}

// protoEnvelope wraps a message in the "k8s\0" + runtime.Unknown envelope
// that Kubernetes protobuf clients expect.
func protoEnvelope(gvk schema.GroupVersionKind, raw []byte) []byte {
	unk := runtime.Unknown{
		TypeMeta: runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
		Raw:      raw,
	}
	out := make([]byte, 4+unk.Size())
	copy(out, "k8s\x00")
	unk.MarshalToSizedBuffer(out[4:])
	return out
}

// objectMeta returns the metadata of an object of a registered type.
func objectMeta(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("%T has no ObjectMeta", obj)) // registry types always do
	}
	return m
}
