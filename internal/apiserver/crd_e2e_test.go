package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"sigs.k8s.io/yaml"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// widgetCRD is the definition the end-to-end tests install, the way a
// user would: a namespaced Widget with a schema exercising defaults,
// bounds, an enum, a CEL rule, printer columns, and status and scale
// subresources.
const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wg]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Size
      type: integer
      jsonPath: .spec.size
    - name: Color
      type: string
      jsonPath: .spec.color
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - rule: "self.replicas <= 10"
              message: "a widget runs at most 10 replicas"
            properties:
              size: {type: integer, minimum: 1, maximum: 10}
              color: {type: string, enum: [red, green, blue], default: red}
              replicas: {type: integer, default: 1}
          status:
            type: object
            properties:
              replicas: {type: integer}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

type kubectlRunner struct {
	bin string
	env []string
	dir string
}

func newKubectlRunner(t *testing.T, kubeconfig string) *kubectlRunner {
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl not found: set $KUBECTL or put kubectl on PATH")
		}
	}
	return &kubectlRunner{bin: bin, dir: t.TempDir(),
		env: []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}}
}

func (k *kubectlRunner) run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = k.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func (k *kubectlRunner) ok(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := k.run(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out + errOut
}

func (k *kubectlRunner) file(t *testing.T, name, content string) string {
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitServed waits until a list of the resource succeeds and returns how
// long that took.
func waitServed(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource) time.Duration {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s not served: %v", gvr, err)
	}
	return time.Since(start)
}

func TestCustomResourcesEndToEnd(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	k := newKubectlRunner(t, c.Server.Kubeconfig)
	jsonCfg, dyn := jsonClients(c.Config)
	ext := apiextclient.NewForConfigOrDie(jsonCfg)

	start := time.Now()
	k.ok(t, "", "apply", "-f", k.file(t, "crd.yaml", widgetCRD))
	waitServed(ctx, t, dyn, widgets)
	t.Logf("CRD create to serving: %v", time.Since(start))

	t.Run("conditions", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.example.com", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return crdCond(crd, apiextensionsv1.Established) == "True" && crdCond(crd, apiextensionsv1.NamesAccepted) == "True" &&
				crd.Status.AcceptedNames.Kind == "Widget" && len(crd.Finalizers) == 1, nil
		})
		if err != nil {
			t.Fatalf("CRD not established with the cleanup finalizer: %v", err)
		}
		out := k.ok(t, "", "get", "crd", "widgets.example.com")
		if lines := strings.Split(out, "\n"); !strings.HasPrefix(strings.Join(strings.Fields(lines[0]), " "), "NAME CREATED AT") ||
			!strings.HasPrefix(lines[1], "widgets.example.com") {
			t.Errorf("kubectl get crd:\n%s", out)
		}
	})

	t.Run("cluster scope", func(t *testing.T) {
		gadgets := strings.NewReplacer("widgets.example.com", "gadgets.example.com", "plural: widgets", "plural: gadgets",
			"singular: widget", "singular: gadget", "kind: Widget", "kind: Gadget", "shortNames: [wg]", "shortNames: [gd]",
			"scope: Namespaced", "scope: Cluster").Replace(widgetCRD)
		k.ok(t, "", "apply", "-f", k.file(t, "gadgets.yaml", gadgets))
		gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		k.ok(t, "", "apply", "-f", k.file(t, "g.yaml", "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {size: 1}\n"))
		out := k.ok(t, "", "get", "gadgets", "g1", "-o", "jsonpath={.metadata.namespace}|{.spec.color}")
		if out != "|red" {
			t.Errorf("gadget namespace|color = %q, want cluster-scoped and defaulted", out)
		}
		if _, err := dyn.Resource(gvr).Namespace("default").Get(ctx, "g1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespaced get of a cluster-scoped resource: %v, want 404", err)
		}
		k.ok(t, "", "delete", "crd", "gadgets.example.com")
	})

	t.Run("discovery", func(t *testing.T) {
		out := k.ok(t, "", "api-resources", "--api-group=example.com")
		if !strings.Contains(out, "widgets") || !strings.Contains(out, "wg") || !strings.Contains(out, "Widget") {
			t.Errorf("kubectl api-resources:\n%s", out)
		}
		list, err := c.Client.Discovery().ServerResourcesForGroupVersion("example.com/v1")
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, r := range list.APIResources {
			names[r.Name] = true
			if r.Name == "widgets" && (len(r.Categories) != 1 || r.Categories[0] != "all") {
				t.Errorf("widgets categories %v, want [all]", r.Categories)
			}
		}
		for _, want := range []string{"widgets", "widgets/status", "widgets/scale"} {
			if !names[want] {
				t.Errorf("discovery of example.com/v1 lacks %s: %v", want, names)
			}
		}
		g, err := c.Client.Discovery().ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		for _, grp := range g.Groups {
			if grp.Name == "example.com" && grp.PreferredVersion.Version != "v1" {
				t.Errorf("preferred version %s, want v1", grp.PreferredVersion.Version)
			}
		}
	})

	t.Run("apply, defaults, pruning and printer columns", func(t *testing.T) {
		w1 := k.file(t, "w1.yaml", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3, bogus: true}
`)
		// kubectl validates strictly by default: the server refuses the
		// undeclared field, as upstream.
		_, errOut, err := k.run(t, "", "apply", "-f", w1)
		if want := `Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"`; err == nil || !strings.Contains(errOut, want) {
			t.Errorf("strict apply: err %v, stderr %q, want %q", err, errOut, want)
		}
		out := k.ok(t, "", "apply", "--validate=warn", "-f", w1)
		if !strings.Contains(out, `unknown field "spec.bogus"`) {
			t.Errorf("apply output %q, want a warning about spec.bogus", out)
		}
		w, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec := w.Object["spec"].(map[string]interface{})
		if spec["color"] != "red" || spec["replicas"] != int64(1) {
			t.Errorf("spec %v, want color red and replicas 1 by default", spec)
		}
		if _, ok := spec["bogus"]; ok {
			t.Errorf("spec %v kept the undeclared field", spec)
		}
		if w.GetGeneration() != 1 || w.GetUID() == "" {
			t.Errorf("generation %d uid %q", w.GetGeneration(), w.GetUID())
		}
		out = k.ok(t, "", "get", "widgets", "-n", "default")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SIZE COLOR" ||
			strings.Join(strings.Fields(lines[1]), " ") != "w1 3 red" {
			t.Errorf("kubectl get widgets:\n%s", out)
		}
		// categories: [all] puts widgets in `kubectl get all`.
		if out := k.ok(t, "", "get", "all", "-n", "default"); !strings.Contains(out, "widget.example.com/w1") {
			t.Errorf("kubectl get all lacks the widget:\n%s", out)
		}
		// The other version serves the same object, apiVersion rewritten.
		old, err := dyn.Resource(widgets.GroupResource().WithVersion("v1beta1")).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
		if err != nil || old.GetAPIVersion() != "example.com/v1beta1" {
			t.Errorf("v1beta1 get: %v %v", old, err)
		}
	})

	t.Run("rejections", func(t *testing.T) {
		_, errOut, err := k.run(t, "", "apply", "-f", k.file(t, "big.yaml", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: big, namespace: default}
spec: {size: 20}
`))
		if want := `spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10`; err == nil || !strings.Contains(errOut, want) {
			t.Errorf("schema violation: err %v, stderr %q, want %q", err, errOut, want)
		}
		_, errOut, err = k.run(t, "", "apply", "-f", k.file(t, "many.yaml", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: many, namespace: default}
spec: {size: 2, replicas: 11}
`))
		if want := `spec: Invalid value: "object": a widget runs at most 10 replicas`; err == nil || !strings.Contains(errOut, want) {
			t.Errorf("CEL rule: err %v, stderr %q, want %q", err, errOut, want)
		}
		_, errOut, err = k.run(t, "", "apply", "-f", k.file(t, "purple.yaml", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: purple, namespace: default}
spec: {size: 2, color: purple}
`))
		if want := `spec.color: Unsupported value: "purple": supported values: "red", "green", "blue"`; err == nil || !strings.Contains(errOut, want) {
			t.Errorf("enum: err %v, stderr %q, want %q", err, errOut, want)
		}
		strict := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]interface{}{"name": "strict"},
			"spec": map[string]interface{}{"size": int64(1), "foo": "x"}}}
		_, err = dyn.Resource(widgets).Namespace("default").Create(ctx, strict, metav1.CreateOptions{FieldValidation: "Strict"})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `unknown field "spec.foo"`) {
			t.Errorf("strict create: %v, want 400 naming spec.foo", err)
		}
		_, err = dyn.Resource(widgets).Namespace("default").Patch(ctx, "w1", types.StrategicMergePatchType, []byte(`{"spec":{"size":4}}`), metav1.PatchOptions{})
		if !apierrors.IsUnsupportedMediaType(err) {
			t.Errorf("strategic merge patch: %v, want 415", err)
		}
	})

	t.Run("patch and status", func(t *testing.T) {
		r := dyn.Resource(widgets).Namespace("default")
		w, err := r.Patch(ctx, "w1", types.MergePatchType, []byte(`{"spec":{"size":5},"status":{"replicas":9}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 5 || w.GetGeneration() != 2 {
			t.Errorf("after merge patch: size %d generation %d", size, w.GetGeneration())
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(w.Object, "status"); found {
			t.Errorf("main resource write set status: %v", w.Object["status"])
		}
		w, err = r.Patch(ctx, "w1", types.JSONPatchType, []byte(`[{"op":"add","path":"/status","value":{"replicas":2}}]`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(w.Object, "status", "replicas"); n != 2 || w.GetGeneration() != 2 {
			t.Errorf("after status patch: replicas %d generation %d", n, w.GetGeneration())
		}
	})

	t.Run("scale", func(t *testing.T) {
		k.ok(t, "", "scale", "widget/w1", "-n", "default", "--replicas=4")
		w, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); n != 4 {
			t.Errorf("spec.replicas %d after kubectl scale, want 4", n)
		}
		sc, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "w1", metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(sc.Object, "status", "replicas"); n != 2 || sc.GetKind() != "Scale" {
			t.Errorf("scale %v, want status.replicas 2", sc.Object)
		}
	})

	t.Run("dynamic informer", func(t *testing.T) { checkWidgetInformer(ctx, t, dyn) })

	t.Run("openapi", func(t *testing.T) {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
			return err == nil && strings.Contains(string(body), `"apis/example.com/v1"`), nil
		})
		if err != nil {
			t.Fatalf("/openapi/v3 does not list apis/example.com/v1: %v", err)
		}
		v2, err := c.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
		if err != nil || !strings.Contains(string(v2), `"com.example.v1.Widget"`) || !strings.Contains(string(v2), `"/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"`) {
			t.Errorf("/openapi/v2 lacks the Widget definition or paths (err %v)", err)
		}
		out := k.ok(t, "", "explain", "widgets.spec.size")
		if !strings.Contains(out, "KIND:       Widget") || !strings.Contains(out, "<integer>") {
			t.Errorf("kubectl explain widgets.spec.size:\n%s", out)
		}
		out = k.ok(t, "", "explain", "crd.spec.versions.schema")
		if !strings.Contains(out, "KIND:       CustomResourceDefinition") || !strings.Contains(out, "openAPIV3Schema") {
			t.Errorf("kubectl explain crd.spec.versions.schema:\n%s", out)
		}
	})

	t.Run("server-side apply", func(t *testing.T) {
		k.ok(t, "", "apply", "--server-side", "-f", k.file(t, "w3.yaml", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w3, namespace: default}
spec: {size: 2, color: blue}
`))
		w, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "w3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mf := w.GetManagedFields()
		if len(mf) == 0 || mf[0].Manager != "kubectl" || mf[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("managedFields %+v, want kubectl's Apply", mf)
		}
	})

	t.Run("selectors and pagination", func(t *testing.T) {
		r := dyn.Resource(widgets).Namespace("default")
		for i, tier := range []string{"gold", "gold", "silver"} {
			w := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]interface{}{"name": fmt.Sprintf("sel-%d", i), "labels": map[string]interface{}{"tier": tier}},
				"spec":     map[string]interface{}{"size": int64(1)}}}
			if _, err := r.Create(ctx, w, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		gold, err := r.List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
		if err != nil || len(gold.Items) != 2 {
			t.Errorf("label selector: %d items, %v; want 2", len(gold.Items), err)
		}
		one, err := r.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=sel-2"})
		if err != nil || len(one.Items) != 1 || one.Items[0].GetName() != "sel-2" {
			t.Errorf("field selector: %v, %v", one, err)
		}
		if _, err := r.List(ctx, metav1.ListOptions{FieldSelector: "spec.size=1"}); !apierrors.IsBadRequest(err) {
			t.Errorf("field selector on an undeclared field: %v, want 400", err)
		}
		var names []string
		opts := metav1.ListOptions{LabelSelector: "tier", Limit: 1}
		for pages := 0; pages < 5; pages++ {
			page, err := r.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				names = append(names, it.GetName())
			}
			if opts.Continue = page.GetContinue(); opts.Continue == "" {
				break
			}
		}
		if strings.Join(names, ",") != "sel-0,sel-1,sel-2" {
			t.Errorf("paginated list: %v", names)
		}
		// Custom resources have no protobuf form: 406 when it is all the
		// client takes, JSON when it takes that too.
		err = c.Client.Discovery().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces/default/widgets/sel-2").
			SetHeader("Accept", "application/vnd.kubernetes.protobuf").Do(ctx).Error()
		if !apierrors.IsNotAcceptable(err) {
			t.Errorf("protobuf-only get: %v, want 406", err)
		}
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces/default/widgets/sel-2").
			SetHeader("Accept", "application/vnd.kubernetes.protobuf, application/json").DoRaw(ctx)
		if err != nil || !strings.HasPrefix(string(body), "{") {
			t.Errorf("protobuf-or-json get: %v %.40q", err, body)
		}
		// YAML and pretty lists are built as a list object, not spliced.
		yamlList, err := c.Client.Discovery().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces/default/widgets").
			Param("labelSelector", "tier=silver").SetHeader("Accept", "application/yaml").DoRaw(ctx)
		if err != nil || !strings.Contains(string(yamlList), "kind: WidgetList") || !strings.Contains(string(yamlList), "name: sel-2") {
			t.Errorf("YAML list: %v\n%s", err, yamlList)
		}
		if err := r.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "tier=gold"}); err != nil {
			t.Fatal(err)
		}
		if left, err := r.List(ctx, metav1.ListOptions{LabelSelector: "tier"}); err != nil || len(left.Items) != 1 {
			t.Errorf("after deletecollection of gold: %v %v", left, err)
		}
	})

	t.Run("definition update re-serves", func(t *testing.T) {
		patch := `[{"op":"add","path":"/spec/versions/0/additionalPrinterColumns/-","value":{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}},
			{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/shape","value":{"type":"string","default":"round"}}]`
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, "widgets.example.com", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		var out string
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			out = k.ok(t, "", "get", "widget", "w1", "-n", "default")
			return strings.Contains(out, "REPLICAS"), nil
		})
		if err != nil {
			t.Errorf("new printer column not served:\n%s", out)
		}
		// A default added later applies to stored objects when read.
		w, err := dyn.Resource(widgets).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
		if shape, _, _ := unstructured.NestedString(w.Object, "spec", "shape"); err != nil || shape != "round" {
			t.Errorf("w1 after a default was added: shape %q, err %v", shape, err)
		}
	})

	t.Run("name conflict", func(t *testing.T) {
		dup := strings.NewReplacer("widgets.example.com", "gizmos.example.com", "plural: widgets", "plural: gizmos",
			"singular: widget", "singular: gizmo", "shortNames: [wg]", "shortNames: [gz]").Replace(widgetCRD)
		k.ok(t, "", "apply", "-f", k.file(t, "dup.yaml", dup))
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gizmos.example.com", metav1.GetOptions{})
			return err == nil && crdCond(crd, apiextensionsv1.NamesAccepted) == "False", nil
		})
		if err != nil {
			t.Errorf("a CRD reusing kind Widget was not refused its names: %v", err)
		}
		k.ok(t, "", "delete", "crd", "gizmos.example.com")
	})

	t.Run("delete removes objects", func(t *testing.T) {
		k.ok(t, "", "delete", "crd", "widgets.example.com", "--timeout=30s")
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.example.com", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("CRD after delete: %v", err)
		}
		k.ok(t, "", "apply", "-f", k.file(t, "crd.yaml", widgetCRD))
		waitServed(ctx, t, dyn, widgets)
		list, err := dyn.Resource(widgets).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("widgets after the CRD was deleted and re-created: %v %v", list, err)
		}
	})
}

func crdCond(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) apiextensionsv1.ConditionStatus {
	for _, c := range crd.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// checkWidgetInformer runs a client-go dynamic informer on widgets and
// checks it sees an add, an update and a delete.
func checkWidgetInformer(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := f.ForResource(widgets).Informer()
	var mu sync.Mutex
	var seen []string
	record := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { record("add " + obj.(*unstructured.Unstructured).GetName()) },
		UpdateFunc: func(_, obj interface{}) {
			if s, _, _ := unstructured.NestedInt64(obj.(*unstructured.Unstructured).Object, "spec", "size"); s == 7 {
				record("update " + obj.(*unstructured.Unstructured).GetName())
			}
		},
		DeleteFunc: func(obj interface{}) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				record("delete " + u.GetName())
			}
		},
	})
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	f.Start(ictx.Done())
	if !cache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	r := dyn.Resource(widgets).Namespace("default")
	w2 := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]interface{}{"name": "w2"},
		"spec": map[string]interface{}{"size": int64(2)}}}
	if _, err := r.Create(ctx, w2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Patch(ctx, "w2", types.MergePatchType, []byte(`{"spec":{"size":7}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "w2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add w2", "update w2", "delete w2"}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range seen {
			if n < len(want) && s == want[n] {
				n++
			}
		}
		return n == len(want), nil
	})
	if err != nil {
		mu.Lock()
		t.Errorf("informer saw %v, want %v in order", seen, want)
		mu.Unlock()
	}
}

// TestCustomResourcesNamespaceDeletion runs the namespace controller: it
// finds custom resources through discovery like any other namespaced
// resource, so deleting a namespace deletes the widgets in it.
func TestCustomResourcesNamespaceDeletion(t *testing.T) {
	_, ctx, dyn := widgetCluster(t, clustertest.Options{Controllers: []string{"namespace"}})

	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": "team-w"}}}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if _, err := dyn.Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]interface{}{"name": "w", "namespace": "team-w"},
		"spec": map[string]interface{}{"size": int64(1)}}}
	if _, err := dyn.Resource(widgets).Namespace("team-w").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(nsGVR).Delete(ctx, "team-w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(nsGVR).Get(ctx, "team-w", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace with a custom resource not deleted: %v", err)
	}
	if list, err := dyn.Resource(widgets).Namespace("team-w").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("widgets left in the deleted namespace: %v %v", list, err)
	}
}

// widgetCluster starts a cluster with opts, installs the Widget CRD and
// waits until it is served. Its clients speak JSON: custom resources have
// no protobuf form. The context ends with the test.
func widgetCluster(t *testing.T, opts clustertest.Options) (*clustertest.Cluster, context.Context, dynamic.Interface) {
	t.Helper()
	c := clustertest.Start(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	jsonCfg, dyn := jsonClients(c.Config)
	createWidgetCRD(ctx, t, jsonCfg)
	waitServed(ctx, t, dyn, widgets)
	return c, ctx, dyn
}

// jsonClients returns a JSON-only copy of cfg and a dynamic client on it.
func jsonClients(cfg *rest.Config) (*rest.Config, dynamic.Interface) {
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	return jsonCfg, dynamic.NewForConfigOrDie(jsonCfg)
}

func createWidgetCRD(ctx context.Context, t testing.TB, cfg *rest.Config) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(widgetCRD), crd); err != nil {
		t.Fatal(err)
	}
	if _, err := apiextclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCRDCreateToServing measures the time from a CRD's create
// returning to the first successful list of its resource: what a client
// that applies a CRD and then its objects waits for.
func BenchmarkCRDCreateToServing(b *testing.B) {
	c := clustertest.Start(b, clustertest.Options{})
	ctx := context.Background()
	jsonCfg, dyn := jsonClients(c.Config)
	ext := apiextclient.NewForConfigOrDie(jsonCfg)
	base := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(widgetCRD), base); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		crd := base.DeepCopy()
		crd.Spec.Group = fmt.Sprintf("bench%d.example.com", i)
		crd.Name = "widgets." + crd.Spec.Group
		start := time.Now()
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: "widgets"}
		for {
			if _, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("%s not served after 10s", gvr)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
