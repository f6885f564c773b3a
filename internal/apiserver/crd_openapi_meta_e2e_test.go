package apiserver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestCustomResourceOpenAPIAsUpstream checks the parts of a custom kind's
// published schema upstream's CRD OpenAPI tests look at: metadata
// described as every kind's is (kubectl explain prints it), and a version
// that keeps unknown fields published in /openapi/v2 as a bare object.
func TestCustomResourceOpenAPIAsUpstream(t *testing.T) {
	c, ctx, _ := widgetCluster(t, clustertest.Options{})
	rc := c.Client.Discovery().RESTClient()

	t.Run("kubectl explain metadata", func(t *testing.T) {
		k := newKubectlRunner(t, c.Server.Kubeconfig)
		for _, v3 := range []string{"true", "false"} {
			k.env = append(k.env[:3:3], "KUBECTL_EXPLAIN_OPENAPIV3="+v3)
			var out string
			// The v2 document is rebuilt a moment after the CRD is served.
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				o, e, err := k.run(t, "", "explain", "widgets.metadata")
				out = o + e
				if err != nil {
					out += err.Error()
				}
				return strings.Contains(out, "Standard object's metadata."), nil
			})
			if err != nil {
				t.Errorf("KUBECTL_EXPLAIN_OPENAPIV3=%s kubectl explain widgets.metadata lacks ObjectMeta's description:\n%s", v3, out)
			}
		}
	})

	t.Run("a schema that keeps unknown fields is a bare object in v2", func(t *testing.T) {
		jsonCfg, _ := jsonClients(c.Config)
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
			},
		}
		if _, err := apiextclient.NewForConfigOrDie(jsonCfg).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"type": "object", "x-kubernetes-group-version-kind": []any{
			map[string]any{"group": "example.com", "version": "v1", "kind": "Gadget"}}}
		var got any
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			raw, err := rc.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
			if err != nil {
				return false, nil
			}
			var doc struct {
				Definitions map[string]any `json:"definitions"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				return false, err
			}
			got = doc.Definitions["com.example.v1.Gadget"]
			return got != nil, nil
		})
		if err != nil {
			t.Fatalf("no com.example.v1.Gadget in /openapi/v2: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("definition %v, want %v", got, want)
		}
	})
}
