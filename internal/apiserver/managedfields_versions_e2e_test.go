package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestManagedFieldsAcrossVersions writes one object through two versions
// of its kind, as clients of different ages do: the managedFields entry a
// manager wrote through one version must survive a write through the
// other, and still count for conflicts.
func TestManagedFieldsAcrossVersions(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	jsonCfg := rest.CopyConfig(c.Config)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	dyn := dynamic.NewForConfigOrDie(jsonCfg)

	hpaV1 := schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	hpaV2 := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	coreEvents := schema.GroupVersionResource{Version: "v1", Resource: "events"}
	newEvents := schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	cases := []struct {
		name string
		// applied is applied through applyGVR by "new-client"; patch is a
		// merge patch sent through patchGVR by "old-client".
		applyGVR, patchGVR schema.GroupVersionResource
		applied, patch     string
		// conflicting is a re-apply by new-client that changes the field
		// old-client's patch set, which must conflict naming old-client.
		conflicting string
	}{
		{
			name: "hpa v2 applier, v1 writer", applyGVR: hpaV2, patchGVR: hpaV1,
			applied: `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-a}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5`,
			patch: `{"spec":{"maxReplicas":7}}`,
			conflicting: `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-a}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 9`,
		},
		{
			name: "hpa v1 applier, v2 writer", applyGVR: hpaV1, patchGVR: hpaV2,
			applied: `
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: hpa-b}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5`,
			patch: `{"spec":{"minReplicas":3}}`,
			conflicting: `
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: hpa-b}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 4
  maxReplicas: 5`,
		},
		{
			name: "events.k8s.io applier, core writer", applyGVR: newEvents, patchGVR: coreEvents,
			applied: `
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: ev-c}
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-1
action: Scale
reason: Scaled
note: first
type: Normal
regarding: {kind: Deployment, namespace: default, name: web, apiVersion: apps/v1}`,
			patch: `{"message":"second"}`,
			conflicting: `
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: ev-c}
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-1
action: Scale
reason: Scaled
note: third
type: Normal
regarding: {kind: Deployment, namespace: default, name: web, apiVersion: apps/v1}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			applied := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.applied), &applied.Object); err != nil {
				t.Fatal(err)
			}
			name := applied.GetName()
			if _, err := dyn.Resource(tc.applyGVR).Namespace("default").Apply(ctx, name, applied, metav1.ApplyOptions{FieldManager: "new-client"}); err != nil {
				t.Fatalf("apply through %s: %v", tc.applyGVR.GroupVersion(), err)
			}
			if _, err := dyn.Resource(tc.patchGVR).Namespace("default").Patch(ctx, name, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{FieldManager: "old-client"}); err != nil {
				t.Fatalf("patch through %s: %v", tc.patchGVR.GroupVersion(), err)
			}
			for _, gvr := range []schema.GroupVersionResource{tc.applyGVR, tc.patchGVR} {
				live, err := dyn.Resource(gvr).Namespace("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				versions := map[string]string{}
				for _, e := range live.GetManagedFields() {
					versions[e.Manager+"/"+string(e.Operation)] = e.APIVersion
				}
				if versions["new-client/Apply"] != tc.applyGVR.GroupVersion().String() || versions["old-client/Update"] != tc.patchGVR.GroupVersion().String() {
					t.Errorf("managedFields read through %s: %v, want new-client's Apply at %s kept beside old-client's Update at %s",
						gvr.GroupVersion(), versions, tc.applyGVR.GroupVersion(), tc.patchGVR.GroupVersion())
				}
			}
			re := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.conflicting), &re.Object); err != nil {
				t.Fatal(err)
			}
			_, err := dyn.Resource(tc.applyGVR).Namespace("default").Apply(ctx, name, re, metav1.ApplyOptions{FieldManager: "new-client"})
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"old-client"`) {
				t.Errorf("re-apply of the field old-client set through %s: %v, want 409 naming old-client", tc.patchGVR.GroupVersion(), err)
			}
		})
	}
}
