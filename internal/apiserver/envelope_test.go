package apiserver

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestEnvelopeMatchesUnknown: the hand-built envelope is byte for byte what
// runtime.Unknown's generated marshaller produces, and the raw slice inside
// it is the object's message.
func TestEnvelopeMatchesUnknown(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}}}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	raw, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Pod"}, Raw: raw}
	want, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want = append([]byte("k8s\x00"), want...)
	got, off := buildEnvelope(pod.GroupVersionKind(), raw)
	if !bytes.Equal(got, want) {
		t.Fatalf("envelope differs from runtime.Unknown's encoding:\n got %x\nwant %x", got, want)
	}
	if !bytes.Equal(got[off:off+len(raw)], raw) {
		t.Fatal("raw offset does not point at the message")
	}
	o := &cacheObject{obj: pod}
	env, _ := o.protoEnvelopeOf()
	msg, _ := o.protoOf()
	if !bytes.Equal(env, want) || !bytes.Equal(msg, raw) {
		t.Fatal("cached encodings differ from the reference")
	}
}
