package openapi

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// TestTypeConverterMatchesManagedFields checks the unvalidated conversion
// against managedfields' own converter over the same schemas: for the
// field manager's update (AllowDuplicates), the field sets and the
// comparison of two versions must be the same, duplicated keys included.
func TestTypeConverterMatchesManagedFields(t *testing.T) {
	ours, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Schemas()
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := managedfields.NewTypeConverter(s, false)
	if err != nil {
		t.Fatal(err)
	}

	pod := func(env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "nginx", Env: env,
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			}}},
		}
	}
	running := pod()
	running.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	deploy := func(replicas int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas),
				Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%"))}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: pod().Spec}},
		}
	}
	cases := []struct {
		name      string
		old, next runtime.Object
	}{
		{"pod status", pod(), running},
		{"duplicate env names", pod(corev1.EnvVar{Name: "A", Value: "1"}), pod(corev1.EnvVar{Name: "A", Value: "1"}, corev1.EnvVar{Name: "A", Value: "2"})},
		{"deployment scale", deploy(1), deploy(3)},
		{"service ports", &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}},
			&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}, {Port: 443, Protocol: corev1.ProtocolTCP}}}}},
	}
	convert := func(t *testing.T, tc managedfields.TypeConverter, obj runtime.Object) *typed.TypedValue {
		t.Helper()
		tv, err := tc.ObjectToTyped(obj, typed.AllowDuplicates)
		if err != nil {
			t.Fatal(err)
		}
		return tv
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, obj := range []runtime.Object{c.old, c.next} {
				a, err := convert(t, ours, obj).ToFieldSet()
				if err != nil {
					t.Fatal(err)
				}
				b, err := convert(t, theirs, obj).ToFieldSet()
				if err != nil {
					t.Fatal(err)
				}
				if !a.Equals(b) {
					t.Errorf("field sets differ:\nours   %s\ntheirs %s", a, b)
				}
			}
			ca, err := convert(t, ours, c.old).Compare(convert(t, ours, c.next))
			if err != nil {
				t.Fatal(err)
			}
			cb, err := convert(t, theirs, c.old).Compare(convert(t, theirs, c.next))
			if err != nil {
				t.Fatal(err)
			}
			if ca.String() != cb.String() {
				t.Errorf("comparisons differ:\nours   %s\ntheirs %s", ca, cb)
			}
			if ca.IsSame() {
				t.Error("the two versions compare the same")
			}
		})
	}

	t.Run("unknown kind: managedfields' error", func(t *testing.T) {
		obj := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v0", Kind: "Pod"}}
		_, a := ours.ObjectToTyped(obj)
		_, b := theirs.ObjectToTyped(obj)
		if a == nil || b == nil || a.Error() != b.Error() {
			t.Errorf("ours %v, theirs %v", a, b)
		}
	})
}
