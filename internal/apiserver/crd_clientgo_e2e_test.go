package apiserver_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	applyappsv1 "k8s.io/client-go/applyconfigurations/apps/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestClientGoApplyAndInformer is the client-go program of the issue's
// bar: a controller-style client that server-side applies a custom
// resource through the dynamic client while a dynamic shared informer
// watches it, and applies a Deployment with the generated apply
// configurations. Conflicts must name the manager that owns the field, and
// Force must take the field over.
func TestClientGoApplyAndInformer(t *testing.T) {
	c, ctx, dyn := widgetCluster(t, clustertest.Options{})

	t.Run("dynamic apply with informer", func(t *testing.T) {
		events := startWidgetRecorder(ctx, t, dyn)
		r := dyn.Resource(widgets).Namespace("default")
		widget := func(size int64, color string) *unstructured.Unstructured {
			spec := map[string]interface{}{"size": size}
			if color != "" {
				spec["color"] = color
			}
			return &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]interface{}{"name": "applied"},
				"spec":     spec}}
		}
		// Apply creates the missing object.
		got, err := r.Apply(ctx, "applied", widget(3, "blue"), metav1.ApplyOptions{FieldManager: "widget-ctl"})
		if err != nil {
			t.Fatalf("apply create: %v", err)
		}
		if s, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); s != 3 {
			t.Errorf("spec.size = %d, want 3", s)
		}
		if !ownsField(got.GetManagedFields(), "widget-ctl", metav1.ManagedFieldsOperationApply, "f:size") {
			t.Errorf("widget-ctl's Apply entry does not own spec.size: %+v", got.GetManagedFields())
		}
		// A second manager changing the first's field conflicts, and the
		// error names the owner and the field.
		_, err = r.Apply(ctx, "applied", widget(5, ""), metav1.ApplyOptions{FieldManager: "other-ctl"})
		if !apierrors.IsConflict(err) {
			t.Fatalf("conflicting apply: %v, want 409 Conflict", err)
		}
		if msg := err.Error(); !strings.Contains(msg, `"widget-ctl"`) || !strings.Contains(msg, ".spec.size") {
			t.Errorf("conflict %q does not name the manager widget-ctl and .spec.size", msg)
		}
		// The same value is shared ownership, not a conflict.
		if _, err := r.Apply(ctx, "applied", widget(3, ""), metav1.ApplyOptions{FieldManager: "other-ctl"}); err != nil {
			t.Fatalf("apply of the same value: %v", err)
		}
		// Force takes the field over.
		got, err = r.Apply(ctx, "applied", widget(7, ""), metav1.ApplyOptions{FieldManager: "other-ctl", Force: true})
		if err != nil {
			t.Fatalf("forced apply: %v", err)
		}
		if s, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); s != 7 {
			t.Errorf("spec.size after force = %d, want 7", s)
		}
		if ownsField(got.GetManagedFields(), "widget-ctl", metav1.ManagedFieldsOperationApply, "f:size") {
			t.Errorf("widget-ctl still owns spec.size after a forced apply: %+v", got.GetManagedFields())
		}
		if !ownsField(got.GetManagedFields(), "widget-ctl", metav1.ManagedFieldsOperationApply, "f:color") {
			t.Errorf("widget-ctl lost spec.color, which nobody else set: %+v", got.GetManagedFields())
		}
		if err := r.Delete(ctx, "applied", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		events.wait(t, "add applied", "update applied size=7", "delete applied")
	})

	t.Run("typed apply of a deployment", func(t *testing.T) {
		deps := c.Client.AppsV1().Deployments("default")
		labels := map[string]string{"app": "web"}
		dep := func(replicas int32) *applyappsv1.DeploymentApplyConfiguration {
			return applyappsv1.Deployment("web", "default").WithSpec(applyappsv1.DeploymentSpec().
				WithReplicas(replicas).
				WithSelector(applymetav1.LabelSelector().WithMatchLabels(labels)).
				WithTemplate(applycorev1.PodTemplateSpec().WithLabels(labels).WithSpec(applycorev1.PodSpec().
					WithContainers(applycorev1.Container().WithName("web").WithImage("nginx:1.27")))))
		}
		got, err := deps.Apply(ctx, dep(2), metav1.ApplyOptions{FieldManager: "deployer"})
		if err != nil {
			t.Fatalf("apply create: %v", err)
		}
		if *got.Spec.Replicas != 2 || got.Spec.RevisionHistoryLimit == nil || *got.Spec.RevisionHistoryLimit != 10 {
			t.Errorf("applied deployment replicas %v, revisionHistoryLimit %v; want 2 and the default 10", *got.Spec.Replicas, got.Spec.RevisionHistoryLimit)
		}
		_, err = deps.Apply(ctx, applyappsv1.Deployment("web", "default").WithSpec(applyappsv1.DeploymentSpec().WithReplicas(4)),
			metav1.ApplyOptions{FieldManager: "scaler"})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"deployer"`) || !strings.Contains(err.Error(), ".spec.replicas") {
			t.Fatalf("conflicting typed apply: %v, want 409 naming deployer and .spec.replicas", err)
		}
		got, err = deps.Apply(ctx, applyappsv1.Deployment("web", "default").WithSpec(applyappsv1.DeploymentSpec().WithReplicas(4)),
			metav1.ApplyOptions{FieldManager: "scaler", Force: true})
		if err != nil {
			t.Fatalf("forced typed apply: %v", err)
		}
		if *got.Spec.Replicas != 4 {
			t.Errorf("replicas after force = %d, want 4", *got.Spec.Replicas)
		}
		// The deployer's own view of what it manages no longer holds
		// replicas; the image is still its.
		owned, err := applyappsv1.ExtractDeployment(got, "deployer")
		if err != nil {
			t.Fatal(err)
		}
		if owned.Spec == nil || owned.Spec.Replicas != nil {
			t.Errorf("deployer still manages replicas after the forced apply: %+v", owned.Spec)
		}
		if img := owned.Spec.Template.Spec.Containers[0].Image; img == nil || *img != "nginx:1.27" {
			t.Errorf("deployer's extracted image = %v, want nginx:1.27", img)
		}
	})
}

// ownsField reports whether manager's entry of operation op names the
// field key (e.g. "f:size") anywhere in its field set.
func ownsField(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType, key string) bool {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == op && e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), `"`+key+`"`) {
			return true
		}
	}
	return false
}

// widgetRecorder is what a dynamic shared informer on widgets delivered.
type widgetRecorder struct {
	mu   sync.Mutex
	seen []string
}

// startWidgetRecorder runs a dynamic shared informer on widgets until ctx
// ends and records its events as "add <name>", "update <name> size=<n>"
// and "delete <name>".
func startWidgetRecorder(ctx context.Context, t *testing.T, dyn dynamic.Interface) *widgetRecorder {
	t.Helper()
	rec := &widgetRecorder{}
	record := func(s string) { rec.mu.Lock(); rec.seen = append(rec.seen, s); rec.mu.Unlock() }
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := f.ForResource(widgets).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { record("add " + obj.(*unstructured.Unstructured).GetName()) },
		UpdateFunc: func(_, obj interface{}) {
			u := obj.(*unstructured.Unstructured)
			size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
			record("update " + u.GetName() + " size=" + strconv.FormatInt(size, 10))
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				record("delete " + u.GetName())
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	ictx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	f.Start(ictx.Done())
	if !cache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return rec
}

// wait waits until the recorder has seen want, in order (other events may
// come between).
func (r *widgetRecorder) wait(t *testing.T, want ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		n := 0
		for _, s := range r.seen {
			if n < len(want) && s == want[n] {
				n++
			}
		}
		return n == len(want), nil
	})
	if err != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Errorf("informer saw %v, want %v in order", r.seen, want)
	}
}

// TestCustomResourceWebhookConversion installs a definition whose versions
// convert with a webhook, which rudder does not call: the definition is
// accepted and established as upstream accepts it, its storage version
// works, and a request through another version fails cleanly with a 500
// naming the conversion instead of serving one version's object as
// another's.
func TestCustomResourceWebhookConversion(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	jsonCfg, dyn := jsonClients(c.Config)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(widgetCRD), crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions[1].Schema = crd.Spec.Versions[0].Schema.DeepCopy()
	port := int32(443)
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "converter", Port: &port}}}}
	if _, err := apiextclient.NewForConfigOrDie(jsonCfg).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a CRD with webhook conversion: %v", err)
	}
	waitServed(ctx, t, dyn, widgets)
	w := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]interface{}{"name": "w"},
		"spec": map[string]interface{}{"size": int64(2)}}}
	if _, err := dyn.Resource(widgets).Namespace("default").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through the storage version: %v", err)
	}
	beta := widgets
	beta.Version = "v1beta1"
	_, err := dyn.Resource(beta).Namespace("default").Get(ctx, "w", metav1.GetOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "conversion webhook for example.com/v1, Kind=Widget failed") {
		t.Errorf("get through a version that needs conversion: %v, want 500 naming the conversion webhook", err)
	}
	w.SetAPIVersion("example.com/v1beta1")
	w.SetName("w2")
	if _, err := dyn.Resource(beta).Namespace("default").Create(ctx, w, metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("create through a version that needs conversion: %v, want 500", err)
	}
	if got, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "w", metav1.GetOptions{}); err != nil || got.GetAPIVersion() != "example.com/v1" {
		t.Errorf("get through the storage version: %v %v", got, err)
	}
}
