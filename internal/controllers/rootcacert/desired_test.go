package rootcacert

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDesired(t *testing.T) {
	const ca = "PEM"
	good := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{DescriptionAnnotation: Description, "team": "x"}},
			Data:       map[string]string{DataKey: ca},
		}
	}
	tests := []struct {
		name    string
		edit    func(*corev1.ConfigMap)
		changed bool
	}{
		{"as published", func(*corev1.ConfigMap) {}, false},
		{"any description is kept", func(cm *corev1.ConfigMap) { cm.Annotations[DescriptionAnnotation] = "mine" }, false},
		{"wrong CA", func(cm *corev1.ConfigMap) { cm.Data[DataKey] = "other" }, true},
		{"extra key", func(cm *corev1.ConfigMap) { cm.Data["x"] = "y" }, true},
		{"no data", func(cm *corev1.ConfigMap) { cm.Data = nil }, true},
		{"no description", func(cm *corev1.ConfigMap) { delete(cm.Annotations, DescriptionAnnotation) }, true},
		{"no annotations", func(cm *corev1.ConfigMap) { cm.Annotations = nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := good()
			tt.edit(cm)
			before := cm.DeepCopy()
			next, changed := desired(cm, ca)
			if changed != tt.changed {
				t.Fatalf("changed = %v, want %v", changed, tt.changed)
			}
			if !maps.Equal(cm.Data, before.Data) || !maps.Equal(cm.Annotations, before.Annotations) {
				t.Error("input modified")
			}
			if !maps.Equal(next.Data, map[string]string{DataKey: ca}) || next.Annotations[DescriptionAnnotation] == "" {
				t.Errorf("result %v %v does not publish the CA", next.Data, next.Annotations)
			}
			if changed && before.Annotations["team"] != "" && next.Annotations["team"] != "x" {
				t.Error("a user's annotation was dropped")
			}
		})
	}
}
