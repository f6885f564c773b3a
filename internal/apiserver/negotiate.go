package apiserver

import (
	"mime"
	"net/http"
	"strings"

	"github.com/munnerz/goautoneg"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Media types the server reads and writes.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// transform is the shape a client asked the response to take: the object
// itself, a Table, or only metadata.
type transform int

const (
	asObject transform = iota
	asTable
	asPartialMetadata
)

// target is the negotiated output: encoding and shape.
type target struct {
	media     string // one of the media* constants
	transform transform
	// groupVersion of the Table/PartialObjectMetadata asked for (meta.k8s.io/v1 or v1beta1).
	groupVersion schema.GroupVersion
}

// codecs holds the serializers for every type the server speaks.
type codecs struct {
	scheme      *runtime.Scheme
	json        *json.Serializer
	jsonStrict  *json.Serializer
	jsonPretty  *json.Serializer
	yaml        *json.Serializer
	yamlStrict  *json.Serializer
	proto       *protobuf.Serializer
	protoStream *protobuf.RawSerializer
}

func newCodecs() *codecs {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // the static scheme is broken: a programming error
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiregistrationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	if err := metav1beta1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	// Clients send DeleteOptions as meta.k8s.io/v1 as well as v1.
	s.AddKnownTypes(metav1.SchemeGroupVersion, &metav1.DeleteOptions{})
	return &codecs{
		scheme:     s,
		json:       json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{}),
		jsonStrict: json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Strict: true}),
		jsonPretty: json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Pretty: true}),
		yaml:       json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true}),
		yamlStrict: json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{Yaml: true, Strict: true}),
		proto:      protobuf.NewSerializer(s, s),
	}
}

// negotiate picks the response encoding from the Accept header, upstream
// style: the first acceptable entry wins, "as=Table" and
// "as=PartialObjectMetadata(List)" select a shape, and an Accept that names
// nothing we serve is a 406.
func negotiate(r *http.Request, allowTransform bool) (target, bool) {
	return negotiateShapes(r, allowTransform, allowTransform)
}

// negotiate is the negotiation of one resource's responses: a resource
// without a table form (the reviews, which upstream serves with no
// TableConvertor) skips "as=Table" entries, so an Accept asking only for
// a Table is a 406, as upstream.
func (h *resourceHandler) negotiate(r *http.Request) (target, bool) {
	return negotiateShapes(r, !h.res.Virtual, true)
}

// negotiateShapes is negotiate with the Table and metadata-only shapes
// allowed one by one.
func negotiateShapes(r *http.Request, tables, metadata bool) (target, bool) {
	header := r.Header.Get("Accept")
	if header == "" {
		return target{media: mediaJSON}, true
	}
	for _, a := range goautoneg.ParseAccept(header) {
		if a.Q == 0 {
			continue
		}
		media := a.Type + "/" + a.SubType
		switch media {
		case mediaJSON, mediaYAML, mediaProtobuf:
		case "*/*", "application/*":
			media = mediaJSON
		default:
			continue
		}
		t := target{media: media}
		if as := a.Params["as"]; as != "" {
			if !tables && !metadata {
				continue
			}
			gv := schema.GroupVersion{Group: a.Params["g"], Version: a.Params["v"]}
			if gv.Group != metav1.GroupName || (gv.Version != "v1" && gv.Version != "v1beta1") {
				continue
			}
			t.groupVersion = gv
			switch as {
			case "Table":
				if media == mediaProtobuf || !tables {
					continue // Table has no protobuf form
				}
				t.transform = asTable
			case "PartialObjectMetadata", "PartialObjectMetadataList":
				if !metadata {
					continue
				}
				t.transform = asPartialMetadata
			default:
				continue
			}
		}
		return t, true
	}
	return target{}, false
}

// contentType returns the media type of a request body, without parameters.
func contentType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return mediaJSON
	}
	media, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.TrimSpace(strings.SplitN(ct, ";", 2)[0])
	}
	return media
}

// decoderFor returns the decoder of a body media type, strict when the
// client asked for strict field validation, or nil when the media type is
// not one we read.
func (c *codecs) decoderFor(media string, strict bool) runtime.Decoder {
	switch media {
	case mediaJSON:
		if strict {
			return c.jsonStrict
		}
		return c.json
	case mediaYAML, "application/x-yaml", "text/yaml":
		if strict {
			return c.yamlStrict
		}
		return c.yaml
	case mediaProtobuf:
		return c.proto
	}
	return nil
}

// encoderFor returns the encoder of a negotiated media type.
func (c *codecs) encoderFor(media string, pretty bool) runtime.Encoder {
	switch media {
	case mediaYAML:
		return c.yaml
	case mediaProtobuf:
		return c.proto
	}
	if pretty {
		return c.jsonPretty
	}
	return c.json
}
