package namespace

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestDeleteResourcePaths covers the paths the API server under test
// never takes (every built-in resource supports deletecollection): one
// by one deletion, a deletecollection discovery promised but the
// resource refuses, and objects that will not go.
func TestDeleteResourcePaths(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	obj := func(gvr schema.GroupVersionResource, kind, name string, finalizers ...string) runtime.Object {
		return &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: finalizers},
		}
	}
	deletedAt := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: &deletedAt}}

	tests := []struct {
		name string
		tgt  target
		// refuse makes the fake answer these verbs with 405.
		refuse     []string
		stubborn   bool // deletes succeed but change nothing
		wantLeft   int
		wantFin    map[string]int
		wantEst    time.Duration
		wantErr    string
		wantDelete int // single-object deletes sent
	}{
		{name: "one by one", tgt: target{gvr: widgets, list: true}, wantDelete: 3},
		{name: "deletecollection refused: falls back", tgt: target{gvr: gadgets, list: true, deleteCollection: true},
			refuse: []string{"delete-collection"}, wantDelete: 3},
		{name: "cannot list: trusted", tgt: target{gvr: widgets}, wantDelete: 0},
		{name: "finalizers hold: wait", tgt: target{gvr: widgets, list: true}, stubborn: true, wantDelete: 3,
			wantLeft: 3, wantFin: map[string]int{"example.com/hold": 2}, wantEst: finalizerEstimate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := metadatafake.NewTestScheme()
			if err := metav1.AddMetaToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			kind := map[schema.GroupVersionResource]string{widgets: "Widget", gadgets: "Gadget"}[tt.tgt.gvr]
			md := metadatafake.NewSimpleMetadataClient(scheme,
				obj(tt.tgt.gvr, kind, "a", "example.com/hold"), obj(tt.tgt.gvr, kind, "b", "example.com/hold"), obj(tt.tgt.gvr, kind, "c"))
			for _, verb := range tt.refuse {
				md.PrependReactor(verb, "*", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewMethodNotSupported(tt.tgt.gvr.GroupResource(), verb)
				})
			}
			if tt.stubborn {
				md.PrependReactor("delete", "*", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
			}
			r := &reconciler{client: kubefake.NewClientset(), metadata: md,
				clock: clocktesting.NewFakePassiveClock(deletedAt.Time), log: slog.Default()}
			got, err := r.deleteResource(context.Background(), tt.tgt, ns)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got.remaining != tt.wantLeft || got.estimate != tt.wantEst {
				t.Errorf("remaining %d estimate %v, want %d %v", got.remaining, got.estimate, tt.wantLeft, tt.wantEst)
			}
			if tt.wantFin != nil && !maps.Equal(got.finalizers, tt.wantFin) {
				t.Errorf("finalizers %v, want %v", got.finalizers, tt.wantFin)
			}
			deletes := 0
			for _, a := range md.Actions() {
				if d, ok := a.(clienttesting.DeleteActionImpl); ok {
					deletes++
					if p := d.DeleteOptions.PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
						t.Errorf("delete %s without propagationPolicy Background", d.Name)
					}
				}
			}
			if deletes != tt.wantDelete {
				t.Errorf("%d deletes, want %d (actions %v)", deletes, tt.wantDelete, verbs(md.Actions()))
			}
		})
	}

	t.Run("objects that neither go nor wait for anything are an error", func(t *testing.T) {
		scheme := metadatafake.NewTestScheme()
		_ = metav1.AddMetaToScheme(scheme)
		md := metadatafake.NewSimpleMetadataClient(scheme, obj(widgets, "Widget", "x"))
		md.PrependReactor("delete", "*", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
		r := &reconciler{client: kubefake.NewClientset(), metadata: md, clock: clocktesting.NewFakePassiveClock(deletedAt.Time), log: slog.Default()}
		_, err := r.deleteResource(context.Background(), target{gvr: widgets, list: true}, ns)
		if err == nil || err.Error() != "unexpected items still remain in namespace: ns for gvr: example.com/v1, Resource=widgets" {
			t.Errorf("err = %v", err)
		}
	})
}

func verbs(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, a.GetVerb())
	}
	return out
}
