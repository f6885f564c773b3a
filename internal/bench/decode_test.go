package bench

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// encodedPod is a benchmark pod as the server sends it in a watch event:
// protobuf in the "k8s\0" envelope.
func encodedPod(t testing.TB) []byte {
	t.Helper()
	pod := podFactory{seed: 1, namespace: "ns"}.pod("p", 7)
	pod.ResourceVersion = "42"
	pod.Annotations[annSeq] = "7"
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(pod, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMetadataDecoder(t *testing.T) {
	full := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	d := metadataDecoder{full: full}

	t.Run("pod", func(t *testing.T) {
		obj, gvk, err := d.Decode(encodedPod(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			t.Fatalf("got %T", obj)
		}
		if gvk.Kind != "Pod" || m.Name != "p-000007" || m.Namespace != "ns" || m.ResourceVersion != "42" || m.Annotations[annSeq] != "7" || m.Labels[labelGroup] != "g07" {
			t.Fatalf("decoded %v %+v", gvk, m.ObjectMeta)
		}
	})
	t.Run("status goes to the full decoder", func(t *testing.T) {
		st := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
		st.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Status"))
		var buf bytes.Buffer
		if err := full.Encode(st, &buf); err != nil {
			t.Fatal(err)
		}
		obj, _, err := d.Decode(buf.Bytes(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := obj.(*metav1.Status); !ok || got.Code != 410 {
			t.Fatalf("got %#v", obj)
		}
	})
	t.Run("not protobuf", func(t *testing.T) {
		if _, _, err := d.Decode([]byte(`{"kind":"Pod"}`), nil, nil); err == nil {
			t.Fatal("decoded JSON")
		}
	})
}

// The client's share of a watch delivery: what each of the benchmark's
// watchers spends per event, in the same process as the server.
func BenchmarkDecodePod(b *testing.B) {
	data := encodedPod(b)
	b.Run("full", func(b *testing.B) {
		dec := scheme.Codecs.UniversalDeserializer()
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := runtime.Decode(dec, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("metadata", func(b *testing.B) {
		dec := metadataDecoder{full: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)}
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, _, err := dec.Decode(data, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
