package admission

import (
	"context"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func icClass(name string, isDefault bool, age int) *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name,
		CreationTimestamp: metav1.NewTime(testEpoch.Add(time.Duration(age) * time.Minute))},
		Spec: networkingv1.IngressClassSpec{Controller: "example.com/ingress"}}
	if isDefault {
		c.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
	}
	return c
}

func TestDefaultIngressClass(t *testing.T) {
	ingressesGVR := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	cases := []struct {
		name    string
		classes []runtime.Object
		op      Operation
		ing     networkingv1.Ingress
		want    *string
	}{
		{name: "no default: no class", classes: []runtime.Object{icClass("nginx", false, 0)}, want: nil},
		{name: "the default is filled in", classes: []runtime.Object{icClass("nginx", false, 0), icClass("traefik", true, 0)}, want: ptr.To("traefik")},
		{name: "of several defaults the newest wins", classes: []runtime.Object{icClass("old", true, 0), icClass("new", true, 9)}, want: ptr.To("new")},
		{name: "equally new defaults: first by name", classes: []runtime.Object{icClass("b", true, 1), icClass("a", true, 1)}, want: ptr.To("a")},
		{name: "a named class is kept", classes: []runtime.Object{icClass("traefik", true, 0)},
			ing: networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx")}}, want: ptr.To("nginx")},
		{name: "the legacy annotation counts as a class", classes: []runtime.Object{icClass("traefik", true, 0)},
			ing: networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/ingress.class": "nginx"}}}, want: nil},
		{name: "updates are not defaulted", op: Update, classes: []runtime.Object{icClass("traefik", true, 0)}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			if op == "" {
				op = Create
			}
			ing := tc.ing.DeepCopy()
			p := DefaultIngressClass{Objects: gvrObjects{icIngressClassesGVR: tc.classes}}
			if err := p.Admit(context.Background(), &Attributes{Operation: op, Resource: ingressesGVR, Namespace: "ns", Name: "web", Object: ing}); err != nil {
				t.Fatal(err)
			}
			got := ing.Spec.IngressClassName
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("ingressClassName %v, want %v", ptr.Deref(got, "<nil>"), ptr.Deref(tc.want, "<nil>"))
			}
		})
	}
}
