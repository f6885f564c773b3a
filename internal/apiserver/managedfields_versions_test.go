package apiserver

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// peerScheme is the field manager's scheme of the resource gvk names,
// with the versions that share its objects, found as versionPeers finds
// them.
func peerScheme(t *testing.T, gvk schema.GroupVersionKind) *resourceScheme {
	t.Helper()
	var self *registry.Resource
	for _, res := range registry.All() {
		if res.GroupVersionKind() == gvk {
			self = res
		}
	}
	if self == nil {
		t.Fatalf("no resource serves %s", gvk)
	}
	s := &Server{handlers: map[schema.GroupVersionResource]*resourceHandler{}}
	for _, res := range registry.All() {
		s.handlers[res.GroupVersionResource()] = &resourceHandler{s: s, res: res, gvk: res.GroupVersionKind(), cache: &watchCache{}}
	}
	h := &resourceHandler{s: s, res: self, gvk: gvk}
	return &resourceScheme{gvk: gvk, res: self, peers: h.versionPeers()}
}

func TestManagedFieldsVersionConversion(t *testing.T) {
	hpaV1 := autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")
	hpaV2 := autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")
	coreEvent := corev1.SchemeGroupVersion.WithKind("Event")
	newEvent := eventsv1.SchemeGroupVersion.WithKind("Event")
	cases := []struct {
		name   string
		scheme schema.GroupVersionKind // the handler's own kind
		in     runtime.Object
		to     schema.GroupVersion
		check  func(t *testing.T, out runtime.Object)
		// notRegistered means the field manager must drop the entry.
		notRegistered bool
		fails         bool
	}{
		{name: "hpa v2 to v1", scheme: hpaV1, to: autoscalingv1.SchemeGroupVersion,
			in: &autoscalingv2.HorizontalPodAutoscaler{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
				ObjectMeta: metav1.ObjectMeta{Name: "h"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 7}},
			check: func(t *testing.T, out runtime.Object) {
				h, ok := out.(*autoscalingv1.HorizontalPodAutoscaler)
				if !ok || h.Spec.MaxReplicas != 7 || h.Name != "h" || h.APIVersion != "autoscaling/v1" {
					t.Errorf("got %#v, want the autoscaling/v1 HPA h with maxReplicas 7", out)
				}
			}},
		{name: "unstructured hpa v1 to v2", scheme: hpaV2, to: autoscalingv2.SchemeGroupVersion,
			in: &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
				"metadata": map[string]interface{}{"name": "h"}, "spec": map[string]interface{}{"maxReplicas": int64(3), "targetCPUUtilizationPercentage": int64(50)}}},
			check: func(t *testing.T, out runtime.Object) {
				h, ok := out.(*autoscalingv2.HorizontalPodAutoscaler)
				if !ok || h.Spec.MaxReplicas != 3 || len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource == nil ||
					*h.Spec.Metrics[0].Resource.Target.AverageUtilization != 50 {
					t.Errorf("got %#v, want the autoscaling/v2 HPA with a 50%% CPU metric", out)
				}
			}},
		{name: "same version is the object itself", scheme: hpaV2, to: autoscalingv2.SchemeGroupVersion,
			in: &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
				"metadata": map[string]interface{}{"name": "h"}, "spec": map[string]interface{}{"maxReplicas": int64(4)}}},
			check: func(t *testing.T, out runtime.Object) {
				if h, ok := out.(*autoscalingv2.HorizontalPodAutoscaler); !ok || h.Spec.MaxReplicas != 4 {
					t.Errorf("got %#v, want the typed autoscaling/v2 HPA", out)
				}
			}},
		{name: "events.k8s.io to core", scheme: coreEvent, to: corev1.SchemeGroupVersion,
			in: &eventsv1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
				ObjectMeta: metav1.ObjectMeta{Name: "e"}, Note: "hello", Reason: "Scaled"},
			check: func(t *testing.T, out runtime.Object) {
				if e, ok := out.(*corev1.Event); !ok || e.Message != "hello" || e.Reason != "Scaled" || e.APIVersion != "v1" {
					t.Errorf("got %#v, want the core Event with message hello", out)
				}
			}},
		{name: "core to events.k8s.io", scheme: newEvent, to: eventsv1.SchemeGroupVersion,
			in: &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
				ObjectMeta: metav1.ObjectMeta{Name: "e"}, Message: "hello"},
			check: func(t *testing.T, out runtime.Object) {
				if e, ok := out.(*eventsv1.Event); !ok || e.Note != "hello" {
					t.Errorf("got %#v, want the events.k8s.io Event with note hello", out)
				}
			}},
		{name: "unserved version", scheme: hpaV1, to: schema.GroupVersion{Group: "autoscaling", Version: "v2beta2"},
			in:            &autoscalingv1.HorizontalPodAutoscaler{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "HorizontalPodAutoscaler"}},
			notRegistered: true},
		{name: "wrong Go type for its version", scheme: hpaV1, to: autoscalingv1.SchemeGroupVersion,
			in:    &autoscalingv1.HorizontalPodAutoscaler{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"}},
			fails: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := peerScheme(t, tc.scheme)
			if sc.peers == nil {
				t.Fatalf("%s has no peer versions", tc.scheme)
			}
			out, err := sc.ConvertToVersion(tc.in, tc.to)
			switch {
			case tc.notRegistered:
				if !runtime.IsNotRegisteredError(err) {
					t.Errorf("err = %v, want not registered", err)
				}
			case tc.fails:
				if err == nil || runtime.IsNotRegisteredError(err) {
					t.Errorf("err = %v, want a conversion error", err)
				}
			case err != nil:
				t.Fatalf("convert: %v", err)
			default:
				tc.check(t, out)
			}
		})
	}
	t.Run("a kind served in one version has no peers", func(t *testing.T) {
		if sc := peerScheme(t, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}); sc.peers != nil {
			t.Errorf("deployments have peers %v", sc.peers)
		}
	})
}
