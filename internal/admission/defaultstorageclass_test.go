package admission

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// gvrObjects is an ObjectSource over objects filed by resource, for the
// plugins that read kinds objectSet does not know.
type gvrObjects map[schema.GroupVersionResource][]runtime.Object

func (g gvrObjects) GetObject(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	for _, o := range g[gvr] {
		m := o.(metav1.Object)
		if m.GetNamespace() == namespace && m.GetName() == name {
			return o, nil
		}
	}
	return nil, nil
}

func (g gvrObjects) ListObjects(_ context.Context, gvr schema.GroupVersionResource, namespace string, _ bool) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, o := range g[gvr] {
		if namespace == "" || o.(metav1.Object).GetNamespace() == namespace {
			out = append(out, o)
		}
	}
	return out, nil
}

var (
	testPVCsGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	testPVsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	testPodsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	testEpoch   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

// scClass is a StorageClass created age minutes after testEpoch.
func scClass(name string, isDefault string, age int, expand *bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name,
		CreationTimestamp: metav1.NewTime(testEpoch.Add(time.Duration(age) * time.Minute))},
		Provisioner: "example.com/disk", AllowVolumeExpansion: expand}
	if isDefault != "" {
		sc.Annotations = map[string]string{scDefaultAnnotation: isDefault}
	}
	return sc
}

func TestDefaultStorageClass(t *testing.T) {
	beta := scClass("beta", "", 0, nil)
	beta.Annotations = map[string]string{scBetaDefaultAnnotation: "true"}
	cases := []struct {
		name    string
		classes []runtime.Object
		op      Operation
		pvc     *corev1.PersistentVolumeClaim
		want    *string // spec.storageClassName after admission
	}{
		{name: "no default: left without a class", classes: []runtime.Object{scClass("fast", "", 0, nil)},
			pvc: &corev1.PersistentVolumeClaim{}, want: nil},
		{name: "the default is filled in", classes: []runtime.Object{scClass("fast", "", 0, nil), scClass("std", "true", 0, nil)},
			pvc: &corev1.PersistentVolumeClaim{}, want: ptr.To("std")},
		{name: "only the value true marks a default", classes: []runtime.Object{scClass("std", "yes", 0, nil)},
			pvc: &corev1.PersistentVolumeClaim{}, want: nil},
		{name: "the beta annotation marks a default too", classes: []runtime.Object{beta},
			pvc: &corev1.PersistentVolumeClaim{}, want: ptr.To("beta")},
		{name: "of several defaults the newest wins", classes: []runtime.Object{scClass("old", "true", 1, nil), scClass("new", "true", 5, nil), scClass("mid", "true", 3, nil)},
			pvc: &corev1.PersistentVolumeClaim{}, want: ptr.To("new")},
		{name: "equally new defaults: the first by name", classes: []runtime.Object{scClass("b", "true", 2, nil), scClass("a", "true", 2, nil)},
			pvc: &corev1.PersistentVolumeClaim{}, want: ptr.To("a")},
		{name: "a named class is kept", classes: []runtime.Object{scClass("std", "true", 0, nil)},
			pvc: &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast")}}, want: ptr.To("fast")},
		{name: "an explicit empty class asks for none and is kept", classes: []runtime.Object{scClass("std", "true", 0, nil)},
			pvc: &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("")}}, want: ptr.To("")},
		{name: "the beta class annotation counts as a class", classes: []runtime.Object{scClass("std", "true", 0, nil)},
			pvc: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{scBetaClassAnnotation: "fast"}}}, want: nil},
		{name: "updates are not defaulted", op: Update, classes: []runtime.Object{scClass("std", "true", 0, nil)},
			pvc: &corev1.PersistentVolumeClaim{}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			if op == "" {
				op = Create
			}
			tc.pvc.Namespace, tc.pvc.Name = "ns", "claim"
			p := DefaultStorageClass{Objects: gvrObjects{scStorageClassesGVR: tc.classes}}
			if err := p.Admit(context.Background(), &Attributes{Operation: op, Resource: testPVCsGVR, Namespace: "ns", Name: "claim", Object: tc.pvc}); err != nil {
				t.Fatal(err)
			}
			got := tc.pvc.Spec.StorageClassName
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("storageClassName %v, want %v", ptr.Deref(got, "<nil>"), ptr.Deref(tc.want, "<nil>"))
			}
		})
	}
}

func TestStorageObjectInUseProtection(t *testing.T) {
	cases := []struct {
		name string
		op   Operation
		gvr  schema.GroupVersionResource
		sub  string
		obj  runtime.Object
		want []string
	}{
		{name: "a new claim gets pvc-protection", op: Create, gvr: testPVCsGVR,
			obj:  &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"example.com/keep"}}},
			want: []string{"example.com/keep", "kubernetes.io/pvc-protection"}},
		{name: "a new volume gets pv-protection", op: Create, gvr: testPVsGVR,
			obj: &corev1.PersistentVolume{}, want: []string{"kubernetes.io/pv-protection"}},
		{name: "not added twice", op: Create, gvr: testPVCsGVR,
			obj:  &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"kubernetes.io/pvc-protection"}}},
			want: []string{"kubernetes.io/pvc-protection"}},
		{name: "updates are left alone (the controller removes it)", op: Update, gvr: testPVCsGVR,
			obj: &corev1.PersistentVolumeClaim{}, want: nil},
		{name: "status writes are left alone", op: Create, gvr: testPVCsGVR, sub: "status",
			obj: &corev1.PersistentVolumeClaim{}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := (StorageObjectInUseProtection{}).Admit(context.Background(), &Attributes{Operation: tc.op, Resource: tc.gvr, Subresource: tc.sub, Object: tc.obj}); err != nil {
				t.Fatal(err)
			}
			got := tc.obj.(metav1.Object).GetFinalizers()
			if len(got) != len(tc.want) || (len(got) > 0 && !slices.Equal(got, tc.want)) {
				t.Fatalf("finalizers %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStorageObjectInUseProtectionNeedsItsControllers(t *testing.T) {
	names, err := EnabledPlugins(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	has := func(d Deps) bool {
		for _, n := range Build(names, nil, d).Names() {
			if n == "StorageObjectInUseProtection" {
				return true
			}
		}
		return false
	}
	if has(Deps{Objects: gvrObjects{}}) {
		t.Error("built without anything to remove its finalizers")
	}
	if !has(Deps{Objects: gvrObjects{}, StorageProtectionControllers: true}) {
		t.Error("not built although the protection controllers run")
	}
}

func TestPersistentVolumeClaimResize(t *testing.T) {
	expandable := scClass("expandable", "", 0, ptr.To(true))
	fixed := scClass("fixed", "", 0, ptr.To(false))
	unset := scClass("unset", "", 0, nil)
	claim := func(class *string, size string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	const (
		notBound  = `persistentvolumeclaims "data" is forbidden: Only bound persistent volume claims can be expanded`
		noSupport = `persistentvolumeclaims "data" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	)
	cases := []struct {
		name     string
		old, new *corev1.PersistentVolumeClaim
		err      string
	}{
		{name: "growing with an expandable class", old: claim(ptr.To("expandable"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("expandable"), "2Gi", corev1.ClaimBound)},
		{name: "same size is not a resize", old: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("fixed"), "1024Mi", corev1.ClaimBound)},
		{name: "shrinking is left to validation", old: claim(ptr.To("fixed"), "2Gi", corev1.ClaimBound), new: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound)},
		{name: "an unbound claim cannot grow", old: claim(ptr.To("expandable"), "1Gi", corev1.ClaimPending), new: claim(ptr.To("expandable"), "2Gi", corev1.ClaimPending), err: notBound},
		{name: "a class that forbids expansion", old: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("fixed"), "2Gi", corev1.ClaimBound), err: noSupport},
		{name: "a class that does not say", old: claim(ptr.To("unset"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("unset"), "2Gi", corev1.ClaimBound), err: noSupport},
		{name: "a missing class", old: claim(ptr.To("gone"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("gone"), "2Gi", corev1.ClaimBound), err: noSupport},
		{name: "no class (a static volume)", old: claim(nil, "1Gi", corev1.ClaimBound), new: claim(nil, "2Gi", corev1.ClaimBound), err: noSupport},
		{name: "a class changed on the way", old: claim(ptr.To("fixed"), "1Gi", corev1.ClaimBound), new: claim(ptr.To("expandable"), "2Gi", corev1.ClaimBound), err: noSupport},
	}
	p := PersistentVolumeClaimResize{Objects: gvrObjects{scStorageClassesGVR: {expandable, fixed, unset}}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), &Attributes{Operation: Update, Resource: testPVCsGVR, Namespace: "ns", Name: "data", Object: tc.new, OldObject: tc.old})
			got := ""
			if err != nil {
				got = err.Error()
				if !apierrors.IsForbidden(err) {
					t.Errorf("not a 403: %v", err)
				}
			}
			if got != tc.err {
				t.Fatalf("got %q, want %q", got, tc.err)
			}
		})
	}
}
