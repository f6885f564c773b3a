package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Watchers can decode each event in full, as a typed informer does, or
// only its metadata. The server's work is the same either way: it sends
// the whole pod. The difference is the client's CPU, which matters here
// because the benchmark's 1,000 watchers share the machine (and, when the
// server is embedded, the process) with the server they measure: decoding
// ten million pods costs more CPU than serving them.
const (
	DecodeFull     = "full"
	DecodeMetadata = "metadata"
)

// metadataSerializer is client-go's protobuf serializer with the object
// decoder swapped for metadataDecoder. Framing, the WatchEvent envelope,
// errors and the StreamWatcher are all client-go's own.
type metadataSerializer struct {
	runtime.NegotiatedSerializer
}

func (s metadataSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range s.NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType == mediaProtobuf {
			info.Serializer = metadataDecoder{full: info.Serializer}
			out = append(out, info)
		}
	}
	return out
}

func (s metadataSerializer) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	if _, ok := d.(metadataDecoder); ok {
		return d
	}
	return s.NegotiatedSerializer.DecoderToVersion(d, gv)
}

// metadataDecoder decodes a protobuf-encoded object's metadata into a
// PartialObjectMetadata, skipping the rest of the message. It relies on
// what every built-in kind shares: the message is wrapped in the "k8s\0"
// runtime.Unknown envelope, and field 1 of the object is its ObjectMeta.
// Anything else (a Status in an ERROR event) goes to the full decoder.
type metadataDecoder struct {
	full runtime.Serializer
}

var protoMagic = []byte("k8s\x00")

func (d metadataDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	typeMeta, raw, err := splitUnknown(data)
	if err != nil {
		return nil, nil, err
	}
	if typeMeta.Kind == "Status" {
		return d.full.Decode(data, defaults, into)
	}
	meta, err := firstBytesField(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", typeMeta.Kind, err)
	}
	out := &metav1.PartialObjectMetadata{TypeMeta: typeMeta}
	if err := out.ObjectMeta.Unmarshal(meta); err != nil {
		return nil, nil, err
	}
	gvk := typeMeta.GroupVersionKind()
	return out, &gvk, nil
}

func (d metadataDecoder) Encode(runtime.Object, io.Writer) error {
	return errors.New("metadataDecoder only decodes")
}

func (d metadataDecoder) Identifier() runtime.Identifier { return "rudder-bench-metadata" }

// splitUnknown reads the envelope: TypeMeta (field 1: apiVersion 1, kind 2)
// and the raw object (field 2), without copying the object.
func splitUnknown(data []byte) (metav1.TypeMeta, []byte, error) {
	var tm metav1.TypeMeta
	if !bytes.HasPrefix(data, protoMagic) {
		return tm, nil, errors.New("not a Kubernetes protobuf message")
	}
	var raw []byte
	err := eachBytesField(data[len(protoMagic):], func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return eachBytesField(v, func(num protowire.Number, s []byte) error {
				switch num {
				case 1:
					tm.APIVersion = string(s)
				case 2:
					tm.Kind = string(s)
				}
				return nil
			})
		case 2:
			raw = v
		}
		return nil
	})
	return tm, raw, err
}

// firstBytesField returns field 1 of a message, which must be bytes.
func firstBytesField(msg []byte) ([]byte, error) {
	var out []byte
	err := eachBytesField(msg, func(num protowire.Number, v []byte) error {
		if num == 1 && out == nil {
			out = v
		}
		return nil
	})
	if err == nil && out == nil {
		return nil, errors.New("no metadata field")
	}
	return out, err
}

// eachBytesField calls f for every length-delimited field of msg and skips
// the others.
func eachBytesField(msg []byte, f func(protowire.Number, []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return protowire.ParseError(n)
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if err := f(num, v); err != nil {
			return err
		}
		msg = msg[n:]
	}
	return nil
}
