package storage

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// protoPrefix opens every protobuf value, as in upstream's etcd layout.
var protoPrefix = []byte("k8s\x00")

// Codec turns objects into the bytes stored in etcd and back: Kubernetes
// protobuf (the "k8s\0" envelope) for types that have a protobuf form, JSON
// for the rest (custom resources). It is safe for concurrent use.
type Codec struct {
	proto *protobuf.Serializer
	json  *json.Serializer
}

// NewCodec returns a codec for the types registered in scheme.
func NewCodec(scheme *runtime.Scheme) *Codec {
	return &Codec{
		proto: protobuf.NewSerializer(scheme, scheme),
		json:  json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{}),
	}
}

// Encode writes obj, whose TypeMeta must be set, in its stored form.
func (c *Codec) Encode(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	var err error
	if _, ok := obj.(interface{ Marshal() ([]byte, error) }); ok {
		err = c.proto.Encode(obj, &buf)
	} else {
		err = c.json.Encode(obj, &buf)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", obj.GetObjectKind().GroupVersionKind(), err)
	}
	return buf.Bytes(), nil
}

// Decode reads a stored value into into and sets its kind to gvk (the
// protobuf envelope carries the kind, but the decoded struct does not).
func (c *Codec) Decode(data []byte, into runtime.Object, gvk schema.GroupVersionKind) error {
	var err error
	if bytes.HasPrefix(data, protoPrefix) {
		_, _, err = c.proto.Decode(data, nil, into)
	} else {
		_, _, err = c.json.Decode(data, nil, into)
	}
	if err != nil {
		return fmt.Errorf("decode stored %s: %w", gvk.Kind, err)
	}
	into.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
