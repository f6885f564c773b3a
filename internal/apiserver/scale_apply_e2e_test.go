package apiserver_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestScaleServerSideApply applies autoscaling/v1 Scales to the /scale
// subresource of every kind that has one, as an autoscaler written with
// client-go does: the replica count another manager applied is a conflict
// naming it, force takes it over, and the parent's managedFields then
// record the autoscaler as the owner of its replicas field through
// subresource "scale".
func TestScaleServerSideApply(t *testing.T) {
	c, ctx, dyn := widgetCluster(t, clustertest.Options{})

	podTemplate := `
    selector: {matchLabels: {app: s}}
    template:
      metadata: {labels: {app: s}}
      spec: {containers: [{name: c, image: nginx}]}`
	cases := []struct {
		name     string
		gvr      schema.GroupVersionResource
		manifest string
		// replicas is where the parent keeps the count, and what its
		// managedFields entries name.
		replicas []string
	}{
		{"deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: s}\nspec:\n    replicas: 1" + podTemplate, []string{"spec", "replicas"}},
		{"replicaset", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"},
			"apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: s}\nspec:\n    replicas: 1" + podTemplate, []string{"spec", "replicas"}},
		{"statefulset", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
			"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n    serviceName: s\n    replicas: 1" + podTemplate, []string{"spec", "replicas"}},
		{"replicationcontroller", schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"},
			"apiVersion: v1\nkind: ReplicationController\nmetadata: {name: s}\nspec:\n    replicas: 1\n    selector: {app: s}\n    template:\n      metadata: {labels: {app: s}}\n      spec: {containers: [{name: c, image: nginx}]}", []string{"spec", "replicas"}},
		{"custom resource", widgets,
			"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: s}\nspec: {size: 1, replicas: 1}", []string{"spec", "replicas"}},
	}
	scale := func(replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]interface{}{"name": "s"},
			"spec":     map[string]interface{}{"replicas": replicas}}}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dyn.Resource(tc.gvr).Namespace("default")
			parent := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.manifest), &parent.Object); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Apply(ctx, "s", parent, metav1.ApplyOptions{FieldManager: "owner"}); err != nil {
				t.Fatalf("apply %s: %v", tc.name, err)
			}
			_, err := r.Apply(ctx, "s", scale(3), metav1.ApplyOptions{FieldManager: "autoscaler"}, "scale")
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"owner"`) || !strings.Contains(err.Error(), ".spec.replicas") {
				t.Fatalf("apply on scale of replicas another manager applied: %v, want 409 naming owner and .spec.replicas", err)
			}
			got, err := r.Apply(ctx, "s", scale(3), metav1.ApplyOptions{FieldManager: "autoscaler", Force: true}, "scale")
			if err != nil {
				t.Fatalf("forced apply on scale: %v", err)
			}
			if got.GetKind() != "Scale" || got.GetManagedFields() != nil {
				t.Errorf("apply on scale answered %s with managedFields %v, want a Scale without them", got.GetKind(), got.GetManagedFields())
			}
			if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 3 {
				t.Errorf("scale spec.replicas = %d, want 3", n)
			}
			live, err := r.Get(ctx, "s", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n, _, _ := unstructured.NestedInt64(live.Object, tc.replicas...); n != 3 {
				t.Errorf("parent replicas = %d, want 3", n)
			}
			var scaler, owner *metav1.ManagedFieldsEntry
			for i, e := range live.GetManagedFields() {
				switch e.Manager {
				case "autoscaler":
					scaler = &live.GetManagedFields()[i]
				case "owner":
					owner = &live.GetManagedFields()[i]
				}
			}
			if scaler == nil || scaler.Operation != metav1.ManagedFieldsOperationApply || scaler.Subresource != "scale" ||
				scaler.APIVersion != tc.gvr.GroupVersion().String() || !strings.Contains(string(scaler.FieldsV1.Raw), `"f:replicas"`) {
				t.Errorf("autoscaler's entry %+v, want an Apply through scale owning the parent's replicas at %s", scaler, tc.gvr.GroupVersion())
			}
			if owner == nil || strings.Contains(string(owner.FieldsV1.Raw), `"f:replicas"`) {
				t.Errorf("owner's entry %+v, want it kept without replicas", owner)
			}
			// The autoscaler owns the count now: it changes it freely,
			// and the owner's next apply of its old count conflicts.
			if _, err := r.Apply(ctx, "s", scale(4), metav1.ApplyOptions{FieldManager: "autoscaler"}, "scale"); err != nil {
				t.Fatalf("apply of its own field on scale: %v", err)
			}
			if _, err := r.Apply(ctx, "s", parent, metav1.ApplyOptions{FieldManager: "owner"}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"autoscaler"`) {
				t.Errorf("owner's apply of replicas the autoscaler owns: %v, want 409 naming autoscaler", err)
			}
			sc, err := r.Get(ctx, "s", metav1.GetOptions{}, "scale")
			if err != nil {
				t.Fatal(err)
			}
			if n, _, _ := unstructured.NestedInt64(sc.Object, "spec", "replicas"); n != 4 {
				t.Errorf("GET scale spec.replicas = %d, want 4", n)
			}
			// A Scale of another kind is refused, as the parent refuses a
			// wrong apiVersion.
			bad := scale(5)
			bad.SetAPIVersion("apps/v1")
			if _, err := r.Apply(ctx, "s", bad, metav1.ApplyOptions{FieldManager: "autoscaler"}, "scale"); !apierrors.IsBadRequest(err) {
				t.Errorf("apply of an apps/v1 Scale: %v, want 400", err)
			}
			if tc.gvr == widgets {
				_, err := r.Patch(ctx, "s", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}, "scale")
				if !apierrors.IsUnsupportedMediaType(err) {
					t.Errorf("strategic merge patch on a custom resource's scale: %v, want 415", err)
				}
			}
		})
	}
	t.Run("entries of another version survive", func(t *testing.T) {
		// v1beta1 of widgets has no scale subresource: its managers'
		// entries are kept whole, as upstream keeps them, not dropped.
		beta := widgets
		beta.Version = "v1beta1"
		w := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": map[string]interface{}{"name": "multi"},
			"spec": map[string]interface{}{"size": int64(1), "replicas": int64(1)}}}
		if _, err := dyn.Resource(beta).Namespace("default").Apply(ctx, "multi", w, metav1.ApplyOptions{FieldManager: "beta-owner"}); err != nil {
			t.Fatal(err)
		}
		sc := scale(2)
		sc.SetName("multi")
		// Nobody owns the Scale's replicas, so the field manager's
		// "before-first-apply" stand-in does, as upstream: a change needs
		// force.
		_, err := dyn.Resource(widgets).Namespace("default").Apply(ctx, "multi", sc, metav1.ApplyOptions{FieldManager: "autoscaler"}, "scale")
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"before-first-apply"`) {
			t.Errorf("first apply on scale changing replicas nobody owns: %v, want 409 naming before-first-apply", err)
		}
		if _, err := dyn.Resource(widgets).Namespace("default").Apply(ctx, "multi", sc, metav1.ApplyOptions{FieldManager: "autoscaler", Force: true}, "scale"); err != nil {
			t.Fatalf("apply on scale: %v", err)
		}
		live, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "multi", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); n != 2 {
			t.Errorf("replicas = %d, want 2", n)
		}
		kept := false
		for _, e := range live.GetManagedFields() {
			kept = kept || (e.Manager == "beta-owner" && e.APIVersion == "example.com/v1beta1" && strings.Contains(string(e.FieldsV1.Raw), `"f:size"`))
		}
		if !kept {
			t.Errorf("beta-owner's v1beta1 entry lost: %+v", live.GetManagedFields())
		}
	})

	t.Run("dry run and strict validation", func(t *testing.T) {
		deps := dyn.Resource(cases[0].gvr).Namespace("default")
		if _, err := deps.Apply(ctx, "s", scale(8), metav1.ApplyOptions{FieldManager: "autoscaler", DryRun: []string{metav1.DryRunAll}}, "scale"); err != nil {
			t.Fatalf("dry-run apply on scale: %v", err)
		}
		live, err := deps.Get(ctx, "s", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); n != 4 {
			t.Errorf("replicas after a dry-run apply on scale = %d, want 4 still", n)
		}
		body := []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"s"},"spec":{"replicas":6,"replicas":6}}`)
		err = c.Client.AppsV1().RESTClient().Patch(types.ApplyPatchType).Namespace("default").Resource("deployments").Name("s").
			SubResource("scale").Param("fieldManager", "autoscaler").Param("fieldValidation", "Strict").Body(body).Do(ctx).Error()
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `key "replicas" already set`) {
			t.Errorf("strict apply on scale with a duplicate key: %v, want 400 naming the duplicate key", err)
		}
		err = c.Client.AppsV1().RESTClient().Patch(types.ApplyPatchType).Namespace("default").Resource("deployments").Name("s").
			SubResource("scale").Body(body).Do(ctx).Error()
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "fieldManager") {
			t.Errorf("apply on scale without a fieldManager: %v, want 422 naming fieldManager", err)
		}
	})
}
