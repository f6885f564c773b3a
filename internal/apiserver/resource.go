package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
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
	// deprecation is the warning every request gets, for deprecated kinds.
	deprecation string
	// review answers a create of a virtual resource (cache is nil then).
	review reviewFunc
	// custom is set for custom resources: what the write path needs of
	// their definition (crd.go).
	custom *crdVersion
	// fields keeps the resource's field managers (managedfields.go),
	// built on first use; its zero value is ready.
	fields fieldManagers
}

func (h *resourceHandler) key(namespace, name string) string {
	if !h.res.Namespaced {
		namespace = ""
	}
	group, resource := storedAs(h.res)
	return storage.Key(group, resource, namespace, name)
}

// prefix is the key prefix of one namespace, or of the whole resource.
func (h *resourceHandler) prefix(namespace string) string {
	if !h.res.Namespaced {
		namespace = ""
	}
	group, resource := storedAs(h.res)
	return storage.Prefix(group, resource, namespace)
}

// storedAs is the group and resource whose keys hold a resource's objects.
func storedAs(res *registry.Resource) (group, resource string) {
	if res.Storage != nil {
		return res.Storage.Group, res.Storage.Resource
	}
	return res.Group, res.Resource
}

// decodeKV turns a stored value into an object with its resourceVersion.
func (h *resourceHandler) decodeKV(kv *storage.KV) (runtime.Object, error) {
	obj, err := decodeStored(h.s.codec, h.res, kv.Value)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
	return obj, nil
}

// decodeStored decodes a stored value in the resource's own shape,
// converting it when the resource is a view of another.
func decodeStored(codec *storage.Codec, res *registry.Resource, data []byte) (runtime.Object, error) {
	if v := res.Storage; v != nil {
		stored := v.New()
		if err := codec.Decode(data, stored, schema.GroupVersionKind{Group: v.Group, Version: v.Version, Kind: v.Kind}); err != nil {
			return nil, err
		}
		return v.FromStorage(stored), nil
	}
	obj := res.New()
	if err := codec.Decode(data, obj, res.GroupVersionKind()); err != nil {
		return nil, err
	}
	return obj, nil
}

// encodeForStorage encodes obj without its resourceVersion, which etcd's
// revision supplies on every read, in the shape it is stored in.
func (h *resourceHandler) encodeForStorage(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	defer m.SetResourceVersion(rv)
	obj.GetObjectKind().SetGroupVersionKind(h.gvk)
	if v := h.res.Storage; v != nil {
		return h.s.codec.Encode(v.ToStorage(obj))
	}
	return h.s.codec.Encode(obj)
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
// once per cached version. Lists splice it in as an item.
func (o *cacheObject) protoOf() ([]byte, error) {
	o.encodeProto()
	return o.protoRaw, o.encErr
}

// protoEnvelopeOf returns the object in its enveloped form, what a GET or
// a watch event carries. It shares its bytes with protoOf.
func (o *cacheObject) protoEnvelopeOf() ([]byte, error) {
	o.encodeProto()
	return o.protoEnv, o.encErr
}

func (o *cacheObject) encodeProto() {
	o.protoOnce.Do(func() {
		m, ok := o.obj.(interface{ Marshal() ([]byte, error) })
		if !ok {
			o.encErr = fmt.Errorf("%T has no protobuf encoding", o.obj)
			return
		}
		raw, err := m.Marshal()
		if err != nil {
			o.encErr = err
			return
		}
		var off int
		o.protoEnv, off = buildEnvelope(o.obj.GetObjectKind().GroupVersionKind(), raw)
		o.protoRaw = o.protoEnv[off : off+len(raw)]
	})
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
			if env, err := o.protoEnvelopeOf(); err == nil {
				writeBytes(w, http.StatusOK, mediaProtobuf, env)
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
	env, _ := buildEnvelope(gvk, raw)
	return env
}

// buildEnvelope writes the envelope field by field (runtime.Unknown:
// typeMeta = 1, raw = 2, contentEncoding = 3, contentType = 4, as its
// generated marshaller orders them) and returns where raw starts in it, so
// one buffer serves both forms of a cached object.
func buildEnvelope(gvk schema.GroupVersionKind, raw []byte) ([]byte, int) {
	tm := runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	tmSize := tm.Size()
	out := make([]byte, 0, 4+tmSize+len(raw)+24)
	out = append(out, "k8s\x00"...)
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(tmSize))
	out = out[:len(out)+tmSize]
	tm.MarshalToSizedBuffer(out[len(out)-tmSize:])
	out = protowire.AppendTag(out, 2, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(len(raw)))
	off := len(out)
	out = append(out, raw...)
	out = protowire.AppendTag(out, 3, protowire.BytesType)
	out = protowire.AppendVarint(out, 0)
	out = protowire.AppendTag(out, 4, protowire.BytesType)
	out = protowire.AppendVarint(out, 0)
	return out, off
}

// objectMeta returns the metadata of an object of a registered type.
func objectMeta(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("%T has no ObjectMeta", obj)) // registry types always do
	}
	return m
}
